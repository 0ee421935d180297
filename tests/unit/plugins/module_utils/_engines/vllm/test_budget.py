"""vLLM budget: hand-worked cases traced to vLLM's source per release era, and the startup-log dataset.

Sections cited as "ref §x" are in the team's research notes on vLLM startup memory (bisected from the
published wheels 0.17.1 ... 0.33.0), summarised with the same section names in docs/memory-model.md.
"""

from __future__ import annotations

import json
import math
import pathlib

import pytest
from script_loader import load_script

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm import budget as budget_module
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    GIB,
    _group_size,
    attention_bytes_per_token,
    cuda_total_bytes_from_nvidia_smi,
    derived_max_model_len,
    format_capacity_log,
    format_gib,
    gdn_prefill_transient_bytes,
    gdn_state_bytes,
    kv_cache_layout,
    kv_capacity,
    overhead_estimate,
    parse_human_int,
    pp_layer_bounds,
    sequences_at_length,
    weights_per_rank,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    batch_defaults,
    parse_vllm_version,
    uses_model_runner_v2,
    vllm_version,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import (
    release_resolution as resolve_settings,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import release_values
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import catalogue_ids, find_model
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    estimate_weights,
    quantization_from_name,
)

CONFIGS = pathlib.Path(__file__).resolve().parents[5] / "unit" / "fixtures" / "model_configs"
QWEN36_35B = find_model("Qwen/Qwen3.6-35B-A3B").architecture()
QWEN36_27B = find_model("Qwen/Qwen3.6-27B").architecture()
QWEN3_NEXT = find_model("Qwen/Qwen3-Next-80B-A3B-Instruct").architecture()
LLAMA8B = find_model("meta-llama/Llama-3.1-8B-Instruct").architecture()
LLAMA70B = find_model("meta-llama/Llama-3.3-70B-Instruct").architecture()
QWEN3_32B = find_model("Qwen/Qwen3-32B").architecture()
GPT_OSS_120B = find_model("openai/gpt-oss-120b").architecture()
DEEPSEEK = find_model("deepseek-ai/DeepSeek-V3").architecture()
H100 = int(79.18 * GIB)
RTX5090 = int(31.36 * GIB)


def vllm_memory_budget(arch, version, total, *args, settings=None, gpu_name="", compute_capability=None, **kwargs):
    """The budget of a configuration as given: the release's defaults fill what it leaves unset."""
    values = release_values(arch, version, total, settings, gpu_name, compute_capability)
    return budget_module.vllm_memory_budget(
        arch, version, total, *args, settings=values, gpu_name=gpu_name, compute_capability=compute_capability, **kwargs
    )


def layout(arch, version="0.26.0", tp=1, **settings):
    v = vllm_version(version)
    values = {k: e["value"] for k, e in resolve_settings(arch, v, settings.pop("total", RTX5090), settings).items()}
    return kv_cache_layout(arch, v, values, tp, compute_capability=settings.get("compute_capability"))


# ---- versions (ref §0) ------------------------------------------------------------------------------


def test_version_parsing():
    assert parse_vllm_version("0.26.0") == (0, 26, 0)
    assert parse_vllm_version("v0.10.1.1") == (0, 10, 1, 1)
    assert parse_vllm_version("0.27.1+cu129") == (0, 27, 1)
    for bad in ("0.26", "0.26.1rc1", ">=0.26.0", "latest"):
        with pytest.raises(ValueError, match="is not an exact release"):
            parse_vllm_version(bad)
    with pytest.raises(ValueError, match=r"predates 0\.10\.0"):
        vllm_version("0.9.2")
    with pytest.raises(ValueError, match="newer than the releases this collection has read"):
        vllm_version("0.34.0")


@pytest.mark.parametrize(
    ("version", "util", "cudagraphs", "tokens_from_concurrency", "hybrid_prefix", "align_assert"),
    [
        ("0.19.1", 0.90, False, False, False, True),
        ("0.20.0", 0.92, True, False, False, True),
        ("0.20.1", 0.92, True, True, False, True),
        ("0.25.1", 0.92, True, True, False, True),
        ("0.26.0", 0.92, True, True, True, True),
        ("0.27.1", 0.92, True, True, True, False),
        ("0.33.0", 0.92, True, True, True, False),
    ],
)
def test_version_eras(version, util, cudagraphs, tokens_from_concurrency, hybrid_prefix, align_assert):
    v = vllm_version(version)
    assert v.default_gpu_memory_utilization == util
    assert v.cudagraph_memory_charged is cudagraphs
    assert v.kv_tokens_from_concurrency is tokens_from_concurrency
    assert v.hybrid_prefix_caching_default is hybrid_prefix
    assert v.align_block_size_assert is align_assert


def test_kv_cache_dtypes_per_release():
    assert "turboquant_4bit_nc" not in vllm_version("0.19.1").kv_cache_dtypes
    assert {"turboquant_4bit_nc", "nvfp4"} <= set(vllm_version("0.20.0").kv_cache_dtypes)
    assert "nvfp4_4over6" not in vllm_version("0.27.1").kv_cache_dtypes
    assert "nvfp4_4over6" in vllm_version("0.28.0").kv_cache_dtypes
    assert "all" in vllm_version("0.30.0").mamba_cache_modes
    assert vllm_version("0.33.0").mamba_cache_modes == ("align", "none")
    with pytest.raises(ValueError, match=r"Invalid kv_cache_dtype: 'turboquant_4bit_nc' for vLLM 0\.19\.1"):
        resolve_settings(QWEN36_35B, vllm_version("0.19.1"), H100, {"kv_cache_dtype": "turboquant_4bit_nc"})


@pytest.mark.parametrize(
    ("version", "total_gib", "name", "expected"),
    [
        ("0.33.0", 79.18, "NVIDIA H100 80GB HBM3", (8192, 1024)),
        ("0.33.0", 79.25, "NVIDIA A100-SXM4-80GB", (2048, 256)),
        ("0.33.0", 31.36, "NVIDIA GeForce RTX 5090", (2048, 256)),
        ("0.33.0", 178.35, "NVIDIA B200", (16384, 1024)),
        ("0.27.1", 178.35, "NVIDIA B200", (8192, 1024)),  # the >= 160 GiB tier arrives in 0.28.0
        ("0.28.0", 178.35, "NVIDIA B200", (16384, 1024)),
        ("0.32.0", 119.7, "NVIDIA GB10", (8192, 1024)),  # GB10 kept small from 0.33.0
        ("0.33.0", 119.7, "NVIDIA GB10", (2048, 256)),
    ],
)
def test_batch_defaults_by_gpu_class(version, total_gib, name, expected):
    # ref §1 "Memory-relevant defaults" (engine/arg_utils.py get_batch_defaults)
    got = batch_defaults(vllm_version(version), int(total_gib * GIB), name)
    assert (got["max_num_batched_tokens"], got["max_num_seqs"]) == expected


