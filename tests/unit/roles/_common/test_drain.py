"""roles/_common drain and undrain (the engines' shared drain from the gateways): real runs, cases in drain_cases.yml.

One real ansible-playbook on localhost runs every case, each as an inventory host of its own (a local connection,
named caseNN) that includes ``tasks_from: drain`` and ``tasks_from: undrain`` from a caller role, as the vllm and
ollama roles do, with localhost as the gateway (the tasks delegate to it) and a temporary directory of the case's in
place of the gateway's /run/inferops-drain. The cases run side by side (strategy free: each host goes on with its
own next task, so that what one case waits for does not show in another's times), except the drain in a handler,
which runs in a play of its own with the linear strategy, as the vllm role's does. Each case has a fixture engine of
its own that serves /metrics with running and waiting counts that change from read to read, and /health; for the
kind ``connections`` the test holds a TCP connection to it open. Checked per case: the drain file between the two
steps and at the end, its owner and mode, how often /metrics was read, the time the drain waited, the case's
messages, whether its host failed, and that a key sent for /metrics never shows. Root only: the file is root's.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from real_run import RUN_ENV, by_host, recap, shown

ROOT = Path(__file__).resolve().parents[4]
COLLECTIONS = Path(os.environ.get("INFEROPS_COLLECTIONS", ROOT / "build" / "collections"))
CASES = yaml.safe_load((Path(__file__).parent / "drain_cases.yml").read_text(encoding="utf-8"))["cases"]
# The inventory host of each case: the drain file is named after it.
HOSTS = {case["name"]: f"case{number:02d}" for number, case in enumerate(CASES)}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the drain writes root's files (run as root)")

CALLER = """
# drain.yml sets _common_drain_dir in its block's vars; a set_fact outranks those (as the extra var of a run of one
# case did), and differs from host to host.
- name: The gateway's drain directory of this case
  ansible.builtin.set_fact:
    _common_drain_dir: "{{ test_drain_dir }}"

- name: Ask for the drain in a handler, as the vllm role's restart does
  ansible.builtin.command: "true"
  changed_when: true
  notify: Drain in a handler
  when: "'drain' in test_steps and test_in_handler"

- name: Run the handler
  ansible.builtin.meta: flush_handlers

- name: Drain (by path, as the engine roles include it)
  ansible.builtin.include_tasks:
    file: "{{ test_common }}/tasks/drain.yml"
  vars:
    _common_drain: "{{ test_drain }}"
  when: "'drain' in test_steps and not test_in_handler"

- name: Look at the drain file between the two steps
  ansible.builtin.stat:
    path: "{{ _common_drain_dir }}/{{ inventory_hostname }}"
  register: test_between

# Shown, not written to a file: a debug runs no module on the host (a copy runs two, about 1 s of CPU).
- name: Show what the drain left
  ansible.builtin.debug:
    msg: >-
      TEST-BETWEEN {{ {'exists': test_between.stat.exists, 'mode': test_between.stat.mode | default(''),
          'uid': test_between.stat.uid | default(-1), 'drained': __common_drained | default({}),
          'seconds': (now(utc=true).timestamp() - __common_drain_started | default(0) | float)} | to_json }}

- name: Put back
  ansible.builtin.include_role:
    name: inferops.llm._common
    tasks_from: undrain
  vars:
    _common_drain: "{{ test_drain }}"
  when: "'undrain' in test_steps"
"""

HANDLERS = """
- name: Drain in a handler
  ansible.builtin.include_tasks: drain_by_path.yml
"""

DRAIN_BY_PATH = """
- name: Drain, by path (a handler cannot run an include_role)
  ansible.builtin.include_tasks:
    file: "{{ test_common }}/tasks/drain.yml"
  vars:
    _common_drain: "{{ test_drain }}"
"""

# The cases side by side first: a play whose every host failed would end the playbook before the next play.
PLAYBOOK = """
- hosts: side_by_side
  gather_facts: false
  strategy: free
  roles:
    - caller

- hosts: in_handler
  gather_facts: false
  roles:
    - caller
