# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The start timeout: from the last measured start of the same model, else from the model's size."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.start_timeout import (
    FLOOR_S,
    start_timeout,
)

REPO = "inferops-test/tiny-qwen2"


def fact(load_seconds, repo=REPO):
    return {"version": "0.32.0", "model": {"repo": repo, "revision": "c" * 40}, "load_seconds": load_seconds}


# (weights bytes, local fact, timeout_s, source)
CASES = [
    # No fact: 600 s plus 60 s per GiB, rounded up to 10 s.
    (0, None, 600, "model size"),
    (2_628_800, None, 610, "model size"),  # 600.15 s, rounded up
    (int(20.39 * GIB), None, 1830, "model size"),
    (140 * GIB, None, 9000, "model size"),
    # A measured start of the same model: 3 x its load time, at least the floor.
    (140 * GIB, fact(89.4), FLOOR_S, "measured"),
    (140 * GIB, fact(412.0), 1240, "measured"),
    (0, fact(1000), 3000, "measured"),
    # A fact of another model, or without a usable load time, is not a measurement of this one.
    (0, fact(412.0, repo="Qwen/Qwen3-8B"), 600, "model size"),
    (0, fact(None), 600, "model size"),
    (0, fact("n/a"), 600, "model size"),
    (0, fact(0), 600, "model size"),
    (0, {"version": "0.32.0"}, 600, "model size"),
]


@pytest.mark.parametrize(("weights", "measured", "seconds", "source"), CASES)
def test_start_timeout(weights, measured, seconds, source):
    result = start_timeout(weights, REPO, measured)
    assert (result["timeout_s"], result["source"]) == (seconds, source)


def test_the_same_measurement_gives_the_same_timeout_and_a_reason_naming_it():
    first = start_timeout(0, REPO, fact(412.04))
    assert first == start_timeout(0, REPO, fact(412.04))
    assert first["load_seconds"] == 412.04
    assert "412.04 s" in first["reason"] and "0.32.0" in first["reason"]
