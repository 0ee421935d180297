# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.model_repo_error filter: the plan's repository check, for the model_download role."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.filter.input_check import FilterModule

FILTERS = FilterModule().filters()

GOOD = ["Qwen/Qwen3-8B", "HuggingFaceTB/SmolLM2-135M-Instruct", "org/name.v1_2-x"]
BAD = [None, "", "Qwen3-8B", "org/../x", "-org/name", "org/name/extra", "org name/x", 42]


@pytest.mark.parametrize("repo", GOOD)
def test_model_ids_pass(repo):
    assert FILTERS["model_repo_error"](repo) == ""


@pytest.mark.parametrize("repo", BAD)
def test_other_values_are_refused_naming_the_variable_and_an_id_that_passes(repo):
    message = FILTERS["model_repo_error"](repo)
    assert message.startswith("inferops_model.repo must be a Hugging Face repository id such as Qwen/Qwen3-8B")


def test_the_variable_named_can_be_chosen():
    assert FILTERS["model_repo_error"]("x", "my_model.repo").startswith("my_model.repo must be")


# listen_address_error: (address, variable, passes). vLLM takes IPv6 as uvicorn binds it, Ollama in brackets.
LISTEN_CASES = [
    ("0.0.0.0", "vllm_host", True),
    ("127.0.0.1", "vllm_host", True),
    ("gpu-a.lan", "vllm_host", True),
    ("::", "vllm_host", True),
    ("[::]", "vllm_host", False),
    ("0.0.0.0:8000", "vllm_host", False),
    ("http://0.0.0.0", "vllm_host", False),
    ("", "vllm_host", False),
    (None, "vllm_host", False),
    ("[::1]", "ollama_host", True),
    ("::1", "ollama_host", False),
    ("0.0.0.0", "ollama_host", True),
    ("0.0.0.0:11434", "ollama_host", False),
]


@pytest.mark.parametrize(("address", "variable", "passes"), LISTEN_CASES)
def test_listen_address_error(address, variable, passes):
    message = FILTERS["listen_address_error"](address, variable)
    if passes:
        assert message == ""
    else:
        assert message.startswith(f"{variable} must be an address to listen on, without a port")
        assert "0.0.0.0" in message


def test_listen_address_error_knows_only_the_engines_host_variables():
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError):
        FILTERS["listen_address_error"]("0.0.0.0", "gateway_host")


def test_shown_filter_is_the_plans_rule():
    shown = FilterModule().filters()["shown"]
    assert shown("amd65", "ollama_arch") == "'amd65'"
    assert shown("x --api-key k3y", "ollama_arch") == "a value that names a credential (not shown)"
    assert shown("anything", "vllm_api_key") == "a value (not shown: the variable carries a secret)"
