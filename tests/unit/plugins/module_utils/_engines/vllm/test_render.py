# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.render import ServeConfigError, serve_options

COMMAND = [
    "vllm",
    "serve",
    "Qwen/Qwen3.6-35B-A3B",
    "--revision",
    "0123456789abcdef0123456789abcdef01234567",
    "--max-model-len",
    "65536",
    "--gpu-memory-utilization",
    "0.92",
    "--kv-cache-dtype",
    "fp8",
    "--no-enable-prefix-caching",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "qwen3_coder",
    "--hf-overrides",
    '{"rope_parameters":{"factor":2.0,"rope_type":"yarn"}}',
]


def test_plan_command_becomes_config_keys_in_order():
    config = serve_options(COMMAND)
    assert list(config)[:2] == ["model", "revision"]
    assert config == {
        "model": "Qwen/Qwen3.6-35B-A3B",
        "revision": "0123456789abcdef0123456789abcdef01234567",
        "max-model-len": 65536,
        "gpu-memory-utilization": 0.92,
        "kv-cache-dtype": "fp8",
        # false would be dropped by vLLM's config reader: the negated flag is kept as a key
        "no-enable-prefix-caching": True,
        "enable-auto-tool-choice": True,
        "tool-call-parser": "qwen3_coder",
        "hf-overrides": {"rope_parameters": {"factor": 2.0, "rope_type": "yarn"}},
    }


def test_values_that_would_change_meaning_in_yaml_stay_text():
    config = serve_options(
        ["vllm", "serve", "m", "--a", "true", "--b", "[1, 2]", "--c", "null", "--d", "1e3", "--e", "007", "--f", "-1"]
    )
    assert (config["a"], config["b"], config["c"], config["d"], config["e"]) == ("true", "[1, 2]", "null", "1e3", "007")
    assert config["f"] == -1


def test_inline_values_several_values_and_underscores():
    config = serve_options(["vllm", "serve", "m", "--max_num_seqs=64", "--cudagraph-capture-sizes", "1", "2", "4"])
    assert config["max-num-seqs"] == 64
    assert config["cudagraph-capture-sizes"] == [1, 2, 4]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vllm", "serve", "m", "--port", "1"], "vllm_port"),
        (["vllm", "serve", "m", "--host=::"], "vllm_host"),
        (["vllm", "serve", "m", "--api-key", "k"], "vllm_api_key"),
        (["vllm", "serve", "m", "--max-num-seqs", "1", "--max_num_seqs", "2"], "twice"),
        (["vllm", "serve", "m", "-tp", "2"], "long form"),
        (["vllm", "serve", "--max-num-seqs", "2"], "vllm serve MODEL"),
        (["ollama", "serve", "m"], "vllm serve MODEL"),
        (["vllm", "serve", "m", "stray"], "unexpected argument"),
        (["vllm", "serve", "m", "--config", "x.yaml"], "writes that file"),
    ],
)
def test_commands_that_cannot_be_carried_over(argv, message):
    with pytest.raises(ServeConfigError, match=message):
        serve_options(argv)