# ---- page sizes (ref §2.1-2.3) ----------------------------------------------------------------------


def test_gdn_state_of_qwen36():
    # ref §2.2 table: conv (bf16) 3 x 8192 x 2, ssm (fp32) 32 x 128 x 128 x 4
    assert gdn_state_bytes(QWEN36_35B, 1, mamba_ssm_cache_dtype="float32") == {
        "conv_bytes": 49_152,
        "ssm_bytes": 2_097_152,
        "page_bytes": 2_146_304,
    }
    assert gdn_state_bytes(QWEN36_35B, 2, mamba_ssm_cache_dtype="float32")["page_bytes"] == 1_073_152
    assert gdn_state_bytes(QWEN36_27B, 1, mamba_ssm_cache_dtype="float32")["page_bytes"] == 3_207_168
    assert gdn_state_bytes(QWEN36_27B, 2, mamba_ssm_cache_dtype="float32")["page_bytes"] == 1_603_584
    # one MTP draft token widens the conv state only: 4 x 8192 x 2
    assert gdn_state_bytes(QWEN36_35B, 1, 1, mamba_ssm_cache_dtype="float32")["conv_bytes"] == 65_536
    with pytest.raises(ValueError, match="10240 is not divisible by 3"):
        gdn_state_bytes(QWEN36_27B, 3)


def test_modelopt_kv_scales_turn_auto_into_fp8_from_014():
    # utils/torch_utils.py resolve_kv_cache_dtype_string (0.14.0+): ModelOpt KV scheme -> fp8_e4m3
    cfg = json.loads((CONFIGS / "nvidia--Qwen3.6-27B-NVFP4_config.json").read_text(encoding="utf-8"))
    arch = ModelArchitecture.from_config(cfg)
    new = resolve_settings(arch, vllm_version("0.26.0"), RTX5090)
    assert new["kv_cache_dtype"] == {"value": "fp8_e4m3", "source": "derived"}
    explicit_auto = resolve_settings(arch, vllm_version("0.26.0"), RTX5090, {"kv_cache_dtype": "auto"})
    assert explicit_auto["kv_cache_dtype"]["value"] == "fp8_e4m3"
    assert resolve_settings(arch, vllm_version("0.13.0"), RTX5090)["kv_cache_dtype"]["value"] == "auto"
    assert layout(arch, "0.26.0", max_model_len=32768)["block_size"] == 1568  # the fp8 block of the 27B


def test_yarn_limit_changed_in_030():
    # config/model.py _get_and_verify_max_len: before 0.30 yarn multiplies original_max_position_embeddings,
    # from 0.30 max_position_embeddings is taken as already scaled
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    arch = ModelArchitecture.from_config({**find_model("Qwen/Qwen3-32B").config, "rope_scaling": yarn})
    assert derived_max_model_len(arch, vllm_version("0.29.0")) == 131072
    assert derived_max_model_len(arch, vllm_version("0.30.0")) == 40960
    got = vllm_memory_budget(arch, "0.30.0", H100, 2, settings={"max_model_len": 131072})
    assert "vllm_max_model_len_too_long" in {f["id"] for f in got["findings"]}
    assert resolve_settings(arch, vllm_version("0.29.0"), H100)["max_model_len"]["value"] == 131072


def test_ssm_dtype_follows_the_checkpoint_only_for_qwen35():
    # models/config.py Qwen3_5ForConditionalGenerationConfig sets mamba_ssm_cache_dtype from the hf config
    v = vllm_version("0.26.0")
    assert resolve_settings(QWEN36_35B, v, H100)["mamba_ssm_cache_dtype"] == {"value": "float32", "source": "derived"}
    assert resolve_settings(QWEN3_NEXT, v, H100)["mamba_ssm_cache_dtype"]["value"] == "auto"
    next_layout = layout(QWEN3_NEXT, total=H100)
    assert next_layout["gdn_state"]["ssm_bytes"] == 32 * 128 * 128 * 2  # bf16 state


@pytest.mark.parametrize(
    ("arch", "dtype", "tp", "expected"),
    [
        (QWEN36_35B, "fp8_e4m3", 1, 1024),
        (QWEN36_35B, "auto", 1, 2048),
        (QWEN36_35B, "fp8", 2, 512),
        (QWEN36_35B, "fp8", 4, 512),  # 2 KV heads replicate beyond TP=2 (config/model.py get_num_kv_heads)
        (QWEN36_27B, "fp8", 1, 2048),
        (QWEN36_27B, "turboquant_4bit_nc", 1, 1048),  # ref §2.3: 4 heads x 262-byte slot
        (QWEN36_35B, "turboquant_k8v4", 1, 2 * 388),
        (QWEN36_35B, "turboquant_3bit_nc", 1, 2 * 198),
        (DEEPSEEK, "auto", 8, 1152),  # MLA latent (512 + 64) x bf16, replicated on every rank
        (DEEPSEEK, "fp8_ds_mla", 1, 656),
    ],
)
def test_attention_bytes_per_token_per_layer(arch, dtype, tp, expected):
    assert attention_bytes_per_token(arch, dtype, tp) == expected


@pytest.mark.parametrize(
    ("arch", "dtype", "spec", "expected"),
    [
        # ref §2.3 worked values, kernel alignment 16
        (QWEN36_35B, "auto", 0, 1056),
        (QWEN36_35B, "fp8_e4m3", 0, 2096),
        (QWEN36_35B, "fp8", 1, 2112),
        (QWEN36_35B, "fp8", 3, 2144),
        (QWEN36_35B, "turboquant_k8v4", 0, 2768),
        (QWEN36_35B, "turboquant_4bit_nc", 0, 4096),
        (QWEN36_35B, "turboquant_3bit_nc", 0, 5424),
        (QWEN36_27B, "auto", 0, 784),
        (QWEN36_27B, "fp8", 0, 1568),
        (QWEN36_27B, "fp8", 3, 1600),
        (QWEN36_27B, "turboquant_4bit_nc", 0, 3072),
    ],
)
def test_hybrid_block_size(arch, dtype, spec, expected):
    got = layout(arch, kv_cache_dtype=dtype, num_speculative_tokens=spec, max_model_len=32768)
    assert got["block_size"] == expected
    assert got["page_bytes"] >= got["gdn_state"]["page_bytes"]  # mamba page padded up to the attention page


