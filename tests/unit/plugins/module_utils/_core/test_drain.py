# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The drain shared by the engine roles: the gateways that route to a host, and what is still in flight."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._core.drain import (
    established_connections,
    gateways_of_inventory,
    gateways_routing_to,
    gauge_sum,
)

CASES = yaml.safe_load((Path(__file__).parent / "drain_cases.yml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES["gateways_routing_to"], ids=lambda case: case["name"])
def test_gateways_routing_to(case):
    found = gateways_routing_to(case["host"], case["gateways"], case["backend_hosts"], case["default_backends"])
    assert found == case["found"]


@pytest.mark.parametrize("case", CASES["established_connections"], ids=lambda case: case["name"])
def test_established_connections(case):
    assert established_connections(case["text"], case["port"]) == case["connections"]


@pytest.mark.parametrize("case", CASES["gauge_sum"], ids=lambda case: case["name"])
def test_gauge_sum(case):
    assert gauge_sum(case["metrics"], case["gauges"]) == case["sum"]


def test_gateways_of_inventory_reads_the_backend_hosts_of_each_gateway():
    hostvars = {"gw": {"gateway_backend_hosts": ["gpu-1"]}, "gw-default": {}, "gpu-1": {}}
    assert gateways_of_inventory(["gw", "gw-default"], "gpu-1", hostvars, ["gpu-2"]) == ["gw"]
    assert gateways_of_inventory(["gw", "gw-default"], "gpu-2", hostvars, ["gpu-2"]) == ["gw-default"]


@pytest.mark.parametrize(
    ("gateways", "message"),
    [(["gw", "nowhere"], "nowhere are not hosts of the inventory"), ("gw", "expects a list"), (None, "expects a list")],
)
def test_gateways_of_inventory_rejects_bad_input(gateways, message):
    with pytest.raises(ValueError, match=message):
        gateways_of_inventory(gateways, "gpu-1", {"gw": {}})
