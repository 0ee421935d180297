# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""LiteLLM callback of inferops.llm.gateway: 503 when no engine serves, drained or closed engines, whole text chunks.

Three jobs, each a CustomLogger hook of LiteLLM 1.109.1:

- ``async_post_call_failure_hook``: a model whose engines are down is answered 503, at once (below).
- ``async_filter_deployments``: the router's pre-call filter drops the deployments of an engine host that a
  rolling change has drained: a file named after the host (its inventory name, the part after "@" of the
  deployment's model_info id, "<model>@<host>") in DRAIN_DIR (root's /run/inferops-drain, written by the
  engine roles before a restart and the nvidia_driver role before a reboot, docs/rollback.md). No new request
  reaches that engine; the ones it runs finish.
  When draining would leave no replica while LiteLLM's own health state or cool-down (both at most one
  health-check interval old) excluded the others, the others come back: a replica put back after its gate
  may still be marked down from its restart, and the next drained host must not leave the model empty.
  With every replica drained, the request fails at once with 503 ("drained").
  The same filter then leaves out the engines that refuse connections (their port is closed: stopped, crashed,
  restarting), while another candidate accepts (``reachable`` below).
- ``async_post_call_streaming_iterator_hook``: a streamed legacy ``/v1/completions`` ends with a chunk whose
  ``text`` is a string. LiteLLM 1.109.1 rebuilds text-completion chunks from chat deltas
  (TextCompletionStreamWrapper.convert_to_text_completion_object: ``text = delta["content"]``), and the
  finish chunk that its CustomStreamWrapper adds has no content: the client got ``{"finish_reason":
  "length", "index": 0}`` without ``text`` (the OpenAI SDK gives ``None``). No LiteLLM setting changes that.

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

import asyncio
import logging
import os
import time
from typing import Any, Callable, Dict, Iterable, Optional, Tuple
from urllib.parse import urlsplit

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
    "Drained": "every engine of it is drained for a change (rolling upgrade); it is put back once it passes its checks",
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


# The drain directory: one file per drained engine host, named after its inventory name. Root's (the engine roles'
# shared drain creates it mode 0755 on the gateway host and writes the files); /run, so a reboot of the gateway
# forgets it. roles/_common/vars/main.yml (_common_drain_dir) names the same path; a unit test keeps the two equal.
DRAIN_DIR = os.environ.get("INFEROPS_GATEWAY_DRAIN_DIR", "/run/inferops-drain")
LOG = logging.getLogger("inferops.gateway")


class Drained(Exception):
    """Every deployment of the model belongs to a drained engine host."""


def drained_hosts(directory: str = DRAIN_DIR) -> frozenset:
    """The engine hosts drained now: the names of the regular files in ``directory`` (none when it is missing)."""
    try:
        with os.scandir(directory) as entries:
            return frozenset(entry.name for entry in entries if entry.is_file() and not entry.name.startswith("."))
    except FileNotFoundError:
        return frozenset()
    except OSError as error:  # unreadable: route as if nothing were drained, and say so
        LOG.warning("inferops: cannot read the drain directory %s: %s", directory, error)
        return frozenset()


def deployment_host(deployment: Any) -> Optional[str]:
    """The engine host of a deployment: what follows the last "@" of its model_info id ("<model>@<host>")."""
    ident = ((deployment or {}).get("model_info") or {}).get("id")
    if isinstance(ident, str) and "@" in ident:
        return ident.rsplit("@", 1)[1]
    return None


def undrained(deployments: Iterable[Any], drained: frozenset) -> list:
    return [deployment for deployment in deployments if deployment_host(deployment) not in drained]


def route(model: str, healthy: list, everyone: Any, drained: frozenset) -> list:
    """The deployments a request may go to: ``healthy`` (LiteLLM's candidates) less the drained hosts.

    ``everyone`` (a callable giving every deployment of the model) is asked only when draining removed the
    last candidate: the others are then taken back whatever LiteLLM's health state or cool-down says.
    Raises Drained when every deployment of the model is drained.
    """
    if not drained:
        return healthy
    kept = undrained(healthy, drained)
    if kept or len(kept) == len(healthy):
        return kept
    kept = undrained(everyone(), drained)
    if kept:
        return kept
    raise Drained(f"every engine of model {model!r} is drained: {', '.join(sorted(drained))}")


