# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Ollama's checks: context, KV cache type, format, driver."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool, as_dict
from ansible_collections.inferops.llm.plugins.module_utils._engines.driver import check_driver

Finding = Dict[str, Any]

OLLAMA_KV_TYPES = ("f16", "q8_0", "q4_0")


def check_ollama(
    *,
    model: Any,
    settings: Mapping[str, Any],
    model_format: str = "gguf",
    budget: Optional[Mapping[str, Any]] = None,
    gpus: Sequence[Mapping[str, Any]] = (),
    driver: Optional[Mapping[str, Any]] = None,
) -> List[Finding]:
    """Findings for an Ollama host (context_length, kv_cache_type, flash_attention, num_parallel)."""
    arch = as_dict(model)
    s = dict(settings)
    findings: List[Finding] = []
    if model_format.lower() != "gguf":
        findings.append(
            finding_entry(
                "engine-format",
                "error",
                "Ollama loads GGUF files: set inferops_model.file to a .gguf file of this model",
                "inferops_model.file",
                "<model>.gguf",
            )
        )
    kv = str(s.get("kv_cache_type") or "f16")
    if kv not in OLLAMA_KV_TYPES:
        findings.append(
            finding_entry(
                "kv-cache-dtype",
                "error",
                f"ollama_kv_cache_type '{kv}' is not one of f16, q8_0, q4_0",
                "ollama_kv_cache_type",
                "q8_0",
            )
        )
    elif kv != "f16" and as_bool(s.get("flash_attention")) is False:
        findings.append(
            finding_entry(
                "kv-cache-dtype",
                "warning",
                f"ollama_kv_cache_type {kv} needs flash attention; Ollama falls back to f16",
                "ollama_flash_attention",
                True,
            )
        )
    context = int(s.get("context_length") or 0)
    derived = int(arch.get("derived_max_model_len") or arch.get("max_position_embeddings") or 0)
    if context and derived and context > derived:
        findings.append(
            finding_entry(
                "context-length",
                "error",
                f"ollama_context_length {context} is beyond the model's {derived} positions",
                "ollama_context_length",
                derived,
            )
        )
    budget = dict(budget or {})
    if budget.get("fits") is False:
        findings.append(
            finding_entry(
                "memory-fit",
                "warning",
                "the model does not fit in VRAM at this context and parallelism: Ollama offloads layers to the CPU",
                "ollama_context_length",
                budget.get("max_context_on_gpu"),
            )
        )
    findings += check_driver(driver, gpus)
    return findings
