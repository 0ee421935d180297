# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Helpers every check family shares."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_dict
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    BACKENDS,
    CHECKED_RELEASES,
    PRIORITY_OTHER,
    PRIORITY_SM100,
    Version,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import parse_vllm_version


def _in_range(span: Mapping[str, str], version: Version) -> bool:
    first, last = span.get("first"), span.get("last")
    return (first is None or version >= parse_vllm_version(first)) and (
        last is None or version <= parse_vllm_version(last)
    )


def presence(table: Mapping[str, Mapping[str, str]], name: str, version: Version) -> Optional[bool]:
    """True/False where the read releases around `version` agree, None where unverified.

    `table`: parser name -> its range of releases (TOOL_PARSERS, REASONING_PARSERS). A release before the
    oldest read one counts as having a name that one has, and unverified otherwise.
    """
    span = table.get(name)
    if span is None:
        return False
    observed = [(release, _in_range(span, release)) for release in CHECKED_RELEASES]
    for (low, low_present), (high, high_present) in zip(observed, observed[1:]):
        if version == low:
            return low_present
        if low < version < high:
            return low_present if low_present == high_present else None
    if version < observed[0][0]:
        return observed[0][1] or None
    return observed[-1][1]


def compute_capability_x10(gpu: Mapping[str, Any]) -> Optional[int]:
    """A GPU's compute capability times ten (\"8.6\" -> 86), None when unknown."""
    value = gpu.get("compute_capability")
    if value in (None, ""):
        return None
    major, _dot, minor = str(value).partition(".")
    return int(major) * 10 + int(minor or 0)


def model_family(model: Any, repo: str = "") -> Optional[str]:
    """Tool-call/reasoning family from the architecture class, model_type and repo name."""
    data = as_dict(model)
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
        # Qwen2/Qwen2.5 answer without <think>; the reasoning models on this architecture are QwQ and the
        # DeepSeek-R1 distills (a reasoning parser on a tokenizer without <think> stops vLLM at startup).
        return "qwq" if "qwq" in repo_lower or "r1-distill" in repo_lower else "qwen2"
    if arch.startswith("Llama4"):
        return "llama4"
    if arch.startswith("Llama") and int(data.get("vocab_size") or 0) >= 128000:
        return "llama3"
    if arch.startswith(("Mistral", "Mixtral")):
        return "mistral"
    if arch.startswith("GptOss"):
        return "gpt-oss"
    if arch.startswith("DeepseekV3"):
        # R1 shares V3's architecture but always thinks; V3 (and V3.1's default mode) answers directly, and
        # R1's parser would move such an answer into reasoning_content.
        return "deepseek-r1" if re.search(r"(?<![a-z0-9])r1(?![0-9])", repo_lower) else "deepseek-v3"
    if arch.startswith("Glm4Moe"):
        return "glm4.5"
    return None


def predicted_backend(version: Version, cc: int, kv_dtype: str, sinks: bool) -> Optional[str]:
    """The backend vLLM auto-selects for this GPU and KV dtype (None: nothing valid)."""
    order = PRIORITY_SM100 if cc // 10 == 10 else PRIORITY_OTHER
    for name in order:
        backend = BACKENDS[name]
        if backend.since and version < backend.since:
            continue
        if backend.refuses(cc, kv_dtype, sinks) is None:
            return name
    return None
