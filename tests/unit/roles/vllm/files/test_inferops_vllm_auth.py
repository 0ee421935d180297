"""roles/vllm/files/inferops_vllm_auth.py: which requests reach vLLM's app without the key, driven as an ASGI app.

A hand-written ASGI harness (no Starlette in the test environment): the middleware wraps an app that records
the scope it was called with, and every message the middleware sends is kept.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[5]
CASES = yaml.safe_load((Path(__file__).parent / "auth_cases.yml").read_text())
KEY = "k3y-right"


auth = load_script(ROOT / "roles/vllm/files/inferops_vllm_auth.py", "inferops_vllm_auth")


def drive(environ: dict, request: dict):
    """Call the middleware once: (whether the inner app was called, the messages the middleware sent)."""
    called, sent = [], []

    async def app(scope, receive, send):
        called.append(scope)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    kind = request.get("type", "http")
    scope = {"type": kind}
    if kind in ("http", "websocket"):
        headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]
        if request.get("authorization") is not None:
            headers.append((b"authorization", request["authorization"].encode("latin-1")))
        scope.update(path=request["path"], root_path=request.get("root_path", ""), headers=headers,
                     extensions=request.get("extensions", {"websocket.http.response": {}}))  # fmt: skip
        if kind == "http":
            scope["method"] = request["method"]
    middleware = auth.KeyRequired(app, environ={"VLLM_API_KEY": KEY} | environ)
    asyncio.run(middleware(scope, receive, send))
    return bool(called), sent


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_request(case):
    passed, sent = drive(case.get("environ", {}), case["request"])
    assert passed == case["passed"]
    if passed:
        assert sent == []
        return
    kind = case["request"].get("type", "http")
    denial = "websocket.http.response" in case["request"].get("extensions", {"websocket.http.response": {}})
    if kind == "http" or denial:
        prefix = "" if kind == "http" else "websocket."
        assert [message["type"] for message in sent] == [prefix + "http.response.start", prefix + "http.response.body"]
        assert sent[0]["status"] == 401
        assert json.loads(sent[1]["body"]) == {"error": "Unauthorized"}
        assert dict(sent[0]["headers"])[b"content-length"] == str(len(sent[1]["body"])).encode()
    else:
        assert sent == [{"type": "websocket.close", "code": 1008}]


def test_the_refusal_never_carries_the_key_or_the_header():
    sent = drive({}, {"path": "/tokenize", "method": "POST", "authorization": "Bearer k3y-wrong"})[1]
    text = repr(sent)
    assert "k3y" not in text
    assert "Bearer" not in text


def test_the_key_is_kept_as_a_digest_only():
    middleware = auth.KeyRequired(lambda *_: None, environ={"VLLM_API_KEY": KEY})
    assert KEY not in repr(vars(middleware))


def test_the_open_paths_are_health_and_ping():
    # The route enumeration (extensions/molecule/vllm_cpu_serving/tasks/routes.yml) and docs/security.md name
    # the same two; a third open path is a decision to document there first.
    assert auth.OPEN_PATHS == ("/health", "/ping")
