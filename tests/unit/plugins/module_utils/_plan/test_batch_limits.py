"""max_num_seqs from the workload (case table batch_limit_cases.yml): vLLM's default, capped only for a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

CASES = yaml.safe_load((Path(__file__).parent / "batch_limit_cases.yml").read_text(encoding="utf-8"))
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
DRIVER = {"driver_version": "580.95.05", "cuda_version": "13.0"}


def _plan(case):
    gpus = dict(case["gpus"])
    count = gpus.pop("count")
    variables = {"inferops_engine": "vllm", "vllm_version": "0.33.0", **case.get("variables", {})}
    variables["inferops_model"] = {"revision": COMMIT, **case["model"]}
    hardware = {"gpus": [dict(gpus, index=i) for i in range(count)], "topology": {}, "driver": DRIVER}
    return build_plan(variables, hardware, host=case["id"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_max_num_seqs_from_the_workload(case):
    plan = _plan(case)
    assert not [c for c in plan["checks"] if c["severity"] == "error"], plan["checks"]
    entry, want = plan["settings"]["max_num_seqs"], case["max_num_seqs"]
    assert entry["source"] == want["source"], entry
    if "value" in want:
        assert entry["value"] == want["value"], entry
    if "below" in want:
        assert entry["value"] < want["below"], entry
    performance = plan["performance"]
    # The speed prediction runs the concurrency the settings allow at the expected context.
    assert performance["concurrency"] <= entry["value"] * plan["layout"]["data_parallel_size"]
    if "concurrency_at_context_min" in case:
        assert performance["concurrency"] >= case["concurrency_at_context_min"], performance
    notes = " ".join(c["message"] for c in plan["checks"] if c["id"] == "max-num-seqs" and c["severity"] == "info")
    for text in case.get("notes", []):
        assert text in notes, notes
    if entry["source"] == "default":
        assert "instead of vLLM's default" not in notes
    if "warning" in case:
        _check_state_warning(case, plan)


def _check_state_warning(case, plan):
    """The hybrid warning suggests the state rule's limit, explained, and the re-plan with it has no warning."""
    (warning,) = [c for c in plan["checks"] if c["id"] == "max-num-seqs" and c["severity"] == "warning"]
    for text in case["warning"]["says"]:
        assert text in warning["message"], warning
    suggested = int(re.search(r"a value that passes: vllm_max_num_seqs: (\d+)", warning["message"]).group(1))
    assert suggested >= case["warning"]["suggested_min"], warning
    assert suggested > int(plan["memory"]["max_concurrency"]), "capped at the full-length concurrency again"
    again = _plan(dict(case, variables=dict(case["variables"], vllm_max_num_seqs=suggested)))
    assert not [c for c in again["checks"] if c["id"] == "max-num-seqs" and c["severity"] != "info"], again["checks"]
