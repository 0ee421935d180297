# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Ollama's settings (the ollama_* variables), each declared once, and the one resolver that values them.

``resolve_ollama_settings`` applies the inventory, then what the pinned Ollama version does when a
variable is unset (its default context by VRAM tier, one sequence, f16 KV cache, flash attention by era
and GPU), then what it derives or forces (the context clamped to the GGUF's, one sequence for some
architectures, f16 without flash attention). The memory budget takes the resolved values; ollama_render
writes them as the server's environment.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama import architectures
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    FLASH_ATTENTION_DEFAULT_ARCHS,
    KV_BYTES_PER_ELEMENT,
    QWEN35_SUPPORT,
    OllamaBudgetError,
    OllamaSettings,
    add_check,
    default_context_length,
    era_of,
    flash_attention_supported,
    forced_single_parallel,
    gpu_total,
    parse_version,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import (
    MIN_SUPPORTED,
    VERIFIED_UP_TO,
    first_release_with,
)

_VERIFIED = f"{VERIFIED_UP_TO[0]}.{VERIFIED_UP_TO[1]}"

# Ollama settings (the ollama_* variables). Its environment is rendered by ollama_render.
OLLAMA_SETTINGS: Tuple[Setting, ...] = (
    Setting("context_length", "int", minimum=1),
    Setting("num_parallel", "int", minimum=1),
    Setting("kv_cache_type", "str", choices=("f16", "q8_0", "q4_0")),
    Setting("flash_attention", "bool"),
    Setting("num_gpu", "int", minimum=0),
    Setting("num_batch", "int", minimum=1),
    Setting("gpu_overhead_bytes", "bytes", minimum=0),
    Setting("sched_spread", "bool"),
)


Checks = List[Dict[str, str]]


def _add_version_checks(checks: Checks, ollama_version: str, version: Tuple[int, ...], arch: str) -> None:
    """A version newer than the traced source; an architecture the version cannot load."""
    if version[:2] > VERIFIED_UP_TO[:2]:
        add_check(
            checks,
            "ollama-version-unverified",
            "info",
            f"Ollama {ollama_version} is newer than the source this budget was traced to ({_VERIFIED}); "
            f"the rules of the llama-server era (0.30-{_VERIFIED}) are applied",
        )
    verdict = architectures.support(arch, version) if arch else None
    if verdict is not None and verdict.status in ("later", "removed"):
        tag = architectures.ARCHITECTURE_DATA["releases"][verdict.release]["tag"]
        why = (
            f"the first release read that loads it is {verdict.passing}"
            if verdict.status == "later"
            else f"the last release read that loads it is {verdict.passing}"
        )
        checks.append(
            {
                "id": "ollama-arch-unsupported",
                "severity": "error",
                "message": f"Ollama {ollama_version} cannot load the GGUF architecture {arch!r}: neither the llama.cpp "
                f"that ollama/ollama {tag} vendors nor its Go engine knows the name, so the model fails to load; {why}",
                "variable": "ollama_version",
                "suggested": verdict.passing,
            }
        )
    if verdict is not None and verdict.status == "unread":
        _add_unverified_arch_check(checks, ollama_version, version, verdict)
    if arch in ("qwen35", "qwen35moe") and version < QWEN35_SUPPORT:
        add_check(
            checks,
            "ollama-arch-unsupported",
            "error",
            f"Ollama {ollama_version} cannot load the {arch} architecture (added in 0.17.1); raise ollama_version",
        )