def test_block_size_does_not_change_with_tp_until_kv_heads_replicate():
    assert layout(QWEN36_35B, kv_cache_dtype="fp8", tp=2)["block_size"] == 2096
    # TP=4: attention stays at one KV head per rank while the GDN state halves again
    assert layout(QWEN36_35B, kv_cache_dtype="fp8", tp=4)["block_size"] == 16 * math.ceil(536_576 / (16 * 512))


def test_033_align_mode_with_flashinfer_gdn_prefill():
    # ref §0: 0.33 align mode + FlashInfer GDN prefill -> block multiple of 64, one checkpoint block per group
    hopper = layout(QWEN36_35B, "0.33.0", kv_cache_dtype="fp8", max_model_len=32768, compute_capability="9.0")
    assert hopper["block_size"] == 2112 and hopper["gdn_prefill_checkpoint"]
    assert hopper["blocks_per_request"] == math.ceil(32768 / 2112) + 3 * 3
    ampere = layout(QWEN36_35B, "0.33.0", kv_cache_dtype="fp8", max_model_len=32768, compute_capability="8.6")
    assert ampere["block_size"] == 2096 and ampere["blocks_per_request"] == 16 + 3 * 2


def test_groups_and_blocks_per_request():
    # ref §2.5: 10 attention + 30 GDN layers -> 4 groups of 10; ref §2.6 per-request blocks
    none_mode = layout(QWEN36_35B, "0.25.1", kv_cache_dtype="fp8", max_model_len=32768)
    assert [g["kind"] for g in none_mode["groups"]] == ["full_attention"] + ["linear_attention"] * 3
    assert none_mode["bytes_per_block"] == 21_463_040  # 10 x 2096 x 1024
    assert none_mode["blocks_per_request"] == 16 + 3  # ref: "19 x 21,463,040 B = 388.9 MiB" per 32K request
    align = layout(QWEN36_35B, "0.26.0", kv_cache_dtype="fp8", max_model_len=32768)
    assert align["blocks_per_request"] == 16 + 3 * 2
    # MTP adds the draft's attention layer: 11 attention layers -> group size 11, 3 padding GDN slots
    mtp = layout(QWEN36_35B, "0.26.0", kv_cache_dtype="fp8", num_speculative_tokens=1, max_model_len=32768)
    assert (mtp["group_size"], mtp["padding_layers"], len(mtp["groups"])) == (11, 3, 4)


def test_dense_bytes_per_token():
    # ref §2.6: Llama-3.1-8B 128 KiB/token bf16, Qwen3-32B 128 KiB fp8, Llama-3.3-70B 320 KiB bf16
    for arch, dtype, per_token in ((LLAMA8B, "auto", 128), (QWEN3_32B, "fp8", 128), (LLAMA70B, "auto", 320)):
        got = layout(arch, kv_cache_dtype=dtype, total=H100, max_model_len=8192)
        assert got["bytes_per_block"] == per_token * 1024 * got["block_size"]
        assert len(got["groups"]) == 1 and got["blocks_per_request"] == 8192 // 16


def test_sliding_window_blocks_per_request():
    # kv_cache_interface.py SlidingWindowSpec: cdiv(min(window - 1 + batched tokens, len), block) + 1
    got = layout(GPT_OSS_120B, "0.10.1", tp=4, max_model_len=16384, max_num_batched_tokens=2048)
    assert [g["layers"] for g in got["groups"]] == [18, 18]
    assert got["blocks_per_request"] == 16384 // 16 + (math.ceil((128 - 1 + 2048) / 16) + 1)


@pytest.mark.parametrize(
    ("arch", "version", "settings"),
    [
        (QWEN36_35B, "0.33.0", {"kv_cache_dtype": "fp8", "compute_capability": "9.0"}),  # align + checkpoint
        (QWEN36_35B, "0.25.1", {"kv_cache_dtype": "fp8"}),  # mode none
        (QWEN36_35B, "0.30.0", {"kv_cache_dtype": "fp8", "mamba_cache_mode": "all", "enable_prefix_caching": True}),
        (QWEN36_35B, "0.26.0", {"kv_cache_dtype": "fp8", "num_speculative_tokens": 1}),
        (GPT_OSS_120B, "0.10.1", {"max_num_batched_tokens": 2048}),
        (LLAMA8B, "0.26.0", {"total": H100}),
    ],
)
def test_sequences_at_a_shorter_length_are_those_of_the_layout_at_that_length(arch, version, settings):
    """What the speed prediction runs at once at inferops_context_tokens: the blocks a request of that length
    takes, as the layout planned at that length counts them (a hybrid model's state blocks do not shrink)."""
    full = layout(arch, version, max_model_len=65536, **settings)
    blocks = 1000 * full["blocks_per_request"] // 7
    for length in (1, 300, 4096, 8192, 30000, 65536):
        short = layout(arch, version, max_model_len=length, **settings)
        assert short["block_size"] == full["block_size"]
        assert sequences_at_length(full, blocks, length) == blocks // short["blocks_per_request"], length
    if arch is QWEN36_35B and full["mamba_cache_mode"] != "all":
        state = sum(g["blocks_per_request"] for g in full["groups"] if g["kind"] == "linear_attention")
        assert sequences_at_length(full, blocks, 1) == blocks // (state + 1)  # not the tokens // length


# ---- capacity and its log lines (ref §2.6) ---------------------------------------------------------


def test_kv_cache_size_formula_per_era():
    fp8 = {"kv_cache_dtype": "fp8", "max_model_len": 32768}
    kv = 100 * 21_463_040 + 5
    old = kv_capacity(vllm_version("0.20.0"), layout(QWEN36_35B, "0.20.0", **fp8), kv)
    new = kv_capacity(vllm_version("0.20.1"), layout(QWEN36_35B, "0.20.1", **fp8), kv)
    assert old["num_blocks"] == new["num_blocks"] == 100
    assert old["kv_cache_tokens"] == 100 // 4 * 2096  # <= 0.20.0: blocks // groups x block size
    assert new["max_concurrency"] == pytest.approx(100 / 19)
    assert new["kv_cache_tokens"] == int(100 / 19 * 32768)  # >= 0.20.1: int(concurrency x max_model_len)


