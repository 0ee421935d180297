"""The host_plan / plan_input_errors / plan_markdown / plan_table filters, and playbooks/plan.yml end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.host_plan import FilterModule as HostPlanFilters
from ansible_collections.inferops.llm.plugins.filter.plan_report import FilterModule as ReportFilters
from ansible_collections.inferops.llm.plugins.module_utils._plan import planner as plan_module

HOST_PLAN = HostPlanFilters().filters()
REPORT = ReportFilters().filters()
ROOT = Path(__file__).resolve().parents[4]
# build/collections: where `make venv` links the collection for Ansible and Python.
COLLECTIONS = Path(plan_module.__file__).parents[5]
HF_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"

VARIABLES = {
    "inferops_engine": "ollama",
    "ollama_version": "0.30.4",
    "inferops_model": {
        "repo": "unsloth/Qwen3.5-35B-A3B-GGUF",
        "revision": "main",
        "file": "Qwen3.5-35B-A3B-UD-Q3_K_XL.gguf",
        "base_model": "Qwen3.5-35B-A3B",
        "weights_bytes": 16_589_310_180,
    },
    "vllm_hf_token": HF_TOKEN,
    "unrelated": "{{ this would fail if the filter read it }}",
}
HARDWARE = {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "compute_capability": "8.6"}]}


def test_host_plan_reads_only_its_variables_and_returns_plain_data():
    plan = HOST_PLAN["host_plan"](VARIABLES, HARDWARE, None, "gguf-3090")
    assert plan["host"] == "gguf-3090"
    assert json.loads(json.dumps(plan)) == plan
    assert HF_TOKEN not in json.dumps(plan)


def test_host_plan_errors_name_the_variable():
    with pytest.raises(
        AnsibleFilterError, match=r"vllm_version is required and must be an exact vllm release such as 0\.33\.0"
    ):
        HOST_PLAN["host_plan"](
            {"inferops_engine": "vllm", "inferops_model": {"repo": "a/b", "revision": "c"}}, HARDWARE
        )
    with pytest.raises(AnsibleFilterError, match="expects the host's variables as a mapping"):
        HOST_PLAN["host_plan"](["not", "a", "mapping"], HARDWARE)
    with pytest.raises(AnsibleFilterError, match="hardware must be a mapping"):
        HOST_PLAN["host_plan"](VARIABLES, "gpus")


def test_plan_input_errors_lists_every_problem():
    assert HOST_PLAN["plan_input_errors"](VARIABLES) == []
    errors = HOST_PLAN["plan_input_errors"]({"inferops_engine": "ollama", "ollama_version": "0.30"})
    assert [e.split(" ")[0] for e in errors] == ["ollama_version", "inferops_model"]


def test_report_filters_render_the_plan_and_the_table():
    plan = HOST_PLAN["host_plan"](VARIABLES, HARDWARE, None, "gguf-3090")
    assert REPORT["plan_markdown"](plan).startswith("# Plan for gguf-3090")
    hostvars = {"gguf-3090": {"inferops_plan": plan}, "broken": {}}
    lines = REPORT["plan_table"](["gguf-3090", "broken"], hostvars)
    assert len(lines) == 4
    assert lines[2].startswith("| gguf-3090 ")
    assert "no plan" in lines[3]
    with pytest.raises(AnsibleFilterError):
        REPORT["plan_table"]("gguf-3090", hostvars)


def test_plan_playbook_writes_a_report_per_example_host(tmp_path):
    """`ansible-playbook playbooks/plan.yml -i inventories/example`: no host is contacted, reports are complete."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_INJECT_FACT_VARS="false",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_HOME=str(tmp_path / "home"),
        NO_COLOR="1",
    )
    playbook = Path(sys.executable).parent / "ansible-playbook"
    result = subprocess.run(
        [str(playbook), "-i", "inventories/example", "playbooks/plan.yml", "-e", f"inferops_plan_dir={tmp_path}/plans"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    hosts = sorted(path.stem for path in (ROOT / "inventories" / "example" / "host_vars").glob("*.yml"))
    assert sorted(path.stem for path in (tmp_path / "plans").glob("*.json")) == sorted([*hosts, "gateway"])
    assert sorted(path.stem for path in (tmp_path / "plans").glob("*.md")) == hosts
    # The gateway (group gateway: desktop-5090) routes to every engine and prints its profiles.
    gateway = json.loads((tmp_path / "plans" / "gateway.json").read_text())
    assert gateway["host"] == "desktop-5090"
    assert [p["name"] for p in gateway["profiles"]] == [
        "qwen3.5-thinking",
        "qwen3.5-coding",
        "qwen3.5-instruct",
        "qwen3.5-creative",
    ]
    assert "qwen3.5-coding -> ig1/Qwen3.5-35B-A3B-NVFP4 [qwen3.5-thinking-coding]" in result.stdout
    assert "ig1/Qwen3.5-35B-A3B-NVFP4 -> vllm 0.33.0 http://127.0.0.1:8000/v1" in result.stdout
    for host in hosts:
        plan = json.loads((tmp_path / "plans" / f"{host}.json").read_text())
        assert plan["host"] == host
        assert plan["engine"] in ("vllm", "ollama")
        assert plan["command"][0] in ("vllm", "ollama")
        assert not [c for c in plan["checks"] if c["severity"] == "error"], plan["checks"]
        assert plan["memory"]["kv_cache_tokens"] > 0
        assert f"| {host} " in result.stdout  # the table lists every host
    # Never contacted: no host ran a module, only the controller (delegated report writes).
    assert "UNREACHABLE" not in result.stdout
    assert "gpu_facts" not in result.stdout


def test_plan_playbook_fails_at_the_end_after_writing_every_report(tmp_path):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        json.dumps(
            {
                "all": {
                    "hosts": {
                        "good": {**VARIABLES, "inferops_gpus": HARDWARE["gpus"]},
                        "quantized-kv-without-fa": {
                            **VARIABLES,
                            "ollama_kv_cache_type": "q8_0",
                            "ollama_flash_attention": False,
                            "inferops_gpus": HARDWARE["gpus"],
                        },
                        "no-version": {"inferops_engine": "ollama", "inferops_gpus": HARDWARE["gpus"]},
                    }
                }
            }
        )
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), NO_COLOR="1", ANSIBLE_HOME=str(tmp_path / "h"))
    playbook = Path(sys.executable).parent / "ansible-playbook"
    result = subprocess.run(
        [str(playbook), "-i", str(inventory), "playbooks/plan.yml", "-e", f"inferops_plan_dir={tmp_path}/plans"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert sorted(p.stem for p in (tmp_path / "plans").glob("*.json")) == ["good", "quantized-kv-without-fa"]
    out = result.stdout
    table = out.index("| host ")
    assert '"| host' not in out  # a readable table, not a JSON-quoted list of lines
    findings = out.index("findings (errors and warnings")
    assert findings > table
    # Each error once, below the table and grouped by host; the refused host's reasons too, not in its cell.
    assert out.count("ollama-kv-quantized-without-fa: ") == 1
    assert out.index("ollama-kv-quantized-without-fa: ") > out.index("\nquantized-kv-without-fa:\n", findings)
    assert out.count("ollama_version is required and must be an exact ollama release") == 1
    assert out.index("ollama_version is required") > out.index("\nno-version: no plan, 2 input errors:\n", findings)
    row = next(line for line in out.splitlines() if line.startswith("| no-version "))
    assert "no plan" in row and "ollama_version" not in row
    # The failure names the hosts, not the errors again.
    assert "2 host(s) cannot be planned or fail their checks: no-version, quantized-kv-without-fa" in out


def test_plan_playbook_shows_the_warning_of_a_host_without_topology(tmp_path):
    """Two GPUs declared without inferops_gpu_topology_text: the console says topology-assumed, and why."""
    two = [dict(HARDWARE["gpus"][0], index=i) for i in (0, 1)]
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"two-gpus": {**VARIABLES, "inferops_gpus": two}}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), NO_COLOR="1", ANSIBLE_HOME=str(tmp_path / "h"))
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", str(inventory), "playbooks/plan.yml", "-e", f"inferops_plan_dir={tmp_path}/plans"]
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-4000:]
    plan = json.loads((tmp_path / "plans" / "two-gpus.json").read_text())
    (assumed,) = [c for c in plan["checks"] if c["id"] == "topology-assumed"]
    assert f"{assumed['severity']}: topology-assumed: {assumed['message']}" in result.stdout


