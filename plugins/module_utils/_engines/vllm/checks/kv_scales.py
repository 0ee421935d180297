# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""kv-scales-hybrid."""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_text
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
    first_record_with,
)

# The first release read without --calculate-kv-scales (the records' "calculate_kv_scales": "removed").
KV_SCALES_GONE = first_record_with("calculate_kv_scales", "removed")


def check_kv_scales(vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], hybrid: bool) -> List[Finding]:
    ver = vv.number
    state = vv.calculate_kv_scales
    findings = []
    quant = arch.get("quantization") or {}
    if as_bool(s.get("calculate_kv_scales")):
        if state == "removed":
            findings.append(
                Finding(
                    "kv-scales-hybrid",
                    "error",
                    f"--calculate-kv-scales was removed (absent in vLLM {KV_SCALES_GONE}); fp8 KV scales come "
                    "from the checkpoint or default to 1.0",
                    "vllm_calculate_kv_scales",
                    False,
                )
            )
        elif hybrid and str(s.get("kv_cache_dtype") or "auto").startswith("fp8"):
            severity = "error" if state == "present" else "warning"
            findings.append(
                Finding(
                    "kv-scales-hybrid",
                    severity,
                    "dynamic fp8 KV scales are computed from a dummy pass in which the Gated-DeltaNet/Mamba layers "
                    "have no state: the scales are garbage and the output turns to gibberish"
                    + (
                        "" if severity == "error" else f" (vLLM {version_text(ver)} ignores the flag for hybrid models)"
                    ),
                    "vllm_calculate_kv_scales",
                    False,
                )
            )
        elif state == "unverified":
            findings.append(
                Finding(
                    "kv-scales-hybrid",
                    "warning",
                    f"--calculate-kv-scales is deprecated and not verified to exist in vLLM {version_text(ver)}",
                    "vllm_calculate_kv_scales",
                    False,
                )
            )
    if hybrid and quant.get("kv_cache_dtype") and str(s.get("kv_cache_dtype") or "auto").startswith("fp8"):
        findings.append(
            Finding(
                "kv-scales-hybrid",
                "warning",
                "the checkpoint ships static fp8 KV scales calibrated on a hybrid (GDN/Mamba) model; such scales "
                "have produced corrupted output: compare against kv_cache_dtype auto",
                "vllm_kv_cache_dtype",
                "auto",
            )
        )
    return findings
