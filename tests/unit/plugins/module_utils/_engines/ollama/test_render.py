"""ollama_render and the ollama role's data: archive names, checksum table, environment, Modelfile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama import render as r
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import RELEASES

ROLE = Path(__file__).resolve().parents[6] / "roles" / "ollama"

# Seed deployment 3 as the plan reports it (settings with their sources).
SEED3_SETTINGS = {
    "context_length": {"value": 81920, "source": "inventory"},
    "num_parallel": {"value": 1, "source": "forced by Ollama"},
    "kv_cache_type": {"value": "f16", "source": "default"},
    "flash_attention": {"value": True, "source": "inventory"},
    "num_gpu": {"value": 99, "source": "inventory"},
}
GGUF = "/var/lib/inferops/hf/hub/models--unsloth--Qwen3.5-35B-A3B-GGUF/snapshots/0123abcd/UD-Q4_K_L.gguf"


@pytest.mark.parametrize(
    ("version", "arch", "name"),
    [
        ("0.13.5", "x86_64", "ollama-linux-amd64.tgz"),
        ("0.14.0", "x86_64", "ollama-linux-amd64.tar.zst"),
        ("0.32.9", "aarch64", "ollama-linux-arm64.tar.zst"),
        ("0.8.0", "arm64", "ollama-linux-arm64.tgz"),
    ],
)
def test_archive_name_follows_the_release_format(version, arch, name):
    assert r.archive_name(version, arch) == name


def test_archive_name_refuses_unknown_input():
    with pytest.raises(r.OllamaRenderError, match="ollama_arch"):
        r.archive_name("0.32.9", "ppc64le")
    with pytest.raises(r.OllamaRenderError, match="ollama_version"):
        r.archive_name("v0.32.9", "x86_64")


def test_checksum_table_has_the_shape_of_real_releases():
    table = {version: record["sha256"] for version, record in RELEASES.items() if "sha256" in record}
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert table, "the table must not be empty"
    seen = set()
    for version, by_arch in table.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
        assert set(by_arch) <= {"amd64", "arm64"} and by_arch, version
        for arch, digest in by_arch.items():
            assert re.fullmatch(r"[0-9a-f]{64}", digest), (version, arch)
            assert digest not in seen, f"{version}/{arch} repeats another archive's sha256"
            seen.add(digest)
            # the asset name a release of that version publishes
            assert re.fullmatch(r"ollama-linux-(amd64|arm64)\.(tgz|tar\.zst)", r.archive_name(version, arch))
    assert set(table[defaults["ollama_version"]]) == {"amd64", "arm64"}, "the default pin needs both architectures"
    assert r.archive_name(defaults["ollama_version"], "x86_64").endswith(".tar.zst")


def test_defaults_and_argument_specs_are_in_sync():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert set(defaults) == set(specs)
    for name, spec in specs.items():
        if "default" in spec:
            assert spec["default"] == defaults[name], name
        else:
            assert defaults[name] is None, name


def test_environment_of_seed_deployment_3():
    env = r.ollama_environment(
        SEED3_SETTINGS, {"host": "127.0.0.1:11434", "models_dir": "/var/lib/ollama/models", "gpus": [0]}
    )
    assert env == {
        "OLLAMA_HOST": "127.0.0.1:11434",
        "OLLAMA_MODELS": "/var/lib/ollama/models",
        "OLLAMA_CONTEXT_LENGTH": "81920",
        "OLLAMA_NUM_PARALLEL": "1",
        "OLLAMA_KV_CACHE_TYPE": "f16",
        "OLLAMA_FLASH_ATTENTION": "1",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "0",
    }


def test_environment_options_win_over_the_plan_and_unset_stays_unset():
    env = r.ollama_environment(
        {"context_length": 262144, "flash_attention": True},
        {
            "context_length": 32768,
            "flash_attention": False,
            "keep_alive": "-1",
            "max_loaded_models": 1,
            "sched_spread": True,
            "gpu_overhead_bytes": 536870912,
            "gpus": [2, 3],
            "extra_environment": {"OLLAMA_DEBUG": "1"},
        },
    )
    assert env == {
        "OLLAMA_HOST": "127.0.0.1:11434",
        "OLLAMA_CONTEXT_LENGTH": "32768",
        "OLLAMA_FLASH_ATTENTION": "0",
        "OLLAMA_KEEP_ALIVE": "-1",
        "OLLAMA_MAX_LOADED_MODELS": "1",
        "OLLAMA_SCHED_SPREAD": "1",
        "OLLAMA_GPU_OVERHEAD": "536870912",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "2,3",
        "OLLAMA_DEBUG": "1",
    }
    assert r.ollama_environment({}, {}) == {"OLLAMA_HOST": "127.0.0.1:11434"}


def test_environment_refuses_bad_names_and_gpu_lists():
    with pytest.raises(r.OllamaRenderError, match="ollama_environment_extra"):
        r.ollama_environment({}, {"extra_environment": {"bad name": "x"}})
    with pytest.raises(r.OllamaRenderError, match="ollama_gpus"):
        r.ollama_environment({}, {"gpus": "0,1"})


def test_modelfile_of_seed_deployment_3_with_a_thinking_profile():
    profile = {
        "name": "qwen3.5:thinking",
        "parameters": {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0, "stop": ["<|im_end|>"]},
    }
    parameters = r.modelfile_parameters(SEED3_SETTINGS, {}, profile)
    assert r.ollama_modelfile(GGUF, parameters) == (
        f"FROM {GGUF}\n"
        "PARAMETER min_p 0\n"
        "PARAMETER num_ctx 81920\n"
        "PARAMETER num_gpu 99\n"
        'PARAMETER stop "<|im_end|>"\n'
        "PARAMETER temperature 0.6\n"
        "PARAMETER top_k 20\n"
        "PARAMETER top_p 0.95\n"
    )


def test_modelfile_options_override_the_plan_and_blocks_are_quoted():
    parameters = r.modelfile_parameters(SEED3_SETTINGS, {"context_length": 262144, "num_batch": 1024}, None)
    assert parameters == {"num_ctx": "262144", "num_gpu": "99", "num_batch": "1024"}
    text = r.ollama_modelfile("/m.gguf", {}, system="Be brief.")
    assert text == 'FROM /m.gguf\nSYSTEM """Be brief."""\n'
    with pytest.raises(r.OllamaRenderError, match="not one Ollama accepts"):
        r.modelfile_parameters({}, {}, {"parameters": {"temprature": 0.6}})


DIGEST = "a4e5e156ddec27e286f75328784d7106b60a4eb1d246e950a001a3f944fbda99"
SHOW = {
    "modelfile": f"FROM /var/lib/ollama/models/blobs/sha256-{DIGEST}\nPARAMETER num_ctx 81920\n",
    "parameters": 'num_ctx                        81920\nnum_gpu                        99\nstop    "<|im_end|>"\n'
    "temperature                    0.6",
}


def test_model_drift_matches_what_ollama_reports():
    wanted = {"num_ctx": "81920", "num_gpu": "99", "temperature": "0.6"}
    # the stop word Ollama took from the chat template is not drift
    assert r.model_drift(SHOW, wanted, DIGEST) == []
    assert r.model_drift(SHOW, dict(wanted, stop=["<|im_end|>"]), f"sha256:{DIGEST}") == []


def test_model_drift_names_each_difference():
    assert r.model_drift(None, {"num_ctx": "8192"}) == ["model is not present"]
    drift = r.model_drift(SHOW, {"num_ctx": "262144", "num_gpu": "99", "top_k": "20"}, "0" * 64)
    assert drift == [
        "parameter num_ctx is 81920 (wanted 262144)",
        "parameter top_k missing (wanted 20)",
        "parameter temperature is set but not wanted",
        "weights are not the wanted GGUF (sha256 000000000000)",
    ]


def test_parse_show_parameters_collects_repeated_names_and_unquotes():
    assert r.parse_show_parameters('stop "<|im_end|>"\nstop "a\\"b"\ntop_k 20') == {
        "stop": ["<|im_end|>", 'a"b'],
        "top_k": "20",
    }


PULL_CASES = yaml.safe_load((Path(__file__).parent / "pull_state_cases.yml").read_text())["cases"]


def _hex(value):
    """A case's digest letter as a 64-hex digest ("sha256:" kept)."""
    if value is None:
        return None
    prefix, _sep, letter = value.rpartition(":")
    return f"{prefix}:{letter * 64}" if prefix else letter * 64


@pytest.mark.parametrize("case", PULL_CASES, ids=[c["name"] for c in PULL_CASES])
def test_pull_state(case):
    models = [{**m, **({"digest": _hex(m["digest"])} if "digest" in m else {})} for m in case["models"]]
    tags = {"models": [{"name": name, "model": name, "digest": _hex(d)} for name, d in case["held"].items()]}
    state = r.pull_state(models, tags)
    assert [item["index"] for item in state["pull"]] == case["pull"]
    assert [item["index"] for item in state["mismatch"]] == case["mismatch"]
    for item in state["mismatch"]:
        pinned = _hex(case["models"][item["index"]]["digest"]).removeprefix("sha256:")
        assert item["wanted"] == pinned != item["found"], item
