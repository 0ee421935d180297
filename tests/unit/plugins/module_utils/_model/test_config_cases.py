"""The architecture facts the plan derives from 41 real config.json files of public models (config_cases.yml)."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import attention_bytes_per_token
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture

CONFIGS = pathlib.Path(__file__).resolve().parents[4] / "unit" / "fixtures" / "model_configs"
CASES = yaml.safe_load((pathlib.Path(__file__).with_name("config_cases.yml")).read_text(encoding="utf-8"))
SOURCES = yaml.safe_load((CONFIGS / "SOURCES.yml").read_text(encoding="utf-8"))


def test_every_fixture_has_a_source_and_thirty_configs_have_cases():
    assert sorted(SOURCES) == sorted(p.name for p in CONFIGS.glob("*.json"))
    assert all(entry["url"].startswith("https://huggingface.co/") for entry in SOURCES.values())
    assert len(CASES) >= 30 and set(CASES) <= set(SOURCES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_plan_derives_the_architecture_facts(name):
    expected = CASES[name]
    arch = ModelArchitecture.from_config(json.loads((CONFIGS / name).read_text(encoding="utf-8")))
    got = {
        "architecture": arch.architecture,
        "layers": arch.num_layers,
        "kv_heads": arch.num_kv_heads,
        "head_dim": arch.head_dim,
        "sliding_window_layers": arch.sliding_window_layers,
        "linear_attention_layers": arch.linear_attention_layers,
        "experts": arch.num_experts,
        "kv_bytes_per_token_per_layer": attention_bytes_per_token(arch, "auto", 1),
    }
    assert got == expected
