# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""tool-call-parser and reasoning-parser: names the pinned release has, for the model family."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_text
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import (
    first_available,
    model_family,
    presence,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    CHECKED_RELEASES,
    FAMILIES,
    REASONING_PARSERS,
    TOOL_PARSERS,
    Version,
)


def _parser_presence_finding(
    check_id: str, table: Mapping[str, Any], name: str, ver: Version, variable: str, suggested: Any
) -> Optional[Finding]:
    present = presence(table, name, ver)
    if present is True:
        return None
    if present is None:
        return Finding(
            check_id,
            "warning",
            f"parser '{name}' is not verified for vLLM {version_text(ver)} (checked releases: "
            f"{', '.join(version_text(v) for v in CHECKED_RELEASES)})",
            variable,
            suggested,
        )
    known = name in table
    return Finding(
        check_id,
        "error",
        f"vLLM {version_text(ver)} has no parser '{name}'"
        + (" (not in this release)" if known else "")
        + ": startup fails with 'invalid ... parser'",
        variable,
        suggested,
    )


def check_parsers(ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], repo: str) -> List[Finding]:
    findings: List[Finding] = []
    family = FAMILIES.get(model_family(arch, repo) or "")
    best_tool = first_available(TOOL_PARSERS, family.tool, ver) if family else None
    best_reasoning = first_available(REASONING_PARSERS, family.reasoning, ver) if family else None
    tool = s.get("tool_call_parser") or None
    auto_tool = as_bool(s.get("enable_auto_tool_choice"))
    if auto_tool and not tool:
        findings.append(
            Finding(
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
                Finding(
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
        best = best_reasoning
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
            findings.append(Finding("reasoning-parser", "warning", message, "vllm_reasoning_parser", best))
    return findings
