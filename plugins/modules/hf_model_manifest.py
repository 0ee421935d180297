#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_model_manifest
short_description: Publish a model snapshot on a static mirror with a checksum manifest
version_added: 0.1.0
description:
  - Reads a model tree, either a Hugging Face cache snapshot (C(.../models--org--name/snapshots/<commit>)) or a plain
    directory holding the files of one commit, and writes the manifest that M(inferops.llm.hf_model) with
    C(source=mirror) checks every file against (path, size, sha256, blob name, commit).
  - Lays the mirror out as C(<mirror_root>/<repo>/<commit>/<path>) (a symbolic link to O(src) unless O(src) already is
    that directory) and C(<mirror_root>/<repo>/manifests/<commit>.json), plus C(<revision>.json) when O(revision) is
    given. Serve O(mirror_root) with any static web server (nginx, for example; it follows symbolic links by default).
  - Every file is read once to compute its sha256 and git blob id.
author:
  - inferops.llm maintainers (@inferops)
options:
  src:
    description: Directory holding the model files of one commit.
    type: path
    required: true
  repo:
    description: Model repository id, C(org/name), the files belong to.
    type: str
    required: true
  commit:
    description:
      - Commit id (40 hex characters) of the files.
      - Defaults to the directory name when O(src) is a cache snapshot directory; required otherwise.
    type: str
  revision:
    description: Branch or tag name that also resolves to O(commit) on the mirror (C(manifests/<revision>.json)).
    type: str
  mirror_root:
    description: Directory served by the mirror's web server.
    type: path
    required: true
  lfs_patterns:
    description:
      - For files of a plain directory (not links into a cache's C(blobs/)), the patterns of files that the Hub stores
        in Git LFS, whose cache blob is named by sha256; other files are named by their git blob id, and files over
        10 MiB are LFS whatever their name. The default is the C(.gitattributes) of a new Hugging Face repository.
    type: list
    elements: str
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
  - module: inferops.llm.hf_model
"""

EXAMPLES = r"""
---
- name: Publish a snapshot from the controller's Hugging Face cache
  inferops.llm.hf_model_manifest:
    src: ~/.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de289a04d12100db370d81485cdf75e47ca
    repo: Qwen/Qwen3-0.6B
    revision: main
    mirror_root: /srv/hf-mirror
  delegate_to: localhost
"""

RETURN = r"""
---
manifest:
  description: The manifest written (format 1).
  type: dict
  returned: success
  contains:
    format:
      description: Manifest format version.
      type: int
    repo:
      description: Repository id.
      type: str
    commit:
      description: Commit id.
      type: str
    revision:
      description: Branch or tag name, or null.
      type: str
    files:
      description: One entry per file with C(path), C(size), C(sha256) and C(blob).
      type: list
      elements: dict
manifest_paths:
  description: Manifest files on the mirror.
  type: list
  elements: str
  returned: success
files_path:
  description: Directory the mirror serves the files from (C(<mirror_root>/<repo>/<commit>)).
  type: str
  returned: success
"""

import os
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import (
    DEFAULT_LFS_PATTERNS,
    ManifestError,
    manifest_from_directory,
    snapshot_commit,
    write_atomic,
)


def run(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    src = os.path.abspath(params["src"])
    commit = params["commit"] or snapshot_commit(src)
    if not commit:
        raise ManifestError(f"commit is required: '{src}' is not a cache snapshot directory (.../snapshots/<commit>)")
    lfs_patterns = params["lfs_patterns"] if params["lfs_patterns"] is not None else DEFAULT_LFS_PATTERNS
    manifest = manifest_from_directory(src, params["repo"], commit, params["revision"], lfs_patterns)
    repo_root = os.path.join(params["mirror_root"], *params["repo"].split("/"))
    files_path = os.path.join(repo_root, commit)
    names = [commit] + ([params["revision"]] if params["revision"] else [])
    manifest_paths = [os.path.join(repo_root, "manifests", *name.split("/")) + ".json" for name in names]

    changed = False
    link_needed = os.path.realpath(files_path) != os.path.realpath(src)
    if link_needed:
        if os.path.lexists(files_path) and not os.path.islink(files_path):
            raise ManifestError(f"'{files_path}' exists and is not a link to '{src}': remove it or use it as src")
        changed = True
        if not module.check_mode:
            if os.path.lexists(files_path):
                os.unlink(files_path)
            os.makedirs(repo_root, exist_ok=True)
            os.symlink(src, files_path)
    text = manifest.to_json()
    for path in manifest_paths:
        try:
            with open(path, encoding="utf-8") as handle:
                current = handle.read()
        except OSError:
            current = None
        if current != text:
            changed = True
            if not module.check_mode:
                write_atomic(path, text)
    return {
        "changed": changed,
        "manifest": manifest.to_dict(),
        "manifest_paths": manifest_paths,
        "files_path": files_path,
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "repo": {"type": "str", "required": True},
            "commit": {"type": "str"},
            "revision": {"type": "str"},
            "mirror_root": {"type": "path", "required": True},
            "lfs_patterns": {"type": "list", "elements": "str"},
        },
        supports_check_mode=True,
    )
    try:
        module.exit_json(**run(module))
    except (ManifestError, OSError) as exc:
        module.fail_json(msg=to_text(exc))


if __name__ == "__main__":
    main()
