# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What the checks read: the model families (below, with their sources) and, from the release data in
``_engines/vllm/releases.json``, the parser names as version ranges, the releases whose registries were read,
the attention backends (``attention_backends``) and the quantization capabilities
(``quantization_min_capability``), each with its source there.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

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


class Backend:
    """An attention backend as its record in releases.json ``attention_backends`` describes it: compute
    capabilities (x10) and KV dtypes it accepts, what it refuses beyond that (``limits``), its first release."""

    def __init__(self, name: str, record: Mapping[str, Any]):
        self.name = name
        self.kv = tuple(record["kv_cache_dtypes"])
        self.min_cc, self.max_cc = int(record.get("min_cc", 0)), int(record.get("max_cc", 999))
        self.only_cc = tuple(record.get("only_cc", ()))
        self.limits: Tuple[Mapping[str, Any], ...] = tuple(record.get("limits", ()))
        first = record.get("first")
        self.since: Optional[Version] = parse_vllm_version(first) if first else None  # type: ignore[assignment]

    def refuses(self, cc: int, kv_dtype: str, sinks: bool) -> Optional[str]:
        if cc < self.min_cc or cc > self.max_cc or (self.only_cc and cc not in self.only_cc):
            return f"{self.name} does not run on compute capability {cc / 10:.1f}"
        if kv_dtype not in self.kv:
            return f"{self.name} does not support kv_cache_dtype {kv_dtype}"
        for limit in self.limits:
            applies = kv_dtype in limit.get("kv_cache_dtypes", ()) or (sinks and limit.get("sinks", False))
            if applies and cc // 10 not in limit["cc_major"]:
                return str(limit["why"])
        return None


_BACKEND_DATA: Mapping[str, Any] = RELEASE_DATA["attention_backends"]


BACKENDS: Dict[str, Backend] = {name: Backend(name, record) for name, record in _BACKEND_DATA["names"].items()}


# platforms/cuda.py _get_backend_priorities: SM10x prefers FlashInfer, everything else FlashAttention.
PRIORITY_SM100: Tuple[str, ...] = tuple(_BACKEND_DATA["priority"]["sm10x"])


PRIORITY_OTHER: Tuple[str, ...] = tuple(_BACKEND_DATA["priority"]["other"])


_QUANT_DATA: Mapping[str, Any] = RELEASE_DATA["quantization_min_capability"]


# compressed-tensors schemes (QuantizationInfo.scheme) and the capability each needs at least.
SCHEME_MIN_CAPABILITY: Dict[str, int] = dict(_QUANT_DATA["compressed_tensors_schemes"])


def quant_min_capability(method: str, version: Sequence[int]) -> Optional[int]:
    """get_min_capability() (x10) of a quantization method at a release, None for a method not read: the
    reading at or before the first one, the last one's after it, the larger of the two readings around it."""
    readings = _QUANT_DATA["methods"].get(method)
    if readings is None:
        return None
    ordered = sorted((parse_vllm_version(text), value) for text, value in readings.items())
    number = tuple(version)
    if number <= ordered[0][0]:
        return int(ordered[0][1])
    for (low, low_value), (high, high_value) in zip(ordered, ordered[1:]):
        if low < number < high:
            return int(max(low_value, high_value))
    return int(ordered[-1][1])
