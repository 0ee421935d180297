"""GGUF headers (tests/unit/fixtures/gguf, written with the gguf library) read by the plan: from the cache, and
from the Hub test server with range requests only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    architecture_from_shape,
    shape_from_architecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._model import hub as hub_module
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.gguf import read_gguf, shape_from_gguf
from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

from .test_hub import GPU, online, put_in_cache

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
GGUF = FIXTURES / "gguf"
CONFIGS = FIXTURES / "model_configs"
# GGUF file -> (config fixture it was converted from, layers with a sliding window)
CASES = {
    "Qwen3-8B-Q4_K_M.gguf": ("Qwen--Qwen3-8B_config.json", 0),
    "Meta-Llama-3.1-8B-Q4_K_M.gguf": ("meta-llama--Meta-Llama-3.1-8B_config.json", 0),
    "gemma-3-1b-it-Q8_0.gguf": ("google--gemma-3-1b-it_config.json", 22),  # 5 local, 1 global, 26 layers
    "Qwen3-30B-A3B-Q4_K_M.gguf": ("Qwen--Qwen3-30B-A3B_config.json", 0),
    "gpt-oss-20b-MXFP4.gguf": ("openai--gpt-oss-20b_config.json", 12),  # every other of 24 layers
}
REPO = "acme/Qwen3-8B-GGUF"
FILE = "Qwen3-8B-Q4_K_M.gguf"
COMMIT = "1234567890abcdef1234567890abcdef12345678"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_headers_give_the_models_shape(name):
    config_name, sliding = CASES[name]
    config = json.loads((CONFIGS / config_name).read_text())
    header = read_gguf(str(GGUF / name))
    assert header["header_bytes"] == (GGUF / name).stat().st_size
    shape = shape_from_gguf(header)
    assert shape["block_count"] == config["num_hidden_layers"]
    assert shape["head_count_kv"] == config["num_key_value_heads"]
    assert shape["key_length"] == config.get("head_dim", config["hidden_size"] // config["num_attention_heads"])
    assert shape["expert_count"] == (config.get("num_experts") or config.get("num_local_experts") or 0)
    assert len(shape["sliding_window_layers"]) == sliding
    assert shape["vocab_size"] == config["vocab_size"]
    assert all(shape["layer_bytes"]) and shape["input_bytes"] > 0


def ollama_variables(**model) -> dict:
    return {
        "inferops_engine": "ollama",
        "ollama_version": "0.30.4",
        "inferops_model": {"repo": REPO, "revision": "main", "file": FILE, "base_model": "Qwen/Qwen3-8B", **model},
        "ollama_context_length": 8192,
    }


def test_an_ollama_model_plans_from_its_gguf_on_the_hub_with_range_requests(tmp_path, hub, monkeypatch):
    monkeypatch.setattr(hub_module, "_GGUF_FIRST_RANGE", 4096)  # the header takes several reads
    data = (GGUF / FILE).read_bytes()
    commit = hub.add(REPO, {FILE: data, "README.md": b"# GGUF"})
    plan = build_plan(ollama_variables(), {"gpus": [GPU]}, models=online(tmp_path, hub))
    model = plan["model"]
    assert model["weights_bytes"] == len(data)  # the file as listed: what Ollama loads
    assert (
        model["weights_source"]
        == f"gguf file size, GGUF header (range requests) of {hub.url}/{REPO}/resolve/{commit}/{FILE}"
        f" (main -> {commit})"
    )
    ranges = [r for _m, p, r in hub.requests if p.endswith(FILE)]
    assert ranges[0] == "bytes=0-4095" and len(ranges) >= 3 and None not in ranges
    hub.reset()
    offline = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    again = build_plan(ollama_variables(), {"gpus": [GPU]}, models=offline)
    assert again["model"]["weights_bytes"] == len(data) and hub.requests == []
    assert "kept in" in again["model"]["config_source"]


def test_a_gguf_file_the_repo_lacks_names_the_variable_and_the_files(tmp_path, hub):
    hub.add(REPO, {"Qwen3-8B-Q8_0.gguf": (GGUF / FILE).read_bytes()})
    with pytest.raises(
        PlanInputError,
        match=r"inferops_model.file 'Qwen3-8B-Q4_K_M.gguf' is not in acme/Qwen3-8B-GGUF at main "
        r".*its GGUF files: Qwen3-8B-Q8_0.gguf",
    ):
        build_plan(ollama_variables(), {"gpus": [GPU]}, models=online(tmp_path, hub))


def test_a_gguf_header_cut_short_is_an_error_naming_the_file(tmp_path):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, {FILE: (GGUF / FILE).read_bytes()[:5000]})
    offline = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    with pytest.raises(PlanInputError) as error:
        build_plan(ollama_variables(), {"gpus": [GPU]}, models=offline)
    message = str(error.value)
    assert (
        f"inferops_model.file '{FILE}' at {tmp_path}/hub/models--acme--Qwen3-8B-GGUF/snapshots/{COMMIT}/{FILE}"
        in message
    )
    assert "the GGUF header is cut short (it ends after 5000 bytes)" in message
    assert "inferops_model.repo 'acme/Qwen3-8B-GGUF'" in message


def test_a_gguf_in_the_cache_plans_offline_with_its_size(tmp_path):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, {FILE: (GGUF / FILE).read_bytes()})
    offline = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    model = build_plan(ollama_variables(), {"gpus": [GPU]}, models=offline)["model"]
    assert model["weights_bytes"] == (GGUF / FILE).stat().st_size
    assert model["commit"] == COMMIT


def test_vllm_serving_a_gguf_takes_the_file_size_as_the_weights(tmp_path):
    put_in_cache(tmp_path / "hub", REPO, COMMIT, {FILE: (GGUF / FILE).read_bytes()})
    offline = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": REPO, "revision": COMMIT, "file": FILE, "base_model": "Qwen/Qwen3-8B"},
        "vllm_max_model_len": 8192,
    }
    model = build_plan(variables, {"gpus": [GPU]}, models=offline)["model"]
    assert model["weights_source"].startswith("gguf file size, cache ")
    assert model["weights_bytes"] == (GGUF / FILE).stat().st_size


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_architecture_comes_from_the_header(name):
    config_name, sliding = CASES[name]
    header = read_gguf(str(GGUF / name))
    served = architecture_from_shape(shape_from_gguf(header))
    expected = ModelArchitecture.from_config(json.loads((CONFIGS / config_name).read_text()))
    assert served.architecture == header["metadata"]["general.architecture"]  # llama.cpp's name, not the class
    facts = ("num_layers", "num_attention_heads", "num_kv_heads", "head_dim", "hidden_size", "vocab_size")
    facts += ("max_position_embeddings", "num_experts", "num_experts_per_tok", "layer_types")
    assert {f: getattr(served, f) for f in facts} == {f: getattr(expected, f) for f in facts}
    assert served.sliding_window_layers == sliding


@pytest.mark.parametrize(
    "config_name", ["Qwen--Qwen3.5-35B-A3B_config.json", "Qwen--Qwen3-Next-80B-A3B-Thinking_config.json"]
)
def test_a_hybrid_header_gives_the_gated_deltanet_dimensions(config_name):
    # no hybrid GGUF fixture: the shape convert_hf_to_gguf.py writes (ssm.* keys) for the real config
    expected = ModelArchitecture.from_config(json.loads((CONFIGS / config_name).read_text()))
    served = architecture_from_shape(shape_from_architecture(expected))
    assert served.architecture in ("qwen35moe", "qwen3next") and served.model_type == expected.model_type
    facts = ("layer_types", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim")
    facts += ("linear_value_head_dim", "linear_conv_kernel_dim", "attn_output_gate", "num_kv_heads", "head_dim")
    assert {f: getattr(served, f) for f in facts} == {f: getattr(expected, f) for f in facts}
    kept_before = {k: v for k, v in shape_from_architecture(expected).items() if k != "ssm_time_step_rank"}
    assert architecture_from_shape(kept_before) == served  # a header record kept before the key was read


def test_a_header_without_its_head_count_names_the_file():
    shape = shape_from_architecture(
        ModelArchitecture.from_config(json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text()))
    )
    shape["head_count"] = 0  # read as 0 when the header lacks attention.head_count
    with pytest.raises(ValueError, match=r"^inferops_model.file: the GGUF header .*'num_attention_heads' must be 1"):
        architecture_from_shape(shape)


def test_an_uncatalogued_gguf_plans_from_its_header_alone(tmp_path, hub):
    repo, data = "someone/Private-Finetune-GGUF", (GGUF / FILE).read_bytes()
    hub.add(repo, {FILE: data})
    variables = ollama_variables()
    variables["inferops_model"] = {"repo": repo, "revision": "main", "file": FILE}  # no base_model, no size
    plan = build_plan(variables, {"gpus": [GPU]}, models=online(tmp_path, hub))
    assert plan["model"]["architecture"] == "qwen3" and plan["model"]["weights_bytes"] == len(data)
    assert plan["memory"]["kv_cache_gib"] > 0 and not [c for c in plan["checks"] if c["severity"] == "error"]


def vllm_with_standby(**standby_model) -> dict:
    """vLLM (Qwen3-8B, inline config) on GPU 0 and an Ollama on standby on GPU 1 with the GGUF of REPO."""
    config = json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text())
    return {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT, "config": config},
        "vllm_gpus": [0],
        "vllm_max_model_len": 8192,
        "inferops_standby_ollama": {
            "version": "0.30.0",
            "gpus": [1],
            "context_length": 8192,
            "model": {"repo": REPO, "revision": "main", "file": FILE, **standby_model},
        },
    }


TWO_GPUS = {"gpus": [GPU, dict(GPU, index=1)]}


def test_a_standby_gguf_takes_its_size_and_architecture_from_the_hub(tmp_path, hub):
    hub.add(REPO, {FILE: (GGUF / FILE).read_bytes()})
    resolver = online(tmp_path, hub)
    standby = build_plan(vllm_with_standby(), TWO_GPUS, models=resolver)["standby_ollama"]
    active = ollama_variables()
    del active["inferops_model"]["base_model"]
    alone = build_plan(active, {"gpus": [dict(GPU, index=1)]}, models=resolver)
    # the standby Ollama is budgeted like the same GGUF on an Ollama host: the header's shape and size
    assert standby["gpus"] == [1] and standby["vram_used_gib"] == alone["memory"]["vram_used_gib"]
    hub.reset()
    offline = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    again = build_plan(vllm_with_standby(), TWO_GPUS, models=offline)
    assert again["standby_ollama"] == standby and hub.requests == []


def test_a_standby_gguf_that_cannot_be_read_names_its_variables(tmp_path):
    offline = ModelResolver.from_environment({"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    with pytest.raises(PlanInputError) as error:
        build_plan(vllm_with_standby(), TWO_GPUS, models=offline)
    message = str(error.value)
    assert f"inferops_standby_ollama.model.file '{FILE}' of '{REPO}' at 'main' could not be read" in message
    assert "inferops_standby_ollama.model.weights_bytes" in message and "inferops_model." not in message


def test_a_standby_gguf_the_repo_lacks_names_the_standby_variable(tmp_path, hub):
    hub.add(REPO, {"other.gguf": (GGUF / FILE).read_bytes()})
    with pytest.raises(PlanInputError, match=rf"inferops_standby_ollama.model.file '{FILE}' is not in {REPO}"):
        build_plan(vllm_with_standby(), TWO_GPUS, models=online(tmp_path, hub))


def test_a_gguf_only_repository_without_file_names_its_gguf_files(tmp_path, hub):
    hub.add(REPO, {FILE: (GGUF / FILE).read_bytes(), "README.md": b"# GGUF"})
    variables = ollama_variables()
    del variables["inferops_model"]["file"]
    with pytest.raises(PlanInputError, match=rf"GGUF files \({FILE}\): set inferops_model.file to the one to serve"):
        build_plan(variables, {"gpus": [GPU]}, models=online(tmp_path, hub))
