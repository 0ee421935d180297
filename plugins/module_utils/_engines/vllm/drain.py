# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Draining a vLLM engine from the gateways before a restart (docs/rollback.md).

Two questions the vllm role's restart path asks: which gateways of the inventory route to this engine host
(they get a drain file), and how many requests the engine still runs or queues (the restart waits for 0, or
for vllm_drain_timeout). Plain Python: the filters in plugins/filter/vllm.py call it.
"""

from __future__ import annotations

import math
import re
import typing as t
from collections.abc import Mapping

# The two gauges of vLLM's /metrics (V1 engine, 0.8 and later; one sample per engine and model_name label set):
# requests in the running batch and requests in the queue.
IN_FLIGHT_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)(?:\s+\S+)?\s*$")


def requests_in_flight(metrics: str) -> int | None:
    """Running plus waiting requests in a Prometheus text exposition of vLLM's /metrics.

    None when neither gauge is there (not a vLLM, or an engine that has not started its metrics yet), so that
    the caller can tell "idle" from "unknown".
    """
    total, seen = 0.0, False
    for line in metrics.splitlines():
        match = _SAMPLE.match(line.strip())
        if match is None or match.group("name") not in IN_FLIGHT_GAUGES:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        if math.isfinite(value):
            total, seen = total + value, True
    return round(total) if seen else None


def gateways_routing_to(
    host: str, gateways: t.Iterable[str], backend_hosts: Mapping[str, t.Any], default_backends: t.Iterable[str]
) -> list[str]:
    """The gateways (inventory names, in their order) whose backend hosts name ``host``.

    ``backend_hosts`` maps a gateway to its gateway_backend_hosts where the inventory sets it; a gateway without
    it routes to ``default_backends`` (the role's default: the groups vllm and ollama).
    """
    defaults = [str(name) for name in default_backends]
    found: list[str] = []
    for gateway in gateways:
        backends = backend_hosts.get(gateway)
        names = defaults if backends is None else [str(name) for name in backends]
        if host in names and gateway not in found:
            found.append(str(gateway))
    return found
