# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""kv-cache-dtype and attention-backend."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_text
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import (
    predicted_backend,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import BACKENDS, Version
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
)


def check_kv_and_backend(
    vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], cc: Optional[int]
) -> List[Finding]:
    kv = str(s.get("kv_cache_dtype") or "auto")
    if kv not in vv.kv_cache_dtypes:
        return _unknown_kv_dtype(vv, kv, cc)
    findings = _kv_dtype_findings(arch, s, kv)
    if cc is None:
        return findings
    return findings + _backend_findings(vv.number, arch, s, kv, cc)


def _unknown_kv_dtype(vv: VllmVersion, kv: str, cc: Optional[int]) -> List[Finding]:
    valid = vv.kv_cache_dtypes
    return [
        Finding(
            "kv-cache-dtype",
            "error",
            f"kv_cache_dtype '{kv}' does not exist in vLLM {version_text(vv.number)} (valid: {', '.join(valid)})",
            "vllm_kv_cache_dtype",
            "fp8" if cc and cc >= 89 else "auto",
        )
    ]


def _kv_dtype_findings(arch: Mapping[str, Any], s: Mapping[str, Any], kv: str) -> List[Finding]:
    findings = []
    model_dtype = str(s.get("dtype") or arch.get("dtype") or "bfloat16").lower()
    model_dtype = {"half": "float16", "bf16": "bfloat16", "fp16": "float16"}.get(model_dtype, model_dtype)
    if kv in ("float16", "bfloat16") and model_dtype in ("float16", "bfloat16") and kv != model_dtype:
        findings.append(
            Finding(
                "kv-cache-dtype",
                "error",
                f"kv_cache_dtype {kv} differs from the model dtype {model_dtype}",
                "vllm_kv_cache_dtype",
                "auto",
            )
        )
    if arch.get("is_mla") or arch.get("kv_lora_rank"):
        if kv == "nvfp4":
            findings.append(
                Finding(
                    "kv-cache-dtype", "error", "nvfp4 KV cache is not supported with MLA", "vllm_kv_cache_dtype", "fp8"
                )
            )
    elif kv in ("fp8_ds_mla", "nvfp4_ds_mla"):
        findings.append(
            Finding("kv-cache-dtype", "error", f"{kv} is for MLA (DeepSeek) models only", "vllm_kv_cache_dtype", "fp8")
        )
    return findings


def _backend_findings(ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], kv: str, cc: int) -> List[Finding]:
    findings = []
    sinks = str(arch.get("architecture", "")).startswith("GptOss")
    backend = s.get("attention_backend")
    auto_pick = predicted_backend(ver, cc, kv, sinks)
    if backend:
        name = str(backend).upper()
        entry = BACKENDS.get(name)
        if entry is None or (entry.since and ver < entry.since):
            findings.append(
                Finding(
                    "attention-backend",
                    "error",
                    f"attention backend '{backend}' does not exist in vLLM {version_text(ver)} "
                    f"(known: {', '.join(n for n, b in BACKENDS.items() if not b.since or ver >= b.since)})",
                    "vllm_attention_backend",
                    auto_pick,
                )
            )
        else:
            reason = entry.refuses(cc, kv, sinks)
            if reason:
                findings.append(
                    Finding(
                        "attention-backend",
                        "error",
                        f"{reason}: vLLM exits with 'Selected backend ... is not valid for this configuration'",
                        "vllm_attention_backend",
                        auto_pick,
                    )
                )
    elif auto_pick is None:
        findings.append(
            Finding(
                "kv-cache-dtype",
                "error",
                f"no attention backend of vLLM {version_text(ver)} supports kv_cache_dtype {kv} on compute capability "
                f"{cc / 10:.1f}",
                "vllm_kv_cache_dtype",
                "auto",
            )
        )
    return findings
