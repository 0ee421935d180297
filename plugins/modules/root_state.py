#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: root_state
short_description: Keep state that root reads back in a directory no other account can change
version_added: 0.1.0
description:
  - Checks every existing component of O(path), from C(/), as written and resolved - owned by root, not writable
    by its group or others - and fails naming each one that is not, before anything is created.
  - Creates the missing directories (parents C(0755), O(path) itself O(mode)), owned by root, and sets the owner
    and mode of O(path) when they differ.
  - With O(legacy), takes over a snapshot that an older release kept elsewhere (for example inside a service
    account's home), but only the files of O(files) that root wrote there (regular, owned by root, one link, mode
    C(0600) or narrower, in a root-owned C(0700) directory, read through that directory's handle without
    following links) and the link O(link) when it points at a directory under O(link_root) whose path is
    root's. Files already in O(path) are kept. The old directory is removed when it is root's; anything else
    is left behind and reported.
author:
  - inferops.llm maintainers (@inferops)
options:
  path:
    description: The directory for the state, absolute.
    type: path
    required: true
  mode:
    description: Permissions of O(path), in octal.
    type: raw
    default: "0700"
  legacy:
    description: Where an older release kept the same state, absolute; nothing when it does not exist.
    type: path
  files:
    description: Names of the files of a snapshot that O(legacy) may hold.
    type: list
    elements: str
    default: []
  link:
    description: Name of the link to the snapshot's environment in O(legacy).
    type: str
    default: env
  link_root:
    description: The directory that the link's target must lie under (the environments); required with O(legacy).
    type: path
extends_documentation_fragment:
  - inferops.llm.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
seealso:
  - module: ansible.builtin.file
"""

EXAMPLES = r"""
---
- name: Keep vLLM's rollback copies where the vllm account cannot reach them
  inferops.llm.root_state:
    path: /var/lib/inferops-rollback/vllm
    legacy: /var/lib/vllm/rollback
    files: [serve.yaml, vllm.service, secrets.env]
    link_root: /opt/vllm/envs
"""

RETURN = r"""
---
created:
  description: The directories created.
  type: list
  elements: str
  returned: success
adopted:
  description: What was taken over from O(legacy) (file names, and O(link) when its target was).
  type: list
  elements: str
  returned: success
left_behind:
  description: What O(legacy) held that was not taken over, and why.
  type: list
  elements: str
  returned: success
"""

import os
import shutil
import stat
import tempfile
from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.llm.plugins.module_utils._core import root_state


def _write(path: str, content: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def run(module: AnsibleModule, start: str = "/") -> Dict[str, Any]:
    params = module.params
    path = os.path.normpath(params["path"])
    owner = os.geteuid()
    try:
        mode = int(str(params["mode"]), 8)
    except ValueError:
        module.fail_json(msg=f"mode must be octal such as '0700', got {params['mode']!r}")
    problems = root_state.path_problems(path, owner, start)
    if problems:
        module.fail_json(
            msg=f"{path} holds state that root reads back, but another account can change it: "
            + "; ".join(problems)
            + ". Make every directory on the way owned by root and not writable by its group or others "
            "(chown root:root, chmod go-w).",
            problems=problems,
        )
    changed = False
    created: List[str] = []
    for component in root_state._components(path):
        if os.path.lexists(component):
            continue
        created.append(component)
        if not module.check_mode:
            os.mkdir(component, mode if component == path else 0o755)
            os.chown(component, owner, 0)
            os.chmod(component, mode if component == path else 0o755)
    changed = bool(created)
    if os.path.isdir(path):
        info = os.lstat(path)
        if info.st_uid != owner or info.st_gid != 0 or stat.S_IMODE(info.st_mode) != mode:
            changed = True
            if not module.check_mode:
                os.chown(path, owner, 0)
                os.chmod(path, mode)
    adopted: List[str] = []
    left: List[str] = []
    legacy = params["legacy"]
    if legacy and os.path.normpath(legacy) != path and os.path.lexists(legacy):
        if not params["link_root"]:
            module.fail_json(msg="link_root is required with legacy")
        files, target, left = root_state.adopt(
            legacy, params["files"], params["link"], params["link_root"], owner, start
        )
        for name, content in sorted(files.items()):
            if not os.path.lexists(os.path.join(path, name)):
                adopted.append(name)
                if not module.check_mode:
                    _write(os.path.join(path, name), content)
        link = os.path.join(path, params["link"])
        if target and not os.path.lexists(link):
            adopted.append(params["link"])
            if not module.check_mode:
                os.symlink(target, link)
        changed = True
        info = os.lstat(legacy)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == owner:
            if not module.check_mode:
                # rmtree works through directory handles here (shutil.rmtree.avoids_symlink_attacks)
                # and refuses a link swapped in meanwhile.
                try:
                    shutil.rmtree(legacy)
                except OSError as error:
                    left.append(f"{legacy}: not removed ({error.strerror or error})")
        else:
            left.append(f"{legacy}: not root's directory, left where it is")
        if left:
            module.warn(f"Left behind in {legacy}: " + "; ".join(left))
    return {"changed": changed, "created": created, "adopted": adopted, "left_behind": left}


ARGUMENT_SPEC: Dict[str, Any] = {
    "path": {"type": "path", "required": True},
    "mode": {"type": "raw", "default": "0700"},
    "legacy": {"type": "path"},
    "files": {"type": "list", "elements": "str", "default": []},
    "link": {"type": "str", "default": "env"},
    "link_root": {"type": "path"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
