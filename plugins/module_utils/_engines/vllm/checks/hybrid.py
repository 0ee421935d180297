# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""prefix-caching-hybrid and mamba-block-size: hybrid (Mamba/GDN) models."""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_text
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
)


def prefix_caching_on(vv: VllmVersion, s: Mapping[str, Any], hybrid: bool) -> bool:
    explicit = as_bool(s.get("enable_prefix_caching"))
    if explicit is not None:
        return explicit
    return not hybrid or vv.hybrid_prefix_caching_default


def mamba_cache_mode(vv: VllmVersion, s: Mapping[str, Any], hybrid: bool) -> str:
    """The mode vLLM resolves: 'align' when prefix caching is on for a hybrid model, else 'none'."""
    if not hybrid:
        return "none"
    if not prefix_caching_on(vv, s, hybrid):
        return "none"
    mode = s.get("mamba_cache_mode")
    return str(mode) if mode in ("align", "all") else "align"


def check_prefix_caching(vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], hybrid: bool) -> List[Finding]:
    if not hybrid:
        return []
    ver = vv.number
    findings = []
    on = prefix_caching_on(vv, s, hybrid)
    mode = s.get("mamba_cache_mode")
    if on and as_bool(s.get("enable_chunked_prefill")) is False:
        findings.append(
            Finding(
                "prefix-caching-hybrid",
                "error",
                "prefix caching on a hybrid (Mamba/GDN) model needs chunked prefill: vLLM refuses to start",
                "vllm_enable_chunked_prefill",
                True,
            )
        )
    if mode == "all" and "all" not in vv.mamba_cache_modes:
        findings.append(
            Finding(
                "prefix-caching-hybrid",
                "error",
                f"mamba_cache_mode 'all' was removed (vLLM {version_text(ver)} accepts align or none)",
                "vllm_mamba_cache_mode",
                "align",
            )
        )
    elif mode == "all" and arch.get("linear_num_value_heads"):
        findings.append(
            Finding(
                "prefix-caching-hybrid",
                "error",
                "mamba_cache_mode 'all' is for Mamba2 models; Gated-DeltaNet models use 'align'",
                "vllm_mamba_cache_mode",
                "align",
            )
        )
    if s.get("mamba_block_size") and not on:
        findings.append(
            Finding(
                "prefix-caching-hybrid",
                "error",
                "vllm_mamba_block_size is set but prefix caching is off ('--mamba-block-size can only be set with "
                "--enable-prefix-caching')",
                "vllm_mamba_block_size",
                None,
            )
        )
    if on and vv.hybrid_prefix_caching_experimental_log:
        findings.append(
            Finding(
                "prefix-caching-hybrid",
                "info",
                f"vLLM {version_text(ver)} marks prefix caching for Mamba/GDN layers (align mode) as experimental",
                "vllm_enable_prefix_caching",
                None,
            )
        )
    return findings


def check_mamba_block(vv: VllmVersion, s: Mapping[str, Any], budget: Mapping[str, Any], hybrid: bool) -> List[Finding]:
    if not hybrid or mamba_cache_mode(vv, s, hybrid) != "align" or not vv.align_block_size_assert:
        return []
    ver = vv.number
    block = budget.get("block_size")
    batched = s.get("max_num_batched_tokens")
    if not block or not batched or int(batched) >= int(block):
        return []
    return [
        Finding(
            "mamba-block-size",
            "error",
            f"vLLM {version_text(ver)} asserts in Mamba cache align mode (prefix caching on a hybrid model) that "
            f"block_size ({block}) <= max_num_batched_tokens ({batched}); the service crashes at startup",
            "vllm_max_num_batched_tokens",
            suggested_batched_tokens(int(block)),
        )
    ]


def suggested_batched_tokens(block_size: int, floor: int = 2048) -> int:
    """Smallest power of two >= both the hybrid block size and `floor`."""
    return 1 << max(int(floor), int(block_size)).__sub__(1).bit_length()
