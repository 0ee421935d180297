# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Hugging Face cache layout, mirror manifests and download decisions.

Used by the ``inferops.llm.hf_model`` and ``inferops.llm.hf_model_manifest`` modules. Plain Python
(no Ansible, no huggingface_hub imports) so the layout rules can be tested on their own.

Cache layout written here is the one huggingface_hub reads (``HF_HUB_CACHE`` = ``$HF_HOME/hub``)::

    models--org--name/
      blobs/<sha256 for LFS files | git blob sha1 for regular files>
      snapshots/<commit>/<path> -> ../../blobs/<blob>   (relative symlinks)
      refs/<branch>                                    (file holding the commit, no newline)

Mirror manifest (JSON)::

    {"format": 1, "repo": "org/name", "commit": "<40 hex>", "revision": "main" | null,
     "files": [{"path": "config.json", "size": 612, "sha256": "<64 hex>", "blob": "<40 or 64 hex>"}]}

``blob`` is the name huggingface_hub gives the file in ``blobs/``: the sha256 for LFS files, the git
blob sha1 for files stored in git. ``sha256`` may be null only for regular (git-stored) files, whose
``blob`` already is a content hash.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

MANIFEST_FORMAT = 1
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
SHA256_RE = re.compile(r"[0-9a-f]{64}")
REPO_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
# Files that go to Git LFS in a default Hugging Face repository (.gitattributes of a new repo),
# used to name blobs when a manifest is built from a plain directory instead of a cache snapshot.
DEFAULT_LFS_PATTERNS = (
    "*.7z", "*.arrow", "*.bin", "*.bz2", "*.ckpt", "*.ftz", "*.gguf", "*.gz", "*.h5", "*.joblib",
    "*.mlmodel", "*.model", "*.msgpack", "*.npy", "*.npz", "*.onnx", "*.ot", "*.parquet", "*.pb",
    "*.pickle", "*.pkl", "*.pt", "*.pth", "*.rar", "*.safetensors", "*.tar", "*.tflite", "*.tgz",
    "*.wasm", "*.xz", "*.zip", "*.zst", "*tfevents*",
)  # fmt: skip
# Files larger than this are stored in LFS by the Hub whatever .gitattributes says.
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
CHUNK_SIZE = 1024 * 1024


class ManifestError(ValueError):
    """A manifest (or a model selection) that cannot be used as it is."""


class VerificationError(Exception):
    """Downloaded content differs from what the manifest promises."""


class DiskSpaceError(Exception):
    """Not enough free space for the files still to be fetched."""


def is_commit(revision: str) -> bool:
    return bool(COMMIT_RE.fullmatch(revision))


def is_repo_id(repo: Any) -> bool:
    """Whether repo is a Hugging Face model id "org/name" as huggingface_hub's validate_repo_id accepts it
    (no "..", no "--", no ".git" suffix): the one rule of the plan, the download and the cache layout."""
    return (
        isinstance(repo, str)
        and bool(REPO_ID_RE.fullmatch(repo))
        and ".." not in repo
        and "--" not in repo
        and not repo.endswith(".git")
    )


def validate_repo_id(repo: str) -> None:
    if not is_repo_id(repo):
        raise ManifestError(f"repo '{repo}' is not a Hugging Face model id of the form 'org/name'")


def repo_folder_name(repo: str) -> str:
    """Folder of a model repository in the hub cache (huggingface_hub's repo_folder_name)."""
    validate_repo_id(repo)
    return "models--" + repo.replace("/", "--")


def _validate_relative_path(path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in path:
        raise ManifestError(f"file path '{path}' must be relative, '/'-separated, without '.' or '..'")


@dataclass(frozen=True)
class RepoFile:
    """One file of a repository at one commit."""

    path: str
    size: int
    blob: str
    sha256: Optional[str] = None

    @property
    def lfs(self) -> bool:
        return bool(SHA256_RE.fullmatch(self.blob))

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256, "blob": self.blob}


@dataclass(frozen=True)
class Manifest:
    """Every file of ``repo`` at ``commit`` (not only the selected ones)."""

    repo: str
    commit: str
    files: tuple[RepoFile, ...]
    revision: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "repo": self.repo,
            "commit": self.commit,
            "revision": self.revision,
            "files": [f.to_dict() for f in sorted(self.files, key=lambda f: f.path)],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


