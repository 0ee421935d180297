# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The performance model against published measurements (tests/accuracy/performance.py, records.yml)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[5]
_SPEC = importlib.util.spec_from_file_location("performance_accuracy", ROOT / "tests" / "accuracy" / "performance.py")
accuracy = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(accuracy)
RESULT = accuracy.evaluate()
DECODE = [r for r in RESULT["rows"] if r["metric"] == "decode_tokens_per_s" and not r["pairs_only"]]


def test_enough_records_are_evaluated():
    assert len(DECODE) >= 15
    assert {r["engine_name"] for r in DECODE} == {"vllm", "llama.cpp"}


@pytest.mark.parametrize("row", DECODE, ids=lambda r: r["id"])
def test_single_stream_decode_is_within_tolerance(row):
    assert abs(row["error_pct"]) <= accuracy.DECODE_TOLERANCE_PCT[row["engine_name"]], row


def test_median_decode_error_is_under_target():
    assert RESULT["decode_median_abs_pct"] < accuracy.DECODE_MEDIAN_PCT


@pytest.mark.parametrize("pair", [p for p in RESULT["ab_pairs"] if p["evaluated"]], ids=lambda p: p["faster"])
def test_published_ab_pairs_are_ranked_as_measured(pair):
    assert pair["ranked_as_measured"], pair


def test_the_report_is_up_to_date():
    text = accuracy.render(RESULT)
    assert (ROOT / "docs" / "performance-accuracy.md").read_text(encoding="utf-8") == text, (
        "docs/performance-accuracy.md is out of date: run make performance-accuracy"
    )
