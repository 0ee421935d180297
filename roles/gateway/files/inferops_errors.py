# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""LiteLLM callback of inferops.llm.gateway: a model whose engines are down is answered 503, at once.

Loaded by the proxy (litellm_settings.callbacks: inferops_errors.proxy_handler_instance). LiteLLM 1.109.1
answers a refused connection to a vLLM engine with 500: an InternalServerError ("Hosted_vllmException -
Cannot connect to host ... Connect call failed ... No fallback was attempted") raised while handling the
ConnectionRefusedError (seen with LiteLLM 1.109.1's proxy in front of a closed port), or for other
providers an APIConnectionError; and "No deployments available" (every replica in cool-down) with 429.
Both mean that no engine serves the model right now, which HTTP says with 503: clients and their SDKs
retry a 503 (the OpenAI SDK does, twice, with a short back-off), and nobody mistakes it for a bug of the
gateway. ``async_post_call_failure_hook`` may return an HTTPException that replaces the error sent to the
client (LiteLLM's CustomLogger). Messages name the model and the cause, never a key or a prompt.
"""

from __future__ import annotations

from typing import Any, Optional

try:
    from fastapi import HTTPException
    from litellm.integrations.custom_logger import CustomLogger
except ImportError:  # the unit tests read unavailable() without LiteLLM
    HTTPException = None
    CustomLogger = object

REFUSED = "the engine does not accept connections (down, or restarting)"
# Exception classes (by name, along the MRO of the error and of the errors it was raised from or while
# handling) that mean: no engine of this model answers.
UNAVAILABLE = {
    "ConnectionError": REFUSED,  # the builtin: ConnectionRefusedError, ConnectionResetError, ...
    "APIConnectionError": REFUSED,
    "ClientConnectorError": REFUSED,  # aiohttp
    "ConnectError": REFUSED,  # httpx
    "ServiceUnavailableError": "the engine answered 503",
    "RouterRateLimitError": "every replica failed recently and rests (cool-down)",
    "RouterRateLimitErrorBasic": "every replica failed recently and rests (cool-down)",
}
# What LiteLLM's InternalServerError says when it wraps a refused connection without chaining it.
REFUSED_TEXT = ("Cannot connect to host", "Connect call failed", "Connection refused")


def unavailable(error: BaseException) -> Optional[str]:
    """Why ``error`` means that no engine serves the model now, or None for any other error."""
    seen = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for cls in type(current).__mro__:
            if cls.__name__ in UNAVAILABLE:
                return UNAVAILABLE[cls.__name__]
        current = current.__cause__ or current.__context__
    if any(text in str(error) for text in REFUSED_TEXT):
        return REFUSED
    return None


def message(model: str, why: str) -> str:
    return f"No engine serves model {model!r} right now: {why}. Try again shortly."


class InferopsErrors(CustomLogger):  # type: ignore[misc, valid-type]
    async def async_post_call_failure_hook(
        self, request_data: dict, original_exception: Exception, user_api_key_dict: Any, traceback_str: Any = None
    ):
        why = unavailable(original_exception)
        if why is None or HTTPException is None:
            return None
        model = str((request_data or {}).get("model", "?"))
        return HTTPException(status_code=503, detail={"error": message(model, why)})


proxy_handler_instance = InferopsErrors()
