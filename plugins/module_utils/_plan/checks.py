# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Compatibility checks of model x engine version x GPUs x settings, run before any service starts.

Public API:

``check_vllm(...) -> list[dict]`` and ``check_ollama(...) -> list[dict]``
    Every finding is ``{"id", "severity" (error|warning|info), "message", "variable", "suggested"}``:
    the inventory variable to change and a value that passes. All findings are returned at once;
    the caller stops the host when any has severity ``error``. Each id has a section in
    docs/checks.md (cause, engine versions, source, fix).

``check_driver(driver, gpus, vllm_version=None)``, ``model_family(model, repo)``,
``predicted_backend(version_tuple, cc_x10, kv_cache_dtype, sinks)``, ``longest_fitting_len(budget)``,
``suggested_batched_tokens(block_size)`` and the tables ``TOOL_PARSERS``, ``REASONING_PARSERS``,
``FAMILIES``, ``BACKENDS``, ``QUANT_MIN_CAPABILITY`` are public too.

Version boundaries come from the published vLLM wheels (research notes
vllm-startup-memory-and-validation.md; release flags shared with the memory model live in
vllm_versions.VllmVersion) and the pull requests cited next to each table. Parser names were read
at four releases; a release between two that disagree is "unverified" and gives a warning.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
    engine_cuda,
    vllm_version,
)
from ansible_collections.inferops.llm.plugins.module_utils._hardware.nvidia_drivers import (
    branch_of,
    driver_at_least,
    minimum_driver_for,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import (
    ParallelDims,
    fp8_block_split_fails,
    pipeline_parallel_problems,
    tensor_parallel_problems,
)

Version = Tuple[int, int, int]
Finding = Dict[str, Any]

# Releases whose wheels were read for the parser, KV-dtype and backend tables (research notes section 0/3/4).
CHECKED_RELEASES: Tuple[Version, ...] = ((0, 19, 1), (0, 23, 0), (0, 28, 0), (0, 33, 0))

# --------------------------------------------------------------------------- version boundaries

# Release boundaries that change the memory model (align-mode block-size assertion 0.17-0.26, hybrid
# prefix caching default 0.26, GGUF removed 0.24, bitsandbytes removed 0.28, mamba_cache_mode "all"
# gone in 0.33, KV dtypes per release, default utilization) live in vllm_versions.VllmVersion.
# "Prefix caching in Mamba cache 'align' mode ... is experimental" is logged up to 0.30.
HYBRID_PREFIX_CACHING_EXPERIMENTAL_LAST: Version = (0, 30, 99)
# "max_num_seqs exceeds available Mamba cache blocks" (hybrid + FULL CUDA graphs) raised since 0.20.0.
MAMBA_BLOCKS_CUDAGRAPH_ERROR: Version = (0, 20, 0)
# --calculate-kv-scales: deprecated by PR #37201 (Mar 2026), disabled for hybrid models by PR #37565
# (Mar 2026, first release 0.19 per the deprecation schedule), still present in 0.19.1, removed by
# PR #49389 (Jul 2026); absent in 0.33.0. Releases 0.20-0.32 are unverified.
KV_SCALES_HYBRID_GUARD: Version = (0, 19, 0)
KV_SCALES_PRESENT_LAST_CHECKED: Version = (0, 19, 1)
KV_SCALES_GONE: Version = (0, 33, 0)
# --------------------------------------------------------------------------- parser tables
# Presence per CHECKED_RELEASES ("Y"/"N"), from vllm/tool_parsers/__init__.py and
# vllm/reasoning/__init__.py of each wheel.
TOOL_PARSERS: Dict[str, str] = {
    **{
        name: "YYYY"
        for name in [
            "hermes",
            "qwen3_coder",
            "qwen3_xml",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "pythonic",
            "mistral",
            "deepseek_v3",
            "deepseek_v31",
            "deepseek_v32",
            "openai",
            "glm45",
            "glm47",
            "kimi_k2",
            "minimax_m2",
            "granite",
            "granite-20b-fc",
            "granite4",
            "internlm",
            "jamba",
            "phi4_mini_json",
            "seed_oss",
            "step3",
            "step3p5",
            "hunyuan_a13b",
            "ernie45",
            "gemma4",
            "functiongemma",
            "longcat",
            "olmo3",
            "xlam",
            "gigachat3",
        ]
    },
    "minimax": "YYNN",
    **{
        name: "NYYY"
        for name in [
            "deepseek_v4",
            "hy_v3",
            "lfm2",
            "mimo",
            "minicpm5",
            "apertus",
            "cohere_command3",
            "cohere_command4",
            "poolside_v1",
        ]
    },
    **{name: "NNYY" for name in ["kimi_k3", "minimax_m3", "dots", "inkling", "ling3", "muse_glimmer"]},
    **{
        name: "NNNY"
        for name in [
            "qwen3_json",
            "deepseek_v41",
            "k2_horizon",
            "step5",
            "hy_v4",
            "plamo3",
            "muse",
            "musespark1x",
            "beam",
            "hf",
        ]
    },
}
REASONING_PARSERS: Dict[str, str] = {
    **{
        name: "YYYY"
        for name in [
            "deepseek_r1",
            "deepseek_v3",
            "ernie45",
            "gemma4",
            "glm45",
            "granite",
            "holo2",
            "hunyuan_a13b",
            "kimi_k2",
            "minimax_m2",
            "minimax_m2_append_think",
            "mistral",
            "nemotron_v3",
            "olmo3",
            "openai_gptoss",
            "qwen3",
            "seed_oss",
            "step3",
            "step3p5",
        ]
    },
    **{name: "NYYY" for name in ["cohere_command3", "cohere_command4", "deepseek_v4", "hy_v3", "mimo", "poolside_v1"]},
    **{name: "NNYY" for name in ["glm47", "inkling", "kimi_k3", "ling3", "minimax_m3", "muse_glimmer"]},
    **{
        name: "NNNY"
        for name in [
            "beam",
            "deepseek_v41",
            "granite_thinking_parser",
            "hf",
            "hy_v4",
            "k2_horizon",
            "minicpmv",
            "muse",
            "musespark1x",
            "plamo3",
            "step5",
        ]
    },
}


class Family:
    """Tool-call and reasoning formats of a model family (first entry = the recommended parser)."""

    def __init__(self, name: str, tool: Sequence[str], reasoning: Sequence[str], note: str):
        self.name = name
        self.tool = tuple(tool)
        self.reasoning = tuple(reasoning)
        self.note = note


FAMILIES: Dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "qwen3.5",
            ("qwen3_coder", "qwen3_xml"),
            ("qwen3",),
            "Qwen3.5/3.6 emit XML tool calls <tool_call><function=..><parameter=..>; hermes mangles them silently",
        ),
        Family("qwen3-coder", ("qwen3_coder", "qwen3_xml"), (), "Qwen3-Coder emits XML tool calls"),
        Family("qwen3-next", ("hermes", "qwen3_json"), ("qwen3", "deepseek_r1"), "Qwen3-Next emits JSON tool calls"),
        Family("qwen3", ("hermes", "qwen3_json"), ("qwen3", "deepseek_r1"), "Qwen3 emits JSON <tool_call>{...}"),
        Family("qwen2", ("hermes", "qwen3_json"), ("deepseek_r1",), "Qwen2.5/QwQ emit JSON <tool_call>{...}"),
        Family("llama3", ("llama3_json", "pythonic"), (), "Llama 3.x emits JSON tool calls"),
        Family("llama4", ("llama4_pythonic", "llama4_json"), (), "Llama 4 emits pythonic tool calls"),
        Family("mistral", ("mistral",), ("mistral",), "Mistral models use [TOOL_CALLS]"),
        Family("gpt-oss", ("openai",), ("openai_gptoss",), "gpt-oss uses the harmony format"),
        Family("deepseek-v3", ("deepseek_v3", "deepseek_v31"), ("deepseek_r1", "deepseek_v3"), "DeepSeek-V3/R1 format"),
        Family("glm4.5", ("glm45", "glm47"), ("glm45", "glm47"), "GLM-4.5+ XML tool calls"),
    )
}

