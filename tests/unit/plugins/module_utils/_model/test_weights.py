"""Weights estimate: bits per weight per scheme, unquantized modules, given totals and files."""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import find_model
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    component_bits,
    estimate_weights,
    quantization_from_name,
    scheme_bits_per_weight,
    weights_bytes_and_source,
)

CONFIGS = pathlib.Path(__file__).resolve().parents[4] / "unit" / "fixtures" / "model_configs"
QWEN35 = find_model("Qwen/Qwen3.5-35B-A3B")


@pytest.mark.parametrize(
    ("scheme", "group", "bits"),
    [
        ("awq_int4", 128, 4 + 20 / 128),  # fp16 scale + packed zero per 128 (reference quantization.md: 4.156)
        ("int4", 128, 4 + 16 / 128),  # compressed-tensors W4A16 symmetric: 4.125
        ("nvfp4", 16, 4.5),
        ("mxfp4", 32, 4.25),
        ("fp8_block", None, 8 + 32 / 16384),
        ("fp8", None, 8.0),
        (None, None, 16.0),
    ],
)
def test_bits_per_weight(scheme, group, bits):
    assert scheme_bits_per_weight(scheme, group) == pytest.approx(bits)


def test_bf16_checkpoint_size():
    # reference weights_by_format.json: Qwen3.5-35B-A3B bf16_all = 71.903645408 GB (incl. vision and MTP)
    estimate = estimate_weights(QWEN35.architecture(), params=QWEN35.params, include_mtp=True)
    assert estimate.total_bytes == 71_903_645_408
    assert estimate.source == "parameter counts x bits per weight (bfloat16, catalogue)"


@pytest.mark.parametrize(("name", "gigabytes"), [("fp8", 38.286298848), ("nvfp4", 23.578709728)])
def test_linears_only_quantization_keeps_embeddings_router_vision_mtp_in_bf16(name, gigabytes):
    # reference weights_by_format.json vllm_fp8_linears_only / vllm_nvfp4_linears_only
    estimate = estimate_weights(
        QWEN35.architecture(), params=QWEN35.params, quantization=quantization_from_name(name), include_mtp=True
    )
    assert estimate.total_bytes == pytest.approx(gigabytes * 1e9, abs=2)


def test_modelopt_nvfp4_checkpoint_by_component():
    cfg = json.loads((CONFIGS / "nvidia--Qwen3.6-35B-A3B-NVFP4_config.json").read_text(encoding="utf-8"))
    arch = ModelArchitecture.from_config(cfg)
    bits = component_bits(arch)
    # experts, shared experts and lm_head NVFP4; attention and linear-attention projections FP8; the rest bf16
    assert (bits["experts"], bits["dense_or_shared_mlp"], bits["lm_head"]) == (4.5, 4.5, 4.5)
    assert (bits["attn_linear"], bits["linear_attn_linear"]) == (8.0, 8.0)
    assert (bits["embed"], bits["router"], bits["vision"], bits["mtp"]) == (16.0, 16.0, 16.0, 16.0)
    estimate = estimate_weights(arch, params=QWEN35.params)
    p = QWEN35.params
    expected = (
        (p["experts"] + p["dense_or_shared_mlp"] + p["lm_head"]) * 4.5 / 8
        + (p["attn_linear"] + p["linear_attn_linear"])
        + (p["embed"] + p["router"] + p["small_other"] + p["vision"]) * 2
    )
    assert estimate.total_bytes == pytest.approx(expected, abs=10)
    assert estimate.components["mtp"] == 0  # only loaded for MTP speculative decoding


def test_gpt_oss_experts_only():
    entry = find_model("openai/gpt-oss-20b")
    bits = component_bits(entry.architecture())
    assert (
        bits["experts"] == 4.25 and bits["attn_linear"] == 16.0 and bits["router"] == 16.0 and bits["lm_head"] == 16.0
    )


def test_unquantized_patterns_win(tmp_path):
    arch = ModelArchitecture.from_config(
        {
            **find_model("Qwen/Qwen3-30B-A3B").config,
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}
                },
                "ignore": ["lm_head", "re:.*mlp.gate$", "re:.*self_attn.*"],
            },
        }
    )
    bits = component_bits(arch)
    assert bits["experts"] == 4.125 and bits["attn_linear"] == 16.0 and bits["router"] == 16.0


def test_given_weights_bytes_is_used_as_loaded():
    arch = QWEN35.architecture()
    estimate = estimate_weights(arch, params=QWEN35.params, weights_bytes=30 * 2**30)
    assert estimate.source == "weights_bytes"
    assert estimate.total_bytes == pytest.approx(30 * 2**30, abs=16)  # per-component int truncation only
    # the components keep the model's proportions (experts dominate this MoE)
    assert estimate.components["experts"] > 0.85 * estimate.total_bytes
    with pytest.raises(ValueError, match=r"inferops_model\.weights_bytes must be a positive integer"):
        estimate_weights(arch, weights_bytes=-1)


def test_safetensors_index_total_drops_the_mtp_block(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 71_903_645_408}, "weight_map": {}}))
    total, source = weights_bytes_and_source(QWEN35.architecture(), params=QWEN35.params, weights_file=str(index))
    assert source == "safetensors index model.safetensors.index.json metadata.total_size"
    assert total == pytest.approx(71_903_645_408 - 2 * QWEN35.params["mtp"], abs=16)


def test_model_directory(tmp_path):
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"\0" * 3000)
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"\0" * 1000)
    total, source = weights_bytes_and_source(QWEN35.architecture(), params=QWEN35.params, weights_file=str(tmp_path))
    assert source.startswith("safetensors files in") and total < 4000  # the MTP share is not loaded
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 8000}}))
    assert "index" in weights_bytes_and_source(QWEN35.architecture(), weights_file=str(tmp_path))[1]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds neither"):
        weights_bytes_and_source(QWEN35.architecture(), weights_file=str(empty))


def test_gguf_file_size(tmp_path):
    gguf = tmp_path / "model-Q4_K_M.gguf"
    gguf.write_bytes(b"\0" * 4096)
    total, source = weights_bytes_and_source(QWEN35.architecture(), weights_file=str(gguf))
    assert source == "gguf file model-Q4_K_M.gguf size" and total == pytest.approx(4096, abs=8)
    with pytest.raises(ValueError, match="does not exist on the controller"):
        weights_bytes_and_source(QWEN35.architecture(), weights_file=str(tmp_path / "missing.gguf"))


def test_quantization_override_names():
    assert quantization_from_name("none") is None and quantization_from_name("bf16") is None
    assert quantization_from_name("AWQ").scheme == "awq_int4"
    assert quantization_from_name("fp8-block").scheme == "fp8_block"
    with pytest.raises(ValueError, match=r"inferops_model\.quantization 'q3' is not known"):
        quantization_from_name("q3")
