"""tests/bin/check-time-budget: a `make test` run over the budget in tests/time-budget.yml fails, naming what."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tests" / "bin" / "check-time-budget"
CASES = yaml.safe_load((Path(__file__).with_name("check_time_budget_cases.yml")).read_text())


def write_times(path: Path, times: dict[str, int]) -> Path:
    path.write_text("".join(f"{name}\t{seconds}\n" for name, seconds in times.items()))
    return path


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_budget_verdict(case: dict, tmp_path: Path) -> None:
    budget = tmp_path / "tests" / "time-budget.yml"
    budget.parent.mkdir()
    budget.write_text(yaml.safe_dump(case["budget"]))
    stages = write_times(tmp_path / "stages.tsv", case["stages"])
    scenarios = write_times(tmp_path / "scenarios.tsv", case.get("scenarios", {}))
    env = {k: v for k, v in os.environ.items() if k != "TIME_BUDGET_S"}
    if "env" in case:
        env["TIME_BUDGET_S"] = case["env"]
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(budget), str(stages), str(scenarios)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    out = result.stdout + result.stderr
    assert result.returncode == case["rc"], out
    for text in case["shows"]:
        assert text in out
    for text in case["hides"]:
        assert text not in out


def test_missing_scenario_times_are_no_error(tmp_path: Path) -> None:
    """`make test` without the molecule stage (or before it ran) leaves no scenarios file."""
    stages = write_times(tmp_path / "stages.tsv", {"units": 37})
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(ROOT / "tests" / "time-budget.yml"), str(stages), str(tmp_path / "none.tsv")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_repository_budget_is_within_the_ci_limit() -> None:
    """The enforced budget stays well under CI's hard limit of 90 minutes a run (target: 35, issue 24)."""
    assert 35 * 60 <= yaml.safe_load((ROOT / "tests" / "time-budget.yml").read_text())["total"] <= 75 * 60
