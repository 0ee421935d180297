# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""LiteLLM custom auth hook of inferops.llm.gateway: the master key and a table of client keys.

Loaded by the proxy (general_settings.custom_auth: inferops_auth.user_api_key_auth). The key table
(keys.json, written by the role) holds only SHA-256 digests of the keys with each key's name and the
model names it may use, never a key; the master key reaches the process through its environment
(LITELLM_MASTER_KEY from the mode-0600 secrets file). A request without a known key is refused with
401, a key asking for a model outside its list with 403. Nothing here logs a key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os

from fastapi import Request
from litellm.proxy._types import LitellmUserRoles, ProxyErrorTypes, ProxyException, UserAPIKeyAuth

KEYS_FILE = os.environ.get("INFEROPS_GATEWAY_KEYS", "/etc/litellm/keys.json")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _table() -> dict:
    with open(KEYS_FILE, encoding="utf-8") as handle:
        return {entry["sha256"]: entry for entry in json.load(handle)["keys"]}


def _refuse(message: str, code: int, kind: str) -> ProxyException:
    return ProxyException(message=message, type=kind, param="Authorization", code=code)


async def user_api_key_auth(request: Request, api_key: str) -> UserAPIKeyAuth:
    api_key = (api_key or "").removeprefix("Bearer ").strip()
    if not api_key:
        raise _refuse("No API key: send Authorization: Bearer <key>", 401, ProxyErrorTypes.auth_error)
    digest = _digest(api_key)
    master = os.environ.get("LITELLM_MASTER_KEY", "")
    if master and hmac.compare_digest(digest, _digest(master)):
        return UserAPIKeyAuth(api_key=digest, key_alias="master", user_role=LitellmUserRoles.PROXY_ADMIN)
    entry = _table().get(digest)
    if entry is None:
        raise _refuse("Unknown API key", 401, ProxyErrorTypes.auth_error)
    allowed = list(entry.get("models") or [])
    if "*" not in allowed and request.method == "POST":
        try:
            body = await request.json()
        except ValueError:
            body = {}
        model = body.get("model") if isinstance(body, dict) else None
        if model is not None and model not in allowed:
            raise _refuse(
                f"key {entry['name']} may not use model {model} (allowed: {', '.join(allowed) or 'none'})",
                403,
                ProxyErrorTypes.key_model_access_denied,
            )
    return UserAPIKeyAuth(
        api_key=digest,
        key_alias=entry["name"],
        key_name=entry["name"],
        models=[] if "*" in allowed else allowed,
        user_role=LitellmUserRoles.INTERNAL_USER,
    )
