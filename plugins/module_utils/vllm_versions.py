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
``batch_defaults(version, gpu_total_bytes, gpu_name="") -> dict``: ``max_num_batched_tokens`` and
    ``max_num_seqs`` that ``vllm serve`` picks for the GPU class (engine/arg_utils.py get_batch_defaults).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Tuple

OLDEST_SUPPORTED = (0, 10, 0)
NEWEST_KNOWN = (0, 33, 99)

_BASE_KV_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")
_TURBOQUANT = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
_GIB = 1 << 30


def parse_vllm_version(text: str) -> Tuple[int, ...]:
    raw = str(text).strip()
    if raw.startswith("v"):
        raw = raw[1:]
    raw = raw.split("+", 1)[0]
    if not re.fullmatch(r"\d+\.\d+\.\d+(\.\d+)?", raw):
        raise ValueError(
            f"vllm_version {text!r} is not an exact release: pin a published version such as 0.26.0 "
            "(pre-releases, nightlies and ranges cannot be budgeted)"
        )
    return tuple(int(part) for part in raw.split("."))


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
    # one "GPU KV cache size: ..., Maximum concurrency ..." line (0.33 update_kv_cache_capacity)
    capacity_log_single_line: bool
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
    large_gpu_tier: bool  # >= 160 GiB tier of get_batch_defaults (absent in 0.19.1)

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
        capacity_log_single_line=number >= (0, 33, 0),
        hybrid_prefix_caching_default=number >= (0, 26, 0),
        align_block_size_assert=(0, 17, 0) <= number < (0, 27, 0),
        mamba_cache_modes=("align", "none") if number >= (0, 33, 0) else ("align", "none", "all"),
        gdn_prefill_checkpoint=number >= (0, 33, 0),
        consumed_memory_profiler=number >= (0, 27, 0),
        kv_cache_dtypes=_kv_cache_dtypes(number),
        gguf_supported=number < (0, 24, 0),
        bitsandbytes_supported=number < (0, 28, 0),
        large_gpu_tier=number >= (0, 20, 0),
    )


def batch_defaults(version: VllmVersion, gpu_total_bytes: int, gpu_name: str = "") -> Dict[str, int]:
    """``vllm serve`` defaults for max_num_batched_tokens and max_num_seqs on this GPU class."""
    name = gpu_name.upper()
    total_gib = gpu_total_bytes / _GIB
    if version.large_gpu_tier and total_gib >= 160:
        return {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}
    small = "A100" in name or (version.large_gpu_tier and "GB10" in name)
    if total_gib >= 70 and not small:
        return {"max_num_batched_tokens": 8192, "max_num_seqs": 1024}
    return {"max_num_batched_tokens": 2048, "max_num_seqs": 256}
