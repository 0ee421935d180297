# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Every route of vLLM's API server answers only with the key: `vllm serve --middleware inferops_vllm_auth.KeyRequired`.

vLLM's own key check (AuthenticationMiddleware, vllm/entrypoints/serve/middleware/authenticate.py in
0.31 and 0.32) tests the key only on paths that start with /v1, /v2, /inference or /cohere: /tokenize,
/detokenize, /pooling, /classify, /score, /rerank, /invocations, /load, /version and /metrics answer
without it. This middleware asks for it on every HTTP and WebSocket request but those of OPEN_PATHS
(/health and /ping, which a load balancer or Docker asks without a key) and, where the environment
variable INFEROPS_VLLM_OPEN_METRICS is "1", /metrics. The key is vLLM's own, VLLM_API_KEY in the
service's environment (the vllm role's secrets.env); it is compared the way vLLM compares it (SHA-256
digests, secrets.compare_digest), and OPTIONS passes as it does there (CORS preflight).

Standard library only: a pure ASGI middleware that vLLM adds with app.add_middleware(KeyRequired), the
outermost layer, so that it answers before any route, mount or other middleware sees the request. Without
a key in the environment it refuses every request but the open ones rather than serve them all. Nothing
here logs or echoes a header.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets

OPEN_PATHS = ("/health", "/ping")
METRICS_PATH = "/metrics"
KEY_VARIABLE = "VLLM_API_KEY"
OPEN_METRICS_VARIABLE = "INFEROPS_VLLM_OPEN_METRICS"
# vLLM's answer to a request without the key (authenticate.py: JSONResponse({"error": "Unauthorized"}, 401)).
UNAUTHORIZED_BODY = json.dumps({"error": "Unauthorized"}, separators=(",", ":")).encode("utf-8")


def _digest(value):
    return hashlib.sha256(value.encode("utf-8")).digest()


class KeyRequired:
    """Pure ASGI middleware: 401 without `Authorization: Bearer <VLLM_API_KEY>`, but on the open paths."""

    def __init__(self, app, environ=None):
        self.app = app
        environ = os.environ if environ is None else environ
        key = environ.get(KEY_VARIABLE, "")
        self._key_digest = _digest(key) if key else None
        self.open_paths = OPEN_PATHS + ((METRICS_PATH,) if environ.get(OPEN_METRICS_VARIABLE, "") == "1" else ())

    def is_open(self, path):
        """Whether a request for path needs no key: an open path exactly, or below the metrics mount when open."""
        if path in self.open_paths:
            return True
        # vLLM mounts Prometheus' ASGI app at /metrics (anything below answers the same metrics).
        return METRICS_PATH in self.open_paths and path.startswith(METRICS_PATH + "/")

    def has_key(self, scope):
        if self._key_digest is None:
            return False
        found = False
        for name, value in scope.get("headers") or ():
            if name.lower() != b"authorization":
                continue
            scheme, _sep, param = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                found |= secrets.compare_digest(_digest(param), self._key_digest)
        return found

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        root_path = scope.get("root_path", "")
        if root_path and path.startswith(root_path):
            path = path[len(root_path) :]
        if self.is_open(path) or self.has_key(scope):
            await self.app(scope, receive, send)
            return
        await self.refuse(scope, send)

    @staticmethod
    async def refuse(scope, send):
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(UNAUTHORIZED_BODY)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": UNAUTHORIZED_BODY})
        elif "websocket.http.response" in (scope.get("extensions") or {}):
            # The WebSocket Denial Response extension: an HTTP 401 instead of the handshake.
            await send({"type": "websocket.http.response.start", "status": 401, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": UNAUTHORIZED_BODY})
        else:
            # Closed before it is accepted: the server answers the handshake with 403.
            await send({"type": "websocket.close", "code": 1008})
