# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Helpers every check family shares."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_dict
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    BACKENDS,
    CHECKED_RELEASES,
    FAMILIES,
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


def first_available(table: Mapping[str, Any], names: Sequence[str], version: Version) -> Optional[str]:
    """The first of ``names`` (a family's parsers, preferred first) that the release has (presence)."""
    for name in names:
        if presence(table, name, version):
            return name
    return None


def compute_capability_x10(gpu: Mapping[str, Any]) -> Optional[int]:
    """A GPU's compute capability times ten (\"8.6\" -> 86), None when unknown."""
    value = gpu.get("compute_capability")
    if value in (None, ""):
        return None
    major, _dot, minor = str(value).partition(".")
    return int(major) * 10 + int(minor or 0)


def _rule_holds(rule: Mapping[str, Any], data: Mapping[str, Any], repo_lower: str) -> bool:
    arch = str(data.get("architecture") or "")
    model_type = str(data.get("model_type") or "")
    if "architecture_prefix" in rule or "model_type_prefix" in rule:
        by_arch = arch.startswith(tuple(rule.get("architecture_prefix", ())))
        by_type = model_type.startswith(tuple(rule.get("model_type_prefix", ())))
        if not (by_arch or by_type):
            return False
    if "repo_pattern" in rule and not re.search(rule["repo_pattern"], repo_lower):
        return False
    return "min_vocab_size" not in rule or int(data.get("vocab_size") or 0) >= int(rule["min_vocab_size"])


def model_family(model: Any, repo: str = "") -> Optional[str]:
    """Tool-call/reasoning family from the architecture class, model_type and repo name: the first family of
    families.json one of whose ``match`` rules holds."""
    data = as_dict(model)
    for family in FAMILIES.values():
        if any(_rule_holds(rule, data, repo.lower()) for rule in family.match):
            return family.name
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