def _add_unverified_arch_check(
    checks: Checks, ollama_version: str, version: Tuple[int, ...], verdict: architectures.OllamaArchitectureSupport
) -> None:
    """The release that applies to ``ollama_version`` has no list of names read: say so, never pass in silence.
    An info note when a release read (or the release records' first release) loads the name, else a warning."""
    arch, newest = verdict.architecture, architectures.NEWEST_READ
    tag = architectures.llama_cpp_tag(verdict.release)
    unread = (
        f"Ollama {ollama_version} serves GGUFs with llama-server built from llama.cpp {tag}, whose architecture "
        "names were not read"
        if tag
        else f"the architecture names of Ollama {verdict.release}, the release record that applies to "
        f"{ollama_version}, were not read (no tag v{verdict.release} in the ollama/ollama snapshot read)"
    )
    first = first_release_with(arch)
    if verdict.passing is not None:
        evidence = f"Ollama {verdict.passing}, a release read, loads it"
    elif first is not None and version >= first:
        evidence = f"the release records say Ollama loads it from {'.'.join(map(str, first))}"
    else:
        evidence = ""
    message = f"{unread}, so the plan cannot verify that Ollama {ollama_version} loads the GGUF architecture {arch!r}"
    verified = f"ollama_version is verified up to {newest}"
    check = {"id": "ollama-arch-unverified", "variable": "ollama_version"}
    if evidence:
        check.update(severity="info", message=f"{message}; {evidence} ({verified})")
    else:
        check.update(
            severity="warning",
            message=f"{message}, and no release read up to it loads it ({verified}): check that Ollama "
            f"{ollama_version} loads {arch!r} before relying on this plan",
        )
    checks.append(check)


def _resolve_context_length(
    context_length: Optional[int],
    default_length: Optional[int],
    trained: int,
    checks: Checks,
    sources: Dict[str, str],
) -> int:
    """default_length: the release's default for these GPUs (budget.default_context_length), when unset."""
    if context_length is None:
        context_length, sources["context_length"] = int(default_length or 0), "default"
    else:
        context_length, sources["context_length"] = int(context_length), "inventory"
    if context_length <= 0:
        raise OllamaBudgetError(f"ollama_context_length must be a positive number of tokens, got {context_length}")
    if trained and context_length > trained:
        add_check(
            checks,
            "ollama-context-clamped",
            "warning",
            f"ollama_context_length {context_length} exceeds the model's trained context {trained}; Ollama clamps it",
        )
        context_length = trained
    return context_length


def _resolve_num_parallel(
    num_parallel: Optional[int],
    arch: str,
    version: Tuple[int, ...],
    ollama_version: str,
    checks: Checks,
    sources: Dict[str, str],
) -> int:
    if num_parallel is None:
        num_parallel, sources["num_parallel"] = 1, "default"
    else:
        num_parallel, sources["num_parallel"] = int(num_parallel), "inventory"
    if num_parallel < 1:
        raise OllamaBudgetError(f"ollama_num_parallel must be 1 or more, got {num_parallel}")
    if num_parallel > 1 and forced_single_parallel(arch, version):
        add_check(
            checks,
            "ollama-parallel-forced",
            "warning",
            f"Ollama {ollama_version} serves {arch} models one request at a time (server/sched.go forces "
            f"num_parallel=1): ollama_num_parallel {num_parallel} is ignored and the KV cache holds one sequence",
        )
        num_parallel, sources["num_parallel"] = 1, "forced by Ollama"
    return num_parallel


def _resolve_flash_attention(
    flash_attention: Optional[bool],
    gpu_list: List[Dict[str, Any]],
    era: str,
    arch: str,
    checks: Checks,
    sources: Dict[str, str],
) -> bool:
    fa_supported = flash_attention_supported(gpu_list)
    if flash_attention is None:
        sources["flash_attention"] = "default"
        # llama-server gets --flash-attn auto; the older runners enable it per architecture.
        flash_attention = fa_supported and (era == "llama_server" or arch in FLASH_ATTENTION_DEFAULT_ARCHS)
    else:
        flash_attention, sources["flash_attention"] = bool(flash_attention), "inventory"
        if flash_attention and not fa_supported:
            add_check(
                checks,
                "ollama-flash-attention-gpu",
                "warning",
                "a GPU below compute capability 6.0 (or 7.2) cannot use flash attention; Ollama turns it off",
            )
            flash_attention = False
    return flash_attention