"""


class _Engine(http.server.BaseHTTPRequestHandler):
    """A fixture engine; each case serves a subclass with its own reads and counts (_engine_of)."""

    reads: list = []
    health = 200
    require_key = ""
    seen: list = []
    refused = 0
    slow_s = 0

    def do_GET(self):
        if self.path == "/health":
            self.send_response(self.health)
            self.end_headers()
            return
        if self.path != "/metrics" or (self.require_key and self.headers.get("Authorization") != self.require_key):
            type(self).refused += self.path == "/metrics"
            self.send_response(404 if self.path != "/metrics" else 401)
            self.end_headers()
            return
        time.sleep(self.slow_s)
        running, waiting = self.reads[min(len(self.seen), len(self.reads) - 1)]
        self.seen.append(self.headers.get("Authorization"))
        body = (
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}.0\n'
            "# TYPE vllm:num_requests_waiting gauge\n"
            f'vllm:num_requests_waiting{{engine="0",model_name="m"}} {waiting}.0\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _engine_of(case: dict) -> type[_Engine]:
    return type("Engine", (_Engine,), {"reads": case["reads"], "seen": [], "refused": 0,
                                       "health": case.get("health", 200), "require_key": case.get("require_key", ""),
                                       "slow_s": case.get("slow_s", 0)})  # fmt: skip


def _host_vars(case: dict, port: int, drain_dir: Path) -> dict:
    drain = {"prefix": "test", "name": "Test", "service": "test-engine", **case["drain"]}
    drain["gateways"] = case.get("gateways", ["localhost"])
    drain["in_flight"] = dict(drain["in_flight"])
    if drain["in_flight"]["kind"] == "vllm":
        drain["in_flight"]["url"] = case.get("url", f"http://127.0.0.1:{port}/metrics")
    else:
        drain["in_flight"]["port"] = port
    if "health" in drain:
        drain["health"] = {**drain["health"], "url": f"http://127.0.0.1:{port}/health"}
    return {"test_drain": drain, "test_steps": case["steps"], "test_drain_dir": str(drain_dir),
            "test_in_handler": case.get("in_handler", False)}  # fmt: skip


def _hold(port, seconds, drain_file):
    """A client connection to the engine (a request in flight, as the drain sees it), open until ``seconds`` after the
    drain file appeared (at most 120 s): a drain that does not wait for it ends well before that."""
    client = socket.create_connection(("127.0.0.1", port))

    def close_later():
        deadline = time.monotonic() + 120
        while not drain_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(seconds)
        client.close()

    thread = threading.Thread(target=close_later, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def drained(tmp_path_factory, serve_module):
    """Runs every case in one ansible-playbook; by case name: its host, engine, drain directory, and the run."""
    tmp_path = tmp_path_factory.mktemp("drain")
    tasks = tmp_path / "roles" / "caller" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text(CALLER)
    (tasks / "drain_by_path.yml").write_text(DRAIN_BY_PATH)
    (tasks.parent / "handlers").mkdir()
    (tasks.parent / "handlers" / "main.yml").write_text(HANDLERS)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    groups = {"side_by_side": {"hosts": {}}, "in_handler": {"hosts": {}}}
    runs, timers = {}, []
    for case in CASES:
        host = HOSTS[case["name"]]
        engine = _engine_of(case)
        port = serve_module(engine).server_address[1]
        drain_dir = tmp_path / host / "run-inferops-drain"
        group = "in_handler" if case.get("in_handler") else "side_by_side"
        groups[group]["hosts"][host] = _host_vars(case, port, drain_dir)
        runs[case["name"]] = {"host": host, "engine": engine, "drain_dir": drain_dir}
        if case.get("hold_connection_s"):
            timers.append(_hold(port, case["hold_connection_s"], drain_dir / host))
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "test_common": str(ROOT / "roles" / "_common")},
                         "children": groups}}  # fmt: skip
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), NO_COLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_FORKS=str(len(CASES)), **RUN_ENV)  # fmt: skip
    binary = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(binary), "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")]
    try:
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    finally:
        for timer in timers:
            timer.join()
    hosts, failed = by_host(result.stdout), recap(result.stdout)
    for run in runs.values():
        run.update(result=result, output=hosts.get(run["host"], ""), failed=failed.get(run["host"]))
    return runs


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["name"])
def test_drain_and_put_back(drained, case):
    run = drained[case["name"]]
    result, output, engine, drain_dir = run["result"], run["output"], run["engine"], run["drain_dir"]
    whole = result.stdout + result.stderr
    shows = f"{output[-3000:]}\n-- the run's end:\n{whole[-1500:]}"
    assert result.returncode in (0, 2), whole[-3000:]  # 2: a host failed
    expect = case["expect"]
    assert run["failed"] == expect.get("failed", False), shows
    between = shown(output, "TEST-BETWEEN")
    assert between is not None, shows
    drain_file = drain_dir / run["host"]
    assert between["exists"] == expect["between"], shows
    assert drain_file.exists() == expect["end"], shows
    if expect["between"]:
        assert (between["uid"], between["mode"]) == (0, "0644")
        assert stat.S_IMODE(drain_dir.stat().st_mode) == 0o755
        assert between["drained"] == {"from": ["localhost"], "file": str(drain_file)}
        assert drain_file.exists() or "undrain" in case["steps"]
    if expect.get("end") and drain_file.exists():
        assert drain_file.read_text() == f"test-engine on {run['host']} drained for a restart by inferops.llm.test\n"
    if expect.get("no_dir"):
        assert not drain_dir.exists()
    assert expect.get("min_reads", 0) <= len(engine.seen) <= expect.get("max_reads", 1000), shows
    if expect.get("min_seconds"):
        assert between["seconds"] >= expect["min_seconds"], shows
    if expect.get("message"):
        assert expect["message"] in output, shows
    if case.get("require_key"):
        assert set(engine.seen) <= {case["require_key"]}
        assert "sk-test-drain-" not in whole  # in no case's output
    if case.get("refused_key"):
        assert engine.refused >= 1, shows


def test_the_engine_roles_drain_through_the_shared_tasks():
    """vllm and ollama drain and put back through _common (one drain, included by path: the vllm role's drain runs
    in a handler, which cannot run an include_role), and name their own variables in it."""
    for role, kind in (("vllm", "vllm"), ("ollama", "connections")):
        variables = yaml.safe_load((ROOT / "roles" / role / "vars" / "main.yml").read_text())
        drain = variables[f"_{role}_drain"]
        assert drain["prefix"] == role and drain["in_flight"]["kind"] == kind
        assert drain["timeout"] == "{{ " + role + "_drain_timeout }}"
        for step in ("drain", "undrain"):
            tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / f"{step}.yml").read_text())
            included = [task.get("ansible.builtin.include_tasks") for task in tasks]
            assert [item["file"] for item in included if item] == ["{{ role_path }}/../_common/tasks/" + step + ".yml"]


DRIVER_PLAY = """
- hosts: engine
  gather_facts: false
  tasks:
    # roles/nvidia_driver/tasks/reboot.yml's first task; the reboot itself is left out here.
    - name: Drain the engine from the gateways before the reboot, role {{ inferops_engine }}
      ansible.builtin.include_role:
        name: inferops.llm.{{ inferops_engine }}
        tasks_from: drain.yml
        apply:
          tags: [always]
      vars:
        __vllm_drain_reason: a reboot for NVIDIA driver 580.95.05
      tags: [driver]

    - name: Look at the drain file after the drain
      ansible.builtin.stat:
        path: "{{ _common_drain_dir }}/{{ inventory_hostname }}"
      register: test_between
      tags: [driver]

    # Shown, not copied to files: a debug runs no module on the host (each copy runs two, about 1 s of CPU). The
    # lookup reads the drain file on the controller, which is the host here.
    - name: Show it and the drain file's text
      ansible.builtin.debug:
        msg: >-
          TEST-BETWEEN {{ {'exists': test_between.stat.exists,
                           'text': lookup('ansible.builtin.file', _common_drain_dir ~ '/' ~ inventory_hostname,
                                          rstrip=false)} | to_json }}
      tags: [driver]

    # playbooks/site.yml's task after the engine stage, as it is there.
    - name: Put the host back into the gateways after a driver reboot that no engine gate followed
      ansible.builtin.include_role:
        name: "inferops.llm.{{ inferops_engine }}"
        tasks_from: undrain.yml
        apply:
          tags: [driver]
      vars:
        __vllm_undrain_wait: true
        __ollama_undrain_wait: true
      when: (__common_drained | default({}))['from'] | default([]) | length > 0
      tags: [driver]
