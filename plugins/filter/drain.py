# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm drain_* filters: the shared drain of an engine host from the gateways (documented in .yml files)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.drain import (
    established_connections,
    gateways_of_inventory,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.drain import requests_in_flight

# How a drain tells what is still in flight, per kind of the caller's in_flight mapping (roles/_common/tasks/drain.yml).
KINDS = ("vllm", "connections")


def drain_gateways(gateways: t.Any, host: t.Any, hostvars: t.Any, default_backends: t.Any = ()) -> list[str]:
    """The hosts of gateways whose gateway_backend_hosts (else default_backends) name host."""
    try:
        return gateways_of_inventory(gateways, str(host), hostvars, default_backends or ())
    except ValueError as error:
        raise AnsibleFilterError(
            f"drain_gateways {error} (list gateway hosts by inventory name,"
            " e.g. {{ groups['gateway'] | default([]) }})"
        ) from None


def drain_in_flight(text: t.Any, in_flight: t.Any) -> int | None:
    """What is still in flight on an engine: kind vllm, requests in its /metrics; connections, established TCP
    connections to its port in /proc/net/tcp and tcp6. None when the text does not tell (no vLLM gauge)."""
    if not isinstance(text, str):
        raise AnsibleFilterError(f"drain_in_flight expects text, not a {type(text).__name__}")
    if not isinstance(in_flight, Mapping) or in_flight.get("kind") not in KINDS:
        raise AnsibleFilterError(f"drain_in_flight: in_flight needs a kind of {', '.join(KINDS)}, got {in_flight!r}")
    if in_flight["kind"] == "vllm":
        return requests_in_flight(text)
    try:
        port = int(in_flight.get("port"))
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"drain_in_flight: kind connections needs a port, got {in_flight!r}") from None
    return established_connections(text, port)


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"drain_gateways": drain_gateways, "drain_in_flight": drain_in_flight}