def test_capacity_log_lines():
    assert format_capacity_log(vllm_version("0.26.0"), 93872, 16384, 5.7294921875) == [
        "GPU KV cache size: 93,872 tokens",
        "Maximum concurrency for 16,384 tokens per request: 5.73x",
    ]
    # v1/core/kv_cache_utils.py update_kv_cache_capacity logs one line from 0.28.0
    assert format_capacity_log(vllm_version("0.27.1"), 360448, 32768, 11.0)[0] == "GPU KV cache size: 360,448 tokens"
    assert format_capacity_log(vllm_version("0.28.0"), 360448, 32768, 11.0) == [
        "GPU KV cache size: 360,448 tokens, Maximum concurrency for 32,768 tokens per request: 11.00x"
    ]


def test_available_kv_memory_format():
    # gpu_worker.py: "%.2f" up to 0.13, utils/mem_utils.py format_gib = str(round(x, 2)) from 0.14.0
    assert format_gib(vllm_version("0.11.0"), int(20.5 * GIB)) == "20.50"
    assert format_gib(vllm_version("0.26.0"), int(20.5 * GIB)) == "20.5"
    assert format_gib(vllm_version("0.26.0"), 7 * GIB) == "7.0"


def test_group_size_threshold_from_018():
    # gpt-oss + one drafter layer: 12 sliding + 13 full. 0.18+: group size 13 (pad to 13 + 13);
    # before: the smallest bucket, 12 -> the full bucket splits into 2 groups.
    arch = find_model("openai/gpt-oss-20b").architecture()
    counts = {"sliding_attention": 12, "full_attention": 13}
    assert _group_size(vllm_version("0.18.0"), counts) == 13
    assert _group_size(vllm_version("0.17.1"), counts) == 12
    assert arch.sliding_window_layers == 12


@pytest.mark.parametrize(
    ("version", "repo", "capability", "sampler"),
    [
        # config/vllm.py use_v2_model_runner / _is_default_v2_model_runner_model per release, and
        # v1/sample/ops/topk_topp_sampler.py: FlashInfer top-k/top-p whenever importable up to 0.11.0 (the
        # plan assumes vLLM's image; the native sampler is the uncertain alternative), opt-in from 0.11.1
        # (PR #26859) to 0.20, default from 0.21 (PR #40376)
        ("0.10.2", "meta-llama/Llama-3.1-8B-Instruct", "9.0", "native"),  # unknown install: the larger end
        ("0.11.0", "meta-llama/Llama-3.1-8B-Instruct", "9.0", "native"),
        ("0.11.1", "meta-llama/Llama-3.1-8B-Instruct", "9.0", "native"),
        ("0.19.1", "meta-llama/Llama-3.1-8B-Instruct", "9.0", "native"),
        ("0.21.0", "meta-llama/Llama-3.1-8B-Instruct", "9.0", "flashinfer"),
        ("0.21.0", "meta-llama/Llama-3.1-8B-Instruct", "7.5", "native"),  # FlashInfer needs SM 8.0+
        ("0.23.0", "meta-llama/Llama-3.1-8B-Instruct", "9.0", "v2"),
        ("0.23.0", "Qwen/Qwen3-30B-A3B", "9.0", "flashinfer"),  # MoE stays on the V1 runner in 0.23
        ("0.26.0", "Qwen/Qwen3-32B", "9.0", "v2"),  # every dense model from 0.25
        ("0.26.0", "Qwen/Qwen3.6-35B-A3B", "9.0", "flashinfer"),  # hybrids stay on V1
        ("0.28.0", "Qwen/Qwen3.6-27B", "12.0", "flashinfer"),
        ("0.29.0", "Qwen/Qwen3.6-35B-A3B", "9.0", "v2"),  # V2 by default for everything
    ],
)
def test_sampler_warm_up_by_runner_and_release(version, repo, capability, sampler):
    arch = find_model(repo).architecture()
    v = vllm_version(version)
    assert uses_model_runner_v2(v, arch.architecture, arch.is_moe, arch.is_hybrid, False) is (sampler == "v2")
    settings = {k: e["value"] for k, e in resolve_settings(arch, v, H100).items()}
    overhead = overhead_estimate(arch, v, settings, compute_capability=capability)
    assert overhead["sampler"] == sampler
    per_logit = overhead["sampler_peak_bytes"] / (settings["max_num_seqs"] * arch.vocab_size)
    assert per_logit == pytest.approx({"native": 40.0, "flashinfer": 18.0, "v2": 10.0}[sampler], rel=1e-6)
    uncertain = not v.at_least(0, 11, 1)
    assert (overhead["sampler_alternative"] == "flashinfer") is uncertain
    assert (overhead["charged_bytes_alternative"] is not None) is uncertain


@pytest.mark.parametrize(
    ("installed", "sampler", "alternative"),
    [(None, "native", "flashinfer"), (True, "flashinfer", None), (False, "native", None)],
)
def test_sampler_up_to_0_11_0_follows_the_flashinfer_install(installed, sampler, alternative):
    v = vllm_version("0.10.2")
    settings = {k: e["value"] for k, e in resolve_settings(LLAMA8B, v, H100).items()}
    got = overhead_estimate(LLAMA8B, v, settings, compute_capability="9.0", flashinfer_installed=installed)
    assert (got["sampler"], got["sampler_alternative"]) == (sampler, alternative)


# Issue 17: published runs that served on vLLM's container image (FlashInfer installed).
GPT_OSS_H100 = {"max_model_len": 16000}
QWEN3_235B_FP8 = ModelArchitecture.from_config(
    {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 94,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 4096,
        "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_experts": 128, "num_experts_per_tok": 8,
        "vocab_size": 151936, "max_position_embeddings": 262144, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    }
)  # fmt: skip


@pytest.mark.parametrize("version", ["0.10.1.1", "0.10.2", "0.11.0"])
@pytest.mark.parametrize(
    "repo", ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B", "openai/gpt-oss-20b", "Qwen/Qwen3-30B-A3B"]
)
def test_no_uncertain_term_headline_is_the_optimistic_end(version, repo):
    """Issue #27: an uncertain overhead term charges its larger end; the KV headline is the range's low end,
    and the overhead charged is the larger of the two ends."""
    arch = find_model(repo).architecture()
    got = vllm_memory_budget(arch, version, H100, settings={"max_model_len": 4096})
    low, high = got["kv_cache_range_bytes"]
    assert low < high, "the sampler warm-up of 0.10-0.11.0 is uncertain without flashinfer_installed"
    assert got["kv_cache_bytes"] == low
    overhead = got["overhead"]
    assert overhead["charged_bytes"] >= overhead["charged_bytes_alternative"]
    for installed in (True, False):
        known = vllm_memory_budget(
            arch, version, H100, settings={"max_model_len": 4096}, flashinfer_installed=installed
        )
        assert known["kv_cache_range_bytes"][0] == known["kv_cache_range_bytes"][1]
        assert got["kv_cache_bytes"] <= known["kv_cache_bytes"]


