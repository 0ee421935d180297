"""Choices of the plan that change what clients get are info findings; parsers from the model's own family."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import model_family
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import FAMILIES
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
H200 = {"name": "NVIDIA H200", "memory_mib": 143771, "compute_capability": "9.0"}
RTX_4090 = {"name": "NVIDIA GeForce RTX 4090", "memory_mib": 24564, "compute_capability": "8.9"}
DEEPSEEK_V3 = {"architecture": "DeepseekV3ForCausalLM", "model_type": "deepseek_v3"}


def _plan(repo, gpu, count=1, **variables):
    base = {"inferops_engine": "vllm", "vllm_version": "0.33.0", "inferops_model": {"repo": repo, "revision": COMMIT}}
    hardware = {"gpus": [dict(gpu, index=i) for i in range(count)], "topology": {}, "driver": {}}
    return build_plan({**base, **variables}, hardware, host="h")


@pytest.mark.parametrize(
    ("repo", "family"),
    [
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"),
    ],
)
def test_deepseek_v3_and_r1_are_told_apart(repo, family):
    assert model_family(DEEPSEEK_V3, repo) == family


def test_deepseek_v3_never_gets_r1s_reasoning_parser():
    assert "deepseek_r1" not in FAMILIES["deepseek-v3"].reasoning
    assert FAMILIES["deepseek-r1"].reasoning == ("deepseek_r1",)
    plan = _plan("deepseek-ai/DeepSeek-V3", H200, count=8, vllm_max_model_len=8192)
    assert plan["settings"]["reasoning_parser"]["value"] != "deepseek_r1"
    assert "--reasoning-parser deepseek_r1" not in " ".join(plan["command"])


def test_choices_that_change_output_are_info_findings():
    plan = _plan("meta-llama/Llama-3.1-8B-Instruct", RTX_4090, vllm_max_model_len=32768)
    notes = {c["id"]: c["message"] for c in plan["checks"] if c["severity"] == "info"}
    assert "vllm_kv_cache_dtype: auto" in notes["kv-cache-dtype"]
    assert "llama3_json" in notes["tool-call-parser"] and "vllm_tool_call_parser" in notes["tool-call-parser"]
    assert "131,072" in notes["context-length"] and "vllm_max_model_len" in notes["context-length"]


def test_choices_the_inventory_made_get_no_note():
    plan = _plan(
        "meta-llama/Llama-3.1-8B-Instruct",
        RTX_4090,
        vllm_max_model_len=32768,
        vllm_kv_cache_dtype="auto",
        vllm_tool_call_parser="llama3_json",
    )
    notes = {c["id"] for c in plan["checks"] if c["severity"] == "info"}
    assert not notes & {"kv-cache-dtype", "tool-call-parser"}