"""


def test_a_driver_reboot_drains_through_the_engine_role_and_site_puts_it_back(tmp_path, serve):
    """As roles/nvidia_driver/tasks/reboot.yml: the vllm role's tasks/drain.yml -> _common, with --tags driver and the
    role's own variables; then site.yml's put-back waits for vLLM's /health. The host is the engine and its gateway."""
    engine = _engine_of({"reads": [[1, 0], [0, 0]]})
    port = serve(engine).server_address[1]
    drain_dir = tmp_path / "run-inferops-drain"
    (tmp_path / "play.yml").write_text(DRIVER_PLAY)
    inventory = {"all": {"children": {"engine": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "inferops_engine": "vllm",
        "gateway_backend_hosts": ["localhost"]}}}}}}  # fmt: skip
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    extra = {"vllm_port": port, "vllm_drain_gateways": ["localhost"], "vllm_drain_interval": 1,
             "vllm_health_timeout": 10, "vllm_health_interval": 1, "_common_drain_dir": str(drain_dir)}  # fmt: skip
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_HOME=str(tmp_path / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), NO_COLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", **RUN_ENV)  # fmt: skip
    binary = Path(sys.executable).parent / "ansible-playbook"
    argv = [str(binary), "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml"), "-e",
            f"@{tmp_path / 'vars.json'}", "--tags", "driver"]  # fmt: skip
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    between = shown(result.stdout, "TEST-BETWEEN")
    assert between is not None and between["exists"] is True, output[-4000:]
    assert len(engine.seen) == 2, output[-4000:]  # /metrics until nothing was in flight
    assert "Drained vLLM from localhost in" in output and "nothing in flight" in output, output[-4000:]
    assert between["text"] == (
        "vllm on localhost drained for a reboot for NVIDIA driver 580.95.05 by inferops.llm.vllm\n"
    )
    assert not (drain_dir / "localhost").exists(), output[-4000:]  # put back after /health answered
