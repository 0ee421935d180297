"""_plan/report.py: the findings printed below the table (render_findings) and the refused host's row."""

from __future__ import annotations

from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_findings, render_table


def _plan(host, *checks):
    return {"host": host, "engine": "vllm", "checks": [dict(zip(("severity", "id", "message"), c)) for c in checks]}


def test_every_error_and_warning_once_grouped_by_host_errors_first():
    plans = [
        _plan(
            "a",
            ("warning", "model-revision", "pin it"),
            ("info", "context-length", "a note"),
            ("error", "memory-fit", "m"),
        ),
        _plan("clean", ("info", "context-length", "a note")),
        {"host": "refused"},
    ]
    lines = render_findings(plans, {"refused": ["vllm_version must be ... such as 0.33.0, got '0.33'"]})
    assert lines == [
        "findings (errors and warnings; notes are in each host's report):",
        "a:",
        "  error: memory-fit: m",
        "  warning: model-revision: pin it",
        "refused: no plan, 1 input error:",
        "  error: vllm_version must be ... such as 0.33.0, got '0.33'",
    ]


def test_no_findings_says_so_and_other_refusals_are_listed():
    assert render_findings([_plan("clean")]) == [
        "findings: no errors or warnings (notes, if any, are in each host's report)"
    ]
    lines = render_findings([_plan("clean")], {"gw (gateway)": ["gateway_profiles[0].model is required"]})
    assert lines[1:] == ["gw (gateway): 1 input error:", "  error: gateway_profiles[0].model is required"]


def test_a_refused_host_keeps_the_table_narrow():
    header, _separator, good, refused = render_table([_plan("a"), {"host": "refused", "error": "x" * 900}])
    assert "x" * 10 not in refused
    assert len(refused) == len(header) == len(good)
