"""The shipped model catalogue: coverage, fidelity to the real config.json files, lookup."""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import (
    catalogue_ids,
    describe_model,
    find_model,
    resolve_model,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import estimate_params

CONFIGS = pathlib.Path(__file__).resolve().parents[4] / "unit" / "fixtures" / "model_configs"

REQUIRED = [
    "Qwen/Qwen3.5-35B-A3B",
    "Qwen/Qwen3.6-35B-A3B",
    "Qwen/Qwen3.5-27B",
    "Qwen/Qwen3.6-27B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.3-70B-Instruct",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "google/gemma-3-27b-it",
    "deepseek-ai/DeepSeek-V3",
]

# Catalogue entry -> the real config.json it was read from (fixtures copied from the shared reference).
REAL_CONFIGS = {
    "Qwen/Qwen3.5-35B-A3B": "Qwen--Qwen3.5-35B-A3B",
    "Qwen/Qwen3.6-35B-A3B": "nvidia--Qwen3.6-35B-A3B-NVFP4",
    "Qwen/Qwen3.5-27B": "Qwen--Qwen3.5-27B",
    "Qwen/Qwen3.6-27B": "nvidia--Qwen3.6-27B-NVFP4",
    "Qwen/Qwen3-32B": "Qwen--Qwen3-32B",
    "Qwen/Qwen3-30B-A3B": "Qwen--Qwen3-30B-A3B",
    "Qwen/Qwen3-8B": "Qwen--Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B",
    "meta-llama/Llama-3.3-70B-Instruct": "meta-llama--Llama-3.3-70B-Instruct",
    "openai/gpt-oss-20b": "openai--gpt-oss-20b",
    "openai/gpt-oss-120b": "openai--gpt-oss-120b",
    "deepseek-ai/DeepSeek-V3": "deepseek-ai--DeepSeek-V3",
}


def test_every_required_model_is_catalogued():
    assert set(REQUIRED) <= set(catalogue_ids())


@pytest.mark.parametrize("repo", sorted(REAL_CONFIGS))
def test_catalogue_matches_the_real_config(repo):
    real = json.loads((CONFIGS / f"{REAL_CONFIGS[repo]}_config.json").read_text(encoding="utf-8"))
    real.pop("quantization_config", None)  # the NVIDIA NVFP4 files carry the Qwen3.6 base architecture
    expected = ModelArchitecture.from_config(real).to_dict()
    got = find_model(repo).architecture().to_dict()
    if repo == "Qwen/Qwen3-Next-80B-A3B-Instruct":
        expected["mtp_layers"] = 1
    expected.pop("quantization")
    assert {k: v for k, v in got.items() if k != "quantization"} == expected
    assert find_model(repo).verified


def test_unverified_entries_say_where_they_come_from():
    for repo in ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "google/gemma-3-27b-it"):
        entry = find_model(repo)
        assert entry.verified is False
        assert entry.config_source.startswith("not read from a real config.json")


def test_gemma3_pattern_and_mistral_vision():
    gemma = find_model("google/gemma-3-27b-it").architecture()
    assert (gemma.full_attention_layers, gemma.sliding_window_layers, gemma.sliding_window) == (10, 52, 1024)
    assert gemma.tie_word_embeddings and gemma.derived_max_model_len == 131072  # gemma3 rope not multiplied
    mistral = find_model("Mistral-Small-3.2-24B").architecture()
    assert mistral.has_vision and mistral.full_attention_layers == 40 and mistral.num_kv_heads == 8


@pytest.mark.parametrize("repo", sorted(set(catalogue_ids()) - {"google/gemma-3-27b-it"}))
def test_component_counts_agree_with_the_architecture(repo):
    """The catalogue's researched counts and the counts computed from the config agree for the big parts."""
    entry = find_model(repo)
    computed = estimate_params(entry.architecture())
    for component in ("embed", "lm_head", "experts", "attn_linear", "dense_or_shared_mlp", "linear_attn_linear"):
        assert computed[component] == pytest.approx(entry.params[component], rel=1e-3), component
    assert sum(computed.values()) == pytest.approx(entry.total_params, rel=5e-3)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B"),
        ("qwen/qwen3.6-35b-a3b", "Qwen/Qwen3.6-35B-A3B"),
        ("hf.co/Qwen/Qwen3.6-35B-A3B:main", "Qwen/Qwen3.6-35B-A3B"),
        ("https://huggingface.co/Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B"),
        ("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct"),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "Qwen/Qwen3-Next-80B-A3B-Instruct"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"),
    ],
)
def test_lookup_by_id_and_alias(name, expected):
    assert find_model(name).id == expected


def test_quantized_repo_resolves_through_base_model():
    assert find_model("Qwen/Qwen3.6-35B-A3B-FP8") is None
    assert resolve_model("Qwen/Qwen3.6-35B-A3B-FP8", base_model="Qwen/Qwen3.6-35B-A3B").id == "Qwen/Qwen3.6-35B-A3B"
    with pytest.raises(ValueError, match=r"set inferops_model.base_model"):
        resolve_model("Qwen/Qwen3.6-35B-A3B-FP8")
    with pytest.raises(ValueError, match=r"inferops_model.base_model 'Qwen/Unknown' is not in the model catalogue"):
        resolve_model("Qwen/Qwen3.6-35B-A3B-FP8", base_model="Qwen/Unknown")


def test_describe_model_prefers_the_given_config():
    real = json.loads((CONFIGS / "openai--gpt-oss-20b_config.json").read_text(encoding="utf-8"))
    arch, entry, source = describe_model({"repo": "openai/gpt-oss-20b"}, real)
    assert source == "config.json" and entry.id == "openai/gpt-oss-20b" and arch.sliding_window == 128
    arch, entry, source = describe_model({"repo": "unsloth/gemma-3-27b-it-GGUF", "base_model": "google/gemma-3-27b-it"})
    assert source == "catalogue:google/gemma-3-27b-it (unverified)" and arch.num_layers == 62
    with pytest.raises(ValueError, match=r"inferops_model\.repo is required"):
        describe_model({"revision": "main"})