def test_qwen3_32b_on_one_h100_at_0_11_0_plans_the_logged_kv_cache():
    """Issue #27: the official 0.11.0 image (llm-d, docs/accuracy.md llmd-h100-qwen3-32b) logged 4.45 GiB of KV
    cache with max_num_seqs 1024, utilization 0.9, max_model_len 16000; the headline is within 10%."""
    arch = find_model("Qwen/Qwen3-32B").architecture()
    got = vllm_memory_budget(
        arch, "0.11.0", H100, settings={"max_model_len": 16000, "gpu_memory_utilization": 0.9, "block_size": 128}
    )
    assert got["settings"]["max_num_seqs"] == 1024
    assert got["kv_cache_gib"] == pytest.approx(4.45, rel=0.10)
    assert got["kv_cache_range_bytes"][1] / GIB > 6.5  # FlashInfer's end, the old optimistic headline


def test_qwen3_235b_fp8_on_four_h100_fits_its_default_context_on_0_11_0():
    got = vllm_memory_budget(QWEN3_235B_FP8, "0.11.0", H100, 4)
    assert got["max_model_len"] == 262144
    ids = {f["id"]: f["severity"] for f in got["findings"]}
    assert "vllm_kv_cache_too_small" not in ids and "vllm_no_kv_cache_memory" not in ids
    # the headline charges the native warm-up (1024 x 151936 logits), which leaves too little; only
    # FlashInfer's end starts (what the container image ran): a warning, not an error
    assert ids["vllm_overhead_uncertain"] == "warning"
    low, high = got["kv_cache_range_bytes"]
    assert got["kv_cache_bytes"] == low < high


def test_gpt_oss_120b_on_one_h100_is_no_memory_error_with_flashinfer_on_0_10_2():
    arch = find_model("openai/gpt-oss-120b").architecture()
    got = vllm_memory_budget(arch, "0.10.2", H100, settings=GPT_OSS_H100)
    assert got["kv_cache_range_bytes"][1] > 0  # FlashInfer's end; the headline is the native one
    ids = {f["id"]: f["severity"] for f in got["findings"]}
    assert ids["vllm_overhead_uncertain"] == "warning"
    assert "install flashinfer" in next(f["message"] for f in got["findings"] if f["id"] == "vllm_overhead_uncertain")
    native = vllm_memory_budget(arch, "0.10.2", H100, settings=GPT_OSS_H100, flashinfer_installed=False)
    assert "vllm_no_kv_cache_memory" in {f["id"] for f in native["findings"]}


def test_gpt_oss_120b_at_0_10_2_release_defaults_is_refused_even_with_the_logged_overhead():
    # Issue 17 claims a 1x H100 start at the release defaults (max_model_len 131072, max_num_seqs 1024,
    # utilization 0.9). The MXFP4 backends and create_weights padding (quantization/mxfp4.py) and the sampler
    # warm-up (v1/worker/gpu_model_runner.py _dummy_sampler_run) are the same code in 0.10.2 and 0.11.0, so
    # the 0.11.0 H100 log (llmd-h100-gptoss120b: weights 64.38 GiB, overhead 3.55 GiB, KV 3.33 GiB) holds
    # for 0.10.2: 18 full-attention layers x 131072 tokens need 4.79 GiB, and vLLM's own
    # check_enough_kv_cache_memory refuses. The plan agrees and names a max_model_len that fits.
    arch = find_model("openai/gpt-oss-120b").architecture()
    measured = int(3.55 * GIB)
    got = vllm_memory_budget(arch, "0.10.2", H100, measured_overhead_bytes=measured)
    assert got["max_model_len"] == 131072 and got["settings"]["max_num_seqs"] == 1024
    logged_kv = got["requested_bytes"] - int(64.38 * GIB) - measured
    needed = got["layout"]["blocks_per_request"] * got["layout"]["bytes_per_block"]
    assert 3.3 * GIB < logged_kv < needed and 4.7 * GIB < needed < 4.9 * GIB
    assert "vllm_kv_cache_too_small" in {f["id"] for f in got["findings"]}
    shorter = {"max_model_len": 65536}
    fitted = vllm_memory_budget(arch, "0.10.2", H100, settings=shorter, measured_overhead_bytes=measured)
    assert not {"vllm_kv_cache_too_small", "vllm_no_kv_cache_memory"} & {f["id"] for f in fitted["findings"]}


@pytest.mark.parametrize(("batched", "warned"), [(65536, True), (4096, False)])
def test_gdn_prefill_that_the_profile_run_skips_is_flagged(batched, warned):
    # seed deployment 5: INT8 W8A16 Qwen3.6-35B-A3B at 1M context on 80 GB, utilization 0.97: the model card
    # says max_num_batched_tokens above 4096 runs out of memory. The GDN layers return early in vLLM's
    # profile run, so a 64K-token prefill chunk allocates memory the budget never charged.
    settings = {"max_model_len": 262144, "gpu_memory_utilization": 0.97, "max_num_seqs": 2,
                "max_num_batched_tokens": batched, "kv_cache_dtype": "fp8"}  # fmt: skip
    got = vllm_memory_budget(QWEN36_35B, "0.33.0", H100, settings=settings)
    ids = {f["id"]: f["severity"] for f in got["findings"]}
    assert ("vllm_gdn_prefill_unprofiled" in ids) is warned
    assert gdn_prefill_transient_bytes(QWEN36_35B, 65536) > 16 * gdn_prefill_transient_bytes(QWEN36_35B, 4096) - 1


def test_gpt_oss_record_reproduced_from_its_logged_kv():
    # records.jsonl dennislee22-gptoss120b: 45.32 GiB -> 330,018 blocks, 2,640,144 tokens, 284.25x
    v = vllm_version("0.10.1")
    got = layout(GPT_OSS_120B, "0.10.1", tp=4, max_model_len=16384, max_num_batched_tokens=2048)
    assert got["bytes_per_block"] == 18 * 16 * 2 * 2 * 64 * 2
    capacity = kv_capacity(v, got, 330_018 * got["bytes_per_block"])
    assert capacity["kv_cache_tokens"] == 2_640_144
    assert f"{capacity['max_concurrency']:.2f}" == "284.25"


