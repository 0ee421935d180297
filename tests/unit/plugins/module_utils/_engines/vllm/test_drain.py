# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The drain before a restart: requests still in the engine (from /metrics) and the gateways that route to a host."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.drain import (
    gateways_routing_to,
    requests_in_flight,
)

CASES = yaml.safe_load((Path(__file__).parent / "drain_cases.yml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES["requests_in_flight"], ids=lambda case: case["name"])
def test_requests_in_flight(case):
    assert requests_in_flight(case["metrics"]) == case["in_flight"]


@pytest.mark.parametrize("case", CASES["gateways_routing_to"], ids=lambda case: case["name"])
def test_gateways_routing_to(case):
    found = gateways_routing_to(case["host"], case["gateways"], case["backend_hosts"], case["default_backends"])
    assert found == case["found"]
