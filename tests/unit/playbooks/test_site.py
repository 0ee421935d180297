"""playbooks/site.yml and plan.yml: the stages a tag selects (`--list-tasks`, no host contacted), gateway-only hosts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._plan import planner as plan_module

ROOT = Path(__file__).resolve().parents[3]
# build/collections: where `make venv` links the collection for Ansible and Python.
COLLECTIONS = Path(plan_module.__file__).parents[5]
BENCHMARK_TASK = "Measure the served model with vLLM's serving benchmark"
METRICS_TASK = "Export the plan and the measured start as metrics (node exporter textfile)"
ENGINE_TASK = "Install and start the engine"
PLAN_TASK = "Plan the host and check its inputs"

# (tags given, tasks listed, tasks not listed)
CASES = [
    pytest.param([], [PLAN_TASK, ENGINE_TASK, METRICS_TASK], [BENCHMARK_TASK], id="converge-without-benchmark"),
    pytest.param(
        ["--tags", "benchmark"], [PLAN_TASK, BENCHMARK_TASK, METRICS_TASK], [ENGINE_TASK], id="benchmark-only"
    ),
    pytest.param(["--tags", "engine"], [PLAN_TASK, ENGINE_TASK], [BENCHMARK_TASK, METRICS_TASK], id="engine-only"),
]


def _env(tmp_path: Path) -> dict:
    return dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_HOME=str(tmp_path / "home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        NO_COLOR="1",
    )


def _list_tasks(tmp_path: Path, tags: list[str]) -> str:
    env = _env(tmp_path)
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", "inventories/example", "playbooks/site.yml", "--list-tasks", *tags]
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return result.stdout


@pytest.mark.parametrize(("tags", "listed", "not_listed"), CASES)
def test_site_stages_selected_by_tags(tmp_path, tags, listed, not_listed):
    out = _list_tasks(tmp_path, tags)
    for name in listed:
        assert name in out, f"{name!r} missing from --list-tasks {tags}"
    for name in not_listed:
        assert name not in out, f"{name!r} listed by --list-tasks {tags}"


def test_a_host_that_only_runs_the_gateway_skips_the_engine_stages(tmp_path):
    """A host of the group gateway without inferops_engine is not planned as an engine (it would fail there)."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text('{"all": {"children": {"gateway": {"hosts": {"gw-only": {}}}}}}\n')
    env = _env(tmp_path)
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", str(inventory), "playbooks/site.yml", "--tags", "plan", "-c", "local"]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}", "-e", f"inferops_plan_dir={tmp_path}/plans"]
    argv += ["-e", f"inferops_lock_path={tmp_path}/run.lock"]
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "inferops_engine is required" not in result.stdout


def test_plan_playbook_on_a_gateway_only_host_plans_no_engine(tmp_path):
    """plan.yml: a host of the group gateway without inferops_engine gets the gateway's report, no host plan."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text('{"all": {"children": {"gateway": {"hosts": {"gw-only": {}}}}}}\n')
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", str(inventory), "playbooks/plan.yml", "-c", "local"]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}", "-e", f"inferops_plan_dir={tmp_path}/plans"]
    argv += ["-e", f"inferops_lock_path={tmp_path}/run.lock"]
    result = subprocess.run(argv, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "plans").iterdir()) == ["gateway.json"]
    assert "inferops_engine is required" not in result.stdout


LOCK_TASK = "Take this host's run lock"
UNLOCK_TASK = "Release this host's run lock"


def test_every_play_rolls_serially_and_locks_the_host(tmp_path):
    """Both plays: serial from inferops_serial (default 1); the lock taken and released whatever the tags."""
    import yaml

    plays = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    assert [play["serial"] for play in plays] == ["{{ inferops_serial | default(1) }}"] * 2
    for play in plays:
        names = [task["name"] for task in play["tasks"]]
        assert LOCK_TASK in names
        (block,) = [task for task in play["tasks"] if "block" in task]
        assert [task["name"] for task in block["always"]] == [UNLOCK_TASK]
        assert names.index(LOCK_TASK) == names.index(block["name"]) - 1
    out = _list_tasks(tmp_path, ["--tags", "benchmark"])
    assert out.count("Take the host's run lock, waiting for another run's") == 2  # whatever the tags