# --------------------------------------------------------------------------- KV dtypes and backends

_FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
_PER_HEAD = ("int4_per_token_head", "int8_per_token_head", "fp8_per_token_head")


class Backend:
    """An attention backend: compute capabilities (x10) and KV dtypes it accepts (0.33 source)."""

    def __init__(
        self,
        name: str,
        kv: Sequence[str],
        min_cc: int = 0,
        max_cc: int = 999,
        only_cc: Sequence[int] = (),
        since: Optional[Version] = None,
    ):
        self.name, self.kv, self.min_cc, self.max_cc = name, tuple(kv), min_cc, max_cc
        self.only_cc, self.since = tuple(only_cc), since

    def refuses(self, cc: int, kv_dtype: str, sinks: bool) -> Optional[str]:
        if cc < self.min_cc or cc > self.max_cc or (self.only_cc and cc not in self.only_cc):
            return f"{self.name} does not run on compute capability {cc / 10:.1f}"
        if kv_dtype not in self.kv:
            return f"{self.name} does not support kv_cache_dtype {kv_dtype}"
        if self.name == "FLASH_ATTN" and kv_dtype in _FP8 and cc // 10 not in (9, 10):
            return "FLASH_ATTN stores fp8 KV only with FA3 (sm_90) or FA4 (sm_10x); other GPUs run FA2"
        if self.name == "FLASH_ATTN" and sinks and cc // 10 not in (9, 10):
            return "FA2 (used on sm_8x/sm_12x) has no attention sinks, which gpt-oss needs"
        return None


_AUTO_16 = ("auto", "float16", "bfloat16")
BACKENDS: Dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("FLASH_ATTN", (*_AUTO_16, "fp8", "fp8_e4m3"), min_cc=80),
        Backend("FLASHINFER", (*_AUTO_16, "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4", "nvfp4_4over6"), 80, 121),
        Backend("TRITON_ATTN", (*_AUTO_16, "fp8", "fp8_e4m3", "fp8_e5m2", *_PER_HEAD)),
        Backend("FLEX_ATTENTION", _AUTO_16),
        Backend(
            "TURBOQUANT",
            ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"),
            since=(0, 20, 0),
        ),
        Backend("B12X", ("auto", "bfloat16", "fp8", "fp8_e4m3"), only_cc=(120, 121), since=(0, 33, 0)),
        Backend("HPC_ATTN", ("auto", "bfloat16", "fp8_e4m3"), only_cc=(90,), since=(0, 33, 0)),
    )
}
# platforms/cuda.py _get_backend_priorities: SM10x prefers FlashInfer, everything else FlashAttention.
_PRIORITY_SM100 = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")
_PRIORITY_OTHER = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")

# --------------------------------------------------------------------------- quantization

# get_min_capability() per quant_method (x10); (value up to 0.19.1, value from 0.33.0) where it changed.
QUANT_MIN_CAPABILITY: Dict[str, Tuple[int, int]] = {
    "awq": (75, 75),
    "awq_marlin": (75, 75),
    "gptq": (60, 60),
    "gptq_marlin": (75, 60),
    "fp8": (75, 75),
    "compressed_tensors": (70, 70),
    "modelopt": (89, 80),
    "modelopt_fp4": (75, 75),
    "mxfp4": (80, 80),
    "bitsandbytes": (70, 70),
    "gguf": (60, 60),
    "experts_int8": (80, 80),
    "fbgemm_fp8": (80, 80),
    "fp_quant": (100, 100),
    "torchao": (75, 75),
    "moe_wna16": (70, 70),
    "quark": (70, 70),
    "inc": (60, 60),
}
# compressed-tensors schemes (QuantizationInfo.scheme) and the capability each needs at least.
SCHEME_MIN_CAPABILITY = {"int4": 75, "int8": 75, "fp8": 75, "fp8_block": 75, "nvfp4": 75}


