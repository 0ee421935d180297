"""roles/_common rollback and restore (the shared lifecycle of the vllm, gateway, ray and ollama roles): real runs.

One real ansible-playbook on localhost runs every case (CASES), each as an inventory host of its own (a local
connection) with a service tree of its own, side by side: each includes ``tasks_from: rollback`` from a caller role's
rescue, as the vllm and gateway roles do, with a systemctl and a journalctl on PATH that record their arguments (no
systemd here) and a local HTTP server as the restored version's health URL. What is checked on disk is the real
result: the current link, the restored files with their owner, group and mode, secrets.env, and the message the
case's host fails with. Root only: the rollback copies files to owner root, and root_state accepts only a root-owned
path.
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from real_run import RUN_ENV, by_host, recap

ROOT = Path(__file__).resolve().parents[4]
ROLE = ROOT / "roles" / "_common"
COLLECTIONS = Path(os.environ.get("INFEROPS_COLLECTIONS", ROOT / "build" / "collections"))

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the rollback writes root's files (run as root)")

CALLER = """
- name: Start and check the new version
  block:
    - name: The gate of the new version
      ansible.builtin.fail:
        msg: the new version did not answer
  rescue:
    - name: Roll back through the shared lifecycle
      ansible.builtin.include_role:
        name: inferops.llm._common
        tasks_from: rollback
      vars:
        _common_lifecycle: "{{ test_lifecycle }}"
        _common_rollback: "{{ test_rollback }}"
"""

PLAYBOOK = """
- hosts: all
  gather_facts: false
  environment:
    PATH: "{{ test_fake }}:{{ ansible_env_path }}"
  roles:
    - caller
"""

FAKE_SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "{log}"
case "$1" in
  show) printf 'Id=svc.service\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nResult=success\\n'
        printf 'ExecMainStatus=0\\nNRestarts=0\\nInvocationID=1\\nUnitFileState=enabled\\n' ;;
  is-active) echo active ;;
  is-enabled) echo enabled ;;
esac
exit 0
"""

FAKE_JOURNALCTL = """#!/bin/sh
echo "journalctl $*" >> "{log}"
echo "svc[1]: OSError: [Errno 98] Address already in use"
"""

# Each case's host before its run: keep (the snapshot's serve.yaml names the health server's port, or port 1 where
# nothing listens; absent: no snapshot), and the run's options (_lifecycle_vars).
CASES = {
    "restored": {"keep": "health"},
    "stays_down": {"keep": 1, "timeout": 3},
    "without_health": {"keep": 1, "health": False},
    "no_snapshot": {},
    "writable_snapshot": {"keep": "health", "parent_mode": 0o777},
    "no_secrets": {"keep": "health", "secrets": False},
    # The health URL reads the restored unit's text (the gateway's --port), not the YAML config (port 1 there).
    "unit_config": {"keep": "health", "health_config": "svc.service"},
}


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def _host(base: Path, fake_dir: Path) -> dict:
    """The service's layout as the roles leave it after a run that failed its gate, and the snapshot before it."""
    envs = base / "install" / "envs"
    for version in ("1.0", "2.0"):
        (envs / version / "bin").mkdir(parents=True)
    (base / "install" / "current").symlink_to(envs / "2.0")
    config = base / "config"
    config.mkdir()
    (config / "serve.yaml").write_text("port: 1\n")
    (config / "svc.service").write_text("[Service]\nExecStart=/new\n")
    (config / "secrets.env").write_text("KEY=new\n")
    snapshot = base / "rollback" / "svc"
    snapshot.mkdir(parents=True, mode=0o700)
    snapshot.chmod(0o700)
    fake = fake_dir / "bin"
    fake.mkdir(parents=True)
    log = fake_dir / "calls.log"
    for name, text in (("systemctl", FAKE_SYSTEMCTL), ("journalctl", FAKE_JOURNALCTL)):
        (fake / name).write_text(text.format(log=log))
        (fake / name).chmod(0o755)
    return {"base": base, "envs": envs, "config": config, "snapshot": snapshot, "fake": fake, "log": log}