def parse_manifest(data: Mapping[str, Any], source: str = "manifest") -> Manifest:
    """Validate a decoded manifest; every problem names ``source`` and the offending field."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{source}: 'format' must be {MANIFEST_FORMAT}, got {data.get('format')!r}")
    repo = data.get("repo")
    commit = data.get("commit")
    revision = data.get("revision")
    if not isinstance(repo, str):
        raise ManifestError(f"{source}: 'repo' must be a string")
    try:
        validate_repo_id(repo)
    except ManifestError as exc:
        raise ManifestError(f"{source}: {exc}") from None
    if not isinstance(commit, str) or not is_commit(commit):
        raise ManifestError(f"{source}: 'commit' must be a 40-character lowercase hex commit id, got {commit!r}")
    if revision is not None and not isinstance(revision, str):
        raise ManifestError(f"{source}: 'revision' must be a string or null")
    entries = data.get("files")
    if not isinstance(entries, Sequence) or isinstance(entries, str) or not entries:
        raise ManifestError(f"{source}: 'files' must be a non-empty list")
    files = []
    seen = set()
    for index, entry in enumerate(entries):
        where = f"{source}: files[{index}]"
        if not isinstance(entry, Mapping):
            raise ManifestError(f"{where} must be an object")
        path, size, blob, sha256 = entry.get("path"), entry.get("size"), entry.get("blob"), entry.get("sha256")
        if not isinstance(path, str):
            raise ManifestError(f"{where}: 'path' must be a string")
        try:
            _validate_relative_path(path)
        except ManifestError as exc:
            raise ManifestError(f"{where}: {exc}") from None
        if path in seen:
            raise ManifestError(f"{where}: duplicate path '{path}'")
        seen.add(path)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ManifestError(f"{where} ('{path}'): 'size' must be a non-negative integer")
        if not isinstance(blob, str) or not (COMMIT_RE.fullmatch(blob) or SHA256_RE.fullmatch(blob)):
            raise ManifestError(f"{where} ('{path}'): 'blob' must be a 40-hex git sha1 or a 64-hex sha256")
        if sha256 is not None and (not isinstance(sha256, str) or not SHA256_RE.fullmatch(sha256)):
            raise ManifestError(f"{where} ('{path}'): 'sha256' must be 64 lowercase hex characters")
        if SHA256_RE.fullmatch(blob):
            if sha256 is None:
                sha256 = blob
            elif sha256 != blob:
                raise ManifestError(f"{where} ('{path}'): an LFS 'blob' must equal its 'sha256'")
        files.append(RepoFile(path=path, size=size, blob=blob, sha256=sha256))
    return Manifest(repo=repo, commit=commit, files=tuple(files), revision=revision)


def load_manifest(text: str, source: str = "manifest") -> Manifest:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManifestError(f"{source}: not valid JSON ({exc})") from None
    return parse_manifest(data, source)


def _normalize_pattern(pattern: str) -> str:
    # huggingface_hub's filter_repo_objects: a pattern naming a folder ("onnx/") means all below it.
    return pattern + "*" if pattern.endswith("/") else pattern


def select_files(
    files: Iterable[RepoFile],
    allow_patterns: Optional[Sequence[str]] = None,
    ignore_patterns: Optional[Sequence[str]] = None,
    file: Optional[str] = None,
) -> list[RepoFile]:
    """Files to fetch, with huggingface_hub's pattern rules (fnmatchcase, '*' crosses '/').

    ``file`` names exactly one file (no globbing) and takes precedence over the patterns.
    """
    files = list(files)
    if file:
        chosen = [f for f in files if f.path == file]
        if not chosen:
            raise ManifestError(f"file '{file}' is not in the repository at this commit")
        return chosen
    allow = [_normalize_pattern(p) for p in allow_patterns] if allow_patterns else None
    ignore = [_normalize_pattern(p) for p in ignore_patterns or ()]
    chosen = [
        f
        for f in files
        if (allow is None or any(fnmatch.fnmatchcase(f.path, p) for p in allow))
        and not any(fnmatch.fnmatchcase(f.path, p) for p in ignore)
    ]
    if not chosen:
        raise ManifestError("allow_patterns/ignore_patterns select no file of the repository")
    return sorted(chosen, key=lambda f: f.path)


class CacheLayout:
    """Paths of one model repository inside ``$HF_HOME``."""

    def __init__(self, hf_home: str, repo: str, hub_cache: Optional[str] = None) -> None:
        """``hub_cache``: HF_HUB_CACHE when it is set apart from ``$HF_HOME/hub``."""
        self.hf_home = hf_home
        self.repo = repo
        self.hub_cache = hub_cache or os.path.join(hf_home, "hub")
        self.repo_dir = os.path.join(self.hub_cache, repo_folder_name(repo))
        self.blobs_dir = os.path.join(self.repo_dir, "blobs")
        # Records of completed downloads (full file lists): lets a re-run decide offline that a
        # commit is present. Kept outside hub/ so huggingface_hub's cache scan does not see them.
        self.records_dir = os.path.join(hf_home, "inferops", "manifests", repo_folder_name(repo))

    def snapshot_dir(self, commit: str) -> str:
        return os.path.join(self.repo_dir, "snapshots", commit)

    def snapshot_path(self, commit: str, path: str) -> str:
        return os.path.join(self.snapshot_dir(commit), *path.split("/"))

    def blob_path(self, blob: str) -> str:
        return os.path.join(self.blobs_dir, blob)

    def incomplete_path(self, blob: str) -> str:
        return self.blob_path(blob) + ".incomplete"

    def ref_path(self, revision: str) -> str:
        return os.path.join(self.repo_dir, "refs", *revision.split("/"))

    def record_path(self, commit: str) -> str:
        return os.path.join(self.records_dir, commit + ".json")

    def header_record_path(self, commit: str) -> str:
        """The summed tensor bytes of a single-file checkpoint's safetensors header, read over HTTP by the plan
        (beside the manifests, outside hub/)."""
        return os.path.join(self.hf_home, "inferops", "safetensors", repo_folder_name(self.repo), commit + ".json")

    def read_ref(self, revision: str) -> Optional[str]:
        try:
            with open(self.ref_path(revision), encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError:
            return None
        return value if is_commit(value) else None

    def read_record(self, commit: str) -> Optional[Manifest]:
        """The recorded full file list of ``commit``, or None when absent or unreadable."""
        try:
            with open(self.record_path(commit), encoding="utf-8") as handle:
                manifest = load_manifest(handle.read(), self.record_path(commit))
        except (OSError, ManifestError):
            return None
        return manifest if manifest.commit == commit and manifest.repo == self.repo else None

    def blob_present(self, file: RepoFile) -> bool:
        try:
            return os.path.getsize(self.blob_path(file.blob)) == file.size
        except OSError:
            return False

    def file_present(self, commit: str, file: RepoFile) -> bool:
        """The snapshot entry is a link to the right blob and the blob has the right size."""
        link = self.snapshot_path(commit, file.path)
        if not os.path.islink(link):
            return False
        target = os.path.normpath(os.path.join(os.path.dirname(link), os.readlink(link)))
        return target == os.path.normpath(self.blob_path(file.blob)) and self.blob_present(file)

    def missing_files(self, commit: str, files: Iterable[RepoFile]) -> list[RepoFile]:
        return [f for f in files if not self.file_present(commit, f)]

    def link_snapshot(self, commit: str, file: RepoFile) -> bool:
        """Point snapshots/<commit>/<path> at the blob with a relative link, as huggingface_hub does."""
        link = self.snapshot_path(commit, file.path)
        target = os.path.relpath(self.blob_path(file.blob), os.path.dirname(link))
        if os.path.islink(link) and os.readlink(link) == target:
            return False
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
        return True

    def write_ref(self, revision: str, commit: str) -> bool:
        if self.read_ref(revision) == commit:
            return False
        write_atomic(self.ref_path(revision), commit)
        return True

    def write_record(self, manifest: Manifest) -> bool:
        path = self.record_path(manifest.commit)
        text = manifest.to_json()
        try:
            with open(path, encoding="utf-8") as handle:
                if handle.read() == text:
                    return False
        except OSError:
            pass
        write_atomic(path, text)
        return True


def write_atomic(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def file_hashes(path: str) -> tuple[str, str]:
    """(sha256, git blob sha1) of a file, read once."""
    sha256 = hashlib.sha256()
    git_sha1 = hashlib.sha1()
    git_sha1.update(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_SIZE), b""):
            sha256.update(chunk)
            git_sha1.update(chunk)
    return sha256.hexdigest(), git_sha1.hexdigest()


def verify_file(path: str, file: RepoFile, origin: str) -> None:
    """Raise VerificationError naming the file, the source and both values on any mismatch."""
    size = os.path.getsize(path)
    if size != file.size:
        raise VerificationError(f"'{file.path}' from {origin}: size {size} bytes, manifest says {file.size}")
    sha256, git_sha1 = file_hashes(path)
    if file.sha256 is not None and sha256 != file.sha256:
        raise VerificationError(f"'{file.path}' from {origin}: sha256 {sha256}, manifest says {file.sha256}")
    if not file.lfs and git_sha1 != file.blob:
        raise VerificationError(f"'{file.path}' from {origin}: git blob id {git_sha1}, manifest says {file.blob}")


def bytes_to_fetch(layout: CacheLayout, files: Iterable[RepoFile]) -> int:
    """Bytes still to transfer: blobs already in the cache (shared with another revision) cost nothing,
    a partial ``.incomplete`` download costs only its remainder."""
    total = 0
    for file in {f.blob: f for f in files}.values():
        if layout.blob_present(file):
            continue
        try:
            partial = os.path.getsize(layout.incomplete_path(file.blob))
        except OSError:
            partial = 0
        total += max(file.size - partial, 0) if partial <= file.size else file.size
    return total


def free_bytes(path: str) -> int:
    """Free bytes for an unprivileged writer on the filesystem that holds ``path`` (or its nearest parent)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    stats = os.statvfs(probe)
    return stats.f_bavail * stats.f_frsize


