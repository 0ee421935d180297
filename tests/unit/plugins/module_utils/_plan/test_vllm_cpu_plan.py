"""Plans of vLLM CPU hosts (vllm_device: cpu): the KV cache from VLLM_CPU_KVCACHE_SPACE, as vLLM logs it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import cpu_compute_tflops
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_cpu_plan import default_kvcache_space

# A Qwen2-architecture checkpoint as small as the CPU attention kernel accepts (head_dim 64).
TINY = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 4096,
    "max_position_embeddings": 1024,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": True,
}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cpu_host(**extra):
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.32.0",
        "vllm_device": "cpu",
        "inferops_model": {"repo": "inferops/tiny-qwen2", "revision": COMMIT, "config": TINY},
    }
    variables.update(extra)
    return variables


def test_kv_cache_from_the_space_variable_with_the_cpu_block_size():
    plan = build_plan(cpu_host(vllm_cpu_kvcache_space=1), {})
    assert plan["device"] == "cpu" and plan["service"]["device"] == "cpu"
    assert plan["environment"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert plan["environment"]["VLLM_CPU_OMP_THREADS_BIND"] == "auto"
    memory = plan["memory"]
    # 2 layers x (K + V) x 2 KV heads x 64 x 2 bytes = 1,024 bytes per token; blocks of 128 tokens.
    assert memory["block_size"] == 128
    assert memory["kv_cache_tokens"] == GIB // 1024
    assert memory["max_concurrency"] == pytest.approx(GIB / 1024 / 1024)
    assert memory["log_lines"] == [
        "CPU KV cache size: 1,048,576 tokens, Maximum concurrency for 1,024 tokens per request: 1024.00x"
    ]
    assert plan["layout"]["gpus"] == [] and memory["per_gpu"] == []


def test_cpu_defaults_stay_out_of_the_argv():
    plan = build_plan(cpu_host(), {})
    settings = plan["settings"]
    assert settings["max_num_batched_tokens"]["value"] == 2048
    assert settings["max_num_seqs"]["value"] == 128
    assert settings["kv_cache_memory_bytes"]["reason"].startswith("VLLM_CPU_KVCACHE_SPACE=4")
    for flag in ("--tensor-parallel-size", "--max-num-seqs", "--kv-cache-memory-bytes", "--block-size"):
        assert flag not in plan["command"]
    assert not [c for c in plan["checks"] if c["severity"] == "error"]


def test_space_from_the_hosts_memory():
    assert default_kvcache_space(None, 10**9) == 4
    assert default_kvcache_space(24 * 1024, 5 * 10**6) == 9  # half of 24 GiB, minus 2 GiB for the runtime
    assert default_kvcache_space(2 * 1024, 3 * GIB) == 1
    plan = build_plan(cpu_host(), {"memory_mib": 24 * 1024})
    assert plan["environment"]["VLLM_CPU_KVCACHE_SPACE"] == "9"


@pytest.mark.parametrize(
    ("extra", "variable"),
    [
        ({"vllm_device": "tpu"}, "vllm_device"),
        ({"vllm_cpu_kvcache_space": 0}, "vllm_cpu_kvcache_space"),
        ({"vllm_cpu_kvcache_space": "lots"}, "vllm_cpu_kvcache_space"),
        ({"vllm_device": "cuda", "vllm_cpu_kvcache_space": 2}, "vllm_cpu_kvcache_space"),
    ],
)
def test_bad_device_inputs_name_their_variable(extra, variable):
    with pytest.raises(PlanInputError) as raised:
        build_plan(cpu_host(**extra), {})
    assert any(message.startswith(variable) for message in raised.value.errors)


def test_the_inventory_binds_the_threads_itself():
    plan = build_plan(cpu_host(vllm_environment={"VLLM_CPU_OMP_THREADS_BIND": "0-15|16-31"}), {})
    assert plan["environment"]["VLLM_CPU_OMP_THREADS_BIND"] == "0-15|16-31"
    assert plan["service"]["environment"]["VLLM_CPU_OMP_THREADS_BIND"] == "0-15|16-31"


def test_a_first_start_waits_by_the_model_size_and_a_measured_one_by_its_load_time():
    first = build_plan(cpu_host(), {})
    assert first["start"]["source"] == "model size"
    assert first["service"]["start_timeout_s"] == first["start"]["timeout_s"] == 610
    fact = {"version": "0.32.0", "model": {"repo": "inferops/tiny-qwen2", "revision": COMMIT}, "load_seconds": 130.2}
    again = build_plan(cpu_host(), {}, measured=fact)
    assert again["start"]["source"] == "measured"
    assert again["service"]["start_timeout_s"] == 400  # 3 x 130.2 s, rounded up to 10 s


SPEED = yaml.safe_load((Path(__file__).with_name("cpu_speed_cases.yml")).read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", SPEED["cases"], ids=lambda c: c["id"])
def test_cpu_plans_predict_speed_with_the_cpu_as_the_device(case):
    plan = build_plan(cpu_host(vllm_cpu_kvcache_space=1, **case["variables"]), case["hardware"])
    performance = plan["performance"]
    assert performance["prompt_tokens"] == case["prompt_tokens"]
    assert performance["context_tokens"] == case["context_tokens"]
    assert performance["single_stream_decode_tokens_per_s"] > 0 and performance["ttft_s"] > 0
    assert performance["alternatives"] == [] and "measured" not in performance
    assert performance["basis"].startswith("rough CPU roofline")
    for text in case["basis"]:
        assert text in performance["basis"]


def test_more_bandwidth_and_more_cores_predict_faster():
    slow = build_plan(cpu_host(inferops_host_memory_bandwidth_gbps=5), {"cpu_cores": 2})["performance"]
    wide = build_plan(cpu_host(inferops_host_memory_bandwidth_gbps=500), {"cpu_cores": 2})["performance"]
    many = build_plan(cpu_host(inferops_host_memory_bandwidth_gbps=5), {"cpu_cores": 32})["performance"]
    assert wide["single_stream_decode_tokens_per_s"] > slow["single_stream_decode_tokens_per_s"]
    assert many["ttft_s"] < slow["ttft_s"]


def test_cpu_compute_keeps_one_core_for_the_api_server():
    assert cpu_compute_tflops(None) is None and cpu_compute_tflops(0) is None
    assert cpu_compute_tflops(1) == pytest.approx(cpu_compute_tflops(2))
    assert cpu_compute_tflops(9) == pytest.approx(8 * cpu_compute_tflops(2))


def _fact(plan, **extra):
    fact = {"version": "0.32.0", "model": {"repo": plan["model"]["repo"], "revision": COMMIT}}
    fact.update(extra)
    return fact


def test_the_next_plan_shows_the_benchmark_beside_the_prediction():
    variables = cpu_host(vllm_cpu_kvcache_space=1, inferops_prompt_tokens=512, inferops_context_tokens=576)
    first = build_plan(variables, {"cpu_cores": 2})
    benchmark = SPEED["benchmark"]["fact"]
    plan = build_plan(variables, {"cpu_cores": 2}, _fact(first, benchmark=benchmark))
    predicted, measured = plan["performance"], plan["performance"]["measured"]
    assert measured["decode_tokens_per_s"] == 40.0 and measured["ttft_s"] == 0.25
    assert measured["date"] == benchmark["date"] and measured["prompt_tokens"] == 512
    assert measured["decode_ratio"] == pytest.approx(40.0 / predicted["single_stream_decode_tokens_per_s"], abs=1e-3)
    assert measured["ttft_ratio"] == pytest.approx(0.25 / predicted["ttft_s"], abs=1e-3)
    text = render_markdown(plan)
    assert "Measured by the vllm role's benchmark on 2026-11-24T17:00:00Z" in text
    row = f"| single-stream decode (tokens/s) | {predicted['single_stream_decode_tokens_per_s']:.2f} | 40.00 |"
    assert row in text and "| TTFT (s; predicted for 512 prompt tokens, measured for 512) |" in text


@pytest.mark.parametrize(
    "fact",
    [
        {"version": "0.31.0"},  # another engine version: the measurement does not apply
        {"benchmark": {"decode_tokens_per_s": "fast", "ttft_s": 0.2}},  # not a number: ignored
        {"benchmark": {"ttft_s": 0.2}},  # incomplete
        {},  # a start measured, no benchmark
    ],
)
def test_a_benchmark_that_does_not_apply_is_not_shown(fact):
    first = build_plan(cpu_host(), {})
    measured = _fact(first, benchmark=SPEED["benchmark"]["fact"])
    measured.update(fact)
    if not fact:
        del measured["benchmark"]
    assert "measured" not in build_plan(cpu_host(), {}, measured)["performance"]