# An engine whose port refuses connections is left out of a routing decision while another candidate accepts. LiteLLM
# 1.109.1 picks again at random for each retry (simple-shuffle), and nothing takes a closed port out between the tries
# of one request (a deployment rests only after more than allowed_fails failures in a minute, and never for an
# "APIConnectionError": router_utils/cooldown_handlers.py, _is_cooldown_required): with one of two real vLLM engines
# killed, 2 requests in the 59 s before it served again went to the closed port on all three tries and got 503. vLLM
# binds its port before it builds the engine and listens only once it serves, so a start refuses too. A probe is one
# TCP connection (closed at once, no request), one per engine every PROBE_TTL_S seconds (a few more where requests
# arrive together before the first probe answered: not deduplicated); a probe that times out (a slow network, a hung
# engine) counts as accepting: a hung engine is the health watchdog's (docs/rollback.md). With every candidate
# refusing, LiteLLM's choice stands, and the failure hook answers 503.
PROBE_TTL_S = 1.0
PROBE_TIMEOUT_S = 0.5


def endpoint(deployment: Any) -> Optional[Tuple[str, int]]:
    """(host, port) of a deployment's api_base, or None where it names none."""
    base = ((deployment or {}).get("litellm_params") or {}).get("api_base")
    if not isinstance(base, str) or not base:
        return None
    try:
        parts = urlsplit(base)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


class Probe:
    """Whether an engine refuses connections, asked at most once every ``ttl`` seconds per address."""

    def __init__(
        self, ttl: float = PROBE_TTL_S, timeout: float = PROBE_TIMEOUT_S, clock: Callable[[], float] = time.monotonic
    ):
        self.ttl, self.timeout, self.clock = ttl, timeout, clock
        self.seen: Dict[Tuple[str, int], Tuple[float, bool]] = {}

    async def refusing(self, address: Tuple[str, int]) -> bool:
        now = self.clock()
        cached = self.seen.get(address)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        try:
            connection = await asyncio.wait_for(asyncio.open_connection(*address), self.timeout)
            connection[1].close()  # (reader, writer): closing the writer closes the connection
            refused = False
        except asyncio.TimeoutError:
            refused = False
        except OSError:  # refused, no route to the host, a name that does not resolve
            refused = True
        self.seen[address] = (now, refused)
        return refused


async def reachable(deployments: list, probe: Probe) -> list:
    """``deployments`` less those whose engine refuses connections; all of them where every one refuses."""
    addresses = [endpoint(deployment) for deployment in deployments]
    asked = sorted({address for address in addresses if address is not None})
    if len(deployments) < 2 or not asked:
        return deployments
    refusing = dict(zip(asked, await asyncio.gather(*(probe.refusing(address) for address in asked))))
    kept = [deployment for deployment, address in zip(deployments, addresses) if not refusing.get(address, False)]
    return kept or deployments


def _all_deployments(model: str) -> list:
    try:
        from litellm.proxy.proxy_server import llm_router

        return list(llm_router.registry().deployments(model, source="all") or [])
    except Exception as error:
        LOG.warning("inferops: cannot list the deployments of %s: %s", model, error)
        return []


def _field(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def well_formed(chunk: Any) -> Any:
    """A text-completion chunk whose choices all have a string ``text`` ("" where LiteLLM left None)."""
    if _field(chunk, "object") != "text_completion":
        return chunk
    for choice in _field(chunk, "choices") or []:
        if not isinstance(_field(choice, "text"), str):
            if isinstance(choice, dict):
                choice["text"] = ""
            else:
                choice.text = ""
    return chunk


class InferopsErrors(CustomLogger):  # type: ignore[misc, valid-type]
    probe = Probe()

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list,
        messages: Any,
        request_kwargs: Optional[dict] = None,
        parent_otel_span: Any = None,
    ) -> list:
        kept = route(model, healthy_deployments, lambda: _all_deployments(model), drained_hosts(DRAIN_DIR))
        return await reachable(kept, self.probe)

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict: Any, response: Any, request_data: dict):
        async for chunk in response:
            yield well_formed(chunk)

    async def async_post_call_failure_hook(
        self, request_data: dict, original_exception: Exception, user_api_key_dict: Any, traceback_str: Any = None
    ):
        why = unavailable(original_exception)
        if why is None or HTTPException is None:
            return None
        model = str((request_data or {}).get("model", "?"))
        return HTTPException(status_code=503, detail={"error": message(model, why)})


proxy_handler_instance = InferopsErrors()