def _keep_snapshot(host, port, in_unit=False):
    snapshot = host["snapshot"]
    unit = f"[Service]\nExecStart=/old --port {port}\n" if in_unit else "[Service]\nExecStart=/old\n"
    for name, text in (("serve.yaml", f"port: {1 if in_unit else port}\n"), ("svc.service", unit),
                       ("secrets.env", "KEY=old\n")):  # fmt: skip
        (snapshot / name).write_text(text)
        (snapshot / name).chmod(0o600)
    (snapshot / "env").symlink_to(host["envs"] / "1.0")


def _lifecycle_vars(host, health=True, timeout=20, secrets=True, health_config="serve.yaml"):
    config = host["config"]
    lifecycle = {
        "name": "Svc", "service": "svc", "install_dir": str(host["base"] / "install"), "version": "2.0",
        "rollback_dir": str(host["snapshot"]), "secrets_file": str(config / "secrets.env"),
        "rollback_files": [
            {"src": str(config / "serve.yaml"), "name": "serve.yaml", "group": "daemon", "mode": "0640"},
            {"src": str(config / "svc.service"), "name": "svc.service", "group": "root", "mode": "0644"},
        ],
    }  # fmt: skip
    if not secrets:  # a service without secrets (ollama) names no secrets_file
        del lifecycle["secrets_file"]
    rollback = {"failure": "Svc 2.0 did not become healthy", "restored": "config and unit", "journal_lines": 5,
                "note": "A note of the caller."}  # fmt: skip
    if health:
        # With a default: the entry point's argument check templates the mapping before the restore.
        port = "{{ (__common_restored_config | default({})).get('port', 0) }}"
        if health_config != "serve.yaml":  # a unit's text
            port = (
                "{{ (__common_restored_config | default('')) | regex_findall('--port ([0-9]+)')"
                " | first | default(0, true) }}"
            )
        rollback["health"] = {"url": f"http://127.0.0.1:{port}/health",
                              "config": health_config, "timeout": timeout, "interval": 1}  # fmt: skip
    return {"test_lifecycle": lifecycle, "test_rollback": rollback, "test_fake": str(host["fake"])}


@pytest.fixture(scope="module")
def rolled_back(tmp_path_factory, root_dir_module, serve_module):
    """Runs every case of CASES in one ansible-playbook; by case: its host, the run, its output and its calls."""
    tmp_path = tmp_path_factory.mktemp("rollback")
    health_port = serve_module(_Health).server_address[1]
    hosts, inventory = {}, {}
    for name, case in CASES.items():
        host = _host(root_dir_module("test-rollback-"), tmp_path / name)
        if "keep" in case:
            _keep_snapshot(host, health_port if case["keep"] == "health" else case["keep"], "health_config" in case)
        if "parent_mode" in case:
            host["snapshot"].parent.chmod(case["parent_mode"])
        if case.get("secrets") is False:
            (host["snapshot"] / "secrets.env").unlink()
        options = {key: case[key] for key in ("health", "timeout", "secrets", "health_config") if key in case}
        inventory[name] = _lifecycle_vars(host, **options)
        hosts[name] = dict(host, health_port=health_port)
    tasks = tmp_path / "roles" / "caller" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text(CALLER)
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": inventory, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "ansible_env_path": os.environ.get("PATH", "/usr/bin:/bin")}}}))  # fmt: skip
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), NO_COLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_FORKS=str(len(CASES)), **RUN_ENV)  # fmt: skip
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inventory.json"),
            str(tmp_path / "play.yml")]  # fmt: skip
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    outputs, failed = by_host(result.stdout), recap(result.stdout)
    end = (result.stdout + result.stderr)[-1500:]
    for name, host in hosts.items():
        calls = host["log"].read_text().splitlines() if host["log"].exists() else []
        output = outputs.get(name, "")
        host.update(result=result, output=output, failed=failed.get(name), calls=calls,
                    shows=f"{output[-3000:]}\n-- the run's end:\n{end}")  # fmt: skip
    return hosts


