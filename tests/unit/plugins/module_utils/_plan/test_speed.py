# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The layout chosen by predicted speed (_plan/speed.py, _plan/performance.py); cases in speed_cases.yml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._hardware.gpu_specs import gpu_spec
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parents[2] / "fixtures" / "model_configs"
CASES = yaml.safe_load((HERE / "speed_cases.yml").read_text(encoding="utf-8"))
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PERFORMANCE_KEYS = {
    "objective",
    "context_tokens",
    "single_stream_decode_tokens_per_s",
    "concurrency",
    "aggregate_decode_tokens_per_s",
    "prompt_tokens",
    "prefill_tokens_per_s",
    "ttft_s",
    "bottleneck",
    "alternatives",
}
ALTERNATIVE_KEYS = {
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "gpus",
    "single_stream_decode_tokens_per_s",
    "concurrency",
    "aggregate_decode_tokens_per_s",
    "prefill_tokens_per_s",
    "ttft_s",
    "reason",
}


def host(case):
    spec = case["gpus"]
    base = CASES["gpu_models"][spec["model"]]
    gpus = []
    for index in range(spec["count"]):
        gpu = dict(base, index=index, numa_node=0)
        gpu.update((spec.get("overrides") or {}).get(index, {}))
        gpus.append(gpu)
    hardware = {"gpus": gpus, "driver": {"driver_loaded": True, "driver_version": "580.95.05", "cuda_version": "13.0"}}
    topology = case["topology"]
    if isinstance(topology, str) and topology != "none":
        n = spec["count"]
        hardware["topology"] = {"matrix": [["X" if a == b else topology for b in range(n)] for a in range(n)]}
    elif isinstance(topology, list):
        hardware["topology"] = {"matrix": topology}
    model = dict(case["variables"]["inferops_model"], revision=COMMIT)
    fixture = model.pop("config_fixture", None)
    if fixture:
        model["config"] = json.loads((CONFIGS / fixture).read_text())
    variables = {"inferops_engine": "vllm", "vllm_version": "0.33.0", **case["variables"], "inferops_model": model}
    return variables, hardware


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["id"])
def test_the_layout_is_the_one_an_operator_would_choose(case):
    variables, hardware = host(case)
    plan = build_plan(variables, hardware, host=case["id"])
    layout = plan["layout"]
    shape = [layout["tensor_parallel_size"], layout["pipeline_parallel_size"], layout["data_parallel_size"]]
    assert shape in case["expect"], layout["reason"]
    assert sorted(layout["gpus"]) == list(range(case["gpus"]["count"]))  # every GPU given to the engine is used
    assert not [c for c in plan["checks"] if c["severity"] == "error"]
    for finding in case.get("findings", []):
        assert finding in {c["id"] for c in plan["checks"]}
    if "tp_groups" in case:
        tp = layout["tensor_parallel_size"]
        assert [layout["gpus"][k : k + tp] for k in range(0, len(layout["gpus"]), tp)] == case["tp_groups"]


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["id"])
def test_the_plan_shows_its_predicted_speed_and_the_alternatives(case):
    variables, hardware = host(case)
    plan = build_plan(variables, hardware)
    performance = plan["performance"]
    assert set(performance) >= PERFORMANCE_KEYS
    assert performance["single_stream_decode_tokens_per_s"] > 0
    assert performance["aggregate_decode_tokens_per_s"] >= performance["single_stream_decode_tokens_per_s"] * 0.99
    assert performance["ttft_s"] > 0
    assert performance["prompt_tokens"] == 4096
    for alternative in performance["alternatives"]:
        assert set(alternative) == ALTERNATIVE_KEYS
        assert alternative["reason"]
    assert len(performance["alternatives"]) <= 3
    if "must_predict" in case:
        # Chosen, or among the alternatives with its predicted speed and why it lost (issue #27).
        layout = plan["layout"]
        chosen = [layout["tensor_parallel_size"], layout["pipeline_parallel_size"], layout["data_parallel_size"]]
        shown = {
            (a["tensor_parallel_size"], a["pipeline_parallel_size"], a["data_parallel_size"]): a
            for a in performance["alternatives"]
        }
        if chosen != case["must_predict"]:
            alternative = shown[tuple(case["must_predict"])]
            assert alternative["single_stream_decode_tokens_per_s"] > 0
            assert "slower" in alternative["reason"] or "idle" in alternative["reason"], alternative


def test_pp_alone_gives_no_single_stream_speed_and_tp_over_nvlink_does():
    case = next(c for c in CASES["cases"] if c["id"].startswith("4x-3090"))
    variables, hardware = host(case)
    plan = build_plan(dict(variables, vllm_pipeline_parallel_size=4), hardware)
    pp4 = plan["performance"]["single_stream_decode_tokens_per_s"]
    best = build_plan(variables, hardware)["performance"]["single_stream_decode_tokens_per_s"]
    assert best > 1.3 * pp4
    assert "pipeline bubble" in plan["performance"]["bottleneck"]


def test_the_objective_inputs_are_validated_and_change_the_prediction():
    case = CASES["cases"][0]
    variables, hardware = host(case)
    short = build_plan(dict(variables, inferops_context_tokens=1024, inferops_prompt_tokens=512), hardware)
    long = build_plan(dict(variables, inferops_context_tokens=65536), hardware)
    assert short["performance"]["context_tokens"] == 1024
    assert short["performance"]["prompt_tokens"] == 512
    assert short["performance"]["ttft_s"] < long["performance"]["ttft_s"]
    assert (
        short["performance"]["single_stream_decode_tokens_per_s"]
        > long["performance"]["single_stream_decode_tokens_per_s"]
    )
    with pytest.raises(ValueError, match=r"inferops_objective must be latency .* or throughput"):
        build_plan(dict(variables, inferops_objective="fastest"), hardware)


@pytest.mark.parametrize(
    "name, model",
    [
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
        ("NVIDIA GeForce RTX 3090 Ti", "GeForce RTX 3090 Ti"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell"),
        ("NVIDIA GeForce RTX 5060 Ti", "GeForce RTX 5060 Ti"),
    ],
)
def test_gpu_names_find_their_datasheet_row(name, model):
    assert gpu_spec(name).model == model


def test_an_unknown_gpu_has_no_row():
    assert gpu_spec("NVIDIA Imaginary 9000") is None


def test_seed_000_the_moe_swap_on_two_5060_ti_is_at_least_nearly_twice_as_fast():
    """Seed 000: Qwen3-32B-AWQ -> Qwen3.6-35B-A3B-AWQ on 2x RTX 5060 Ti "nearly doubled our token throughput".

    The write-up does not say which throughput; the model predicts more than that for decode (3B active
    parameters read per token instead of 32B): the check is the direction and the lower bound."""
    case = next(c for c in CASES["cases"] if c["id"].startswith("2x-5060ti"))
    variables, hardware = host(case)
    moe = build_plan(variables, hardware)["performance"]
    dense_model = {"repo": "Qwen/Qwen3-32B-AWQ", "revision": COMMIT, "base_model": "Qwen3-32B", "quantization": "awq"}
    dense = build_plan(dict(variables, inferops_model=dense_model, vllm_max_model_len=32768), hardware)["performance"]
    assert moe["aggregate_decode_tokens_per_s"] >= 1.8 * dense["aggregate_decode_tokens_per_s"]
    assert moe["single_stream_decode_tokens_per_s"] >= 1.8 * dense["single_stream_decode_tokens_per_s"]
