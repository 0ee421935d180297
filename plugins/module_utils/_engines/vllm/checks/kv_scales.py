# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""kv-scales-hybrid."""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import _as_bool, _finding, _fmt
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    KV_SCALES_GONE,
    KV_SCALES_HYBRID_GUARD,
    KV_SCALES_PRESENT_LAST_CHECKED,
    Finding,
    Version,
)


def _check_kv_scales(ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], hybrid: bool) -> List[Finding]:
    findings = []
    quant = arch.get("quantization") or {}
    if _as_bool(s.get("calculate_kv_scales")):
        if ver >= KV_SCALES_GONE:
            findings.append(
                _finding(
                    "kv-scales-hybrid",
                    "error",
                    f"--calculate-kv-scales was removed (absent in vLLM {_fmt(KV_SCALES_GONE)}); fp8 KV scales come "
                    "from the checkpoint or default to 1.0",
                    "vllm_calculate_kv_scales",
                    False,
                )
            )
        elif hybrid and str(s.get("kv_cache_dtype") or "auto").startswith("fp8"):
            severity = "error" if ver < KV_SCALES_HYBRID_GUARD else "warning"
            findings.append(
                _finding(
                    "kv-scales-hybrid",
                    severity,
                    "dynamic fp8 KV scales are computed from a dummy pass in which the Gated-DeltaNet/Mamba layers "
                    "have no state: the scales are garbage and the output turns to gibberish"
                    + ("" if severity == "error" else f" (vLLM {_fmt(ver)} ignores the flag for hybrid models)"),
                    "vllm_calculate_kv_scales",
                    False,
                )
            )
        elif ver > KV_SCALES_PRESENT_LAST_CHECKED:
            findings.append(
                _finding(
                    "kv-scales-hybrid",
                    "warning",
                    f"--calculate-kv-scales is deprecated and not verified to exist in vLLM {_fmt(ver)}",
                    "vllm_calculate_kv_scales",
                    False,
                )
            )
    if hybrid and quant.get("kv_cache_dtype") and str(s.get("kv_cache_dtype") or "auto").startswith("fp8"):
        findings.append(
            _finding(
                "kv-scales-hybrid",
                "warning",
                "the checkpoint ships static fp8 KV scales calibrated on a hybrid (GDN/Mamba) model; such scales "
                "have produced corrupted output: compare against kv_cache_dtype auto",
                "vllm_kv_cache_dtype",
                "auto",
            )
        )
    return findings
