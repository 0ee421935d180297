"""ollama_budget: hand-worked figures traced to ollama/ollama and llama.cpp (see docs/ollama.md)."""

from __future__ import annotations

import struct

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama import budget as ob
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.settings import resolve_ollama_settings
from ansible_collections.inferops.llm.plugins.module_utils._model import gguf as gguf_reader
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import resolve_model


def budget_of(version, shape, gpus, *, weights_bytes, projector_bytes=0, **inventory):
    """Inventory settings resolved as the plan does, then budgeted (resolution findings first)."""
    resolution = resolve_ollama_settings(version, shape, gpus, **inventory)
    budget = ob.ollama_budget(resolution, shape, gpus, weights_bytes=weights_bytes, projector_bytes=projector_bytes)
    budget["setting_sources"] = {**resolution.sources, **budget["setting_sources"]}
    budget["checks"] = resolution.checks + budget["checks"]
    return budget


GIB = 1 << 30
MIB = 1 << 20
RTX_3090 = [{"index": 0, "memory_total_mib": 24576, "compute_capability": "8.6"}]


@pytest.fixture(name="qwen35_moe")
def fixture_qwen35_moe():
    return ob.shape_from_architecture(resolve_model("Qwen/Qwen3.5-35B-A3B").architecture())


# Qwen3.5-35B-A3B: 40 layers, 10 full attention (every 4th), 2 KV heads x (256 + 256) dims.
KV_F16_PER_TOKEN = 10 * (256 + 256) * 2 * 2  # 20,480 bytes
# 30 Gated-DeltaNet layers x (conv 3 x (4096 + 2 x 16 x 128) + state 128 x 4096) x 4 bytes (f32)
RECURRENT_PER_SEQUENCE = 30 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096) * 4  # 65,863,680 = 62.8 MiB
# Output stage of the compute buffer: 512 tokens x (2048 + 248,320 vocab) x 4 bytes
COMPUTE_UBATCH_512 = 4 * 512 * (2048 + 248320)
RESERVE = 457 * MIB


def test_shape_of_the_hybrid_moe(qwen35_moe):
    assert qwen35_moe["architecture"] == "qwen35moe"
    assert len(qwen35_moe["recurrent_layers"]) == 30
    assert 3 not in qwen35_moe["recurrent_layers"] and 39 not in qwen35_moe["recurrent_layers"]
    assert ob.recurrent_state_bytes_per_sequence(qwen35_moe) == RECURRENT_PER_SEQUENCE == 65_863_680


@pytest.mark.parametrize(
    ("quant", "weights", "num_ctx"),
    [
        # Seed deployment 3 on a 24 GB RTX 3090, num_gpu 99, flash attention on. Weights are the
        # GGUF size the plan passes in (inferops_model.weights_bytes): UD-Q3_K_XL as in the example
        # inventory (the publisher's 15.45 GiB); the UD-Q4_K_L size is an example, not a measurement.
        ("UD-Q3_K_XL", 16_589_310_180, 262144),
        ("UD-Q4_K_L", 20_900_000_000, 81920),
    ],
)
def test_seed_deployment_3_on_a_3090(qwen35_moe, quant, weights, num_ctx):
    budget = budget_of(
        "0.32.9", qwen35_moe, RTX_3090, weights_bytes=weights, context_length=num_ctx, num_gpu=99, flash_attention=True
    )
    memory = budget["memory"]
    assert budget["era"] == "llama_server"
    assert budget["settings"] == {
        "context_length": num_ctx,
        "num_parallel": 1,
        "kv_cache_type": "f16",
        "flash_attention": True,
        "num_gpu": 99,
        "num_batch": 512,  # the f16 KV prediction leaves too little headroom for 1024 or 2048
    }
    assert memory["kv_cache_bytes"] == KV_F16_PER_TOKEN * num_ctx
    assert memory["recurrent_state_bytes"] == RECURRENT_PER_SEQUENCE
    assert memory["compute_bytes"] == COMPUTE_UBATCH_512
    assert memory["vram_used_bytes"] == (
        weights + KV_F16_PER_TOKEN * num_ctx + RECURRENT_PER_SEQUENCE + COMPUTE_UBATCH_512 + RESERVE
    )
    assert budget["layers"] == {"total": 41, "offloaded": 41}
    assert [c for c in budget["checks"] if c["severity"] == "error"] == []
    assert budget["per_gpu"][0]["free_gib"] > 0
    assert memory["kv_cache_tokens"] == num_ctx and memory["max_concurrency"] == 1


def test_seed_3_kv_figures_in_gib(qwen35_moe):
    budget = budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=16_600_000_000, context_length=262144)
    assert budget["memory"]["kv_cache_bytes"] == 5 * GIB  # 262,144 x 20,480 bytes


