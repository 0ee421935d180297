"""playbooks/run_lock/take.yml and release.yml (site.yml's run lock): two concurrent runs against one host.

Real ansible-playbook processes on localhost (local connection): the first holds the lock until the test lets
it go; the second fails after its timeout naming the first (its ansible-playbook pid), then succeeds once the
first has released the lock at the end of its block, and a failed run releases it too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from test_site import ROOT, _env

PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.import_tasks: {root}/playbooks/run_lock/take.yml
      tags: [always]
    - block:
        - ansible.builtin.wait_for: {{path: "{release}", timeout: 120}}
          tags: [work]
        - ansible.builtin.fail: {{msg: failing on purpose}}
          when: fail_inside | default(false) | bool
          tags: [work]
      always:
        - ansible.builtin.import_tasks: {root}/playbooks/run_lock/release.yml
          tags: [always]
"""


def _argv(tmp_path: Path, playbook: Path, *extra: str) -> list:
    binary = Path(sys.executable).parent / "ansible-playbook"
    return [str(binary), "-i", "localhost,", "-c", "local", str(playbook),
            "-e", f"ansible_python_interpreter={sys.executable}",
            "-e", f"inferops_lock_path={tmp_path}/lock/run.lock", *extra]  # fmt: skip


def test_a_second_run_waits_then_fails_naming_the_first_and_the_lock_is_released(tmp_path):
    release = tmp_path / "release"
    playbook = tmp_path / "hold.yml"
    playbook.write_text(PLAYBOOK.format(root=ROOT, release=release))
    lock = tmp_path / "lock" / "run.lock"
    env = _env(tmp_path)
    first = subprocess.Popen(_argv(tmp_path, playbook), cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert lock.exists(), "the first run did not take the lock"
        holder = json.loads(lock.read_text())
        assert holder["pid"] == first.pid  # the ansible-playbook process, as the message names it

        second = subprocess.run(
            _argv(tmp_path, playbook, "-e", "inferops_lock_timeout=2"),
            cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert second.returncode != 0
        assert f"is held by run {holder['run_id']}" in second.stdout
        assert f"ansible-playbook pid {first.pid}" in second.stdout
        assert "waited 2" in second.stdout
    finally:
        release.touch()
        out, _err = first.communicate(timeout=120)
    assert first.returncode == 0, out[-3000:]
    assert not lock.exists()

    # A run that fails inside the block releases the lock too, with a tag selection as site.yml's stages have.
    failed = subprocess.run(
        _argv(tmp_path, playbook, "-e", "fail_inside=true", "--tags", "work"), cwd=ROOT, env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert failed.returncode != 0 and "failing on purpose" in failed.stdout
    assert "Release the host's run lock" in failed.stdout and "Take the host's run lock" in failed.stdout
    assert not lock.exists()
