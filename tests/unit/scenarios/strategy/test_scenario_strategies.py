"""Which executor runs each Molecule scenario: Mitogen's (extensions/molecule/config.yml) except where a scenario's
molecule.yml names ansible-core's own linear strategy, as users run the roles. One scenario does so under the newest
core (gpu_facts) and one under the oldest (a scenario of the Makefile's COMPAT_SCENARIOS: model_download), so that
both ends of the supported range run the roles' task files through ansible-core's own executor."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[4]
SCENARIOS = ROOT / "extensions" / "molecule"


def strategy(name: str) -> str:
    """The ANSIBLE_STRATEGY a scenario runs with, its molecule.yml over the shared config.yml."""
    shared = yaml.safe_load((SCENARIOS / "config.yml").read_text())["ansible"]["env"]["ANSIBLE_STRATEGY"]
    own = yaml.safe_load((SCENARIOS / name / "molecule.yml").read_text()) or {}
    return ((own.get("ansible") or {}).get("env") or {}).get("ANSIBLE_STRATEGY", shared)


def compat_scenarios() -> list[str]:
    found = re.search(r"^COMPAT_SCENARIOS \?= (.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    return found[1].split()


def test_the_shared_config_runs_mitogen_unless_the_developer_asks_for_linear():
    assert strategy("vllm_cpu_serving") == "${INFEROPS_MOLECULE_STRATEGY:-inferops_mitogen_linear}"


def test_the_linear_strategy_runs_at_both_ends_of_the_supported_range():
    linear = {path.parent.name for path in SCENARIOS.glob("*/molecule.yml") if strategy(path.parent.name) == "linear"}
    assert linear == {"model_download", "gpu_facts"}
    assert "model_download" in compat_scenarios()
    assert "gpu_facts" not in compat_scenarios()