def test_qwen35_is_forced_to_one_sequence_from_0_17_1(qwen35_moe):
    budget = budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=16 * GIB, context_length=32768, num_parallel=4)
    assert budget["settings"]["num_parallel"] == 1
    assert budget["setting_sources"]["num_parallel"] == "forced by Ollama"
    assert budget["memory"]["kv_cache_bytes"] == KV_F16_PER_TOKEN * 32768
    assert budget["memory"]["recurrent_state_bytes"] == RECURRENT_PER_SEQUENCE
    assert "ollama-parallel-forced" in [c["id"] for c in budget["checks"]]


def test_other_models_keep_parallel_sequences(qwen35_moe):
    dense = dict(qwen35_moe, architecture="llama", recurrent_layers=[])
    budget = budget_of("0.32.9", dense, RTX_3090, weights_bytes=4 * GIB, context_length=8192, num_parallel=4)
    assert budget["settings"]["num_parallel"] == 4
    assert budget["memory"]["kv_cache_tokens"] == 32768
    assert budget["memory"]["kv_cache_bytes"] == 40 * 512 * 2 * 2 * 32768


def test_before_0_17_1_qwen35_cannot_load(qwen35_moe):
    budget = budget_of("0.17.0", qwen35_moe, RTX_3090, weights_bytes=16 * GIB, context_length=8192)
    assert "ollama-arch-unsupported" in [c["id"] for c in budget["checks"] if c["severity"] == "error"]
    assert budget["era"] == "runner_layout"


def test_recurrent_state_grows_per_sequence_when_not_forced(qwen35_moe):
    # qwen3next is forced from 0.15.5; at 0.15.4 four sequences get four recurrent slots.
    shape = dict(qwen35_moe, architecture="qwen3next")
    budget = budget_of("0.15.4", shape, RTX_3090, weights_bytes=8 * GIB, context_length=4096, num_parallel=4)
    assert budget["memory"]["recurrent_state_bytes"] == 4 * RECURRENT_PER_SEQUENCE


def test_quantized_kv_needs_flash_attention_in_llama_server_era(qwen35_moe):
    budget = budget_of(
        "0.32.9", qwen35_moe, RTX_3090, weights_bytes=16 * GIB, context_length=8192, kv_cache_type="q8_0",
        flash_attention=False,
    )  # fmt: skip
    assert [c["id"] for c in budget["checks"] if c["severity"] == "error"] == ["ollama-kv-quantized-without-fa"]


def test_quantized_kv_falls_back_to_f16_in_older_eras(qwen35_moe):
    budget = budget_of(
        "0.20.0", qwen35_moe, RTX_3090, weights_bytes=16 * GIB, context_length=8192, kv_cache_type="q4_0",
        flash_attention=False,
    )  # fmt: skip
    assert budget["settings"]["kv_cache_type"] == "f16"
    assert budget["memory"]["kv_cache_bytes"] == KV_F16_PER_TOKEN * 8192


def test_quantized_kv_uses_ggml_block_sizes(qwen35_moe):
    budget = budget_of(
        "0.32.9", qwen35_moe, RTX_3090, weights_bytes=16 * GIB, context_length=65536, kv_cache_type="q8_0",
        flash_attention=True,
    )  # fmt: skip
    # q8_0: 34 bytes per 32 elements
    assert budget["memory"]["kv_cache_bytes"] == 10 * 512 * 2 * 65536 * 34 // 32


def test_sliding_window_layers_are_capped_at_the_window():
    shape = {
        "architecture": "gemma3", "block_count": 6, "embedding_length": 1024, "head_count": 8, "head_count_kv": 4,
        "key_length": 128, "value_length": 128, "vocab_size": 1000, "sliding_window": 1024,
        "sliding_window_layers": [0, 1, 2, 3, 4],
    }  # fmt: skip
    per_layer = ob.kv_bytes_per_layer(shape, 131072, 2, 512, "f16")
    # SWA cells: pad(1024 x 2 sequences + 512 ubatch, 256) = 2560; the global layer keeps 131,072.
    assert per_layer[:5] == [2560 * 256 * 4 * 2] * 5
    assert per_layer[5] == 131072 * 256 * 4 * 2


def test_default_context_tiers_by_version_and_vram():
    assert ob.default_context_length((0, 15, 4), 80 * GIB, 0) == 4096
    assert ob.default_context_length((0, 32, 9), 24 * GIB, 0) == 32768
    assert ob.default_context_length((0, 32, 9), 48 * GIB, 0) == 262144
    assert ob.default_context_length((0, 32, 9), 48 * GIB, 2 * GIB) == 32768
    assert ob.default_context_length((0, 32, 9), 16 * GIB, 0) == 4096


