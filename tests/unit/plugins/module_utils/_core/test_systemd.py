# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.systemd import (
    UnitValueError,
    environment_lines,
    restart_lines,
)


def test_environment_lines_are_quoted_in_order():
    lines = environment_lines({"OLLAMA_HOST": "127.0.0.1:11434", "X": 'a "b" 100% c\\d'})
    assert lines == ['"OLLAMA_HOST=127.0.0.1:11434"', '"X=a \\"b\\" 100%% c\\\\d"']


@pytest.mark.parametrize("text", ["a\nb", "a\rExecStartPre=+/bin/sh", "a\x00b"])
def test_line_breaks_and_nul_are_refused_naming_the_variable(text):
    with pytest.raises(UnitValueError, match="X contains a line break"):
        environment_lines({"X": text})


# (systemd version, lines): RestartSteps=/RestartMaxDelaySec= from systemd 254 on (Debian 13: 257, Debian 12: 252)
RESTART_CASES = [
    (257, ["Restart=always", "RestartSec=10", "RestartSteps=5", "RestartMaxDelaySec=300"]),
    (254, ["Restart=always", "RestartSec=10", "RestartSteps=5", "RestartMaxDelaySec=300"]),
    (253, ["Restart=always", "RestartSec=10"]),
    (252, ["Restart=always", "RestartSec=10"]),
    ("257.9-1", ["Restart=always", "RestartSec=10", "RestartSteps=5", "RestartMaxDelaySec=300"]),
    (None, ["Restart=always", "RestartSec=10"]),
    ("unknown", ["Restart=always", "RestartSec=10"]),
]


@pytest.mark.parametrize(("version", "lines"), RESTART_CASES)
def test_restart_lines_per_systemd_version(version, lines):
    assert restart_lines("vllm_restart", {"sec": 10, "max_delay_sec": "300", "steps": 5}, version) == lines


def test_restart_lines_without_growth_have_no_steps():
    assert restart_lines("x_restart", {"sec": 10, "max_delay_sec": 10, "steps": 5}, 257) == [
        "Restart=always",
        "RestartSec=10",
    ]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"sec": 0, "max_delay_sec": 10, "steps": 1}, "x_restart_sec is 0: at least 1"),
        ({"sec": 30, "max_delay_sec": 10, "steps": 1}, r"x_restart_max_delay_sec \(10\) is below x_restart_sec \(30\)"),
        ({"sec": "ten", "max_delay_sec": 10, "steps": 1}, "x_restart_sec must be a whole number"),
        ({"sec": True, "max_delay_sec": 10, "steps": 1}, "x_restart_sec must be a whole number"),
        ({"sec": 5, "max_delay_sec": 10}, "x_restart_steps must be a whole number"),
    ],
)
def test_restart_lines_refuse_bad_values_naming_the_variable(policy, message):
    with pytest.raises(UnitValueError, match=message):
        restart_lines("x_restart", policy, 257)
