# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The facts the checks read beside the release records: model families, attention backends and
quantization capabilities, each with its source. The per-release facts (parser names as version ranges,
the releases whose registries were read, the version boundaries of each check) are the release records
in ``_engines/vllm/releases.json``; this module exposes the parser ranges from there.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    RELEASE_DATA,
    RELEASES,
    parse_vllm_version,
)

Version = Tuple[int, int, int]


Finding = Dict[str, Any]


# Releases whose wheels were read for the parser, KV-dtype and backend tables (research notes section 0/3/4):
# the records with "registries_read".
CHECKED_RELEASES: Tuple[Version, ...] = tuple(
    sorted(parse_vllm_version(text) for text, record in RELEASES.items() if record.get("registries_read"))
)  # type: ignore[assignment]


# Parser name -> {"first": release, "last": release} (either absent: open on that side), from the
# release records' "tool_parsers" / "reasoning_parsers" ranges.
TOOL_PARSERS: Dict[str, Dict[str, str]] = RELEASE_DATA["tool_parsers"]["names"]


REASONING_PARSERS: Dict[str, Dict[str, str]] = RELEASE_DATA["reasoning_parsers"]["names"]


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
        Family("qwen2", ("hermes", "qwen3_json"), (), "Qwen2.5 emits JSON <tool_call>{...}"),
        Family("qwq", ("hermes", "qwen3_json"), ("deepseek_r1",), "QwQ and R1 distills emit JSON <tool_call>{...}"),
        Family("llama3", ("llama3_json", "pythonic"), (), "Llama 3.x emits JSON tool calls"),
        Family("llama4", ("llama4_pythonic", "llama4_json"), (), "Llama 4 emits pythonic tool calls"),
        Family("mistral", ("mistral",), ("mistral",), "Mistral models use [TOOL_CALLS]"),
        Family("gpt-oss", ("openai",), ("openai_gptoss",), "gpt-oss uses the harmony format"),
        Family("deepseek-v3", ("deepseek_v3", "deepseek_v31"), ("deepseek_v3",), "DeepSeek-V3 format"),
        Family("deepseek-r1", ("deepseek_v3", "deepseek_v31"), ("deepseek_r1",), "DeepSeek-R1 (V3 format, thinks)"),
        Family("glm4.5", ("glm45", "glm47"), ("glm45", "glm47"), "GLM-4.5+ XML tool calls"),
    )
}


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
PRIORITY_SM100 = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")


PRIORITY_OTHER = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")


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