def check_disk_space(needed: int, free: int, reserve: int, where: str) -> None:
    if needed + reserve > free:
        raise DiskSpaceError(
            f"{where} has {free} bytes free; the download needs {needed} bytes plus the reserve of"
            f" {reserve} bytes (model_download_reserve_bytes). Free space or point model_download_hf_home"
            " at a larger filesystem."
        )


def mirror_file_url(base_url: str, repo: str, commit: str, path: str) -> str:
    from urllib.parse import quote

    return f"{base_url.rstrip('/')}/{repo}/{commit}/{quote(path)}"


def mirror_manifest_url(base_url: str, repo: str, revision: str) -> str:
    from urllib.parse import quote

    return f"{base_url.rstrip('/')}/{repo}/manifests/{quote(revision)}.json"


# opener(url, headers) -> a response with .status (or .getcode()), .headers and .read(n).
Opener = Callable[[str, Mapping[str, str]], Any]


def fetch_blob(layout: CacheLayout, file: RepoFile, url: str, opener: Opener) -> int:
    """Download one blob into the cache, resuming ``blobs/<blob>.incomplete``; returns bytes transferred.

    The blob is verified (size, sha256, git blob id) before it is renamed into place; on a mismatch
    the partial file is removed so that the next run starts over, and VerificationError is raised.
    """
    if layout.blob_present(file):
        return 0
    os.makedirs(layout.blobs_dir, exist_ok=True)
    incomplete = layout.incomplete_path(file.blob)
    offset = os.path.getsize(incomplete) if os.path.exists(incomplete) else 0
    if offset > file.size:
        os.unlink(incomplete)
        offset = 0
    transferred = 0
    if offset < file.size or file.size == 0:
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        response = opener(url, headers)
        status = getattr(response, "status", None) or response.getcode()
        mode = "ab" if offset and status == 206 else "wb"  # a server that ignores Range sends it all
        with open(incomplete, mode) as handle:
            for chunk in iter(lambda: response.read(CHUNK_SIZE), b""):
                handle.write(chunk)
                transferred += len(chunk)
    try:
        verify_file(incomplete, file, url)
    except VerificationError:
        os.unlink(incomplete)
        raise
    os.replace(incomplete, layout.blob_path(file.blob))
    return transferred


