"""The example inventory's plans and the docs' plan tables against tests/golden (`make golden` rewrites them)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from script_loader import load_script

GENERATE = Path(__file__).resolve().parents[5] / "tests" / "golden" / "generate.py"
golden = load_script(GENERATE, "golden_generate")
PLANS = golden.golden_plans()


def _diff(expected: str, got: str, name: str) -> str:
    lines = difflib.unified_diff(expected.splitlines(), got.splitlines(), f"golden/{name}", "planned now", lineterm="")
    return "\n".join(list(lines)[:80]) + "\n(run `make golden` if the change is intended, and review the diff)"


@pytest.mark.parametrize("host", sorted(PLANS))
def test_plan_equals_its_golden_file(host):
    path = golden.GOLDEN / f"{host}.json"
    assert path.exists(), f"{path} is missing: run `make golden`"
    expected, got = path.read_text(encoding="utf-8"), golden.dumps(PLANS[host])
    assert got == expected, _diff(expected, got, path.name)


def test_gateway_equals_its_golden_file():
    path = golden.GATEWAY_GOLDEN
    expected, got = path.read_text(encoding="utf-8"), golden.dumps(golden.gateway_plan(PLANS))
    assert got == expected, _diff(expected, got, path.name)
    # The example's desktop serves its model to the gateway on the same host through loopback. Its Ollama host
    # names no ollama_models (the GGUF's path is known only after model_download), so the gateway warns that it
    # has no route there; nothing else.
    checks = [(check["id"], check["severity"]) for check in json.loads(expected)["checks"]]
    assert checks == [("gateway-ollama-unrouted", "warning")]


def test_no_golden_file_without_a_host():
    assert {p.stem for p in golden.GOLDEN.glob("*.json")} == set(PLANS)


@pytest.mark.parametrize("doc", golden.DOCS, ids=lambda p: p.name)
def test_the_docs_show_the_generated_table(doc):
    text = doc.read_text(encoding="utf-8")
    assert golden.with_table(text, golden.table_block(PLANS)) == text, _diff(
        text, golden.with_table(text, golden.table_block(PLANS)), doc.name
    )


def test_golden_plans_keep_the_documented_key_order():
    # docs/plan.md lists the report's keys; the golden files hold the order tools downstream read.
    for host, plan in PLANS.items():
        assert list(plan) == list(json.loads((golden.GOLDEN / f"{host}.json").read_text(encoding="utf-8")))
