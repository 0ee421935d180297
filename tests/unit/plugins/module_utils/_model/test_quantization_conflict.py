"""inferops_model.quantization is checked against the scheme the checkpoint states (quantization_cases.yml)."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    quantization_conflict,
    quantization_named_by,
)

CONFIGS = pathlib.Path(__file__).resolve().parents[4] / "unit" / "fixtures" / "model_configs"
DATA = yaml.safe_load(pathlib.Path(__file__).with_name("quantization_cases.yml").read_text(encoding="utf-8"))
QWEN3_8B = json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text(encoding="utf-8"))


def checkpoint_quantization(name):
    spec = DATA["checkpoints"][name]
    if "fixture" in spec:
        config = json.loads((CONFIGS / spec["fixture"]).read_text(encoding="utf-8"))
        quant = spec.get("hf_quant_config")
        hf_quant = json.loads((CONFIGS / quant).read_text(encoding="utf-8")) if quant else None
        return ModelArchitecture.from_config(config, hf_quant).quantization
    return ModelArchitecture.from_config({**QWEN3_8B, "quantization_config": spec["quantization_config"]}).quantization


@pytest.mark.parametrize(("checkpoint", "inventory", "agrees"), DATA["cases"], ids=str)
def test_inventory_quantization_against_the_checkpoint(checkpoint, inventory, agrees):
    problem = quantization_conflict(inventory, checkpoint_quantization(checkpoint))
    if agrees:
        assert problem is None
    else:
        assert problem is not None
        assert f"inferops_model.quantization is {inventory!r} but the checkpoint has " in problem


@pytest.mark.parametrize(("repo", "named"), sorted(DATA["repo_names"].items()), ids=str)
def test_the_quantization_a_repository_name_states(repo, named):
    assert quantization_named_by(repo) == named