def test_context_is_clamped_to_the_trained_context(qwen35_moe):
    budget = budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=16 * GIB, context_length=1_000_000)
    assert budget["settings"]["context_length"] == 262144
    assert "ollama-context-clamped" in [c["id"] for c in budget["checks"]]


def test_too_much_with_num_gpu_is_an_error_and_auto_fit_offloads(qwen35_moe):
    forced = budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=22 * GIB, context_length=262144, num_gpu=99)
    assert "ollama-vram-exceeded" in [c["id"] for c in forced["checks"] if c["severity"] == "error"]
    fitted = budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=22 * GIB, context_length=262144)
    assert fitted["layers"]["offloaded"] < 41
    assert fitted["per_gpu"][0]["used_bytes"] + 1024 * MIB <= 24 * GIB  # --fit keeps 1 GiB free
    assert "ollama-partial-offload" in [c["id"] for c in fitted["checks"]]
    assert not [c for c in fitted["checks"] if c["severity"] == "error"]


def test_layers_are_split_over_gpus_when_spread(qwen35_moe):
    gpus = [{"index": 0, "memory_total_mib": 16384}, {"index": 1, "memory_total_mib": 16384}]
    budget = budget_of(
        "0.32.9", qwen35_moe, gpus, weights_bytes=20 * GIB, context_length=65536, sched_spread=True, num_gpu=99
    )
    per_gpu = budget["per_gpu"]
    assert [g["index"] for g in per_gpu] == [0, 1]
    assert [g["layers"] for g in per_gpu] == [20, 21]  # the output layer goes to the last GPU
    assert sum(g["used_bytes"] for g in per_gpu) == budget["memory"]["vram_used_bytes"]
    assert sum(g["kv_cache_bytes"] for g in per_gpu) == KV_F16_PER_TOKEN * 65536


def test_one_gpu_is_used_without_sched_spread_when_it_fits(qwen35_moe):
    gpus = [{"index": 0, "memory_total_mib": 16384}, {"index": 1, "memory_total_mib": 24576}]
    budget = budget_of("0.32.9", qwen35_moe, gpus, weights_bytes=12 * GIB, context_length=8192)
    assert [g["index"] for g in budget["per_gpu"]] == [1]


def test_automatic_batch_grows_with_context_and_headroom():
    big = 80 * GIB
    assert ob.automatic_batch("llama_server", 8192, 10 * GIB, big, True, big) == 1024
    assert ob.automatic_batch("llama_server", 65536, 10 * GIB, big, True, big) == 2048
    assert ob.automatic_batch("llama_server", 65536, 60 * GIB, big, True, big) == 1024  # above 60 %
    assert ob.automatic_batch("llama_server", 65536, 10 * GIB, big, False, 8 * GIB) == 256
    assert ob.automatic_batch("runner_layout", 65536, 10 * GIB, big, True, big) == 512


@pytest.mark.parametrize(
    ("version", "message"),
    [("latest", "exact release"), ("0.9", "exact release"), ("0.9.6", "0.9.7 and later")],
)
def test_bad_versions_name_the_variable(qwen35_moe, version, message):
    with pytest.raises(ob.OllamaBudgetError, match=message) as error:
        budget_of(version, qwen35_moe, RTX_3090, weights_bytes=GIB)
    assert "ollama_version" in str(error.value)


def test_bad_settings_name_the_variable(qwen35_moe):
    with pytest.raises(ob.OllamaBudgetError, match="ollama_kv_cache_type"):
        budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=GIB, kv_cache_type="q5_1")
    with pytest.raises(ob.OllamaBudgetError, match="weights_bytes"):
        budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=0)
    with pytest.raises(ob.OllamaBudgetError, match="ollama_num_parallel"):
        budget_of("0.32.9", qwen35_moe, RTX_3090, weights_bytes=GIB, num_parallel=0)


# ----------------------------------------------------------------------------------------- GGUF