def _mode(path: Path) -> tuple:
    info = path.stat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


def test_the_snapshot_comes_back_and_the_previous_state_is_restarted_and_waited_for(rolled_back):
    host = rolled_back["restored"]
    output, calls = host["output"], host["calls"]
    assert host["failed"] is True, host["shows"]
    config = host["config"]
    assert os.readlink(host["base"] / "install" / "current") == str(host["envs"] / "1.0"), host["shows"]
    assert (config / "serve.yaml").read_text() == f"port: {host['health_port']}\n"
    assert (config / "svc.service").read_text() == "[Service]\nExecStart=/old\n"
    assert (config / "secrets.env").read_text() == "KEY=old\n"
    assert _mode(config / "serve.yaml") == (0, 1, 0o640)  # the daemon group of Debian
    assert _mode(config / "svc.service") == (0, 0, 0o644)
    assert _mode(config / "secrets.env") == (0, 0, 0o600)
    assert "systemctl daemon-reload" in calls
    assert "systemctl reset-failed svc.service" in calls
    assert "systemctl restart svc" in calls
    assert calls.index("systemctl daemon-reload") < calls.index("systemctl restart svc")
    for text in ("Svc 2.0 did not become healthy: task 'The gate of the new version' failed",
                 "(the new version did not answer)", f"Restored the previous environment ({host['envs']}/1.0)",
                 "config and unit and restarted them: the service is healthy again", "A note of the caller.",
                 "Last journal lines of the failed start: svc[1]: OSError: [Errno 98] Address already in use",
                 ):  # fmt: skip
        assert text in output, host["shows"]
    # The secrets never show (in no case's output).
    whole = host["result"].stdout + host["result"].stderr
    assert "KEY=old" not in whole and "KEY=new" not in whole


def test_the_health_wait_reads_the_restored_config_and_reports_a_previous_state_that_stays_down(rolled_back):
    host = rolled_back["stays_down"]  # nothing listens on port 1
    assert host["failed"] is True
    assert "it did not become healthy either" in host["output"], host["shows"]


def test_without_health_the_message_says_what_came_back(rolled_back):
    host = rolled_back["without_health"]
    output = host["output"]
    assert host["failed"] is True
    assert "config and unit and restarted them." in output, host["shows"]
    assert "healthy again" not in output and "healthy either" not in output
    assert "systemctl restart svc" in host["calls"]


def test_without_a_snapshot_the_service_is_stopped_and_nothing_is_touched(rolled_back):
    host = rolled_back["no_snapshot"]
    calls = host["calls"]
    assert host["failed"] is True
    assert "There is no previous state to go back to (first install): svc.service is stopped." in host["output"]
    assert "systemctl stop svc" in calls and "systemctl restart svc" not in calls
    assert os.readlink(host["base"] / "install" / "current") == str(host["envs"] / "2.0")
    assert (host["config"] / "svc.service").read_text() == "[Service]\nExecStart=/new\n"


def test_a_snapshot_another_account_may_change_is_not_read_back(rolled_back):
    """Issue 28: the rollback checks the directory before root reads anything from it (inferops.llm.root_state)."""
    host = rolled_back["writable_snapshot"]
    output = host["output"]
    assert host["failed"] is True
    assert "another account can change it" in output and "lets its group or others write it" in output, host["shows"]
    assert os.readlink(host["base"] / "install" / "current") == str(host["envs"] / "2.0")
    assert (host["config"] / "svc.service").read_text() == "[Service]\nExecStart=/new\n"
    assert not [call for call in host["calls"] if call.startswith("systemctl") and "restart" in call]


