# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Which GGUF architectures each recorded Ollama release loads (architectures.json, architectures.py) and the
ollama-arch-unsupported finding; cases in architectures_cases.yml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama import architectures
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import parse_version
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import RELEASES
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.settings import resolve_ollama_settings

HERE = Path(__file__).resolve().parent
CASES = yaml.safe_load((HERE / "architectures_cases.yml").read_text(encoding="utf-8"))["cases"]
RTX_3090 = [{"index": 0, "memory_total_mib": 24576, "compute_capability": "8.6"}]
SHAPE = {
    "block_count": 24,
    "embedding_length": 2048,
    "head_count": 16,
    "head_count_kv": 4,
    "key_length": 128,
    "value_length": 128,
    "vocab_size": 32000,
    "context_length": 32768,
    "feed_forward_length": 8192,
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_support(case):
    verdict = architectures.support(case["architecture"], parse_version(case["version"]))
    assert (verdict.status, verdict.release, verdict.passing) == (case["status"], case["release"], case.get("passing"))
    if case["status"] == "later":
        assert architectures.support(case["architecture"], parse_version(case["passing"])).status == "listed"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_finding(case):
    found = resolve_ollama_settings(case["version"], dict(SHAPE, architecture=case["architecture"]), RTX_3090).checks
    errors = [c for c in found if c["id"] == "ollama-arch-unsupported"]
    if case["status"] != "later":
        assert [c for c in errors if "read that loads it" in c["message"]] == []
        return
    (error,) = errors
    assert error["severity"] == "error"
    assert (error["variable"], error["suggested"]) == ("ollama_version", case["passing"])
    assert repr(case["architecture"]) in error["message"] and f"Ollama {case['version']}" in error["message"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_an_unread_release_is_never_passed_in_silence(case):
    found = resolve_ollama_settings(case["version"], dict(SHAPE, architecture=case["architecture"]), RTX_3090).checks
    notes = [c for c in found if c["id"] == "ollama-arch-unverified"]
    if case["status"] != "unread":
        assert notes == []
        return
    (note,) = notes
    assert (note["severity"], note["variable"]) == (case["unverified"], "ollama_version")
    assert repr(case["architecture"]) in note["message"] and f"Ollama {case['version']}" in note["message"]
    assert f"verified up to {architectures.NEWEST_READ}" in note["message"]
    tag = architectures.llama_cpp_tag(case["release"])
    assert (f"llama.cpp {tag}" if tag else f"Ollama {case['release']}") in note["message"]
    if case.get("passing"):
        assert f"Ollama {case['passing']}, a release read, loads it" in note["message"]


def test_a_removed_name_names_the_last_release_that_loads_it(monkeypatch):
    data = {
        "releases": {
            "0.12.11": {"tag": "v0.12.11", "architectures": ["llama", "oldarch"]},
            "0.14.0": {"tag": "v0.14.0", "architectures": ["llama"]},
        },
        "not_tagged": [],
    }
    monkeypatch.setattr(architectures, "ARCHITECTURE_DATA", data)
    monkeypatch.setattr(architectures, "_RECORDED", [((0, 12, 11), "0.12.11"), ((0, 14, 0), "0.14.0")])
    verdict = architectures.support("oldarch", (0, 14, 0))
    assert (verdict.status, verdict.passing) == ("removed", "0.12.11")
    (error,) = [
        c
        for c in resolve_ollama_settings("0.14.0", dict(SHAPE, architecture="oldarch"), RTX_3090).checks
        if c["id"] == "ollama-arch-unsupported"
    ]
    assert error["suggested"] == "0.12.11" and "the last release read that loads it is 0.12.11" in error["message"]


def test_every_release_record_was_looked_up():
    data = architectures.ARCHITECTURE_DATA
    assert set(data["releases"]) | set(data["not_tagged"]) == set(RELEASES)
    assert set(data["releases"]).isdisjoint(data["not_tagged"])
    for release, entry in data["releases"].items():
        assert entry["tag"] == f"v{release}" and len(entry["commit"]) == 40
        # the llama-server era (from 0.30) records the llama.cpp tag and no names; earlier releases the names
        if parse_version(release) >= (0, 30, 0):
            assert entry["architectures"] is None and entry["llama_cpp"].startswith("b")
        else:
            assert len(entry["architectures"]) <= entry["llama_cpp_names"] + entry["go_engine_names"]
            assert "llama" in entry["architectures"]