# --------------------------------------------------------------------------- helpers


def _fmt(version: Version) -> str:
    return ".".join(str(p) for p in version)


def presence(table: Mapping[str, str], name: str, version: Version) -> Optional[bool]:
    """True/False where the checked releases around `version` agree, None where unverified."""
    marks = table.get(name)
    if marks is None:
        return False
    observed = list(zip(CHECKED_RELEASES, (m == "Y" for m in marks)))
    for (low, low_present), (high, high_present) in zip(observed, observed[1:]):
        if version == low:
            return low_present
        if low < version < high:
            return low_present if low_present == high_present else None
    if version < observed[0][0]:
        return observed[0][1] or None
    return observed[-1][1]


def _finding(check_id: str, severity: str, message: str, variable: str, suggested: Any) -> Finding:
    return {"id": check_id, "severity": severity, "message": message, "variable": variable, "suggested": suggested}


def _cc(gpu: Mapping[str, Any]) -> Optional[int]:
    value = gpu.get("compute_capability")
    if value in (None, ""):
        return None
    major, _dot, minor = str(value).partition(".")
    return int(major) * 10 + int(minor or 0)


def _arch_dict(model: Any) -> Dict[str, Any]:
    return model.to_dict() if hasattr(model, "to_dict") else dict(model)


def model_family(model: Any, repo: str = "") -> Optional[str]:
    """Tool-call/reasoning family from the architecture class, model_type and repo name."""
    data = _arch_dict(model)
    arch = str(data.get("architecture") or "")
    model_type = str(data.get("model_type") or "")
    repo_lower = repo.lower()
    if arch.startswith("Qwen3_5") or model_type.startswith("qwen3_5"):
        return "qwen3.5"
    if arch.startswith("Qwen3Next") or model_type.startswith("qwen3_next"):
        return "qwen3-next"
    if arch.startswith("Qwen3"):
        return "qwen3-coder" if "coder" in repo_lower else "qwen3"
    if arch.startswith("Qwen2"):
        return "qwen2"
    if arch.startswith("Llama4"):
        return "llama4"
    if arch.startswith("Llama") and int(data.get("vocab_size") or 0) >= 128000:
        return "llama3"
    if arch.startswith(("Mistral", "Mixtral")):
        return "mistral"
    if arch.startswith("GptOss"):
        return "gpt-oss"
    if arch.startswith("DeepseekV3"):
        return "deepseek-v3"
    if arch.startswith("Glm4Moe"):
        return "glm4.5"
    return None


def _as_bool(value: Any) -> Optional[bool]:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _yarn_overrides(overrides: Any) -> Optional[Mapping[str, Any]]:
    """The YaRN rope mapping inside vllm_hf_overrides (rope_scaling or rope_parameters, any depth)."""
    if isinstance(overrides, Mapping):
        kind = str(overrides.get("rope_type") or overrides.get("type") or "").lower()
        if kind == "yarn":
            return overrides
        for value in overrides.values():
            found = _yarn_overrides(value)
            if found is not None:
                return found
    return None


def _without_rope(overrides: Any) -> Any:
    if not isinstance(overrides, Mapping):
        return overrides
    result = {}
    for key, value in overrides.items():
        if key in ("rope_scaling", "rope_parameters") and _yarn_overrides(value) is not None:
            continue
        cleaned = _without_rope(value)
        if cleaned != {} or not isinstance(value, Mapping):
            result[key] = cleaned
    return result


def predicted_backend(version: Version, cc: int, kv_dtype: str, sinks: bool) -> Optional[str]:
    """The backend vLLM auto-selects for this GPU and KV dtype (None: nothing valid)."""
    order = _PRIORITY_SM100 if cc // 10 == 10 else _PRIORITY_OTHER
    for name in order:
        backend = BACKENDS[name]
        if backend.since and version < backend.since:
            continue
        if backend.refuses(cc, kv_dtype, sinks) is None:
            return name
    return None


# --------------------------------------------------------------------------- vLLM checks


