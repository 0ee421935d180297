"""A local stand-in for the Hugging Face Hub, for the tests of _model/hub.py (CI has no Hub).

It answers the requests huggingface_hub really makes (2.x: HfApi.model_info, hf_hub_download,
parse_safetensors_file_metadata), with the headers it requires:

- ``GET /api/models/{org}/{name}/revision/{revision}``: ``sha`` and ``siblings`` (``rfilename``, ``size``,
  ``blobId``); 404 with ``X-Error-Code: RepoNotFound`` / ``RevisionNotFound``; 401 / 403 with
  ``X-Error-Code: GatedRepo`` for a gated repository without (or with a wrong) token;
- ``HEAD`` / ``GET /{org}/{name}/resolve/{revision}/{path}``: ``X-Repo-Commit``, ``ETag`` (git blob sha1 of
  small files, ``X-Linked-Etag`` sha256 and ``X-Linked-Size`` of LFS files), ``Content-Length``,
  ``Accept-Ranges``; ``Range: bytes=a-b`` answered with 206 and ``Content-Range``; a missing file is a 404
  with ``X-Error-Code: EntryNotFound``.

Every request is recorded in ``requests`` as (method, path, range) so that the tests can count them.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")


@dataclass
class Repo:
    """One repository: branches and tags -> commit, commit -> {path: content}; gated repos need ``token``."""

    refs: Dict[str, str] = field(default_factory=dict)
    commits: Dict[str, Dict[str, bytes]] = field(default_factory=dict)
    token: Optional[str] = None  # set: gated, only this bearer token gets the files


class HubServer:
    def __init__(self) -> None:
        self.repos: Dict[str, Repo] = {}
        self.requests: List[Tuple[str, str, Optional[str]]] = []
        self.authorizations: List[Optional[str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                server._handle(self, head=True)

            def do_GET(self) -> None:
                server._handle(self, head=False)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> HubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # ------------------------------------------------------------------ content

    def add(self, repo: str, files: Dict[str, bytes], commit: Optional[str] = None, refs=("main",), token=None) -> str:
        """Add a commit of ``repo`` holding ``files`` (bytes); ``refs`` point at it. Returns the commit."""
        digest = hashlib.sha1(
            repo.encode() + "".join(sorted(files)).encode() + b"".join(files[k] for k in sorted(files))
        )
        commit = commit or digest.hexdigest()
        entry = self.repos.setdefault(repo, Repo())
        entry.commits[commit] = dict(files)
        for ref in refs:
            entry.refs[ref] = commit
        if token is not None:
            entry.token = token
        return commit

    def count(self, prefix: str = "") -> int:
        with self._lock:
            return sum(1 for _method, path, _range in self.requests if path.startswith(prefix))

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.authorizations.clear()

    # ------------------------------------------------------------------ protocol

    def _commit(self, repo: Repo, revision: str) -> Optional[str]:
        if revision in repo.commits:
            return revision
        return repo.refs.get(revision)

    def _handle(self, handler: BaseHTTPRequestHandler, head: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        with self._lock:
            self.requests.append((handler.command, path, handler.headers.get("Range")))
            self.authorizations.append(handler.headers.get("Authorization"))
        match = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/(.+)", path)
        if match:
            return self._model_info(handler, match.group(1), match.group(2), head)
        match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if match:
            return self._resolve(handler, match.group(1), match.group(2), match.group(3), head)
        self._send(handler, 404, b'{"error": "not found"}', {"X-Error-Code": "RepoNotFound"}, head)

    def _denied(self, handler: BaseHTTPRequestHandler, repo: Repo) -> Optional[int]:
        if repo.token is None:
            return None
        given = handler.headers.get("Authorization")
        if given == f"Bearer {repo.token}":
            return None
        return 401 if given is None else 403

    def _model_info(self, handler, name: str, revision: str, head: bool) -> None:
        repo = self.repos.get(name)
        if repo is None:
            return self._send(handler, 401, b'{"error":"Repository not found"}', {"X-Error-Code": "RepoNotFound"}, head)
        denied = self._denied(handler, repo)
        if denied:
            return self._send(handler, denied, b'{"error":"gated"}', {"X-Error-Code": "GatedRepo"}, head)
        commit = self._commit(repo, revision)
        if commit is None:
            body = b'{"error":"Invalid rev id"}'
            return self._send(handler, 404, body, {"X-Error-Code": "RevisionNotFound"}, head)
        files = repo.commits[commit]
        siblings = []
        for path, content in sorted(files.items()):
            sibling = {"rfilename": path, "size": len(content), "blobId": _git_sha1(content)}
            if path.endswith(LFS_SUFFIXES):
                sibling["lfs"] = {
                    "sha256": hashlib.sha256(content).hexdigest(),
                    "size": len(content),
                    "pointerSize": 134,
                }
            siblings.append(sibling)
        body = json.dumps(
            {"_id": name, "id": name, "modelId": name, "sha": commit, "private": False, "gated": bool(repo.token),
             "disabled": False, "siblings": siblings, "tags": [], "downloads": 0, "likes": 0}
        ).encode()  # fmt: skip
        self._send(handler, 200, body, {"Content-Type": "application/json"}, head)

    def _resolve(self, handler, name: str, revision: str, file: str, head: bool) -> None:
        repo = self.repos.get(name)
        if repo is None:
            return self._send(handler, 401, b"", {"X-Error-Code": "RepoNotFound"}, head)
        denied = self._denied(handler, repo)
        if denied:
            return self._send(handler, denied, b"", {"X-Error-Code": "GatedRepo"}, head)
        commit = self._commit(repo, revision)
        if commit is None:
            return self._send(handler, 404, b"", {"X-Error-Code": "RevisionNotFound"}, head)
        content = repo.commits[commit].get(file)
        if content is None:
            return self._send(handler, 404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit}, head)
        headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if file.endswith(LFS_SUFFIXES):
            sha256 = hashlib.sha256(content).hexdigest()
            headers.update({"ETag": f'"{sha256}"', "X-Linked-Etag": f'"{sha256}"', "X-Linked-Size": str(len(content))})
        else:
            headers["ETag"] = f'"{_git_sha1(content)}"'
        wanted = handler.headers.get("Range")
        status = 200
        if wanted and not head:
            match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
            if match:
                start = int(match.group(1))
                end = min(int(match.group(2)) if match.group(2) else len(content) - 1, len(content) - 1)
                headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
                content, status = content[start : end + 1], 206
        self._send(handler, status, content, headers, head)

    @staticmethod
    def _send(handler, status: int, body: bytes, headers: Dict[str, str], head: bool) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)


def _git_sha1(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def safetensors_bytes(tensors: Dict[str, Tuple[str, List[int]]], pad: int = 0) -> bytes:
    """A real safetensors file: {name: (dtype, shape)}, zero data (the plan reads only the header)."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1, "I32": 4}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        size = count * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8 + pad)
    return len(raw).to_bytes(8, "little") + raw + bytes(offset)
