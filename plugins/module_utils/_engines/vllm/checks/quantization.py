# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""engine-format and quantization-capability: the weight format against the release and the GPU."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_text
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    SCHEME_MIN_CAPABILITY,
    Version,
    quant_min_capability,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
)


def check_engine_format(vv: VllmVersion, arch: Mapping[str, Any], model_format: str) -> List[Finding]:
    ver = vv.number
    quant = arch.get("quantization") or {}
    method = str(quant.get("method") or "").lower()
    fmt = model_format.lower()
    if (fmt == "gguf" or method == "gguf") and not vv.gguf_supported:
        return [
            Finding(
                "engine-format",
                "error",
                f"vLLM {version_text(ver)} has no GGUF loader (removed in 0.24.0): serve a safetensors checkpoint "
                "(inferops_model.repo) or this GGUF with Ollama (inferops_engine: ollama)",
                "inferops_model.repo",
                "a safetensors repository of the same model",
            )
        ]
    if (fmt == "bitsandbytes" or method == "bitsandbytes") and not vv.bitsandbytes_supported:
        return [
            Finding(
                "engine-format",
                "error",
                f"vLLM {version_text(ver)} has no bitsandbytes quantization (removed in 0.28.0): use an AWQ/GPTQ/FP8 "
                "checkpoint or pin vllm_version 0.27.1",
                "inferops_model.repo",
                "an AWQ, GPTQ or FP8 checkpoint",
            )
        ]
    return []


def check_quantization(ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], cc: Optional[int]) -> List[Finding]:
    if cc is None:
        return []
    findings = []
    quant = arch.get("quantization") or {}
    method = str(s.get("quantization") or quant.get("method") or "").lower().replace("-", "_")
    need = quant_min_capability(method, ver)
    if need is not None:
        if method == "compressed_tensors":
            need = max(need, SCHEME_MIN_CAPABILITY.get(str(quant.get("scheme")), 0))
        if cc < need:
            findings.append(
                Finding(
                    "quantization-capability",
                    "error",
                    f"quantization {method} needs compute capability {need / 10:.1f}, the GPUs have {cc / 10:.1f}: "
                    "pick a checkpoint whose scheme runs on these GPUs (for example AWQ/GPTQ int4 from 7.5)",
                    "inferops_model.repo",
                    "a checkpoint quantized with a method this GPU supports",
                )
            )
        elif quant.get("scheme") == "nvfp4" and cc < 100:
            findings.append(
                Finding(
                    "quantization-capability",
                    "info",
                    f"NVFP4 runs as Marlin W4A16 emulation on compute capability {cc / 10:.1f} (native FP4 GEMMs "
                    "need sm_100/sm_120)",
                    "inferops_model.repo",
                    None,
                )
            )
        elif quant.get("scheme") in ("fp8", "fp8_block") and cc < 89:
            findings.append(
                Finding(
                    "quantization-capability",
                    "info",
                    f"FP8 weights run weight-only (W8A16 Marlin) on compute capability {cc / 10:.1f}",
                    "inferops_model.repo",
                    None,
                )
            )
    dtype = str(s.get("dtype") or arch.get("dtype") or "auto").lower()
    if cc < 80 and dtype in ("bfloat16", "bf16", "auto") and str(arch.get("dtype")).lower() in ("bfloat16", "bf16"):
        findings.append(
            Finding(
                "quantization-capability",
                "error",
                f"bfloat16 needs compute capability 8.0, the GPUs have {cc / 10:.1f}: run in float16",
                "vllm_dtype",
                "half",
            )
        )
    return findings
