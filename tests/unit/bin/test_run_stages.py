"""tests/bin/run-stages: the order in which `make test`'s workers take the stages and scenarios."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "tests" / "bin" / "run-stages"


@pytest.fixture(name="run_stages")
def fixture_run_stages(monkeypatch):
    loader = importlib.machinery.SourceFileLoader("run_stages", str(SCRIPT))
    spec = importlib.util.spec_from_loader("run_stages", loader)
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules
    monkeypatch.setitem(sys.modules, "run_stages", module)
    loader.exec_module(module)
    monkeypatch.setattr(module, "ceilings", lambda: {"slow": 900, "medium": 400})
    return module


def names(jobs) -> list[str]:
    return [job.name for job in jobs]


def test_images_then_the_longest_scenario_then_the_checks_then_the_other_scenarios(run_stages, monkeypatch):
    monkeypatch.setenv("SCENARIOS", "fast medium slow")
    jobs = run_stages.plan_jobs(["venv", "lint", "units", "molecule"])
    assert names(jobs) == ["images", "slow", "lint", "units", "medium", "fast"]
    assert [job.needs for job in jobs if job.kind == "scenario"] == [("images",)] * 3
    assert jobs[1].argv[-1] == "molecule destroy -s slow && exec molecule test -s slow --destroy never"


def test_without_molecule_no_images(run_stages):
    jobs = run_stages.plan_jobs(["venv", "lint", "build"])
    assert names(jobs) == ["lint", "build"]


def test_every_scenario_directory_by_default(run_stages, monkeypatch):
    monkeypatch.delenv("SCENARIOS", raising=False)
    found = run_stages.scenarios()
    assert "vllm_cpu_serving" in found and "gpu_facts" in found
    assert found == sorted(found)


def test_a_failed_input_fails_its_dependants_without_running_them(run_stages, tmp_path, monkeypatch):
    monkeypatch.setattr(run_stages, "LOGS", tmp_path)
    images = run_stages.Job("images", ["false"], "stage", status="FAILED")
    scenario = run_stages.Job("slow", ["molecule"], "scenario", ("images",))
    runner = run_stages.Runner([images, scenario], 1)
    assert runner.next_job() is None
    assert scenario.status == "FAILED"
    assert "images failed" in (tmp_path / "slow.log").read_text()