def test_a_service_without_secrets_gets_its_files_and_environment_back(rolled_back):
    """Ollama has no secrets: its lifecycle names no secrets_file, and the restore leaves secrets alone."""
    host = rolled_back["no_secrets"]
    assert host["failed"] is True
    assert os.readlink(host["base"] / "install" / "current") == str(host["envs"] / "1.0"), host["shows"]
    assert (host["config"] / "svc.service").read_text() == "[Service]\nExecStart=/old\n"
    assert (host["config"] / "secrets.env").read_text() == "KEY=new\n"
    assert "config and unit and restarted them: the service is healthy again" in host["output"], host["shows"]
    assert "systemctl restart svc" in host["calls"]


def test_a_restored_file_that_is_not_yaml_reaches_the_health_url_as_its_text(rolled_back):
    """The gateway's port is in its restored unit's ExecStart (--port), which the health URL reads as text."""
    host = rolled_back["unit_config"]
    assert host["failed"] is True
    assert "config and unit and restarted them: the service is healthy again" in host["output"], host["shows"]
    assert (host["config"] / "svc.service").read_text() == f"[Service]\nExecStart=/old --port {host['health_port']}\n"


@pytest.mark.parametrize("role", ["vllm", "gateway", "ray", "ollama"])
def test_each_role_keeps_and_restores_its_files_with_the_mode_it_writes_them(role):
    """A role's rollback_files name, for each file the snapshot keeps, the group and mode restore gives it back:
    the ones its configure step writes it with."""
    lifecycle = yaml.safe_load((ROOT / "roles" / role / "vars" / "main.yml").read_text())[f"_{role}_lifecycle"]
    assert {"service", "rollback_dir", "rollback_files"} <= set(lifecycle)
    assert ("secrets_file" in lifecycle) == (role != "ollama")  # Ollama has no secrets
    written = {}
    for task in _tasks(yaml.safe_load((ROOT / "roles" / role / "tasks" / "configure.yml").read_text())):
        for module in ("ansible.builtin.template", "ansible.builtin.copy"):
            if module in task:
                written[task[module]["dest"]] = (task[module]["group"], task[module]["mode"])
    for entry in lifecycle["rollback_files"]:
        assert written[entry["src"]] == (entry["group"], entry["mode"]), entry


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for section in ("block", "rescue", "always"):
            yield from _tasks(task.get(section))


def test_the_callers_use_the_shared_rollback():
    """No role reads a snapshot back by itself: the vllm, gateway and ollama rescues and the ray rollback include
    _common's; the ollama role installs through _common's install_archive, as the others through install."""
    own = []
    for path in (ROOT / "roles").glob("*/tasks/*.yml"):
        if path.parts[-3] == "_common":
            continue
        for task in _tasks(yaml.safe_load(path.read_text())):
            for module in ("ansible.builtin.copy", "ansible.builtin.file", "ansible.builtin.stat"):
                args = task.get(module) or {}
                if any("rollback" in str(args.get(key, "")) for key in ("src", "path")):
                    own.append(f"{path}: {task.get('name')}")
    assert own == []
    callers = {"vllm/tasks/rollback.yml": "rollback", "gateway/tasks/service.yml": "rollback",
               "ray/tasks/rollback.yml": "restore", "ollama/tasks/configure.yml": "rollback",
               "ollama/tasks/install.yml": "install_archive", "ollama/tasks/snapshot.yml": "snapshot"}  # fmt: skip
    for path, entry in callers.items():
        tasks = _tasks(yaml.safe_load((ROOT / "roles" / path).read_text()))
        included = [task["ansible.builtin.include_role"] for task in tasks if "ansible.builtin.include_role" in task]
        assert {"name": "inferops.llm._common", "tasks_from": entry} in [
            {key: value for key, value in item.items() if key in ("name", "tasks_from")} for item in included
        ], path
