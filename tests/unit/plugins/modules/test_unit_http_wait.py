"""inferops.llm.unit_http_wait: wait for a URL while the unit's process keeps running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.modules import unit_http_wait

CASES = yaml.safe_load((Path(__file__).parent / "unit_http_wait_cases.yml").read_text())
RUNNING = {"ActiveState": "active", "SubState": "running", "NRestarts": "0", "InvocationID": "a1"}
EXITED = {**RUNNING, "ActiveState": "activating", "SubState": "auto-restart", "Result": "exit-code",
          "ExecMainStatus": "1"}  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_unit_exited(case):
    reason = unit_http_wait.unit_exited(case["first"], case["now"])
    if case["reason"] is None:
        assert reason is None
    else:
        assert case["reason"] in reason


def test_parse_show():
    text = "ActiveState=active\nSubState=running\nInvocationID=\nbroken line\n"
    assert unit_http_wait.parse_show(text) == {"ActiveState": "active", "SubState": "running", "InvocationID": ""}


class Fake:
    """A clock that the sleeps advance, the unit's states and the HTTP answers, one per poll."""

    def __init__(self, states, answers):
        self.now = 0.0
        self.states = list(states)
        self.answers = list(answers)

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def read_unit(self):
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]

    def poll(self):
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def wait(self, timeout=60.0, interval=5.0):
        return unit_http_wait.wait(self.read_unit, self.poll, timeout, interval, self.clock, self.sleep)


def test_answers_after_a_few_polls():
    fake = Fake([RUNNING], [-1, -1, 503, 200])
    result = fake.wait()
    assert "failed" not in result and result["ready"] is True
    assert (result["status"], result["polls"], result["elapsed"]) == (200, 4, 15.0)


def test_fails_as_soon_as_the_process_exits_instead_of_waiting_out_the_timeout():
    fake = Fake([RUNNING, EXITED], [-1])
    result = fake.wait(timeout=600)
    assert result["failed"] is True
    assert result["elapsed"] == 5.0 and result["polls"] == 1
    assert "exit status 1" in result["msg"] and "before the URL answered 200" in result["msg"]


def test_a_200_from_another_holder_of_the_port_does_not_count():
    fake = Fake([RUNNING, EXITED], [200])
    result = fake.wait()
    assert result["failed"] is True and "another process" in result["msg"]


def test_times_out_with_the_last_status():
    fake = Fake([RUNNING], [404])
    result = fake.wait(timeout=20, interval=5)
    assert result["failed"] is True
    assert "no 200 within 20 s (last status 404)" in result["msg"]
    assert result["elapsed"] <= 20


def test_http_status_of_nothing_listening():
    assert unit_http_wait.http_status("http://127.0.0.1:9/health", 1) == -1


def test_module_reports_a_failed_unit(capsys, monkeypatch):
    outputs = iter(["ActiveState=failed\nSubState=failed\nResult=exit-code\nExecMainStatus=1\nNRestarts=0\n"] * 3)
    monkeypatch.setattr(unit_http_wait.AnsibleModule, "get_bin_path", lambda *_a, **_k: "/bin/systemctl")
    monkeypatch.setattr(unit_http_wait.AnsibleModule, "run_command", lambda *_a, **_k: (0, next(outputs), ""))
    args = {"unit": "vllm", "url": "http://127.0.0.1:9/health", "timeout": 30, "interval": 1}
    with patch_module_args(args), pytest.raises(SystemExit):
        unit_http_wait.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and "the unit is failed" in result["msg"]
    assert result["unit_state"]["ExecMainStatus"] == "1"