# ---- the budget --------------------------------------------------------------------------------------


def test_requested_memory_and_kv_budget_arithmetic():
    v = "0.26.0"
    budget = vllm_memory_budget(LLAMA8B, v, H100, settings={"max_model_len": 16384})
    assert budget["requested_bytes"] == math.ceil(H100 * 0.92)
    assert budget["kv_cache_bytes"] == budget["requested_bytes"] - budget["weights_bytes"] - budget["overhead_bytes"]
    assert budget["overhead_bytes"] == budget["overhead"]["charged_bytes"]
    assert budget["log_lines"][0] == f"Available KV cache memory: {round(budget['kv_cache_bytes'] / GIB, 2)} GiB"
    # the budget reports the values it was given; where each came from is the resolver's (settings.py)
    assert budget["settings"]["gpu_memory_utilization"] == 0.92
    assert budget["settings"]["max_model_len"] == 16384


def test_cudagraph_memory_is_charged_from_020():
    settings = {"max_model_len": 16384, "gpu_memory_utilization": 0.9}
    before = vllm_memory_budget(LLAMA8B, "0.19.1", H100, settings=settings)
    after = vllm_memory_budget(LLAMA8B, "0.20.0", H100, settings=settings)
    assert before["overhead"]["cudagraph_bytes"] == after["overhead"]["cudagraph_bytes"] > 0
    assert before["kv_cache_bytes"] - after["kv_cache_bytes"] == after["overhead"]["cudagraph_bytes"]
    eager = vllm_memory_budget(LLAMA8B, "0.20.0", H100, settings={**settings, "enforce_eager": True})
    assert eager["overhead"]["cudagraph_bytes"] == 0


def test_kv_cache_memory_bytes_is_honoured_exactly():
    got = vllm_memory_budget(LLAMA8B, "0.26.0", H100, settings={"kv_cache_memory_bytes": "20G"})
    assert got["kv_cache_bytes"] == 20 * GIB and got["kv_cache_source"] == "kv_cache_memory_bytes"
    assert got["num_blocks"] == 20 * GIB // (32 * 16 * 4096)
    assert any(f["id"] == "vllm_kv_cache_memory_bytes" for f in got["findings"])
    assert parse_human_int("20g") == 20 * 10**9 and parse_human_int(123) == 123
    with pytest.raises(ValueError, match="expected a byte count"):
        parse_human_int("20 GiB")


def test_measured_overhead_replaces_the_model():
    got = vllm_memory_budget(LLAMA8B, "0.26.0", H100, measured_overhead_bytes=3 * GIB)
    assert got["overhead_source"] == "measured" and got["overhead_bytes"] == 3 * GIB
    assert got["kv_cache_bytes"] == got["requested_bytes"] - got["weights_bytes"] - 3 * GIB


def test_prefix_caching_default_for_hybrids():
    # ref §2.4: prefix caching (-> mamba_cache_mode align) default-on for hybrids from 0.26.0
    s25 = resolve_settings(QWEN36_35B, vllm_version("0.25.1"), H100)
    s26 = resolve_settings(QWEN36_35B, vllm_version("0.26.0"), H100)
    assert (s25["enable_prefix_caching"]["value"], s25["mamba_cache_mode"]["value"]) == (False, "none")
    assert (s26["enable_prefix_caching"]["value"], s26["mamba_cache_mode"]["value"]) == (True, "align")
    off = resolve_settings(QWEN36_35B, vllm_version("0.26.0"), H100, {"enable_prefix_caching": False})
    assert off["mamba_cache_mode"] == {"value": "none", "source": "derived"}
    assert "mamba_cache_mode" not in resolve_settings(LLAMA8B, vllm_version("0.26.0"), H100)
    with pytest.raises(ValueError, match=r"vllm_mamba_cache_mode 'all' is not accepted by vLLM 0\.33\.0"):
        resolve_settings(QWEN36_35B, vllm_version("0.33.0"), H100, {"mamba_cache_mode": "all"})


def nvfp4_weights(arch):
    return estimate_weights(arch, quantization=quantization_from_name("nvfp4"))


def test_align_assertion_on_small_gpus_in_026_only():
    # ref §2.4/§3 #1: 0.26.0 + fp8 KV on a 32 GB card (2048 batched tokens) dies with this assertion
    settings = {"kv_cache_dtype": "fp8_e4m3", "max_model_len": 32768}
    args = {"weights": nvfp4_weights(QWEN36_35B), "gpu_name": "NVIDIA GeForce RTX 5090", "settings": settings}
    found = vllm_memory_budget(QWEN36_35B, "0.26.0", RTX5090, **args)["findings"]
    align = [f for f in found if f["id"] == "vllm_align_block_size"]
    assert align == [
        {
            "id": "vllm_align_block_size",
            "severity": "error",
            "message": "In Mamba cache align mode, block_size (2096) must be <= max_num_batched_tokens (2048).",
        }
    ]
    later = vllm_memory_budget(QWEN36_35B, "0.27.1", RTX5090, **args)["findings"]
    assert not [f for f in later if f["id"] == "vllm_align_block_size"]
    earlier = vllm_memory_budget(QWEN36_35B, "0.25.1", RTX5090, **args)["findings"]
    assert not [f for f in earlier if f["id"] == "vllm_align_block_size"]  # prefix caching off by default


def test_memory_findings():
    tight = vllm_memory_budget(LLAMA70B, "0.26.0", H100)
    assert tight["kv_cache_bytes"] < 0 and tight["findings"][0]["id"] == "vllm_no_kv_cache_memory"
    long = vllm_memory_budget(
        LLAMA70B, "0.26.0", H100, 4, settings={"max_model_len": 131072, "gpu_memory_utilization": 0.58}
    )
    assert "vllm_kv_cache_too_small" in {f["id"] for f in long["findings"]}
    too_long = vllm_memory_budget(LLAMA8B, "0.26.0", H100, settings={"max_model_len": 200000})
    assert "vllm_max_model_len_too_long" in {f["id"] for f in too_long["findings"]}