def _gguf_string(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _write_tiny_gguf(path):
    """A GGUF v3 with the metadata llama.cpp reads for a 4-layer qwen35moe and three tensors."""
    kvs = [
        ("general.architecture", 8, _gguf_string("qwen35moe")),
        ("qwen35moe.block_count", 4, struct.pack("<I", 4)),
        ("qwen35moe.embedding_length", 4, struct.pack("<I", 64)),
        ("qwen35moe.attention.head_count", 4, struct.pack("<I", 4)),
        ("qwen35moe.attention.head_count_kv", 4, struct.pack("<I", 2)),
        ("qwen35moe.attention.key_length", 4, struct.pack("<I", 32)),
        ("qwen35moe.attention.value_length", 4, struct.pack("<I", 32)),
        ("qwen35moe.context_length", 4, struct.pack("<I", 4096)),
        ("qwen35moe.full_attention_interval", 4, struct.pack("<I", 4)),
        ("qwen35moe.ssm.conv_kernel", 4, struct.pack("<I", 4)),
        ("qwen35moe.ssm.state_size", 4, struct.pack("<I", 16)),
        ("qwen35moe.ssm.group_count", 4, struct.pack("<I", 2)),
        ("qwen35moe.ssm.inner_size", 4, struct.pack("<I", 128)),
        ("qwen35moe.rope.freq_base", 6, struct.pack("<f", 1e7)),
        (
            "tokenizer.ggml.tokens",
            9,
            struct.pack("<IQ", 8, 3) + b"".join(_gguf_string(t) for t in ("a", "b", "<|im_end|>")),
        ),
    ]
    tensors = [
        ("token_embd.weight", [64, 3], 1),  # F16
        ("blk.0.ffn_down_exps.weight", [256, 64], 12),  # Q4_K: 144 bytes per 256
        ("blk.3.attn_q.weight", [64, 64], 8),  # Q8_0: 34 bytes per 32
    ]
    blob = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, value in kvs:
        blob += _gguf_string(key) + struct.pack("<I", kind) + value
    for name, dims, kind in tensors:
        blob += _gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        blob += struct.pack("<IQ", kind, 0)
    path.write_bytes(blob)


def test_gguf_header_reader(tmp_path):
    path = tmp_path / "tiny.gguf"
    _write_tiny_gguf(path)
    header = gguf_reader.read_gguf(str(path))
    assert header["version"] == 3
    assert header["metadata"]["general.architecture"] == "qwen35moe"
    assert header["metadata"]["tokenizer.ggml.tokens"] == {"array_of": "string", "length": 3}
    assert [(t["name"], t["bytes"]) for t in header["tensors"]] == [
        ("token_embd.weight", 64 * 3 * 2),
        ("blk.0.ffn_down_exps.weight", 64 * 144),
        ("blk.3.attn_q.weight", 64 * 2 * 34),
    ]
    shape = gguf_reader.shape_from_gguf(header)
    assert shape["recurrent_layers"] == [0, 1, 2]
    assert shape["vocab_size"] == 3
    assert shape["layer_bytes"] == [9216, 0, 0, 4352]
    assert shape["input_bytes"] == 384
    # one recurrent slot: 3 layers x (3 x (128 + 2 x 2 x 16) + 16 x 128) x 4 bytes
    assert ob.recurrent_state_bytes_per_sequence(shape) == 3 * (3 * 192 + 2048) * 4


def test_gguf_reader_refuses_other_files(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(gguf_reader.GgufError, match="not a GGUF"):
        gguf_reader.read_gguf(str(path))
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(b"GGUF\x03\x00\x00\x00\x01")
    with pytest.raises(gguf_reader.GgufTruncated, match=r"cut\.gguf: the GGUF header is cut short"):
        gguf_reader.read_gguf(str(truncated))


def test_coresidency_with_vllm_on_shared_gpus(qwen35_moe):
    # Seed deployment 1: vLLM at gpu_memory_utilization 0.9 on two 16 GiB cards, Ollama on standby.
    gpus = [{"index": 0, "memory_total_mib": 16384}, {"index": 1, "memory_total_mib": 16384}]
    budget = budget_of("0.32.9", qwen35_moe, gpus, weights_bytes=4 * GIB, context_length=8192, sched_spread=True)
    totals = {0: 16 * GIB, 1: 16 * GIB}
    vllm = {0: int(0.9 * 16 * GIB), 1: int(0.9 * 16 * GIB)}
    checks = ob.coresidency_checks(budget, vllm, totals)
    assert [c["id"] for c in checks] == ["ollama-coresidency"] * 2
    assert "vllm_gpu_memory_utilization" in checks[0]["message"]
    # GPUs that vLLM does not use, or room for both, give no finding
    assert ob.coresidency_checks(budget, {2: 10 * GIB}, totals) == []
    assert ob.coresidency_checks(budget, {0: GIB, 1: GIB}, totals) == []


def test_the_budget_never_picks_a_default():
    shape = {"architecture": "llama", "block_count": 2, "context_length": 4096}
    with pytest.raises(ob.OllamaBudgetError, match=r"takes resolved settings.*missing: context_length"):
        ob.ollama_budget(
            ob.OllamaSettings(version=(0, 30, 0), era="llama_server"), shape, RTX_3090, weights_bytes=10**9
        )
