"""The one findings type and its id registry, held together with docs/checks.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import (
    FINDING_IDS,
    Finding,
    UnknownFindingId,
)

CHECKS_DOC = Path(__file__).resolve().parents[5] / "docs" / "checks.md"
SECTIONS = re.findall(r"^## ([a-z0-9-]+)\s*$", CHECKS_DOC.read_text(encoding="utf-8"), re.MULTILINE)


def test_every_registered_id_has_a_section_in_the_checks_doc():
    missing = sorted(set(FINDING_IDS) - set(SECTIONS))
    assert not missing, f"ids without a section in docs/checks.md: {missing}"


def test_every_section_of_the_checks_doc_is_a_registered_id():
    assert sorted(set(SECTIONS) - set(FINDING_IDS)) == []
    assert len(SECTIONS) == len(set(SECTIONS))


@pytest.mark.parametrize("ident", sorted(FINDING_IDS))
def test_ids_are_kebab_case(ident):
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", ident)


def test_an_unregistered_id_cannot_be_emitted():
    with pytest.raises(UnknownFindingId, match="ollama_partial_offload"):
        Finding("ollama_partial_offload", "warning", "snake_case is not an id")
    with pytest.raises(ValueError, match="severity"):
        Finding("memory-fit", "fatal", "unknown severity")
    assert Finding("memory-fit", "info", "m", "vllm_max_model_len", 4096).to_plan() == {
        "id": "memory-fit",
        "severity": "info",
        "message": "m",
    }
