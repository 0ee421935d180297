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


@pytest.mark.parametrize("vaulted", [False, True], ids=["empty", "vaulted"])
def test_plan_playbook_follows_a_key_set_to_one_variable_without_decrypting(tmp_path, vaulted):
    """plan.yml: vllm_api_key: "{{ my_vllm_key }}" with my_vllm_key "" is no key (vllm-api-key-required); with
    my_vllm_key vaulted and no vault secret given, the plan passes: the value was never decrypted."""
    env = dict(_env(tmp_path), HF_HUB_OFFLINE="1")
    bin_dir = Path(sys.executable).parent
    value = '""'
    if vaulted:
        password = tmp_path / "vault-password"
        password.write_text("not-the-run's-secret\n")
        argv = [str(bin_dir / "ansible-vault"), "encrypt_string", "--vault-password-file", str(password)]
        argv += ["sk-0123456789abcdef", "--name", "my_vllm_key"]
        encrypted = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
        value = encrypted.split(":", 1)[1].strip()
    host_vars = tmp_path / "host_vars"
    host_vars.mkdir()
    (host_vars / "h.yml").write_text(
        "inferops_engine: vllm\nvllm_version: 0.33.0\n"
        "inferops_model: {repo: Qwen/Qwen3-8B, revision: 0123456789abcdef0123456789abcdef01234567}\n"
        "vllm_max_model_len: 8192\nvllm_host: 0.0.0.0\nvllm_allow_remote: true\n"
        'vllm_api_key: "{{ my_vllm_key }}"\n'
        f"my_vllm_key: {value}\n"
        "inferops_gpus: [{index: 0, name: NVIDIA GeForce RTX 4090, memory_mib: 24564, compute_capability: '8.9'}]\n"
        "inferops_gpu_driver: {driver_loaded: true, driver_version: 580.95.05}\n"
    )
    (tmp_path / "hosts.yml").write_text('{"all": {"hosts": {"h": {}}}}\n')
    argv = [str(bin_dir / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), "playbooks/plan.yml"]
    argv += ["-c", "local", "-e", f"inferops_plan_dir={tmp_path}/plans"]
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    assert "sk-0123456789abcdef" not in output
    if vaulted:
        assert result.returncode == 0, output[-3000:]
        assert "vllm-api-key-required" not in output
    else:
        assert result.returncode != 0 and "vllm-api-key-required" in result.stdout, output[-3000:]


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
