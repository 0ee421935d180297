# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The model families of _engines/vllm/families.json: the data's shape and the families it recognises."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import model_family
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    FAMILIES,
    FAMILIES_FILE,
    FAMILY_DATA,
    REASONING_PARSERS,
    TOOL_PARSERS,
)

CASES = yaml.safe_load((Path(__file__).parent / "families_cases.yml").read_text(encoding="utf-8"))["model_family"]
RULE_KEYS = {"architecture_prefix", "model_type_prefix", "repo_pattern", "min_vocab_size"}


def test_families_are_loaded_once_from_the_json_in_order():
    with open(FAMILIES_FILE, encoding="utf-8") as handle:
        assert json.load(handle) == FAMILY_DATA
    assert list(FAMILIES) == [record["name"] for record in FAMILY_DATA["families"]]


def test_the_family_data_names_its_source_and_each_field():
    assert len(FAMILY_DATA["source"]) > 40
    fields = FAMILY_DATA["fields"]
    for record in FAMILY_DATA["families"]:
        assert set(record) <= set(fields), record["name"]
        assert {"name", "tool", "reasoning", "note", "match"} <= set(record), record["name"]
        assert record["tool"] and record["note"], record["name"]


def test_family_parsers_are_parsers_vllm_has():
    for family in FAMILIES.values():
        assert set(family.tool) <= set(TOOL_PARSERS), family.name
        assert set(family.reasoning) <= set(REASONING_PARSERS), family.name


def test_match_rules_use_known_conditions():
    for family in FAMILIES.values():
        assert family.match, family.name
        for rule in family.match:
            assert rule and set(rule) <= RULE_KEYS, (family.name, rule)
            assert "architecture_prefix" in rule or "model_type_prefix" in rule, (family.name, rule)
            if "repo_pattern" in rule:
                re.compile(rule["repo_pattern"])
            if "min_vocab_size" in rule:
                assert int(rule["min_vocab_size"]) > 0


def test_every_family_is_reached_by_a_case():
    # A family shadowed by an earlier, broader one would never be chosen.
    assert {case["family"] for case in CASES} - {None} == set(FAMILIES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case['architecture']}:{case['repo']}")
def test_model_family(case):
    model = {key: case[key] for key in ("architecture", "model_type", "vocab_size")}
    assert model_family(model, case["repo"]) == case["family"]