def check_vllm(
    *,
    version: str,
    model: Any,
    settings: Mapping[str, Any],
    gpus: Sequence[Mapping[str, Any]],
    repo: str = "",
    model_format: str = "safetensors",
    layout: Optional[Mapping[str, Any]] = None,
    budget: Optional[Mapping[str, Any]] = None,
    env: Optional[Mapping[str, Any]] = None,
    driver: Optional[Mapping[str, Any]] = None,
) -> List[Finding]:
    """Every finding for one vLLM host.

    version: vllm_version. model: ModelArchitecture (or its to_dict()). settings: resolved engine
    settings in `vllm serve` snake_case (max_model_len, max_num_seqs, max_num_batched_tokens,
    kv_cache_dtype, enable_prefix_caching, mamba_cache_mode, mamba_block_size, enable_chunked_prefill,
    tool_call_parser, enable_auto_tool_choice, reasoning_parser, attention_backend, hf_overrides,
    max_cudagraph_capture_size, cudagraph_capture_sizes, enforce_eager, calculate_kv_scales, dtype,
    tensor_parallel_size, pipeline_parallel_size, enable_expert_parallel, speculative_config).
    gpus: the GPUs the layout uses (compute_capability, memory_mib, name). model_format: safetensors,
    gguf or bitsandbytes. layout: select_layout() output. budget: the vllm_budget.vllm_memory_budget()
    result for these settings and layout, unchanged (block_size, num_blocks, max_concurrency,
    kv_cache_bytes, layout.groups/blocks_per_request/bytes_per_block, requested_bytes,
    gpu_total_bytes, vram_used_bytes, findings); its own findings come back as memory-fit findings
    with a variable and a suggested value, or are covered by mamba-block-size, max-num-seqs and
    context-length. env: the service environment. driver: {"version": "580.95.05", "cuda": None}
    (installed driver; cuda only for a build other than the default PyPI wheel).
    """
    vv = vllm_version(version)
    ver = vv.number
    arch = _arch_dict(model)
    s = dict(settings)
    budget = dict(budget or {})
    env = dict(env or {})
    ccs = [c for c in (_cc(g) for g in gpus) if c is not None]
    min_cc = min(ccs) if ccs else None
    hybrid = bool(arch.get("is_hybrid"))
    findings: List[Finding] = []
    findings += _check_engine_format(vv, arch, model_format)
    findings += _check_quantization(ver, arch, s, min_cc)
    findings += _check_parsers(ver, arch, s, repo)
    findings += _check_context(ver, arch, s, env)
    findings += _check_kv_and_backend(vv, arch, s, min_cc)
    findings += _check_parallel(arch, s, layout or {})
    findings += _check_prefix_caching(vv, arch, s, hybrid)
    findings += _check_mamba_block(vv, s, budget, hybrid)
    findings += _check_memory(s, budget, layout or {})
    findings += _check_max_num_seqs(vv, arch, s, budget, hybrid)
    findings += _check_cudagraph(s)
    findings += _check_kv_scales(ver, arch, s, hybrid)
    findings += check_driver(driver, gpus, vv.text)
    return findings


def _check_engine_format(vv: VllmVersion, arch: Mapping[str, Any], model_format: str) -> List[Finding]:
    ver = vv.number
    quant = arch.get("quantization") or {}
    method = str(quant.get("method") or "").lower()
    fmt = model_format.lower()
    if (fmt == "gguf" or method == "gguf") and not vv.gguf_supported:
        return [
            _finding(
                "engine-format",
                "error",
                f"vLLM {_fmt(ver)} has no GGUF loader (removed in 0.24.0): serve a safetensors checkpoint "
                "(inferops_model.repo) or this GGUF with Ollama (inferops_engine: ollama)",
                "inferops_model.repo",
                "a safetensors repository of the same model",
            )
        ]
    if (fmt == "bitsandbytes" or method == "bitsandbytes") and not vv.bitsandbytes_supported:
        return [
            _finding(
                "engine-format",
                "error",
                f"vLLM {_fmt(ver)} has no bitsandbytes quantization (removed in 0.28.0): use an AWQ/GPTQ/FP8 "
                "checkpoint or pin vllm_version 0.27.1",
                "inferops_model.repo",
                "an AWQ, GPTQ or FP8 checkpoint",
            )
        ]
    return []