def test_auto_fit_max_model_len():
    got = vllm_memory_budget(
        LLAMA70B, "0.26.0", H100, 4, settings={"max_model_len": -1, "gpu_memory_utilization": 0.58}
    )
    fitted = got["max_model_len"]
    assert got["settings"]["max_model_len"] == fitted and 0 < fitted < 131072
    per_block = got["layout"]["bytes_per_block"]
    assert math.ceil(fitted / 16) <= got["num_blocks"] - 1 < math.ceil((fitted + 16) / 16)
    assert got["kv_cache_bytes"] // per_block == got["num_blocks"]


def test_weights_per_rank_under_tp_and_pp():
    weights = estimate_weights(LLAMA70B)
    tp2 = weights_per_rank(LLAMA70B, weights, 2)
    assert len(tp2) == 2 and tp2[0] == pytest.approx(weights.total_bytes / 2, rel=1e-3)
    pp2 = weights_per_rank(LLAMA70B, weights, 1, 2)
    assert pp2[0] + pp2[1] == pytest.approx(weights.total_bytes, rel=1e-6)
    # distributed/utils.py get_pp_indices: remainder layers go to the stages before the last
    assert pp_layer_bounds(61, 2) == [(0, 31), (31, 61)]
    assert pp_layer_bounds(5, 3) == [(0, 2), (2, 4), (4, 5)]


def test_pipeline_stages_hold_their_own_layers():
    # each stage sizes its KV cache over its own layers; vLLM keeps the smallest block count of all ranks
    got = vllm_memory_budget(LLAMA70B, "0.26.0", H100, 2, 2, settings={"max_model_len": 16384})
    assert got["layout"]["group_size"] == 40 and got["layout"]["bytes_per_block"] == 40 * 16 * 4 * 2 * 128 * 2
    assert got["num_blocks"] == got["kv_cache_bytes"] // got["layout"]["bytes_per_block"]
    assert len(got["weights_per_rank_bytes"]) == 4


def test_mxfp4_expert_padding_matches_logged_weights():
    # records.jsonl llmd-h100-gptoss20b / -120b: "Model loading took 13.47 / 64.38 GiB" on one H100
    for repo, logged in (("openai/gpt-oss-20b", 13.47), ("openai/gpt-oss-120b", 64.38)):
        arch = find_model(repo).architecture()
        rank = weights_per_rank(arch, estimate_weights(arch, params=find_model(repo).params))[0]
        assert rank / GIB == pytest.approx(logged, rel=0.005)


def test_kv_bytes_per_gpu_grow_with_tp_and_a_pinned_size_wins():
    two = vllm_memory_budget(LLAMA70B, "0.26.0", H100, 2)
    assert vllm_memory_budget(LLAMA70B, "0.26.0", H100, 4)["kv_cache_bytes"] > two["kv_cache_bytes"]
    pinned = vllm_memory_budget(LLAMA70B, "0.26.0", H100, 1, settings={"kv_cache_memory_bytes": 5 * GIB})
    assert pinned["kv_cache_bytes"] == 5 * GIB
    with pytest.raises(ValueError, match=r"Total number of attention heads \(64\) must be divisible by tensor"):
        vllm_memory_budget(LLAMA70B, "0.26.0", H100, 3)


def test_nvidia_smi_total_to_cuda_total():
    assert cuda_total_bytes_from_nvidia_smi(81559) / GIB == pytest.approx(79.15, abs=0.01)  # logs: 79.18-79.19
    assert cuda_total_bytes_from_nvidia_smi(32607) < 31.36 * GIB  # RTX 5090 logs 31.36


# ---- the startup-log dataset (docs/accuracy.md) ------------------------------------------------------


ACCURACY = load_script(pathlib.Path(__file__).resolve().parents[5] / "accuracy" / "generate.py", "accuracy_generate")
RESULT = ACCURACY.evaluate_records()


def test_every_record_is_evaluated_or_says_why_not():
    assert len(RESULT["evaluated"]) >= 13
    assert all(row["reason"] for row in RESULT["skipped"])


@pytest.mark.parametrize("row", [r for r in RESULT["evaluated"] if not r["tolerance_exempt"]], ids=lambda r: r["id"])
def test_startup_log_predicted_within_tolerance(row):
    errors = ACCURACY.errors(row)
    if errors["weights_pct"] is not None:
        assert abs(errors["weights_pct"]) <= ACCURACY.WEIGHTS_TOLERANCE_PCT
    if row["part"] == "validation" and row["complete"]:
        # within 5 % or 0.5 GiB (the larger), and never more than 5 % optimistic
        assert ACCURACY.kv_within_target(row) in (True, None), errors["kv_gib"]
    for key in ("tokens_pct", "concurrency_pct"):
        if errors[key] is not None:
            assert abs(errors[key]) <= ACCURACY.CAPACITY_TOLERANCE_PCT


def test_accuracy_report_is_current():
    text = ACCURACY.render(RESULT)
    assert ACCURACY.OUTPUT.read_text(encoding="utf-8") == text, "run tests/accuracy/generate.py"


H200 = cuda_total_bytes_from_nvidia_smi(143771)


@pytest.mark.parametrize("repo", catalogue_ids())
@pytest.mark.parametrize("version", ["0.11.0", "0.19.1", "0.20.0", "0.26.0", "0.27.1", "0.33.0"])
def test_every_catalogued_model_budgets_consistently(repo, version):
    entry = find_model(repo)
    arch = entry.architecture()
    tp = 8 if entry.total_params > 200e9 else 2
    got = vllm_memory_budget(arch, version, H200, tp, weights=estimate_weights(arch, params=entry.params))
    assert got["kv_cache_bytes"] == got["requested_bytes"] - got["weights_bytes"] - got["overhead_bytes"]
    assert got["num_blocks"] == max(0, got["kv_cache_bytes"]) // got["layout"]["bytes_per_block"]
    assert got["layout"]["blocks_per_request"] > 0 and got["block_size"] % 16 == 0
    if arch.is_hybrid:
        assert got["layout"]["page_bytes"] >= got["layout"]["gdn_state"]["page_bytes"]
    length = got["max_model_len"]
    if vllm_version(version).kv_tokens_from_concurrency:
        assert got["kv_cache_tokens"] == int(got["max_concurrency"] * length)
    else:
        groups = len(got["layout"]["groups"])
        assert got["kv_cache_tokens"] == got["num_blocks"] // groups * got["block_size"]
    assert got["log_lines"][-1].endswith(f"{got['max_concurrency']:.2f}x")


