# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What the checks read: the model families (``_engines/vllm/families.json``, with their sources) and, from the
release data in
``_engines/vllm/releases.json``, the parser names as version ranges, the releases whose registries were read,
the attention backends (``attention_backends``) and the quantization capabilities
(``quantization_min_capability``), each with its source there.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    RELEASE_DATA,
    RELEASES,
    parse_vllm_version,
)

Version = Tuple[int, int, int]


# Releases whose wheels were read for the parser, KV-dtype and backend tables (research notes section 0/3/4):
# the records with "registries_read".
CHECKED_RELEASES: Tuple[Version, ...] = tuple(
    sorted(parse_vllm_version(text) for text, record in RELEASES.items() if record.get("registries_read"))
)  # type: ignore[assignment]


# Parser name -> {"first": release, "last": release} (either absent: open on that side), from the
# release records' "tool_parsers" / "reasoning_parsers" ranges.
TOOL_PARSERS: Dict[str, Dict[str, str]] = RELEASE_DATA["tool_parsers"]["names"]


REASONING_PARSERS: Dict[str, Dict[str, str]] = RELEASE_DATA["reasoning_parsers"]["names"]


FAMILIES_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "families.json")
with open(FAMILIES_FILE, encoding="utf-8") as _handle:
    FAMILY_DATA: Dict[str, Any] = json.load(_handle)


class Family:
    """Tool-call and reasoning formats of a model family (first entry = the recommended parser), and the rules
    that recognise its models (``match``: see families.json "fields")."""

    def __init__(self, record: Mapping[str, Any]):
        self.name = str(record["name"])
        self.tool = tuple(record["tool"])
        self.reasoning = tuple(record["reasoning"])
        self.note = str(record["note"])
        self.match: Tuple[Mapping[str, Any], ...] = tuple(record["match"])


# In the order of families.json: model_family (checks/common.py) takes the first family that matches.
FAMILIES: Dict[str, Family] = {record["name"]: Family(record) for record in FAMILY_DATA["families"]}


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