def manifest_from_directory(
    src: str,
    repo: str,
    commit: str,
    revision: Optional[str] = None,
    lfs_patterns: Sequence[str] = DEFAULT_LFS_PATTERNS,
) -> Manifest:
    """Manifest of a cache snapshot (links into ``blobs/`` keep their blob names) or of a plain tree
    (blob named by sha256 for files matching ``lfs_patterns`` or above 10 MiB, else by git blob id)."""
    validate_repo_id(repo)
    if not is_commit(commit):
        raise ManifestError(f"commit '{commit}' must be a 40-character lowercase hex commit id")
    if not os.path.isdir(src):
        raise ManifestError(f"'{src}' is not a directory")
    files = []
    for root, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, src).replace(os.sep, "/")
            if not os.path.isfile(full):
                raise ManifestError(f"'{full}' is not a regular file (dangling link?)")
            sha256, git_sha1 = file_hashes(full)
            size = os.path.getsize(full)
            linked_blob = os.path.basename(os.path.realpath(full)) if os.path.islink(full) else None
            if linked_blob in (sha256, git_sha1):
                blob = linked_blob
            elif size > LFS_SIZE_THRESHOLD or any(fnmatch.fnmatchcase(rel, p) for p in lfs_patterns):
                blob = sha256
            else:
                blob = git_sha1
            files.append(RepoFile(path=rel, size=size, blob=blob, sha256=sha256))
    if not files:
        raise ManifestError(f"'{src}' holds no files")
    return Manifest(repo=repo, commit=commit, files=tuple(files), revision=revision)


def snapshot_commit(src: str) -> Optional[str]:
    """The commit of a ``.../snapshots/<commit>`` directory, or None for any other directory."""
    src = os.path.normpath(src)
    name = os.path.basename(src)
    if is_commit(name) and os.path.basename(os.path.dirname(src)) == "snapshots":
        return name
    return None