# Issue 17: the vision tower's encoder profile is one dummy image at the image processor's pixel limit (0.20.0
# and 0.32.0 trace). (settings, whether the encoder profile is charged)
VISION_PROFILE_CASES = [
    ({}, True),
    ({"limit_mm_per_prompt": {"video": 0}}, True),
    ({"limit_mm_per_prompt": {"image": 0, "video": 0}}, False),
    ({"language_model_only": True}, False),
]
# 65,536 patches x 2 x (2 x 1152 + 2 x 4304) bytes: 1.33 GiB (the old allowance was 0.25 GiB)
QWEN36_VISION_PROFILE = 65536 * 2 * (2 * 1152 + 2 * 4304)


@pytest.mark.parametrize("settings, charged", VISION_PROFILE_CASES)
def test_vision_profile_is_charged_at_the_processor_pixel_limit(settings, charged):
    got = vllm_memory_budget(QWEN36_35B, "0.20.0", H100, settings={"max_model_len": 32768, **settings})
    found = [f for f in got["findings"] if f["id"] == "vllm_vision_profile_uncertain"]
    assert bool(found) == charged
    low, high = got["kv_cache_range_bytes"]
    assert low == high == got["kv_cache_bytes"]
    if charged:
        assert got["overhead"]["multimodal_bytes"] == QWEN36_VISION_PROFILE
        assert got["overhead"]["vision_profile"]["pixels"] == 16_777_216
        assert found[0]["severity"] == "info"
        message = found[0]["message"]
        assert "16,777,216 pixels" in message and "charged at 1.33 GiB" in message and "65,536 patches" in message
        assert "inferops_model.config_file" in message and "vllm_language_model_only: true" in message
    else:
        assert got["overhead"]["multimodal_bytes"] == 0


def test_vision_profile_reads_the_checkpoint_pixel_limit():
    args = {"settings": {"max_model_len": 32768}}
    smaller = vllm_memory_budget(QWEN36_35B, "0.20.0", H100, image_max_pixels=4_194_304, **args)
    default = vllm_memory_budget(QWEN36_35B, "0.20.0", H100, **args)
    assert smaller["overhead"]["vision_profile"]["patches"] == 16384
    assert smaller["overhead"]["multimodal_bytes"] == QWEN36_VISION_PROFILE // 4
    assert smaller["kv_cache_bytes"] - default["kv_cache_bytes"] == QWEN36_VISION_PROFILE * 3 // 4
    message = next(f["message"] for f in smaller["findings"] if f["id"] == "vllm_vision_profile_uncertain")
    assert "from the checkpoint's image processor" in message
    tiny = vllm_memory_budget(QWEN36_35B, "0.20.0", H100, image_max_pixels=65536, **args)
    assert tiny["overhead"]["multimodal_bytes"] == 256 << 20  # never below the allowance
    # the tower's MLP is split over the TP ranks (intermediate / tp per rank), the residual stream is not
    split = vllm_memory_budget(QWEN36_35B, "0.20.0", H100, 2, **args)
    assert split["overhead"]["multimodal_bytes"] == 65536 * 2 * (2 * 1152 + 2 * 4304 // 2)


def test_rtx5090_nvfp4_reference_card_is_not_optimistic():
    # Issue 17: the reference card's conservative baseline (vLLM 0.20.0, utilization 0.93, 32K, 16 sequences,
    # 4096 batched tokens, fp8 KV): the plan predicted 7.09 GiB of KV cache, about 20 % over the card's
    # measured figure (the numbers: about 5.9 GiB), with the encoder profile charged at the 0.25 GiB
    # allowance. Charged at the 16,777,216-pixel dummy image it is within 5 % of that figure.
    settings = {"gpu_memory_utilization": 0.93, "max_model_len": 32768, "max_num_seqs": 16,
                "max_num_batched_tokens": 4096, "kv_cache_dtype": "fp8"}  # fmt: skip
    got = vllm_memory_budget(
        QWEN36_35B, "0.20.0", RTX5090, weights=nvfp4_weights(QWEN36_35B), gpu_name="NVIDIA GeForce RTX 5090",
        compute_capability="12.0", settings=settings,
    )  # fmt: skip
    implied_measured = 7.09 * GIB / 1.2
    assert implied_measured * 0.95 <= got["kv_cache_bytes"] <= implied_measured * 1.05
    assert not {"vllm_kv_cache_too_small", "vllm_no_kv_cache_memory"} & {f["id"] for f in got["findings"]}


def test_vision_profile_only_for_the_traced_processor_family():
    gemma = find_model("google/gemma-3-27b-it").architecture()
    got = vllm_memory_budget(gemma, "0.20.0", H100, settings={"max_model_len": 8192})
    assert got["overhead"]["vision_profile"] is None and got["overhead"]["multimodal_bytes"] == 256 << 20
    assert "vllm_vision_profile_uncertain" not in {f["id"] for f in got["findings"]}


# Issue 17: published runs that served are never memory-fit errors; runs vLLM refused are not planned as fitting
# (tests/unit/fixtures/vllm_startup_logs/published_runs.yml, reported in docs/accuracy.md).
PUBLISHED = ACCURACY.evaluate_published_runs()


@pytest.mark.parametrize("run", PUBLISHED, ids=lambda run: run["id"])
def test_published_runs_are_planned_as_they_ended(run):
    assert run["verdict"] == run["expect"]
    if run["outcome"] == "served" and not run["known_disagreement"]:
        assert run["verdict"] != "error"
    elif not run["known_disagreement"]:
        assert run["verdict"] in ("error", "warning")
    if run.get("kv_predicted_logged_weights") is not None and run["kv_logged"] is not None:
        # the overhead model against the logged KV line: within 0.5 GiB, never more than 5 % optimistic
        assert abs(run["kv_predicted_logged_weights"] - run["kv_logged"]) <= 0.5


@pytest.mark.parametrize(("version", "custom", "gib"), [
    ("0.11.0", None, 1.75), ("0.11.0", True, 1.75), ("0.11.0", False, 0.20), ("0.27.1", False, 0.50),
])  # fmt: skip
def test_non_torch_memory_without_custom_all_reduce_is_one_gpus(version, custom, gib):
    # records: Ray TP2/TP4 across nodes and four PCIe L40S logged one GPU's non-torch memory (docs/accuracy.md)
    v = vllm_version(version)
    settings = {k: e["value"] for k, e in resolve_settings(LLAMA70B, v, H100).items()}
    got = overhead_estimate(LLAMA70B, v, settings, tensor_parallel_size=4, custom_all_reduce=custom)
    assert got["non_torch_bytes"] == int(gib * GIB)
