"""Helpers of the real-run tests that run several cases as hosts of one ansible-playbook (one start instead of one
per case, about 2-4 s of CPU each): the default callback's output split by host, and each host's PLAY RECAP."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path


def _mitogen_strategies() -> dict[str, str]:
    """Mitogen's own strategy plugins (the Molecule scenarios' executor, issue 24), where this Python has Mitogen (the
    toolchain and `make compat-env` install it): one Python that stays up on the host runs every module of a play,
    instead of a new one per task. tests/unit/roles took 267 CPU-s with ansible-core's linear strategy and 168 with
    Mitogen's, one after the other on the 2-core development machine; the other unit tests' short playbooks gain
    nothing and run as before. ansible-core's own executor runs the roles in the model_download and gpu_facts
    scenarios."""
    try:
        import ansible_mitogen  # optional: the tests run without it, under the linear strategy
    except ImportError:
        return {}
    return {"ANSIBLE_STRATEGY_PLUGINS": str(Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"),
            "ANSIBLE_STRATEGY": "mitogen_linear"}  # fmt: skip


# The environment of the roles' real runs. inferops.llm.preload (as in the Molecule scenarios): the collection's filters
# and actions imported once, before the forks, not compiled again in every task's worker (about 0.3 s of CPU per task
# that calls one); it changes no result. Mitogen's executor, where installed (above).
RUN_ENV = {"ANSIBLE_CALLBACKS_ENABLED": "inferops.llm.preload", **_mitogen_strategies()}

# A result line of the default callback: "ok: [host]", "changed: [host -> delegate]", "fatal: [host]: FAILED!",
# "FAILED - RETRYING: [host]: ..."; the lines after it that start with a blank or a brace are its JSON result.
_RESULT = re.compile(r"^[A-Za-z][A-Za-z -]*: \[(?P<host>[^\]\s]+)(?: -> [^\]]+)?\]")
_RECAP = re.compile(r"^(?P<host>\S+)\s+: ok=(?P<ok>\d+)\s+changed=\d+\s+unreachable=(?P<unreachable>\d+)\s+"
                    r"failed=(?P<failed>\d+)")  # fmt: skip


def by_host(stdout: str) -> dict[str, str]:
    """The result lines of each host (with their JSON), in the order printed."""
    lines: dict[str, list[str]] = {}
    host = None
    for line in stdout.splitlines():
        found = _RESULT.match(line)
        if found:
            host = found["host"]
        elif not line.startswith((" ", "\t", "}", "]")):
            host = None
        if host:
            lines.setdefault(host, []).append(line)
    return {name: "\n".join(text) for name, text in lines.items()}


def recap(stdout: str) -> dict[str, bool]:
    """Whether each host of the PLAY RECAP failed (a failed task not rescued, or unreachable)."""
    section = stdout[stdout.rfind("PLAY RECAP") :] if "PLAY RECAP" in stdout else ""
    return {
        found["host"]: int(found["failed"]) + int(found["unreachable"]) > 0
        for found in map(_RECAP.match, section.splitlines())
        if found
    }


def shown(text: str, marker: str):
    """The JSON a debug task showed as ``marker {...}`` (the default callback's JSON result format), else None."""
    found = re.findall(r'^\s*"msg": "' + marker + r' (.*)"$', text, re.MULTILINE)
    return json.loads(json.loads(f'"{found[-1]}"')) if found else None


class Runs:
    """Runs of a caller role on localhost, one after another, as the plays of one ansible-playbook (one start instead
    of one per run, about 2-4 s of CPU each); the test looks at the disk between two runs as it did between two
    ansible-playbook processes.

    Play N runs the role ``caller`` (under roles_path) on an inventory host of its own, ``runN`` (a local connection:
    no fact or variable of an earlier run is left), with the variables that ``run()`` hands it as the play's
    include_vars. A host ``keeper`` in every play runs nothing of the role: it waits, in the play's first task, until
    the test hands over the next run's variables (a FIFO), and its last task shows whether runN failed (a play whose
    every host failed would end the playbook there). What a run shows is the output from its start to the next
    play's wait; its return code is 2 where its host failed, as ansible-playbook's, else 0.
    """

    PLAY = """
- name: Run {number}
  hosts: run{number}:keeper
  gather_facts: false
  pre_tasks:
    - name: Wait until the test hands over the variables of run {number}
      ansible.builtin.set_fact:
        test_go: "{{{{ lookup('ansible.builtin.pipe', 'touch {dir}/ready-{number} && cat {dir}/go-{number}') }}}}"
      when: inventory_hostname == 'keeper'
    - name: Take the variables of run {number}
      ansible.builtin.include_vars:
        file: "{dir}/vars-{number}.json"
      when: inventory_hostname != 'keeper'
  roles:
    - role: caller
      when: inventory_hostname != 'keeper'
  post_tasks:
    - name: Show whether run {number} failed
      ansible.builtin.debug:
        msg: "TEST-DONE {{{{ {{'failed': 'run{number}' not in ansible_play_hosts}} | to_json }}}}"
      when: inventory_hostname == 'keeper'
"""

    def __init__(self, directory: Path, count: int, argv: list[str], env: dict, cwd: Path):
        self.directory, self.count, self.done = directory, count, 0
        directory.mkdir(parents=True, exist_ok=True)
        for number in range(1, count + 1):
            os.mkfifo(directory / f"go-{number}")
        playbook = directory / "runs.yml"
        playbook.write_text("".join(self.PLAY.format(number=n, dir=directory) for n in range(1, count + 1)))
        hosts = {f"run{number}": {} for number in range(1, count + 1)} | {"keeper": {}}
        inventory = {"all": {"hosts": hosts, "vars": {"ansible_connection": "local",
                                                      "ansible_python_interpreter": sys.executable}}}  # fmt: skip
        (directory / "inventory.json").write_text(json.dumps(inventory))
        self.log = directory / "output.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [*argv, "-i", str(directory / "inventory.json"), str(playbook)], cwd=cwd,
                env=dict(env, PYTHONUNBUFFERED="1"), stdout=log, stderr=subprocess.STDOUT, text=True,
                start_new_session=True,
            )  # fmt: skip

    def _wait_for(self, path: Path, timeout: float = 900) -> bool:
        """Until path exists (True) or ansible-playbook ended (False)."""
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.process.poll() is not None:
                return False
            if time.monotonic() > deadline:
                raise AssertionError(f"no {path.name} after {timeout} s: {self._output()[-3000:]}")
            time.sleep(0.05)
        return True

    def _output(self) -> str:
        return self.log.read_text(errors="replace")

    def run(self, variables: dict) -> subprocess.CompletedProcess:
        """The next run, with these variables; returns when it ended."""
        self.done += 1
        number = self.done
        assert number <= self.count, f"{self.count} runs were planned"
        assert self._wait_for(self.directory / f"ready-{number}"), self._output()[-3000:]
        start = len(self._output())
        (self.directory / f"vars-{number}.json").write_text(json.dumps(variables))
        with open(self.directory / f"go-{number}", "w") as go:  # the waiting cat has it open for reading
            go.write("go\n")
        if not self._wait_for(self.directory / f"ready-{number + 1}"):
            self.process.wait(timeout=60)
        output = self._output()[start:]
        done = shown(output, "TEST-DONE")
        assert done is not None, output[-3000:]
        return subprocess.CompletedProcess(self.process.args, 2 if done["failed"] else 0, stdout=output, stderr="")

    def close(self) -> None:
        """Ends ansible-playbook: after the planned runs, checks its end; else (a failed test) stops it."""
        if self.done == self.count:
            self.process.wait(timeout=120)
            failed = recap(self._output())
            assert failed.get("keeper") is False, self._output()[-3000:]
            assert self.process.returncode == (2 if any(failed.values()) else 0), self._output()[-3000:]
        elif self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)
