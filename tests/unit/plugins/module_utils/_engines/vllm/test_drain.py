# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The drain of a vLLM engine before a restart: the requests still in the engine (from /metrics)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.drain import requests_in_flight

CASES = yaml.safe_load((Path(__file__).parent / "drain_cases.yml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES["requests_in_flight"], ids=lambda case: case["name"])
def test_requests_in_flight(case):
    assert requests_in_flight(case["metrics"]) == case["in_flight"]