def _site_plan(tmp_path, limit):
    """`site.yml --tags plan --limit LIMIT` on the example inventory, facts gathered from this machine."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_INJECT_FACT_VARS="false",
        ANSIBLE_HOME=str(tmp_path / "home"),
        NO_COLOR="1",
    )
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", "inventories/example", "playbooks/site.yml", "--tags", "plan", "--limit", limit]
    argv += ["-c", "local", "-e", f"ansible_python_interpreter={sys.executable}"]
    argv += ["-e", f"inferops_plan_dir={tmp_path}/plans"]
    # A cluster's nodes share a batch (site.yml's serial); the run lock of this machine stays untouched.
    argv += ["-e", "inferops_serial=100%", "-e", f"inferops_lock_path={tmp_path}/run.lock"]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def test_site_plans_the_nodes_of_a_cluster_together(tmp_path):
    result = _site_plan(tmp_path, "lab")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    head = json.loads((tmp_path / "plans" / "ws-a.json").read_text())
    worker = json.loads((tmp_path / "plans" / "ws-b.json").read_text())
    assert (head["cluster"]["role"], worker["cluster"]["role"]) == ("head", "worker")
    assert head["service"]["config"]["distributed-executor-backend"] == "ray"
    assert head["service"]["environment"]["RAY_ADDRESS"] == "10.0.0.11:6379"
    assert worker["cluster"]["ray_start"][:4] == ["ray", "start", "--address", "10.0.0.11:6379"]


def test_site_refuses_a_play_without_every_node_of_the_cluster(tmp_path):
    result = _site_plan(tmp_path, "ws-b")
    assert result.returncode != 0
    assert "inferops_cluster lab: ws-a of the inventory are not in this play" in result.stdout
    assert not (tmp_path / "plans").exists()


def test_plan_playbook_refuses_a_typo_in_another_roles_variable(tmp_path):
    """ray_auth_tokn (meant: ray_auth_token) is caught by plan.yml, before site.yml would ignore it."""
    inventory = tmp_path / "inventory.yml"
    host = {**VARIABLES, "inferops_gpus": HARDWARE["gpus"], "ray_auth_tokn": "x"}
    inventory.write_text(json.dumps({"all": {"hosts": {"typo": host}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), NO_COLOR="1", ANSIBLE_HOME=str(tmp_path / "h"))
    playbook = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(playbook), "-i", str(inventory), "playbooks/plan.yml", "-e", f"inferops_plan_dir={tmp_path}/plans"]
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert result.stdout.count("ray_auth_tokn is not a variable of inferops.llm") == 1
    assert "did you mean ray_auth_token?" in result.stdout
