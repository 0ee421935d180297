#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_model
short_description: Download a Hugging Face model at a pinned revision into the Hugging Face cache
version_added: 0.1.0
description:
  - Places the files of a model repository at one commit into the Hugging Face cache under O(hf_home)
    (C($HF_HOME/hub/models--org--name/{blobs,snapshots/<commit>,refs/<branch>})), so that inference engines
    started with C(HF_HOME) set to O(hf_home) and C(HF_HUB_OFFLINE=1) find it without network.
  - Two revisions of a model share the blobs that did not change; a blob already in the cache is never
    transferred again.
  - When O(revision) is a commit and a previous run recorded the commit's file list, the module decides
    offline that the model is present, contacts nothing and reports no change.
  - O(source=hub) uses the huggingface_hub library (which must be importable by the Python interpreter
    running the module, for example a virtual environment given as C(ansible_python_interpreter)).
    huggingface_hub retries and resumes a file within one run; after an interrupted run, files that were
    complete are kept and the others are fetched again.
  - O(source=mirror) fetches the same files over HTTP(S) from a static mirror described by a manifest
    (see M(inferops.llm.hf_model_manifest)), resumes partial files (C(blobs/<blob>.incomplete)) with HTTP
    range requests, and checks size, sha256 and git blob id of every file before it enters the cache.
  - Before anything is transferred, the free space of the cache filesystem is compared with the size of the
    files still missing plus O(reserve_bytes).
author:
  - inferops.llm maintainers (@inferops)
