"""Plans of vLLM CPU hosts (vllm_device: cpu): the KV cache from VLLM_CPU_KVCACHE_SPACE, as vLLM logs it."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
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
