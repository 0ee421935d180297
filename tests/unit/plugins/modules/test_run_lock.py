"""inferops.llm.run_lock: one run at a time per host; a second waits or fails naming the first; stale locks replaced."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.modules import run_lock

CASES = yaml.safe_load((Path(__file__).parent / "run_lock_cases.yml").read_text())
ME = {"run_id": "r1", "controller": "laptop", "user": "ops", "pid": 11, "started": 0, "playbook": "site.yml"}


def run_module(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        run_lock.main()
    return json.loads(capsys.readouterr().out)


def holder(run_id, **more):
    return dict(ME, run_id=run_id, started=time.time(), **more)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_assess(case):
    verdict, why = run_lock.assess(case["held"], ME, 10000, 3600, "gpu-a", lambda pid: pid == 4242)
    assert verdict == case["verdict"]
    assert case.get("why", "") in why


def test_take_then_take_again_then_release(tmp_path, capsys):
    path = tmp_path / "run.lock"
    first = run_module(capsys, path=str(path), holder=holder("r1"))
    assert first["changed"] is True and first["acquired"] is True
    assert json.loads(path.read_text())["run_id"] == "r1"
    again = run_module(capsys, path=str(path), holder=holder("r1"))
    assert again["changed"] is False and again["acquired"] is True  # a later play of the same run
    assert run_module(capsys, path=str(path), holder=holder("r2"), state="absent")["changed"] is False
    assert path.exists()  # another run cannot release it
    assert run_module(capsys, path=str(path), holder=holder("r1"), state="absent")["changed"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_second_run_fails_after_the_timeout_naming_the_first(tmp_path, capsys):
    path = tmp_path / "run.lock"
    run_module(capsys, path=str(path), holder=holder("first-run", controller="laptop-a", pid=4321))
    result = run_module(capsys, path=str(path), holder=holder("second-run"), timeout=0.3, interval=0.1)
    assert result["failed"] is True
    assert "held by run first-run (site.yml) of ops@laptop-a, ansible-playbook pid 4321, started" in result["msg"]
    assert result["waited"] >= 0.3
    assert json.loads(path.read_text())["run_id"] == "first-run"


def test_a_second_run_waits_until_the_first_releases(tmp_path, capsys):
    path = tmp_path / "run.lock"
    run_module(capsys, path=str(path), holder=holder("first-run"))
    releaser = threading.Timer(0.5, path.unlink)
    releaser.start()
    try:
        result = run_module(capsys, path=str(path), holder=holder("second-run"), timeout=10, interval=0.1)
    finally:
        releaser.join()
    assert result["acquired"] is True and result["waited"] >= 0.4
    assert json.loads(path.read_text())["run_id"] == "second-run"


def test_a_stale_lock_of_a_dead_local_run_is_replaced(tmp_path, capsys):
    path = tmp_path / "run.lock"
    gone = subprocess.Popen(["true"])
    gone.wait()
    path.write_text(json.dumps(holder("dead-run", controller=socket.gethostname(), pid=gone.pid)))
    result = run_module(capsys, path=str(path), holder=holder("r1"), timeout=1)
    assert result["acquired"] is True
    assert f"pid {gone.pid}" in result["replaced"] and "dead-run" in result["replaced"]
    assert json.loads(path.read_text())["run_id"] == "r1"


def test_an_old_lock_is_replaced(tmp_path, capsys):
    path = tmp_path / "run.lock"
    path.write_text(json.dumps(dict(holder("old-run"), started=time.time() - 7200)))
    result = run_module(capsys, path=str(path), holder=holder("r1"), stale_after=3600, timeout=1)
    assert result["acquired"] is True and "older than stale_after" in result["replaced"]


def test_check_mode_writes_nothing(tmp_path, capsys):
    path = tmp_path / "run.lock"
    result = run_module(capsys, path=str(path), holder=holder("r1"), _ansible_check_mode=True)
    assert result["changed"] is True and not path.exists()
