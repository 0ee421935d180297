# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Draining an engine host from the gateways before a restart or a reboot (docs/rollback.md).

The questions the shared drain (roles/_common/tasks/drain.yml) asks, for any engine: which gateways of the
inventory route to this host (each gets a drain file), and how much is still in flight on the engine: the sum of
some gauges of a Prometheus text exposition (vLLM's /metrics), or the established TCP connections to the engine's
port (Ollama, which counts its requests nowhere). Plain Python: the filters in plugins/filter/drain.py and
plugins/filter/vllm.py call it.
"""

from __future__ import annotations

import math
import re
import typing as t
from collections.abc import Mapping, Sequence

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)(?:\s+\S+)?\s*$")
# /proc/net/tcp and /proc/net/tcp6: "sl local_address rem_address st ...", the address "<hex ip>:<hex port>" and
# the state in hex, 01 = ESTABLISHED (include/net/tcp_states.h).
_TCP_ROW = re.compile(
    r"^\s*\d+:\s+[0-9A-Fa-f]+:(?P<port>[0-9A-Fa-f]{4})\s+[0-9A-Fa-f]+:[0-9A-Fa-f]{4}\s+(?P<st>[0-9A-Fa-f]{2})\s"
)
_ESTABLISHED = 0x01


def gauge_sum(metrics: str, gauges: t.Iterable[str]) -> int | None:
    """The sum of every sample of ``gauges`` in a Prometheus text exposition.

    None when none of them is there (not that engine, or one that has not started its metrics yet), so that the
    caller can tell "idle" from "unknown".
    """
    names = set(gauges)
    total, seen = 0.0, False
    for line in metrics.splitlines():
        match = _SAMPLE.match(line.strip())
        if match is None or match.group("name") not in names:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        if math.isfinite(value):
            total, seen = total + value, True
    return round(total) if seen else None


def established_connections(proc_net_tcp: str, port: int) -> int:
    """Established TCP connections whose local port is ``port``, in the text of /proc/net/tcp and /proc/net/tcp6.

    The server's side of each connection to the engine; a client on the same host (a gateway) also has a row with
    ``port`` as its remote port, which does not count.
    """
    count = 0
    for line in proc_net_tcp.splitlines():
        match = _TCP_ROW.match(line)
        if match and int(match.group("port"), 16) == port and int(match.group("st"), 16) == _ESTABLISHED:
            count += 1
    return count


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


def gateways_of_inventory(
    gateways: t.Any, host: str, hostvars: Mapping[str, t.Any], default_backends: t.Iterable[str] = ()
) -> list[str]:
    """Of the inventory hosts ``gateways``, those whose gateway_backend_hosts (else ``default_backends``) name host.

    Raises ValueError for a gateways value that is not a list, or names that are not hosts of the inventory.
    """
    if isinstance(gateways, (str, bytes)) or not isinstance(gateways, Sequence):
        raise ValueError(f"expects a list of inventory hosts, not {gateways!r}")
    unknown = [str(name) for name in gateways if name not in hostvars]
    if unknown:
        raise ValueError(f"{', '.join(unknown)} are not hosts of the inventory")
    backends = {
        str(name): hostvars[name]["gateway_backend_hosts"]
        for name in gateways
        if "gateway_backend_hosts" in hostvars[name]
    }
    return gateways_routing_to(str(host), [str(name) for name in gateways], backends, default_backends or ())
