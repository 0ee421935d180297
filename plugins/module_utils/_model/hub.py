# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A checkpoint's own files for the plan, found on the controller: the Hugging Face cache, then the Hub.

The plan describes a model from, in this order (docs/plan.md "Where the model comes from"):

1. ``inferops_model.config`` / ``config_file`` (the caller's business: this module is not asked);
2. the standard Hugging Face cache (``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
   ``~/.cache/huggingface/hub``; the layout of ``hf_cache.CacheLayout``): ``refs/<branch>`` gives the commit,
   ``snapshots/<commit>/`` the files;
3. the Hub, or the mirror that ``HF_ENDPOINT`` names, through ``huggingface_hub`` when it is importable: one
   metadata request resolves the revision to its commit and lists the files, then each file the plan reads
   is downloaded into the same cache (so the next plan is offline) and, for a single-file safetensors
   checkpoint, the header alone is read with range requests;
4. the catalogue (the caller's business again, when ``resolve`` returns None).

Files read: ``config.json``, ``hf_quant_config.json`` (ModelOpt), ``preprocessor_config.json`` /
``processor_config.json`` and ``model.safetensors.index.json`` (``metadata.total_size``: the exact bytes of
every tensor) or the header of ``model.safetensors``. Every network call has a timeout; a ``ModelResolver``
resolves each (repo, revision) once however many hosts use it, and after a connection failure it stops
asking for the rest of the run. A token (``HF_TOKEN`` or a vaulted variable) goes to the requests only:
it is never part of a result or a message.

Plain typed Python: no Ansible imports; ``huggingface_hub`` is optional and imported lazily.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.safety import redact
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.gguf import (
    MAX_HEADER_BYTES,
    GgufError,
    GgufTruncated,
    parse_gguf,
    read_gguf,
    shape_from_gguf,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import (
    CacheLayout,
    is_commit,
    is_repo_id,
    write_atomic,
)

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 10.0
CONFIG = "config.json"
HF_QUANT_CONFIG = "hf_quant_config.json"
INDEX = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json")
# What the plan reads of a checkpoint, besides the weights (index or single-file header).
SMALL_FILES = (CONFIG, HF_QUANT_CONFIG, *PROCESSOR_FILES, INDEX)
# A safetensors header larger than this is not a header (the format caps it at 100 MB).
_MAX_HEADER_BYTES = 100_000_000
# Shard headers are small (a few MiB for thousands of tensors): an index total further below the shards'
# file sizes than this, per shard, does not describe these files.
_HEADER_ALLOWANCE_PER_SHARD = 16 * 1024 * 1024
_TRUE = ("1", "on", "yes", "true")
_REPO_VAR = "inferops_model.repo"
_FILE_VAR = "inferops_model.file"
_GGUF_FIRST_RANGE = 1024 * 1024
_REVISION_VAR = "inferops_model.revision"
WAYS_TO_PROVIDE = (
    "download it once on a machine with access (`hf download REPO --include '*.json'` fills the cache, or "
    "copy its cache folder models--ORG--NAME to HF_HUB_CACHE), give the checkpoint's config.json as "
    "inferops_model.config or inferops_model.config_file, or set inferops_model.base_model to a catalogued "
    "architecture (docs/plan.md lists them)"
)


class ModelSourceError(ValueError):
    """The checkpoint's files cannot describe the model; the message names the file and the variable."""


class _Unreachable(Exception):
    """The Hub (or mirror) did not answer: connection refused, DNS, timeout, a server error."""


class _Gated(Exception):
    """401/403: a gated or private repository, without a token that grants access."""


class _NotFound(Exception):
    """404: no such repository, revision or file."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(message)
        self.what = what  # "repo", "revision" or "file"


@dataclass(frozen=True)
class Checkpoint:
    """What the plan reads of one (repo, revision), and where each fact came from."""

    repo: str
    revision: str
    commit: str
    snapshot: str  # the cache folder snapshots/<commit>/ holding the files read
    config: Dict[str, Any] = field(hash=False, compare=False)
    config_source: str = ""  # "cache <path>" or "<url>", with the commit
    weights_bytes: Optional[int] = None  # every tensor of the checkpoint (index total_size, or header sum)
    weights_source: Optional[str] = None
    notes: Tuple[str, ...] = ()  # e.g. "offline: ...", "gated: ... (catalogue used)"

    @property
    def config_file(self) -> str:
        return os.path.join(self.snapshot, CONFIG)

    def source(self) -> Dict[str, Any]:
        """The report's ``model.source`` entry (no secret: paths, URLs and the commit only)."""
        return {
            "commit": self.commit,
            "config_source": self.config_source,
            "weights_source": self.weights_source,
        }


@dataclass(frozen=True)
class Unresolved:
    """No checkpoint files for (repo, revision): why, so that the caller can fall back or refuse."""

    reason: str  # "offline", "unreachable", "gated", "no-client"
    message: str


@dataclass(frozen=True)
class GgufCheckpoint:
    """A GGUF file of a repository: its size (what Ollama loads) and the shape its header gives."""

    repo: str
    revision: str
    commit: str
    file: str
    file_bytes: int
    shape: Dict[str, Any] = field(hash=False, compare=False)
    source: str = ""  # the cache path or URL, with the commit


# --------------------------------------------------------------------------------------------- settings


def hub_cache_dir(env: Mapping[str, str]) -> str:
    """The folder huggingface_hub caches models in, from the controller's environment."""
    if env.get("HF_HUB_CACHE"):
        return os.path.expanduser(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return os.path.join(os.path.expanduser(env["HF_HOME"]), "hub")
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "huggingface", "hub")


def _layout(hub_cache: str, repo: str) -> CacheLayout:
    return CacheLayout(os.path.dirname(hub_cache.rstrip("/")) or "/", repo, hub_cache=hub_cache)


def _header_record(hub_cache: str, repo: str, commit: str) -> str:
    return _layout(hub_cache, repo).header_record_path(commit)


def _gguf_record(hub_cache: str, repo: str, commit: str, file: str) -> str:
    """The shape and size of a GGUF file whose header was read over HTTP (the file itself is not downloaded)."""
    folder = os.path.dirname(_header_record(hub_cache, repo, commit))
    return os.path.join(os.path.dirname(folder), "gguf", os.path.basename(folder), commit, file + ".json")


def _check_repo(repo: str) -> None:
    if not is_repo_id(repo):
        raise ModelSourceError(
            f"{_REPO_VAR} {repo!r} is not a Hugging Face model id such as Qwen/Qwen3-8B (no '..', no '--')"
        )


# --------------------------------------------------------------------------------------------- reading


def _read_json(path: str, name: str, repo: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except ValueError as exc:
        raise ModelSourceError(
            f"{_REPO_VAR} {repo!r}: {name} at {path} is not valid JSON ({exc}): delete it from the cache so that "
            "the next plan fetches it again, or give the config as inferops_model.config"
        ) from None
    except OSError as exc:
        raise ModelSourceError(f"{_REPO_VAR} {repo!r}: {name} at {path} cannot be read ({exc.strerror})") from None


def safetensors_header_bytes(head: bytes, name: str, file_size: Optional[int] = None) -> int:
    """Bytes of every tensor of a safetensors file from its first 8 + N bytes (N: the header's length).

    Raises ModelSourceError naming the file when the header is cut short, not JSON, or its offsets run
    past the file.
    """
    if len(head) < 8:
        raise ModelSourceError(f"{name}: the safetensors header is cut short ({len(head)} of 8 length bytes)")
    (length,) = struct.unpack("<Q", head[:8])
    if length > _MAX_HEADER_BYTES:
        raise ModelSourceError(f"{name}: header length {length} is not a safetensors header")
    if len(head) < 8 + length:
        raise ModelSourceError(f"{name}: the safetensors header is cut short ({len(head) - 8} of {length} bytes)")
    try:
        header = json.loads(head[8 : 8 + length])
    except ValueError as exc:
        raise ModelSourceError(f"{name}: the safetensors header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise ModelSourceError(f"{name}: the safetensors header is not a JSON object")
    end = 0
    for tensor, info in header.items():
        if tensor == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            raise ModelSourceError(f"{name}: tensor {tensor!r} has no data_offsets [begin, end]")
        end = max(end, offsets[1])
    if file_size is not None and 8 + length + end != file_size:
        raise ModelSourceError(
            f"{name}: the header's tensors end at byte {8 + length + end} but the file has {file_size} bytes"
        )
    return end


def _read_local_header(path: str, name: str) -> int:
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) == 8:
            (length,) = struct.unpack("<Q", head)
            head += handle.read(min(length, _MAX_HEADER_BYTES + 1))
    return safetensors_header_bytes(head, name, os.path.getsize(path))


def index_total(index: Any, name: str, shard_sizes: Optional[Mapping[str, int]] = None) -> int:
    """``metadata.total_size`` of a safetensors index, checked against the shards' file sizes when known."""
    total = index.get("metadata", {}).get("total_size") if isinstance(index, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise ModelSourceError(f"{name} has no positive integer metadata.total_size: is it a safetensors index?")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ModelSourceError(f"{name} has no weight_map")
    shards = sorted(set(str(v) for v in weight_map.values()))
    if shard_sizes:
        missing = [s for s in shards if s not in shard_sizes]
        if missing:
            raise ModelSourceError(f"{name} maps tensors to {', '.join(missing[:3])}, which the repository lacks")
        files = sum(shard_sizes[s] for s in shards)
        if not files - _HEADER_ALLOWANCE_PER_SHARD * len(shards) <= total <= files:
            raise ModelSourceError(
                f"{name} says metadata.total_size {total} bytes, but its {len(shards)} shard files hold {files} "
                "bytes (headers included): the index does not describe these files"
            )
    return total


@dataclass
class _Origin:
    """How the files of one resolution were obtained, for the sources in the report."""

    where: str  # "cache" or the endpoint URL
    via_ref: Optional[str] = None  # the branch or tag resolved through refs/ or the Hub
    shard_sizes: Optional[Dict[str, int]] = None  # from the Hub's file list
    header_total: Optional[int] = None  # single-file checkpoint, read over HTTP

    def describe(self, repo: str, commit: str, path: str, snapshot: str) -> str:
        name = os.path.relpath(path, snapshot)
        ref = f" ({self.via_ref} -> {commit})" if self.via_ref else f" (commit {commit})"
        if self.where == "cache":
            return f"cache {path}{ref}"
        return f"{self.where.rstrip('/')}/{repo}/resolve/{commit}/{name}{ref}"


def _checkpoint(
    repo: str, revision: str, commit: str, snapshot: str, origin: _Origin, record: str, notes: Tuple[str, ...]
) -> Checkpoint:
    """Read the files of snapshots/<commit>/ (config.json there) into a Checkpoint."""
    config_path = os.path.join(snapshot, CONFIG)
    config = _read_json(config_path, CONFIG, repo)
    if not isinstance(config, dict):
        raise ModelSourceError(f"{_REPO_VAR} {repo!r}: {CONFIG} at {config_path} does not hold a JSON object")
    architectures = config.get("architectures")
    if not (isinstance(architectures, list) and architectures and all(isinstance(a, str) for a in architectures)):
        raise ModelSourceError(
            f"{_REPO_VAR} {repo!r}: {CONFIG} at {config_path} has no 'architectures' list (the model class vLLM "
            "loads): is this a model's config.json? Give the right one as inferops_model.config_file"
        )
    quant_path = os.path.join(snapshot, HF_QUANT_CONFIG)
    if not config.get("quantization_config") and os.path.isfile(quant_path):
        # ModelOpt <= 0.29 keeps the scheme there; vLLM reads it only when config.json has none.
        config = {**config, "quantization_config": _read_json(quant_path, HF_QUANT_CONFIG, repo)}
    try:
        ModelArchitecture.from_config(config)
    except ValueError as exc:
        raise ModelSourceError(f"{_REPO_VAR} {repo!r}: {config_path}: {exc}") from None
    weights_bytes, weights_source = None, None
    index_path = os.path.join(snapshot, INDEX)
    single_path = os.path.join(snapshot, SINGLE_FILE)
    if os.path.isfile(index_path):
        sizes = origin.shard_sizes
        if sizes is None:  # shards present in the cache: their sizes on disk
            index = _read_json(index_path, INDEX, repo)
            shards = set(str(v) for v in (index.get("weight_map") or {}).values()) if isinstance(index, dict) else set()
            local = {s: os.path.join(snapshot, s) for s in shards}
            sizes = {s: os.path.getsize(p) for s, p in local.items() if os.path.isfile(p)} or None
            sizes = sizes if sizes and len(sizes) == len(shards) else None
        weights_bytes = index_total(_read_json(index_path, INDEX, repo), f"{_REPO_VAR} {repo!r}: {index_path}", sizes)
        weights_source = f"safetensors index metadata.total_size, {origin.describe(repo, commit, index_path, snapshot)}"
    elif os.path.isfile(single_path):
        weights_bytes = _read_local_header(single_path, f"{_REPO_VAR} {repo!r}: {single_path}")
        weights_source = f"safetensors header, {origin.describe(repo, commit, single_path, snapshot)}"
    elif origin.header_total is not None:
        weights_bytes = origin.header_total
        weights_source = f"safetensors header (range request), {origin.describe(repo, commit, single_path, snapshot)}"
    elif os.path.isfile(record):
        data = _read_json(record, "safetensors header record", repo)
        if isinstance(data, dict) and isinstance(data.get("tensor_bytes"), int):
            weights_bytes = data["tensor_bytes"]
            weights_source = f"safetensors header of {data.get('url', SINGLE_FILE)} (commit {commit}), kept in {record}"
    return Checkpoint(
        repo=repo,
        revision=revision,
        commit=commit,
        snapshot=snapshot,
        config=config,
        config_source=origin.describe(repo, commit, config_path, snapshot),
        weights_bytes=weights_bytes,
        weights_source=weights_source,
        notes=notes,
    )


# --------------------------------------------------------------------------------------------- the Hub


class HubClient:
    """The requests of one plan run to the Hub or a mirror, through huggingface_hub (imported lazily)."""

    def __init__(self, endpoint: str, token: Optional[str], timeout: float, hub_cache: str) -> None:
        import huggingface_hub  # noqa: F401  (ImportError: the caller plans without the Hub)

        self.endpoint = endpoint.rstrip("/")
        self.token: Any = token if token else False  # False: never a token file or another variable
        self.timeout = timeout
        self.hub_cache = hub_cache

    def _call(self, function: Callable[[], Any]) -> Any:
        from huggingface_hub import errors

        try:
            return function()
        except errors.GatedRepoError as exc:
            raise _Gated(str(exc)) from None
        except errors.RevisionNotFoundError as exc:
            raise _NotFound("revision", str(exc)) from None
        except errors.EntryNotFoundError as exc:
            raise _NotFound("file", str(exc)) from None
        except errors.HfHubHTTPError as exc:  # RepositoryNotFoundError (401 without a token too), 5xx, ...
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status in (401, 403):
                raise _Gated(str(exc)) from None
            if isinstance(exc, errors.RepositoryNotFoundError):
                raise _NotFound("repo", str(exc)) from None
            raise _Unreachable(f"HTTP {status}: {exc}") from None
        except Exception as exc:  # connection refused, DNS, timeouts, TLS, a mirror speaking something else
            raise _Unreachable(f"{type(exc).__name__}: {exc}") from None

    def files(self, repo: str, revision: str) -> Tuple[str, Dict[str, Optional[int]]]:
        """(commit, {path: size}) of the repository at revision: one request."""
        from huggingface_hub import HfApi

        api = HfApi(endpoint=self.endpoint, token=self.token)
        info = self._call(
            lambda: api.model_info(repo, revision=revision, files_metadata=True, timeout=self.timeout, token=self.token)
        )
        commit = getattr(info, "sha", None)
        if not isinstance(commit, str) or not is_commit(commit):
            raise _Unreachable(f"{self.endpoint} answered without the commit of {repo}@{revision}")
        files = {s.rfilename: getattr(s, "size", None) for s in (info.siblings or [])}
        return commit, files

    def download(self, repo: str, commit: str, path: str) -> str:
        """Fetch one file at commit into the standard cache; its snapshot path."""
        from huggingface_hub import hf_hub_download

        return str(
            self._call(
                lambda: hf_hub_download(
                    repo,
                    path,
                    revision=commit,
                    cache_dir=self.hub_cache,
                    endpoint=self.endpoint,
                    token=self.token,
                    etag_timeout=self.timeout,
                )
            )
        )

    def read_range(self, repo: str, commit: str, path: str, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of a file at commit: one HTTP range request."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        url = hf_hub_url(repo, path, revision=commit, endpoint=self.endpoint)
        headers = {**build_hf_headers(token=self.token), "Range": f"bytes={start}-{end}"}

        def get() -> bytes:
            response = get_session().get(url, headers=headers, timeout=self.timeout)
            hf_raise_for_status(response)
            return bytes(response.content)

        return bytes(self._call(get))

    def header_total(self, repo: str, commit: str, path: str) -> int:
        """Bytes of every tensor of a single safetensors file, read with range requests (header only)."""
        from huggingface_hub import HfApi

        api = HfApi(endpoint=self.endpoint, token=self.token)
        metadata = self._call(
            lambda: api.parse_safetensors_file_metadata(
                repo, path, revision=commit, token=self.token, timeout=self.timeout
            )
        )
        return max((int(t.data_offsets[1]) for t in metadata.tensors.values()), default=0)


# --------------------------------------------------------------------------------------------- resolver


class ModelResolver:
    """Resolves (repo, revision) to the checkpoint's files, once per plan run."""

    def __init__(
        self,
        hub_cache: str,
        endpoint: str = DEFAULT_ENDPOINT,
        offline: bool = False,
        token: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        client_factory: Optional[Callable[[], Any]] = None,
    ) -> None:
        self.hub_cache = hub_cache
        self.endpoint = endpoint.rstrip("/")
        self.offline = offline
        self._token = token
        self.timeout = timeout
        self._client_factory = client_factory
        self._client: Any = None
        self._unreachable: Optional[str] = None  # why the Hub stopped being asked during this run
        self._memo: Dict[Tuple[str, str], Any] = {}

    def __repr__(self) -> str:  # never the token
        return f"ModelResolver(hub_cache={self.hub_cache!r}, endpoint={self.endpoint!r}, offline={self.offline})"

    @classmethod
    def from_environment(
        cls, env: Mapping[str, str], token: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> ModelResolver:
        """The controller's settings: HF_HUB_CACHE / HF_HOME, HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN."""
        return cls(
            hub_cache=hub_cache_dir(env),
            endpoint=env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT,
            offline=str(env.get("HF_HUB_OFFLINE", "")).strip().lower() in _TRUE,
            token=token or env.get("HF_TOKEN") or None,
            timeout=timeout,
        )

    def resolve(self, repo: str, revision: str) -> Any:
        """A Checkpoint, or Unresolved (offline, unreachable, gated, no client), memoised per (repo, revision).

        Raises ModelSourceError for a repo id the Hub cannot have, a revision that does not exist, a
        repository that does not exist, or files that cannot describe the model.
        """
        return self._memoised((repo, revision), lambda: self._resolve(repo, revision))

    def resolve_gguf(self, repo: str, revision: str, file: str) -> Any:
        """A GgufCheckpoint for ``file`` (cache: the file or a record of its header; else its header read from
        the Hub with range requests), or Unresolved; memoised per (repo, revision, file). Raises
        ModelSourceError as ``resolve`` does, and for a file the repository lacks or a header cut short."""
        return self._memoised((repo, revision, file), lambda: self._resolve_gguf(repo, revision, file))

    def _memoised(self, key: Tuple[str, ...], compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            try:
                self._memo[key] = compute()
            except ModelSourceError as exc:
                self._memo[key] = ModelSourceError(redact(str(exc)))
        result = self._memo[key]
        if isinstance(result, ModelSourceError):
            raise result
        return result

    def _resolve(self, repo: str, revision: str) -> Any:
        _check_repo(repo)
        cached = self._from_cache(repo, revision)
        if cached is not None:
            return cached
        return self._from_network(repo, revision, f"{repo}@{revision}", lambda c: self._from_hub(c, repo, revision))

    def _resolve_gguf(self, repo: str, revision: str, file: str) -> Any:
        _check_repo(repo)
        layout = _layout(self.hub_cache, repo)
        commit = revision if is_commit(revision) else layout.read_ref(revision)
        if commit is not None:
            path = layout.snapshot_path(commit, file)
            if os.path.isfile(path):
                return self._gguf_from_file(repo, revision, commit, file, path)
            record = _gguf_record(self.hub_cache, repo, commit, file)
            if os.path.isfile(record):
                data = _read_json(record, "GGUF header record", repo)
                if isinstance(data, dict) and isinstance(data.get("shape"), dict) and isinstance(data.get("size"), int):
                    source = f"GGUF header of {data.get('url', file)} (commit {commit}), kept in {record}"
                    return GgufCheckpoint(repo, revision, commit, file, data["size"], data["shape"], source)
        what = f"{repo}@{revision}/{file}"
        return self._from_network(repo, revision, what, lambda c: self._gguf_from_hub(c, repo, revision, file))

    def _from_network(self, repo: str, revision: str, what: str, fetch: Callable[[Any], Any]) -> Any:
        """What ``fetch(client)`` reads from the Hub, or Unresolved saying why the Hub was not (or no longer) asked."""
        if self.offline:
            return Unresolved("offline", f"HF_HUB_OFFLINE is set and {self.hub_cache} has no {what}")
        if self._unreachable:
            return Unresolved("unreachable", self._unreachable)
        client = self._hub_client()
        if client is None:
            return Unresolved(
                "no-client",
                f"{what} is not in {self.hub_cache} and huggingface_hub is not installed on the controller "
                "to fetch it (pip install huggingface_hub)",
            )
        try:
            return fetch(client)
        except _Unreachable as exc:
            self._unreachable = redact(f"{self.endpoint} did not answer ({exc})")[:400]
            return Unresolved("unreachable", self._unreachable)
        except _Gated:
            return Unresolved("gated", self._gated_message(repo))
        except _NotFound as exc:
            raise self._not_found(exc, repo, revision) from None

    def _gguf_from_file(self, repo: str, revision: str, commit: str, file: str, path: str) -> GgufCheckpoint:
        try:
            shape = shape_from_gguf(read_gguf(path, f"{_FILE_VAR} {file!r} at {path}"))
        except GgufError as exc:
            raise ModelSourceError(f"{exc} ({_REPO_VAR} {repo!r})") from None
        source = f"cache {path} (commit {commit})"
        return GgufCheckpoint(repo, revision, commit, file, os.path.getsize(path), shape, source)

    def _gguf_from_hub(self, client: Any, repo: str, revision: str, file: str) -> GgufCheckpoint:
        commit, files = client.files(repo, revision)
        size = files.get(file, -1)
        if file not in files:
            ggufs = sorted(name for name in files if name.endswith(".gguf"))[:8]
            raise ModelSourceError(
                f"{_FILE_VAR} {file!r} is not in {repo} at {revision} ({commit}); its GGUF files: "
                f"{', '.join(ggufs) or 'none'}"
            )
        url = f"{self.endpoint}/{repo}/resolve/{commit}/{file}"
        name = f"{_FILE_VAR} {file!r} at {url}"
        data = b""
        length = _GGUF_FIRST_RANGE
        while True:
            if isinstance(size, int) and size >= 0:
                length = min(length, size)
            data += client.read_range(repo, commit, file, len(data), length - 1) if length > len(data) else b""
            try:
                shape = shape_from_gguf(parse_gguf(data, name))
                break
            except GgufTruncated as exc:
                if len(data) < length or length >= MAX_HEADER_BYTES or (isinstance(size, int) and length >= size):
                    raise ModelSourceError(f"{exc} ({_REPO_VAR} {repo!r})") from None
                length = min(length * 4, MAX_HEADER_BYTES)
            except GgufError as exc:
                raise ModelSourceError(f"{exc} ({_REPO_VAR} {repo!r})") from None
        if not isinstance(size, int) or size < 0:
            raise ModelSourceError(f"{name}: the Hub did not list the file's size")
        write_atomic(
            _gguf_record(self.hub_cache, repo, commit, file),
            json.dumps({"size": size, "shape": shape, "url": url}) + "\n",
        )
        if commit != revision:
            _layout(self.hub_cache, repo).write_ref(revision, commit)
        return GgufCheckpoint(
            repo,
            revision,
            commit,
            file,
            size,
            shape,
            f"GGUF header (range requests) of {url} ({revision} -> {commit})"
            if commit != revision
            else f"GGUF header (range requests) of {url} (commit {commit})",
        )

    def _gated_message(self, repo: str) -> str:
        return (
            f"{_REPO_VAR} {repo!r} is gated or private at {self.endpoint} (HTTP 401/403; the Hub answers the same for "
            f"a repository that does not exist, so check the id first): accept its licence on "
            f"{self.endpoint}/{repo} with your account, then give the plan a read token as the controller's "
            "HF_TOKEN environment variable or the vaulted variable inferops_hf_token (it is used for the "
            "request only)"
        )

    def _not_found(self, exc: Any, repo: str, revision: str) -> ModelSourceError:
        if exc.what == "revision":
            return ModelSourceError(
                f"{_REVISION_VAR} {revision!r} does not exist in {repo} at {self.endpoint}: pin a commit sha "
                f"from {self.endpoint}/{repo}/commits/main, or a branch or tag of the repository"
            )
        if exc.what == "repo":
            return ModelSourceError(
                f"{_REPO_VAR} {repo!r} does not exist at {self.endpoint} (or is private: give a token as "
                "HF_TOKEN or inferops_hf_token): check the id on the model's page, such as Qwen/Qwen3-8B"
            )
        return ModelSourceError(f"{_REPO_VAR} {repo!r}@{revision}: a file listed by the Hub is missing")

    def _hub_client(self) -> Any:
        if self._client is None:
            try:
                factory = self._client_factory or (
                    lambda: HubClient(self.endpoint, self._token, self.timeout, self.hub_cache)
                )
                self._client = factory()
            except ImportError:
                self._client = False
        return self._client or None

    def _from_cache(self, repo: str, revision: str) -> Optional[Checkpoint]:
        layout = _layout(self.hub_cache, repo)
        commit = revision if is_commit(revision) else layout.read_ref(revision)
        if commit is None:
            return None
        snapshot = layout.snapshot_dir(commit)
        if not os.path.isfile(os.path.join(snapshot, CONFIG)):
            return None
        origin = _Origin("cache", via_ref=None if commit == revision else f"refs/{revision}")
        notes = ("offline (HF_HUB_OFFLINE): read from the cache",) if self.offline else ()
        return _checkpoint(
            repo, revision, commit, snapshot, origin, _header_record(self.hub_cache, repo, commit), notes
        )

    def _from_hub(self, client: Any, repo: str, revision: str) -> Checkpoint:
        commit, files = client.files(repo, revision)
        if CONFIG not in files:
            ggufs = sorted(name for name in files if name.endswith(".gguf"))
            if ggufs:
                raise ModelSourceError(
                    f"{_REPO_VAR} {repo!r} has no {CONFIG} at {revision} ({commit}) but GGUF files "
                    f"({', '.join(ggufs[:8])}{', ...' if len(ggufs) > 8 else ''}): set inferops_model.file to the "
                    f"one to serve, such as {ggufs[0]!r} (the plan reads its header), or give "
                    "inferops_model.config_file"
                )
            raise ModelSourceError(
                f"{_REPO_VAR} {repo!r} has no {CONFIG} at {revision} ({commit}): give inferops_model.config_file, "
                "or inferops_model.file for a GGUF file"
            )
        snapshot = ""
        for name in SMALL_FILES:
            if name in files:
                snapshot = os.path.dirname(client.download(repo, commit, name))
        origin = _Origin(self.endpoint, via_ref=None if commit == revision else revision)
        if INDEX in files:
            sizes = {k: v for k, v in files.items() if k.endswith(".safetensors")}
            # checked against the index only when the Hub (or mirror) lists every file's size
            origin.shard_sizes = sizes if all(isinstance(v, int) for v in sizes.values()) else None
        elif SINGLE_FILE in files:
            origin.header_total = client.header_total(repo, commit, SINGLE_FILE)
            url = f"{self.endpoint}/{repo}/resolve/{commit}/{SINGLE_FILE}"
            write_atomic(
                _header_record(self.hub_cache, repo, commit),
                json.dumps({"tensor_bytes": origin.header_total, "url": url}) + "\n",
            )
        layout = _layout(self.hub_cache, repo)
        if commit != revision:
            layout.write_ref(revision, commit)  # the next plan finds the branch offline
        snapshot = snapshot or layout.snapshot_dir(commit)
        return _checkpoint(repo, revision, commit, snapshot, origin, _header_record(self.hub_cache, repo, commit), ())
