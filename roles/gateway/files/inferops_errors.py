# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""LiteLLM callback of inferops.llm.gateway: a model whose engines are down is answered 503, at once.

Loaded by the proxy (litellm_settings.callbacks: inferops_errors.proxy_handler_instance). LiteLLM 1.109.1
answers a connection error to an engine with 500 ("Connection error ... No fallback was attempted"), and
"No deployments available" (every replica in cool-down) with 429. Both mean that no engine serves the model
right now, which HTTP says with 503: clients and their SDKs retry a 503 (the OpenAI SDK does, twice, with a
short back-off), and nobody mistakes it for a bug of the gateway. ``async_post_call_failure_hook`` may return
an HTTPException that replaces the error sent to the client (LiteLLM's CustomLogger). Messages name the model
and the cause, never a key or a prompt.
"""

from __future__ import annotations

from typing import Any, Optional

try:
    from fastapi import HTTPException
    from litellm.integrations.custom_logger import CustomLogger
except ImportError:  # the unit tests read unavailable() without LiteLLM
    HTTPException = None
    CustomLogger = object

# Exception classes (by name, along the MRO) that mean: no engine of this model answers.
UNAVAILABLE = {
    "APIConnectionError": "the engine does not accept connections (down, or restarting)",
    "ServiceUnavailableError": "the engine answered 503",
    "RouterRateLimitError": "every replica failed recently and rests (cool-down)",
    "RouterRateLimitErrorBasic": "every replica failed recently and rests (cool-down)",
}


def unavailable(error: BaseException) -> Optional[str]:
    """Why ``error`` means that no engine serves the model now, or None for any other error."""
    for cls in type(error).__mro__:
        if cls.__name__ in UNAVAILABLE:
            return UNAVAILABLE[cls.__name__]
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
