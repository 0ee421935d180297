"""The inferops.llm.ollama_* filters: plain results from Mapping input, errors as AnsibleFilterError."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.ollama import FilterModule

FILTERS = FilterModule().filters()


def test_filters_are_registered():
    assert set(FILTERS) == {
        "ollama_archive_name",
        "ollama_environment",
        "ollama_modelfile",
        "ollama_model_drift",
        "ollama_pull_state",
        "ollama_release_sha256",
    }


def test_release_sha256_comes_from_the_release_record():
    assert set(FILTERS["ollama_release_sha256"]("0.32.9")) == {"amd64", "arm64"}
    assert FILTERS["ollama_release_sha256"]("0.32.8") == {}


def test_modelfile_from_read_only_mappings():
    settings = MappingProxyType({"context_length": MappingProxyType({"value": 262144, "source": "inventory"})})
    profile = MappingProxyType({"name": "q:think", "parameters": MappingProxyType({"temperature": 0.6})})
    result = FILTERS["ollama_modelfile"]("/m.gguf", settings, MappingProxyType({"num_gpu": 99}), profile)
    assert result == {
        "text": "FROM /m.gguf\nPARAMETER num_ctx 262144\nPARAMETER num_gpu 99\nPARAMETER temperature 0.6\n",
        "parameters": {"num_ctx": "262144", "num_gpu": "99", "temperature": "0.6"},
    }
    assert result["parameters"].__class__ is dict


def test_environment():
    env = FILTERS["ollama_environment"]({}, {"host": "0.0.0.0:11434", "gpus": (1,)})
    assert env == {"OLLAMA_HOST": "0.0.0.0:11434", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1"}


def test_errors_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match="ollama_arch"):
        FILTERS["ollama_archive_name"]("0.32.9", "riscv64")
    with pytest.raises(AnsibleFilterError, match="must be a mapping"):
        FILTERS["ollama_environment"](["not", "a", "mapping"], {})
    assert FILTERS["ollama_model_drift"](None, {"num_ctx": "8"}) == ["model is not present"]


def test_pull_state_from_read_only_mappings():
    models = (MappingProxyType({"pull": "qwen3:8b", "digest": "a" * 64}),)
    state = FILTERS["ollama_pull_state"](models, MappingProxyType({"models": ()}))
    assert state["pull"] == [{"index": 0, "pull": "qwen3:8b", "wanted": "a" * 64, "found": None}]
    with pytest.raises(AnsibleFilterError, match="ollama_models must be a list"):
        FILTERS["ollama_pull_state"]("qwen3:8b", {})
