"""_core.safety.shown: a refusal quotes at most a short harmless part of a value (case table: shown_cases.yml)."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._core import safety
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import engine_version_error

CASES = yaml.safe_load((pathlib.Path(__file__).parent / "shown_cases.yml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_shown(case):
    text = safety.shown(case["value"], case.get("var"))
    if "shown" in case:
        assert text == case["shown"]
    for part in case.get("hides", []):
        assert part not in text


def test_version_refusal_quotes_through_shown():
    message = engine_version_error("vllm", "0.33.0 --api-key k3y-secret", "vllm_version")
    assert "k3y" not in message and message.endswith("got a value that names a credential (not shown)")
    assert engine_version_error("vllm", "0.33", "vllm_version").endswith("got '0.33'")