options:
  repo:
    description: Model repository id, C(org/name).
    type: str
    required: true
  revision:
    description:
      - Commit id (40 hex characters) to download. A branch or tag name is accepted with a warning, since
        what it points to changes over time; it is resolved to a commit, and C(refs/<revision>) records that commit.
    type: str
    required: true
  hf_home:
    description: The C(HF_HOME) directory; the cache is its C(hub) subdirectory.
    type: path
    required: true
  file:
    description:
      - Exactly one file to fetch (for example one GGUF file), without pattern matching.
      - Mutually exclusive with O(allow_patterns) and O(ignore_patterns).
    type: str
  allow_patterns:
    description:
      - Only files matching one of these patterns are fetched (C(fnmatch) rules, C(*) crosses C(/),
        a pattern ending in C(/) means the whole folder), as in huggingface_hub's C(snapshot_download).
    type: list
    elements: str
  ignore_patterns:
    description: Files matching one of these patterns are not fetched.
    type: list
    elements: str
  source:
    description: Where the files come from.
    type: str
    choices:
      hub: The Hugging Face Hub API (or O(hub_endpoint)) through huggingface_hub.
      mirror: A static HTTP(S) mirror with manifests, at O(mirror_url).
    default: hub
  mirror_url:
    description:
      - Base URL of the mirror. Files are read from C(<mirror_url>/<repo>/<commit>/<path>) and manifests from
        C(<mirror_url>/<repo>/manifests/<revision>.json).
      - Required when O(source=mirror).
    type: str
  hub_endpoint:
    description:
      - Hub endpoint for O(source=hub), for a Hub-compatible proxy.
      - Defaults to huggingface_hub's own (C(HF_ENDPOINT) or the public Hub).
    type: str
  token:
    description:
      - Hugging Face access token for gated or private repositories (O(source=hub)).
      - Handed to huggingface_hub inside the module process; it is never written to disk or returned.
    type: str
  owner:
    description: User that owns everything under O(hf_home) afterwards (the engine's service user).
    type: str
  group:
    description: Group that owns everything under O(hf_home) afterwards.
    type: str
  reserve_bytes:
    description: Bytes that must stay free on the cache filesystem after the download.
    type: int
    default: 1073741824
  max_workers:
    description: Files fetched in parallel.
    type: int
    default: 4
  validate_certs:
    description: Verify the TLS certificate of an HTTPS mirror.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the mirror to answer one request.
    type: int
    default: 60
extends_documentation_fragment:
  - inferops.llm.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files would be transferred and checks free space; with a branch revision or a commit
      seen for the first time, the Hub or mirror is asked for the file list (read only).
  diff_mode:
    support: none
  idempotent:
    support: full
notes:
  - Only model repositories are handled (not datasets or spaces).
  - Concurrent runs against the same O(hf_home) are not locked against each other in O(source=mirror).
seealso:
  - module: inferops.llm.hf_model_manifest
  - name: Hugging Face cache layout
    description: How huggingface_hub stores blobs, snapshots and refs.
    link: https://huggingface.co/docs/huggingface_hub/guides/manage-cache
requirements:
  - huggingface_hub (for O(source=hub) only)
"""

EXAMPLES = r"""
---
- name: Fetch the safetensors weights of a model at a commit
  inferops.llm.hf_model:
    repo: Qwen/Qwen3-0.6B
    revision: c1899de289a04d12100db370d81485cdf75e47ca
    hf_home: /var/lib/inferops/hf
    allow_patterns: ["*.json", "*.safetensors", "tokenizer*"]
    token: "{{ vault_hf_token }}"
    owner: vllm
    group: vllm
  vars:
    ansible_python_interpreter: /opt/inferops/hf-hub/bin/python

- name: Fetch one GGUF file from a LAN mirror
  inferops.llm.hf_model:
    repo: Qwen/Qwen3-0.6B-GGUF
    revision: 23749fefcc72300e3a2ad315e1317431b06b590a
    hf_home: /var/lib/inferops/hf
    file: Qwen3-0.6B-Q8_0.gguf
    source: mirror
    mirror_url: http://models.lan/hf
"""

RETURN = r"""
---
commit:
  description: Commit the files belong to.
  type: str
  returned: success
  sample: c1899de289a04d12100db370d81485cdf75e47ca
snapshot_path:
  description: Snapshot directory of the commit (what an engine loads as a local model path).
  type: str
  returned: success
  sample: /var/lib/inferops/hf/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de289a04d12100db370d81485cdf75e47ca
file_path:
  description: Path of O(file) inside the snapshot; empty when O(file) is not set.
  type: str
  returned: success
files:
  description: Repository paths selected by O(file) or the patterns.
  type: list
  elements: str
  returned: success
transferred:
  description: Repository paths whose content was fetched in this run (or would be, in check mode).
  type: list
  elements: str
  returned: success
bytes_to_fetch:
  description: Bytes that were (or in check mode would be) transferred, blobs already in the cache excluded.
  type: int
  returned: success
free_bytes:
  description: Free bytes on the cache filesystem before the transfer.
  type: int
  returned: success
revision_is_commit:
  description: Whether O(revision) is a commit id (reproducible) rather than a branch or tag.
  type: bool
  returned: success
"""

import grp
import os
import pwd
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.urls import open_url

from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import (
    CacheLayout,
    DiskSpaceError,
    Manifest,
    ManifestError,
    RepoFile,
    VerificationError,
    bytes_to_fetch,
    check_disk_space,
    fetch_blob,
    free_bytes,
    is_commit,
    load_manifest,
    mirror_file_url,
    mirror_manifest_url,
    select_files,
)


def _hub_api(module: AnsibleModule) -> Any:
    # huggingface_hub reads HF_HOME when it is imported: point it at the managed cache first.
    os.environ["HF_HOME"] = module.params["hf_home"]
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    try:
        import huggingface_hub
    except ImportError:
        module.fail_json(
            msg=missing_required_lib("huggingface_hub", reason="for source=hub")
            + " (run the module with the interpreter of the model_download virtual environment)",
            exception=traceback.format_exc(),
        )
    return huggingface_hub


def hub_manifest(module: AnsibleModule, revision: str) -> Manifest:
    """Full file list of the repository at ``revision`` from the Hub API."""
    hf = _hub_api(module)
    params = module.params
    try:
        info = hf.HfApi(endpoint=params["hub_endpoint"]).model_info(
            params["repo"], revision=revision, files_metadata=True, token=params["token"] or None
        )
    except Exception as exc:  # the Hub client raises many kinds (HTTP, auth, missing revision, network)
        module.fail_json(
            msg=f"Hub lookup of {params['repo']} at revision '{revision}' failed: {to_text(exc)}"
            " (a gated or private repository needs a token: role variable model_download_hf_token)"
        )
    files = []
    for sibling in info.siblings or []:
        lfs = sibling.lfs
        if lfs:
            sha256 = lfs["sha256"]
            files.append(RepoFile(path=sibling.rfilename, size=lfs["size"], blob=sha256, sha256=sha256))
        else:
            files.append(RepoFile(path=sibling.rfilename, size=sibling.size, blob=sibling.blob_id))
    return Manifest(repo=params["repo"], commit=info.sha, files=tuple(files), revision=revision)


def _open(module: AnsibleModule, url: str, headers: Optional[dict] = None) -> Any:
    return open_url(
        url,
        headers=dict(headers or {}),
        validate_certs=module.params["validate_certs"],
        timeout=module.params["timeout"],
    )


def mirror_manifest(module: AnsibleModule, revision: str) -> Manifest:
    url = mirror_manifest_url(module.params["mirror_url"], module.params["repo"], revision)
    try:
        text = to_text(_open(module, url).read())
    except Exception as exc:  # urllib raises HTTPError, URLError, socket and TLS errors
        module.fail_json(msg=f"cannot read the mirror manifest {url}: {to_text(exc)}")
    manifest = load_manifest(text, url)
    if manifest.repo != module.params["repo"]:
        raise ManifestError(f"{url} describes repo '{manifest.repo}', not '{module.params['repo']}'")
    if is_commit(revision) and manifest.commit != revision:
        raise ManifestError(f"{url} describes commit {manifest.commit}, not {revision}")
    return manifest


def hub_fetch(module: AnsibleModule, layout: CacheLayout, commit: str, files: list[RepoFile]) -> None:
    hf = _hub_api(module)
    params = module.params

    def fetch(file: RepoFile) -> str:
        return hf.hf_hub_download(
            params["repo"],
            file.path,
            revision=commit,
            cache_dir=layout.hub_cache,
            token=params["token"] or None,
            endpoint=params["hub_endpoint"],
        )

    with ThreadPoolExecutor(max_workers=params["max_workers"]) as pool:
        list(pool.map(fetch, files))
    wrong = [f.path for f in layout.missing_files(commit, files)]
    if wrong:
        module.fail_json(msg=f"huggingface_hub did not store these files as blobs of the expected size: {wrong}")


def mirror_fetch(module: AnsibleModule, layout: CacheLayout, commit: str, files: list[RepoFile]) -> None:
    base = module.params["mirror_url"]

    def fetch(file: RepoFile) -> None:
        url = mirror_file_url(base, layout.repo, commit, file.path)
        fetch_blob(layout, file, url, lambda u, h: _open(module, u, h))

    # One transfer per blob: two paths with the same content must not write one .incomplete together.
    unique = list({f.blob: f for f in files}.values())
    with ThreadPoolExecutor(max_workers=module.params["max_workers"]) as pool:
        list(pool.map(fetch, unique))
    for file in files:
        layout.link_snapshot(commit, file)


def fix_ownership(root: str, owner: Optional[str], group: Optional[str], apply: bool) -> bool:
    """Whether anything under ``root`` has another owner or group; lchown it when ``apply``."""
    if not (owner or group) or not os.path.exists(root):
        return False
    uid = pwd.getpwnam(owner).pw_uid if owner else -1
    gid = grp.getgrnam(group).gr_gid if group else -1
    differs = False
    for base, dirs, names in os.walk(root):
        for path in [base] + [os.path.join(base, n) for n in dirs + names]:
            st = os.lstat(path)
            if uid not in (-1, st.st_uid) or gid not in (-1, st.st_gid):
                differs = True
                if not apply:
                    return True
                os.lchown(path, uid, gid)
    return differs


def run(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    revision = params["revision"]
    layout = CacheLayout(params["hf_home"], params["repo"])
    revision_is_commit = is_commit(revision)
    if not revision_is_commit:
        module.warn(
            f"revision '{revision}' of {params['repo']} is a branch or tag, not a commit: the files"
            " may change between runs and hosts. Pin the 40-character commit id for a reproducible deployment."
        )

    # A commit whose full file list was recorded by a finished run is decided offline.
    record = layout.read_record(revision) if revision_is_commit else None
    manifest = record
    if manifest is None:
        manifest = hub_manifest(module, revision) if params["source"] == "hub" else mirror_manifest(module, revision)
        record = layout.read_record(manifest.commit)
    commit = manifest.commit
    recorded = record is not None and set(record.files) == set(manifest.files)

    selected = select_files(manifest.files, params["allow_patterns"], params["ignore_patterns"], params["file"])
    missing = layout.missing_files(commit, selected)
    needed = bytes_to_fetch(layout, missing)
    free = free_bytes(layout.hub_cache)
    if missing:
        check_disk_space(needed, free, params["reserve_bytes"], layout.hub_cache)
    ref_stale = not revision_is_commit and layout.read_ref(revision) != commit

    changed = bool(missing) or ref_stale or not recorded
    if not module.check_mode:
        if missing:
            if params["source"] == "hub":
                hub_fetch(module, layout, commit, missing)
            else:
                mirror_fetch(module, layout, commit, missing)
        if ref_stale:
            layout.write_ref(revision, commit)
        if not recorded:
            layout.write_record(Manifest(repo=manifest.repo, commit=commit, files=manifest.files))
    owner_changed = fix_ownership(params["hf_home"], params["owner"], params["group"], apply=not module.check_mode)
    changed = changed or owner_changed

    return {
        "changed": changed,
        "commit": commit,
        "snapshot_path": layout.snapshot_dir(commit),
        "file_path": layout.snapshot_path(commit, params["file"]) if params["file"] else "",
        "files": [f.path for f in selected],
        "transferred": [f.path for f in missing],
        "bytes_to_fetch": needed,
        "free_bytes": free,
        "revision_is_commit": revision_is_commit,
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "repo": {"type": "str", "required": True},
            "revision": {"type": "str", "required": True},
            "hf_home": {"type": "path", "required": True},
            "file": {"type": "str"},
            "allow_patterns": {"type": "list", "elements": "str"},
            "ignore_patterns": {"type": "list", "elements": "str"},
            "source": {"type": "str", "choices": ["hub", "mirror"], "default": "hub"},
            "mirror_url": {"type": "str"},
            "hub_endpoint": {"type": "str"},
            "token": {"type": "str", "no_log": True},
            "owner": {"type": "str"},
            "group": {"type": "str"},
            "reserve_bytes": {"type": "int", "default": 1073741824},
            "max_workers": {"type": "int", "default": 4},
            "validate_certs": {"type": "bool", "default": True},
            "timeout": {"type": "int", "default": 60},
        },
        mutually_exclusive=[("file", "allow_patterns"), ("file", "ignore_patterns")],
        required_if=[("source", "mirror", ("mirror_url",))],
        supports_check_mode=True,
    )
    try:
        module.exit_json(**run(module))
    except (ManifestError, VerificationError, DiskSpaceError) as exc:
        module.fail_json(msg=to_text(exc))
    except (OSError, KeyError) as exc:  # KeyError: unknown owner or group
        module.fail_json(msg=f"{type(exc).__name__}: {to_text(exc)}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
