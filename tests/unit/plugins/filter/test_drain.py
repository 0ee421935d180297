"""The drain_* filters: the shared drain's gateways and what is in flight, per kind (roles/_common/tasks/drain.yml)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.drain import FilterModule, drain_gateways, drain_in_flight

HOSTVARS = {"gw": {"gateway_backend_hosts": ["gpu-1"]}, "gw-default": {}, "gpu-1": {}}
METRICS = 'vllm:num_requests_running{engine="0"} 2.0\nvllm:num_requests_waiting{engine="0"} 1.0\n'
TCP = (
    "  sl  local_address rem_address   st\n"
    "   0: 0100007F:2CAA 0100007F:C350 01 00000000:00000000 00:00000000 00000000 999 0 1 1\n"
)


def test_the_filters_are_registered():
    assert set(FilterModule().filters()) == {"drain_gateways", "drain_in_flight"}


def test_drain_gateways():
    assert drain_gateways(["gw", "gw-default"], "gpu-1", HOSTVARS, ["gpu-2"]) == ["gw"]
    assert drain_gateways(["gw", "gw-default"], "gpu-2", HOSTVARS, ["gpu-2"]) == ["gw-default"]
    assert drain_gateways([], "gpu-1", HOSTVARS) == []
    with pytest.raises(AnsibleFilterError, match="drain_gateways nowhere are not hosts of the inventory"):
        drain_gateways(["nowhere"], "gpu-1", HOSTVARS)


@pytest.mark.parametrize(
    ("gateways", "message"),
    [(["gw", "nowhere"], "nowhere are not hosts of the inventory"), ("gw", "expects a list"), (None, "expects a list")],
)
def test_drain_gateways_rejects_bad_input(gateways, message):
    with pytest.raises(AnsibleFilterError, match=message):
        drain_gateways(gateways, "gpu-1", HOSTVARS)


@pytest.mark.parametrize(
    ("text", "in_flight", "expected"),
    [
        (METRICS, {"kind": "vllm", "url": "http://127.0.0.1:8000/metrics"}, 3),
        ("", {"kind": "vllm"}, None),
        (TCP, {"kind": "connections", "port": 11434}, 1),
        (TCP, {"kind": "connections", "port": "11434"}, 1),
        (TCP, {"kind": "connections", "port": 8000}, 0),
    ],
)
def test_drain_in_flight(text, in_flight, expected):
    assert drain_in_flight(text, in_flight) == expected


@pytest.mark.parametrize(
    ("text", "in_flight", "message"),
    [
        (None, {"kind": "vllm"}, "expects text"),
        ("", {"kind": "ps"}, "needs a kind of vllm, connections"),
        ("", "vllm", "needs a kind"),
        ("", {"kind": "connections"}, "kind connections needs a port"),
    ],
)
def test_drain_in_flight_rejects_bad_input(text, in_flight, message):
    with pytest.raises(AnsibleFilterError, match=message):
        drain_in_flight(text, in_flight)
