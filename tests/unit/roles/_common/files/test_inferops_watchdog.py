"""roles/_common/files/inferops_watchdog.py: when the watchdog restarts a service, and when it leaves it alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[5]
CASES = yaml.safe_load((Path(__file__).parent / "watchdog_cases.yml").read_text())
FAILURE_SEC = 90


def _load():
    path = ROOT / "roles/_common/files/inferops_watchdog.py"
    spec = importlib.util.spec_from_file_location("inferops_watchdog", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


watchdog = _load()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_decide(case):
    why, kept = watchdog.decide(case["unit"], case["state"], case["answered"], case["now"], FAILURE_SEC)
    if case["restart"] is None:
        assert why is None
    else:
        assert case["restart"] in why
    assert kept == case["kept"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10min", 600), ("5min 30s", 330), ("1h 2min", 3720), ("90s", 90), ("infinity", None), ("", None),
     ("300000000", 300), ("500ms", 0.5)],
)  # fmt: skip
def test_start_timeout_as_systemctl_shows_it(text, seconds):
    assert watchdog._seconds(text) == seconds
