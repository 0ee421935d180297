"""ModelArchitecture / QuantizationInfo read from real config.json files (tests/unit/fixtures/model_configs)."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import (
    LAYER_FULL,
    LAYER_LINEAR,
    LAYER_MLA,
    LAYER_SLIDING,
    ModelArchitecture,
    QuantizationInfo,
    dtype_bytes,
)

CONFIGS = pathlib.Path(__file__).resolve().parents[4] / "unit" / "fixtures" / "model_configs"


def config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}_config.json").read_text(encoding="utf-8"))


def arch(name: str) -> ModelArchitecture:
    return ModelArchitecture.from_config(config(name))


def test_qwen35_moe_reads_text_config_and_layer_types():
    a = arch("Qwen--Qwen3.5-35B-A3B")
    assert a.architecture == "Qwen3_5MoeForConditionalGeneration"
    assert (a.num_layers, a.num_attention_heads, a.num_kv_heads, a.head_dim, a.hidden_size) == (40, 16, 2, 256, 2048)
    # full_attention_interval 4: layers 3, 7, ..., 39 are full attention, the other 30 Gated DeltaNet
    assert [i for i, kind in enumerate(a.layer_types) if kind == LAYER_FULL] == list(range(3, 40, 4))
    assert (a.full_attention_layers, a.linear_attention_layers) == (10, 30)
    assert a.is_hybrid and a.is_moe and not a.is_mla
    assert (a.linear_num_key_heads, a.linear_num_value_heads) == (16, 32)
    assert (a.linear_key_head_dim, a.linear_value_head_dim, a.linear_conv_kernel_dim) == (128, 128, 4)
    assert (a.num_experts, a.num_experts_per_tok, a.moe_intermediate_size) == (256, 8, 512)
    assert (a.num_shared_experts, a.shared_expert_intermediate_size) == (1, 512)
    assert a.mamba_ssm_dtype == "float32"
    assert a.vocab_size == 248320 and a.max_position_embeddings == 262144
    assert a.derived_max_model_len == 262144  # rope_parameters type "default": no factor
    assert a.has_vision and a.vision_depth == 27
    assert a.mtp_layers == 1 and a.attn_output_gate and not a.tie_word_embeddings
    assert a.quantization is None


def test_qwen3_next_derives_layer_types_from_interval():
    a = arch("Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert "layer_types" not in config("Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert (a.full_attention_layers, a.linear_attention_layers) == (12, 36)
    assert a.layer_types[:4] == (LAYER_LINEAR, LAYER_LINEAR, LAYER_LINEAR, LAYER_FULL)
    assert a.attn_output_gate  # vLLM Qwen3NextAttention default when config.json omits the key
    assert a.mamba_ssm_dtype is None and not a.has_vision


def test_gpt_oss_sliding_window_and_mxfp4():
    a = arch("openai--gpt-oss-120b")
    assert (a.full_attention_layers, a.sliding_window_layers, a.sliding_window) == (18, 18, 128)
    assert a.layer_types[:2] == (LAYER_SLIDING, LAYER_FULL)
    assert (a.num_experts, a.num_experts_per_tok) == (128, 4)
    # yarn: original_max_position_embeddings 4096 x factor 32
    assert a.rope_type == "yarn" and a.derived_max_model_len == 4096 * 32
    q = a.quantization
    assert (q.method, q.scheme, q.bits, q.group_size) == ("mxfp4", "mxfp4", 4, 32)
    assert "model.layers.*.self_attn" in q.unquantized_modules and "lm_head" in q.unquantized_modules


def test_deepseek_v3_mla_fp8_block_and_yarn():
    a = arch("deepseek-ai--DeepSeek-V3")
    assert a.is_mla and a.mla_layers == 61 and a.full_attention_layers == 0
    assert (a.kv_lora_rank, a.qk_rope_head_dim, a.qk_nope_head_dim, a.v_head_dim, a.q_lora_rank) == (
        512,
        64,
        128,
        128,
        1536,
    )
    assert a.head_dim == 192  # nope + rope of the query/key head
    assert a.first_k_dense_replace == 3 and a.num_shared_experts == 1 and a.num_experts == 256
    assert a.derived_max_model_len == 4096 * 40 == a.max_position_embeddings
    q = a.quantization
    assert (q.scheme, q.weight_block_size) == ("fp8_block", (128, 128))


def test_llama3_rope_does_not_multiply_the_limit():
    a = arch("meta-llama--Meta-Llama-3.1-8B")
    assert a.rope_type == "llama3" and a.rope_factor == 8.0
    assert a.derived_max_model_len == 131072  # vLLM skips su/longrope/llama3 scaling
    assert a.layer_types == (LAYER_FULL,) * 32


def test_modelopt_mixed_precision_and_hf_quant_config():
    cfg = config("nvidia--Qwen3.6-35B-A3B-NVFP4")
    hf_quant = json.loads((CONFIGS / "nvidia--Qwen3.6-35B-A3B-NVFP4_hf_quant_config.json").read_text())
    q = ModelArchitecture.from_config(cfg, hf_quant).quantization
    assert q.method == "modelopt" and q.scheme == "mixed"
    schemes = dict(q.module_schemes)
    assert schemes["model.language_model.layers.0.mlp.experts"] == "nvfp4"
    assert schemes["model.language_model.layers.3.self_attn.q_proj"] == "fp8"
    assert schemes["lm_head"] == "nvfp4"
    assert "mtp*" in q.unquantized_modules
    # vLLM reads hf_quant_config.json only when config.json has no quantization_config: this config.json
    # carries no KV scheme, so "auto" stays the model dtype
    assert q.kv_cache_dtype is None and q.resolves_auto_kv_cache_dtype is None
    bare = {k: v for k, v in cfg.items() if k != "quantization_config"}
    q = ModelArchitecture.from_config(bare, hf_quant).quantization
    assert (q.method, q.kv_cache_dtype, q.resolves_auto_kv_cache_dtype) == ("modelopt", "fp8", "fp8_e4m3")
    # the 27B checkpoint states its FP8 KV scheme in config.json itself
    q = arch("nvidia--Qwen3.6-27B-NVFP4").quantization
    assert q.resolves_auto_kv_cache_dtype == "fp8_e4m3"


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        (
            {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["visual"]},
            ("awq_int4", 4, 128),
        ),
        ({"quant_method": "gptq", "bits": 8, "group_size": 32}, ("gptq_int8", 8, 32)),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, ("fp8", 8, None)),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}
                },
                "ignore": ["lm_head"],
            },
            ("int4", 4, 128),
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 16}}
                },
            },
            ("nvfp4", 4, 16),
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}},
                "kv_cache_scheme": {"num_bits": 8, "type": "float"},
            },
            ("fp8", 8, None),
        ),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}, ("nvfp4", 4, 16)),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, ("bnb_int4", 4, 64)),
    ],
)
def test_quantization_schemes(quant, expected):
    q = QuantizationInfo.from_config(quant)
    assert (q.scheme, q.bits, q.group_size) == expected


def test_compressed_tensors_kv_scheme_and_ignore():
    q = QuantizationInfo.from_config(
        {
            "quant_method": "compressed-tensors",
            "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}},
            "kv_cache_scheme": {"num_bits": 8, "type": "float"},
            "ignore": ["lm_head", "re:.*mlp.gate$"],
        }
    )
    assert q.kv_cache_dtype == "fp8" and q.unquantized_modules == ("lm_head", "re:.*mlp.gate$")
    assert q.resolves_auto_kv_cache_dtype is None  # only ModelOpt checkpoints change what "auto" means
    dynamic = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": {"num_bits": 8, "type": "float"}}
    assert QuantizationInfo.from_config(dynamic).kv_cache_dtype is None  # vLLM needs "dynamic": false


def test_missing_key_names_it_and_the_nesting():
    cfg = config("Qwen--Qwen3.5-27B")
    del cfg["text_config"]["num_hidden_layers"]
    with pytest.raises(ValueError, match=r"config.json \(text_config\) is missing 'num_hidden_layers'"):
        ModelArchitecture.from_config(cfg)


def test_hybrid_without_gdn_dims_is_refused():
    cfg = config("Qwen--Qwen3-Next-80B-A3B-Thinking")
    del cfg["linear_num_value_heads"]
    with pytest.raises(ValueError, match="linear_attention layers but no 'linear_num_value_heads'"):
        ModelArchitecture.from_config(cfg)


MALFORMED = yaml.safe_load(pathlib.Path(__file__).with_name("malformed_configs.yml").read_text(encoding="utf-8"))


def _changed(case: dict) -> dict:
    cfg = config(case["fixture"])
    for key, value in (case.get("change") or {}).items():
        cfg[key] = value
    for key, value in (case.get("text_config") or {}).items():
        cfg["text_config"][key] = value
    return cfg


@pytest.mark.parametrize("name", sorted(MALFORMED["refused"]))
def test_malformed_keys(name):
    case = MALFORMED["refused"][name]
    with pytest.raises(ValueError, match=case["message"]):
        ModelArchitecture.from_config(_changed(case))


@pytest.mark.parametrize("name", sorted(MALFORMED["passes"]))
def test_the_smallest_values_pass(name):
    case = MALFORMED["passes"][name]
    got = ModelArchitecture.from_config(_changed(case))
    assert {field: getattr(got, field) for field in case["expect"]} == case["expect"]


def test_not_a_mapping():
    with pytest.raises(ValueError, match="must be a mapping"):
        ModelArchitecture.from_config(["not", "a", "config"])


def test_to_dict_is_plain_json():
    a = arch("openai--gpt-oss-20b")
    data = json.loads(json.dumps(a.to_dict()))
    assert data["sliding_window_layers"] == 12 and data["layer_types"][0] == LAYER_SLIDING
    assert data["quantization"]["unquantized_modules"][-1] == "lm_head"
    assert data["derived_max_model_len"] == 131072


def test_dtype_bytes():
    assert dtype_bytes("torch.bfloat16") == 2 and dtype_bytes("float32") == 4 and dtype_bytes("fp8_e5m2") == 1
    with pytest.raises(ValueError, match="unknown dtype 'int3'"):
        dtype_bytes("int3")


def test_mla_kind_used_for_every_layer():
    assert set(arch("deepseek-ai--DeepSeek-V3").layer_types) == {LAYER_MLA}