def _kv_cache_without_flash_attention(
    kv_cache_type: str, era: str, ollama_version: str, checks: Checks, sources: Dict[str, str]
) -> str:
    """A quantized KV cache without flash attention: refused by llama-server, f16 before it."""
    if era == "llama_server":
        add_check(
            checks,
            "ollama-kv-quantized-without-fa",
            "error",
            f"ollama_kv_cache_type {kv_cache_type} needs flash attention (llama-server refuses a quantized V "
            "cache without it); set ollama_flash_attention: true or ollama_kv_cache_type: f16",
        )
    else:
        add_check(
            checks,
            "ollama-kv-quantized-without-fa",
            "warning",
            f"Ollama {ollama_version} ignores ollama_kv_cache_type {kv_cache_type} without flash attention "
            "and uses f16; the budget counts f16",
        )
        kv_cache_type, sources["kv_cache_type"] = "f16", "fallback (no flash attention)"
    return kv_cache_type


def resolve_ollama_settings(
    ollama_version: str,
    model: Mapping[str, Any],
    gpus: Sequence[Mapping[str, Any]],
    *,
    context_length: Optional[int] = None,
    num_parallel: Optional[int] = None,
    kv_cache_type: Optional[str] = None,
    flash_attention: Optional[bool] = None,
    num_gpu: Optional[int] = None,
    num_batch: Optional[int] = None,
    gpu_overhead_bytes: int = 0,
    sched_spread: bool = False,
) -> OllamaSettings:
    """Every Ollama setting for a GGUF shape (``budget.GGUF_SHAPE_KEYS``) on these GPUs.

    Keyword arguments: the inventory's values (None = unset). num_gpu / num_batch stay None when unset:
    Ollama sizes them from memory at load time, which the budget computes.
    """
    version = parse_version(ollama_version)
    if version < MIN_SUPPORTED:
        raise OllamaBudgetError(
            f"ollama_version {ollama_version}: planning supports Ollama 0.9.7 and later; pin a newer ollama_version"
        )
    era = era_of(version)
    shape = dict(model)
    gpu_list = [dict(g) for g in gpus]
    if not gpu_list:
        raise OllamaBudgetError("gpus: no GPU given; declare the host's GPUs in inventory or gather gpu_facts first")
    arch = str(shape.get("architecture") or "")
    checks: List[Dict[str, str]] = []
    sources: Dict[str, str] = {}

    # What the budget module says of these GPUs, asked at once: their memory and the release's default context.
    totals = [gpu_total(g) for g in gpu_list]
    default_length = (
        default_context_length(version, sum(totals), gpu_overhead_bytes) if context_length is None else None
    )
    trained = int(shape.get("context_length") or 0)

    _add_version_checks(checks, ollama_version, version, arch)

    context_length = _resolve_context_length(context_length, default_length, trained, checks, sources)

    num_parallel = _resolve_num_parallel(num_parallel, arch, version, ollama_version, checks, sources)

    if kv_cache_type is None:
        kv_cache_type, sources["kv_cache_type"] = "f16", "default"
    else:
        kv_cache_type, sources["kv_cache_type"] = str(kv_cache_type), "inventory"
    if kv_cache_type not in KV_BYTES_PER_ELEMENT:
        raise OllamaBudgetError(
            f"ollama_kv_cache_type {kv_cache_type!r} is not accepted by Ollama; use f16, q8_0 or q4_0"
        )

    flash_attention = _resolve_flash_attention(flash_attention, gpu_list, era, arch, checks, sources)

    if kv_cache_type != "f16" and not flash_attention:
        kv_cache_type = _kv_cache_without_flash_attention(kv_cache_type, era, ollama_version, checks, sources)

    sources["gpu_overhead_bytes"] = "inventory" if gpu_overhead_bytes else "default"
    sources["sched_spread"] = "inventory" if sched_spread else "default"
    values = {
        "context_length": context_length,
        "num_parallel": num_parallel,
        "kv_cache_type": kv_cache_type,
        "flash_attention": flash_attention,
        "num_gpu": None if num_gpu is None else int(num_gpu),
        "num_batch": None if num_batch is None else int(num_batch),
        "gpu_overhead_bytes": int(gpu_overhead_bytes or 0),
        "sched_spread": bool(sched_spread),
    }
    return OllamaSettings(values=values, sources=sources, checks=checks, version=version, era=era, totals=totals)