def _check_quantization(
    ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], cc: Optional[int]
) -> List[Finding]:
    if cc is None:
        return []
    findings = []
    quant = arch.get("quantization") or {}
    method = str(s.get("quantization") or quant.get("method") or "").lower().replace("-", "_")
    if method in QUANT_MIN_CAPABILITY:
        old, new = QUANT_MIN_CAPABILITY[method]
        need = old if ver <= CHECKED_RELEASES[0] else new if ver >= CHECKED_RELEASES[-1] else max(old, new)
        if method == "compressed_tensors":
            need = max(need, SCHEME_MIN_CAPABILITY.get(str(quant.get("scheme")), 0))
        if cc < need:
            findings.append(
                _finding(
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
                _finding(
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
                _finding(
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
            _finding(
                "quantization-capability",
                "error",
                f"bfloat16 needs compute capability 8.0, the GPUs have {cc / 10:.1f}: run in float16",
                "vllm_dtype",
                "half",
            )
        )
    return findings


def _parser_presence_finding(
    check_id: str, table: Mapping[str, str], name: str, ver: Version, variable: str, suggested: Any
) -> Optional[Finding]:
    present = presence(table, name, ver)
    if present is True:
        return None
    if present is None:
        return _finding(
            check_id,
            "warning",
            f"parser '{name}' is not verified for vLLM {_fmt(ver)} (checked releases: "
            f"{', '.join(_fmt(v) for v in CHECKED_RELEASES)})",
            variable,
            suggested,
        )
    known = name in table
    return _finding(
        check_id,
        "error",
        f"vLLM {_fmt(ver)} has no parser '{name}'"
        + (" (not in this release)" if known else "")
        + ": startup fails with 'invalid ... parser'",
        variable,
        suggested,
    )


def _first_available(table: Mapping[str, str], names: Sequence[str], ver: Version) -> Optional[str]:
    for name in names:
        if presence(table, name, ver):
            return name
    return None


def _check_parsers(ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], repo: str) -> List[Finding]:
    findings: List[Finding] = []
    family = FAMILIES.get(model_family(arch, repo) or "")
    tool = s.get("tool_call_parser") or None
    auto_tool = _as_bool(s.get("enable_auto_tool_choice"))
    best_tool = _first_available(TOOL_PARSERS, family.tool, ver) if family else None
    if auto_tool and not tool:
        findings.append(
            _finding(
                "tool-call-parser",
                "error",
                "vllm_enable_auto_tool_choice needs vllm_tool_call_parser (vLLM exits: "
                "'--enable-auto-tool-choice requires --tool-call-parser')",
                "vllm_tool_call_parser",
                best_tool,
            )
        )
    if tool:
        problem = _parser_presence_finding(
            "tool-call-parser", TOOL_PARSERS, tool, ver, "vllm_tool_call_parser", best_tool
        )
        if problem:
            findings.append(problem)
        if family and family.tool and tool not in family.tool:
            findings.append(
                _finding(
                    "tool-call-parser",
                    "error",
                    f"tool-call parser '{tool}' does not match the {family.name} family ({family.note}); "
                    f"use '{best_tool or family.tool[0]}'. The mismatch does not fail at startup: tool calls "
                    "are parsed wrongly at run time",
                    "vllm_tool_call_parser",
                    best_tool or family.tool[0],
                )
            )
    reasoning = s.get("reasoning_parser") or None
    if reasoning:
        best = _first_available(REASONING_PARSERS, family.reasoning, ver) if family else None
        problem = _parser_presence_finding(
            "reasoning-parser", REASONING_PARSERS, reasoning, ver, "vllm_reasoning_parser", best
        )
        if problem:
            findings.append(problem)
        if family and reasoning not in family.reasoning:
            if family.reasoning:
                message = f"reasoning parser '{reasoning}' does not match the {family.name} family; use '{best}'"
            else:
                message = f"the {family.name} family does not emit reasoning blocks; drop the reasoning parser"
            findings.append(_finding("reasoning-parser", "warning", message, "vllm_reasoning_parser", best))
    return findings


def _check_context(
    ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], env: Mapping[str, Any]
) -> List[Finding]:
    findings = []
    # "auto" / -1: vLLM fits the length to the memory, which memory-fit covers.
    max_len = s.get("max_model_len")
    max_len = int(max_len) if isinstance(max_len, int) or str(max_len).isdigit() else 0
    native = int(arch.get("rope_original_max_position_embeddings") or arch.get("max_position_embeddings") or 0)
    derived = int(arch.get("derived_max_model_len") or native)
    yarn = _yarn_overrides(s.get("hf_overrides"))
    if yarn is not None:
        original = int(yarn.get("original_max_position_embeddings") or native)
        derived = int(original * float(yarn.get("factor") or 1.0))
        if max_len > 0 and native and max_len <= int(arch.get("max_position_embeddings") or native):
            findings.append(
                _finding(
                    "rope-scaling",
                    "error",
                    f"YaRN rope scaling in vllm_hf_overrides while max_model_len {max_len} fits the model's native "
                    f"{arch.get('max_position_embeddings')} positions: vLLM's YaRN is static, so it only degrades "
                    "quality (and a smaller original_max_position_embeddings can shrink the window); remove it",
                    "vllm_hf_overrides",
                    _without_rope(s.get("hf_overrides")),
                )
            )
    elif arch.get("rope_type") == "yarn" and max_len > 0 and native and max_len <= native:
        findings.append(
            _finding(
                "rope-scaling",
                "warning",
                f"the checkpoint ships static YaRN (factor {arch.get('rope_factor')}) but max_model_len {max_len} "
                f"fits its {native} original positions; short prompts lose quality",
                "vllm_hf_overrides",
                {"rope_scaling": None},
            )
        )
    allow_long = _as_bool(env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    if max_len > 0 and derived and max_len > derived and not allow_long:
        findings.append(
            _finding(
                "context-length",
                "error",
                f"max_model_len {max_len} is greater than the derived maximum {derived} "
                "(max_position_embeddings x rope factor); vLLM refuses to start. Lower it or add YaRN "
                "rope scaling in vllm_hf_overrides",
                "vllm_max_model_len",
                derived,
            )
        )
    batched = s.get("max_num_batched_tokens")
    if batched and max_len > 0 and _as_bool(s.get("enable_chunked_prefill")) is False and int(batched) < max_len:
        findings.append(
            _finding(
                "context-length",
                "error",
                f"chunked prefill is off and max_num_batched_tokens {batched} < max_model_len {max_len}: vLLM refuses "
                "to start",
                "vllm_enable_chunked_prefill",
                True,
            )
        )
    return findings


def _check_kv_and_backend(
    vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], cc: Optional[int]
) -> List[Finding]:
    ver = vv.number
    findings = []
    kv = str(s.get("kv_cache_dtype") or "auto")
    if kv not in vv.kv_cache_dtypes:
        valid = vv.kv_cache_dtypes
        findings.append(
            _finding(
                "kv-cache-dtype",
                "error",
                f"kv_cache_dtype '{kv}' does not exist in vLLM {_fmt(ver)} (valid: {', '.join(valid)})",
                "vllm_kv_cache_dtype",
                "fp8" if cc and cc >= 89 else "auto",
            )
        )
        return findings
    model_dtype = str(s.get("dtype") or arch.get("dtype") or "bfloat16").lower()
    model_dtype = {"half": "float16", "bf16": "bfloat16", "fp16": "float16"}.get(model_dtype, model_dtype)
    if kv in ("float16", "bfloat16") and model_dtype in ("float16", "bfloat16") and kv != model_dtype:
        findings.append(
            _finding(
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
                _finding(
                    "kv-cache-dtype", "error", "nvfp4 KV cache is not supported with MLA", "vllm_kv_cache_dtype", "fp8"
                )
            )
    elif kv in ("fp8_ds_mla", "nvfp4_ds_mla"):
        findings.append(
            _finding("kv-cache-dtype", "error", f"{kv} is for MLA (DeepSeek) models only", "vllm_kv_cache_dtype", "fp8")
        )
    if cc is None:
        return findings
    sinks = str(arch.get("architecture", "")).startswith("GptOss")
    backend = s.get("attention_backend")
    auto_pick = predicted_backend(ver, cc, kv, sinks)
    if backend:
        name = str(backend).upper()
        entry = BACKENDS.get(name)
        if entry is None or (entry.since and ver < entry.since):
            findings.append(
                _finding(
                    "attention-backend",
                    "error",
                    f"attention backend '{backend}' does not exist in vLLM {_fmt(ver)} "
                    f"(known: {', '.join(n for n, b in BACKENDS.items() if not b.since or ver >= b.since)})",
                    "vllm_attention_backend",
                    auto_pick,
                )
            )
        else:
            reason = entry.refuses(cc, kv, sinks)
            if reason:
                findings.append(
                    _finding(
                        "attention-backend",
                        "error",
                        f"{reason}: vLLM exits with 'Selected backend ... is not valid for this configuration'",
                        "vllm_attention_backend",
                        auto_pick,
                    )
                )
    elif auto_pick is None:
        findings.append(
            _finding(
                "kv-cache-dtype",
                "error",
                f"no attention backend of vLLM {_fmt(ver)} supports kv_cache_dtype {kv} on compute capability "
                f"{cc / 10:.1f}",
                "vllm_kv_cache_dtype",
                "auto",
            )
        )
    return findings


def _check_parallel(arch: Mapping[str, Any], s: Mapping[str, Any], layout: Mapping[str, Any]) -> List[Finding]:
    findings = []
    dims = ParallelDims.from_model(arch)
    tp = int(s.get("tensor_parallel_size") or layout.get("tensor_parallel_size") or 1)
    pp = int(s.get("pipeline_parallel_size") or layout.get("pipeline_parallel_size") or 1)
    ep = _as_bool(s.get("enable_expert_parallel"))
    if ep is None:
        ep = bool(layout.get("expert_parallel"))
    seen = set()
    for problem in layout.get("problems", []):
        seen.add(problem["message"])
        findings.append(
            _finding(
                "tensor-parallel-divisibility",
                problem.get("severity", "error"),
                problem["message"],
                problem["variable"],
                problem["suggested"],
            )
        )
    valid_tps = [t for t in (1, 2, 4, 8, 3, 6) if not tensor_parallel_problems(dims, t, ep)]
    for message in tensor_parallel_problems(dims, tp, expert_parallel=ep):
        text = f"tensor_parallel_size {tp}: {message}"
        if text in seen:
            continue
        if "block-FP8" in message:
            variable, suggested = "vllm_enable_expert_parallel", True
        else:
            variable, suggested = "vllm_tensor_parallel_size", max([t for t in valid_tps if t <= tp] or [1])
        findings.append(_finding("tensor-parallel-divisibility", "error", text, variable, suggested))
    for message in pipeline_parallel_problems(dims, pp):
        text = f"pipeline_parallel_size {pp}: {message}"
        if text not in seen:
            findings.append(_finding("tensor-parallel-divisibility", "error", text, "vllm_pipeline_parallel_size", 1))
    if ep and not fp8_block_split_fails(dims, tp) and not dims.num_experts:
        findings.append(
            _finding(
                "tensor-parallel-divisibility",
                "warning",
                "expert parallel is on but the model has no experts",
                "vllm_enable_expert_parallel",
                False,
            )
        )
    return findings


def _prefix_caching(vv: VllmVersion, s: Mapping[str, Any], hybrid: bool) -> bool:
    explicit = _as_bool(s.get("enable_prefix_caching"))
    if explicit is not None:
        return explicit
    return not hybrid or vv.hybrid_prefix_caching_default


def mamba_cache_mode(vv: VllmVersion, s: Mapping[str, Any], hybrid: bool) -> str:
    """The mode vLLM resolves: 'align' when prefix caching is on for a hybrid model, else 'none'."""
    if not hybrid:
        return "none"
    if not _prefix_caching(vv, s, hybrid):
        return "none"
    mode = s.get("mamba_cache_mode")
    return str(mode) if mode in ("align", "all") else "align"


def _check_prefix_caching(
    vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], hybrid: bool
) -> List[Finding]:
    if not hybrid:
        return []
    ver = vv.number
    findings = []
    on = _prefix_caching(vv, s, hybrid)
    mode = s.get("mamba_cache_mode")
    if on and _as_bool(s.get("enable_chunked_prefill")) is False:
        findings.append(
            _finding(
                "prefix-caching-hybrid",
                "error",
                "prefix caching on a hybrid (Mamba/GDN) model needs chunked prefill: vLLM refuses to start",
                "vllm_enable_chunked_prefill",
                True,
            )
        )
    if mode == "all" and "all" not in vv.mamba_cache_modes:
        findings.append(
            _finding(
                "prefix-caching-hybrid",
                "error",
                f"mamba_cache_mode 'all' was removed (vLLM {_fmt(ver)} accepts align or none)",
                "vllm_mamba_cache_mode",
                "align",
            )
        )
    elif mode == "all" and arch.get("linear_num_value_heads"):
        findings.append(
            _finding(
                "prefix-caching-hybrid",
                "error",
                "mamba_cache_mode 'all' is for Mamba2 models; Gated-DeltaNet models use 'align'",
                "vllm_mamba_cache_mode",
                "align",
            )
        )
    if s.get("mamba_block_size") and not on:
        findings.append(
            _finding(
                "prefix-caching-hybrid",
                "error",
                "vllm_mamba_block_size is set but prefix caching is off ('--mamba-block-size can only be set with "
                "--enable-prefix-caching')",
                "vllm_mamba_block_size",
                None,
            )
        )
    if on and ver <= HYBRID_PREFIX_CACHING_EXPERIMENTAL_LAST:
        findings.append(
            _finding(
                "prefix-caching-hybrid",
                "info",
                f"vLLM {_fmt(ver)} marks prefix caching for Mamba/GDN layers (align mode) as experimental",
                "vllm_enable_prefix_caching",
                None,
            )
        )
    return findings


def _check_mamba_block(vv: VllmVersion, s: Mapping[str, Any], budget: Mapping[str, Any], hybrid: bool) -> List[Finding]:
    if not hybrid or mamba_cache_mode(vv, s, hybrid) != "align" or not vv.align_block_size_assert:
        return []
    ver = vv.number
    block = budget.get("block_size")
    batched = s.get("max_num_batched_tokens")
    if not block or not batched or int(batched) >= int(block):
        return []
    return [
        _finding(
            "mamba-block-size",
            "error",
            f"vLLM {_fmt(ver)} asserts in Mamba cache align mode (prefix caching on a hybrid model) that "
            f"block_size ({block}) <= max_num_batched_tokens ({batched}); the service crashes at startup",
            "vllm_max_num_batched_tokens",
            suggested_batched_tokens(int(block)),
        )
    ]


def suggested_batched_tokens(block_size: int, floor: int = 2048) -> int:
    """Smallest power of two >= both the hybrid block size and `floor`."""
    return 1 << max(int(floor), int(block_size)).__sub__(1).bit_length()


# The memory budget returns facts under its own kind names (with vLLM's error texts); this is the one place
# that says under which registered finding id each is reported. The plan lists a fact only when the checks
# below have not already reported that id (with the variable to change and a value that passes).
BUDGET_FACT_FINDINGS = {
    "vllm_max_model_len_too_long": "context-length",
    "vllm_no_kv_cache_memory": "memory-fit",
    "vllm_kv_cache_too_small": "memory-fit",
    "vllm_exceeds_gpu_memory": "memory-fit",
    "vllm_cudagraph_headroom": "memory-fit",
    "vllm_kv_cache_memory_bytes": "memory-fit",
    "vllm_align_block_size": "mamba-block-size",
    "vllm_mamba_blocks_below_max_num_seqs": "max-num-seqs",
    "vllm_architecture_unsupported": "architecture-unsupported",
}
# vllm_budget findings that checks.py reports itself, under a required id with the variable to change.
_BUDGET_IDS_COVERED = ("vllm_align_block_size", "vllm_mamba_blocks_below_max_num_seqs", "vllm_max_model_len_too_long")


def longest_fitting_len(budget: Mapping[str, Any]) -> Optional[int]:
    """Longest max_model_len whose one request fits the KV blocks of a vllm_memory_budget() result."""
    layout = budget.get("layout") or {}
    blocks = budget.get("num_blocks")
    block_size = budget.get("block_size")
    groups = layout.get("groups") or []
    if not blocks or not block_size or not groups:
        return None
    fixed = sum(g["blocks_per_request"] for g in groups if g["kind"] == "linear_attention")
    per_length = sum(1 for g in groups if g["kind"] != "linear_attention")
    usable = int(blocks) - 1 - fixed  # the block pool keeps one null block
    if per_length == 0 or usable < per_length:
        return None
    return usable // per_length * int(block_size)


def _utilization_for(budget: Mapping[str, Any], extra_bytes: int = 0) -> Optional[float]:
    total = budget.get("gpu_total_bytes")
    requested = budget.get("requested_bytes")
    if not total or requested is None:
        return None
    return math.ceil((int(requested) + extra_bytes) / int(total) * 100) / 100.0


def _check_memory(s: Mapping[str, Any], budget: Mapping[str, Any], layout: Mapping[str, Any]) -> List[Finding]:
    findings = []
    if layout and layout.get("fits") is False:
        findings.append(
            _finding(
                "memory-fit",
                "error",
                f"the model does not fit the GPUs in layout TP={layout.get('tensor_parallel_size')} "
                f"PP={layout.get('pipeline_parallel_size')}: {layout.get('reason')}",
                "vllm_max_model_len",
                longest_fitting_len(budget),
            )
        )
    for item in budget.get("findings") or []:
        ident = item.get("id")
        if ident in _BUDGET_IDS_COVERED:
            continue
        variable, suggested = "vllm_gpu_memory_utilization", None
        if ident == "vllm_kv_cache_too_small":
            variable, suggested = "vllm_max_model_len", longest_fitting_len(budget)
        elif ident == "vllm_no_kv_cache_memory":
            kv = int(budget.get("kv_cache_bytes") or 0)
            layout_kv = budget.get("layout") or {}
            one_request = int(layout_kv.get("blocks_per_request", 0)) * int(layout_kv.get("bytes_per_block", 0))
            suggested = _utilization_for(budget, one_request - kv)
            if suggested is None or suggested > 0.97:
                variable = "vllm_tensor_parallel_size"
                suggested = 2 * int(s.get("tensor_parallel_size") or layout.get("tensor_parallel_size") or 1)
        elif ident in ("vllm_exceeds_gpu_memory", "vllm_cudagraph_headroom"):
            excess = int(budget.get("vram_used_bytes") or 0) - int(budget.get("gpu_total_bytes") or 0)
            suggested = _utilization_for(budget, -max(excess, 0) - (300 << 20))
        findings.append(_finding("memory-fit", item.get("severity", "error"), item["message"], variable, suggested))
    return findings


def _check_max_num_seqs(
    vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], budget: Mapping[str, Any], hybrid: bool
) -> List[Finding]:
    ver = vv.number
    findings = []
    seqs = s.get("max_num_seqs")
    batched = s.get("max_num_batched_tokens")
    if not seqs:
        return findings
    seqs = int(seqs)
    if batched and int(batched) < seqs:
        findings.append(
            _finding(
                "max-num-seqs",
                "error",
                f"max_num_batched_tokens ({batched}) must be >= max_num_seqs ({seqs}): vLLM refuses to start",
                "vllm_max_num_seqs",
                int(batched),
            )
        )
    blocks = budget.get("num_blocks")
    eager = _as_bool(s.get("enforce_eager"))
    if hybrid and blocks is not None and not eager and ver >= MAMBA_BLOCKS_CUDAGRAPH_ERROR and seqs > int(blocks):
        findings.append(
            _finding(
                "max-num-seqs",
                "error",
                f"max_num_seqs ({seqs}) exceeds the {blocks} Mamba cache blocks: CUDA graph capture cannot proceed",
                "vllm_max_num_seqs",
                int(blocks),
            )
        )
        return findings
    groups = (budget.get("layout") or {}).get("groups") or []
    state_blocks = sum(g["blocks_per_request"] for g in groups if g["kind"] == "linear_attention")
    if hybrid and blocks and state_blocks and seqs * int(state_blocks) * 2 > int(blocks):
        # Fewer sequences also shrink the sampler warm-up, so the KV cache only grows: the number of
        # full-length sequences it holds is a value that passes this rule and the next one.
        fitting = max(1, int(blocks) // (2 * int(state_blocks)))
        if budget.get("max_concurrency") is not None:
            fitting = max(1, min(fitting, math.floor(float(budget["max_concurrency"]))))
        findings.append(
            _finding(
                "max-num-seqs",
                "warning",
                f"{seqs} running sequences pin {seqs * int(state_blocks)} of the {blocks} KV cache blocks for "
                f"their Gated-DeltaNet/Mamba state ({state_blocks} blocks each, whatever their length), leaving "
                "less than half for attention tokens: long requests get preempted and memory runs short",
                "vllm_max_num_seqs",
                fitting,
            )
        )
        return findings
    concurrency = budget.get("max_concurrency")
    if concurrency is not None and seqs > max(1, math.floor(float(concurrency))):
        findings.append(
            _finding(
                "max-num-seqs",
                "info",
                f"the KV cache holds {float(concurrency):.2f} sequences of max_model_len at once; with max_num_seqs "
                f"{seqs} shorter requests share it and full-length ones queue",
                "vllm_max_num_seqs",
                max(1, math.floor(float(concurrency))),
            )
        )
    return findings


def _check_cudagraph(s: Mapping[str, Any]) -> List[Finding]:
    findings = []
    if _as_bool(s.get("enforce_eager")):
        return findings
    sizes = [int(x) for x in s.get("cudagraph_capture_sizes") or []]
    max_size = s.get("max_cudagraph_capture_size")
    if sizes and max_size and int(max_size) != max(sizes):
        findings.append(
            _finding(
                "cudagraph-capture-size",
                "error",
                f"max_cudagraph_capture_size ({max_size}) must equal the largest of cudagraph_capture_sizes "
                f"({max(sizes)})",
                "vllm_max_cudagraph_capture_size",
                max(sizes),
            )
        )
    largest = max(sizes) if sizes else int(max_size) if max_size else None
    seqs = s.get("max_num_seqs")
    if largest is not None and seqs and int(seqs) > largest:
        findings.append(
            _finding(
                "cudagraph-capture-size",
                "warning",
                f"max_num_seqs ({seqs}) exceeds the largest captured CUDA graph ({largest}): larger decode batches "
                "run without graphs",
                "vllm_max_num_seqs",
                largest,
            )
        )
    spec = s.get("speculative_config") or {}
    k = int(spec.get("num_speculative_tokens") or 0) if isinstance(spec, Mapping) else 0
    if k and largest is not None and largest < k + 1:
        findings.append(
            _finding(
                "cudagraph-capture-size",
                "error",
                f"no CUDA graph size is a multiple of num_speculative_tokens + 1 ({k + 1}) below "
                f"max_cudagraph_capture_size {largest}",
                "vllm_max_cudagraph_capture_size",
                k + 1,
            )
        )
    return findings


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


# --------------------------------------------------------------------------- driver


def check_driver(
    driver: Optional[Mapping[str, Any]], gpus: Sequence[Mapping[str, Any]], vllm_version: Optional[str] = None
) -> List[Finding]:
    """driver-version: the installed driver against the minimum for the GPUs and the engine's CUDA.

    driver: ``{"version": "580.95.05", "cuda": "12.9" or None}``; without ``cuda`` the CUDA of vLLM's
    default PyPI wheel for ``vllm_version`` is used. The table is nvidia_drivers (one table for the
    nvidia_driver role and this check).
    """
    if not driver or not driver.get("version"):
        return []
    cuda, source = engine_cuda(vllm_version, driver.get("cuda"))
    need = minimum_driver_for(gpus=gpus, cuda_version=cuda, cuda_source=source)
    minimum = need["minimum_driver"]
    if not minimum or driver_at_least(driver["version"], minimum):
        return []
    return [
        _finding(
            "driver-version",
            "error",
            f"driver {driver['version']} is older than {minimum}: {'; '.join(need['reasons'])}",
            "nvidia_driver_branch",
            branch_of(minimum),
        )
    ]


# --------------------------------------------------------------------------- Ollama checks


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
    arch = _arch_dict(model)
    s = dict(settings)
    findings: List[Finding] = []
    if model_format.lower() != "gguf":
        findings.append(
            _finding(
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
            _finding(
                "kv-cache-dtype",
                "error",
                f"ollama_kv_cache_type '{kv}' is not one of f16, q8_0, q4_0",
                "ollama_kv_cache_type",
                "q8_0",
            )
        )
    elif kv != "f16" and _as_bool(s.get("flash_attention")) is False:
        findings.append(
            _finding(
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
            _finding(
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
            _finding(
                "memory-fit",
                "warning",
                "the model does not fit in VRAM at this context and parallelism: Ollama offloads layers to the CPU",
                "ollama_context_length",
                budget.get("max_context_on_gpu"),
            )
        )
    findings += check_driver(driver, gpus)
    return findings
