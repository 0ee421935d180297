"""roles/vllm drain: the key that /metrics is read with is the one the running engine was started with.

tasks/drain.yml reads the running engine's process environment (/proc/<MainPID>/environ, NUL-separated) and, where
no engine process runs, root's secrets.env (lines); vars/main.yml's _vllm_drain_key takes VLLM_API_KEY from either.
Run with ansible-playbook on localhost (Ansible's own templating: Jinja2 alone reads a string literal's escapes
otherwise), the role's vars/main.yml loaded and each file slurped as the role does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from real_run import RUN_ENV, shown

ROOT = Path(__file__).resolve().parents[4]
ROLE = ROOT / "roles" / "vllm"

# (the file's content, the key read from it)
CASES = [
    # the running engine's environment: the key it runs with, not the one a changed secrets.env now holds
    ("HOME=/var/lib/vllm\0VLLM_API_KEY=sk-running-1\0HF_HUB_OFFLINE=1\0", "sk-running-1"),
    ("VLLM_API_KEY=sk-first-4\0HOME=/var/lib/vllm\0", "sk-first-4"),
    ("# managed\nVLLM_API_KEY=sk-file-2\nHF_TOKEN=hf-3\n", "sk-file-2"),
    ("HOME=/var/lib/vllm\0NOT_VLLM_API_KEY=sk-other-5\0", ""),
    ("", ""),
]


def test_the_drain_key_comes_from_the_environment_or_the_secrets_file(tmp_path):
    tasks = [{"ansible.builtin.include_vars": {"file": str(ROLE / "vars" / "main.yml")}}]
    for number, (content, _key) in enumerate(CASES):
        path = tmp_path / f"case-{number}"
        path.write_bytes(content.encode())
        tasks += [
            {"ansible.builtin.slurp": {"src": str(path)}, "register": "__vllm_drain_secrets"},
            # Shown, not written to a file: a debug runs no module on the host (a copy runs two, about 0.7 s of CPU).
            {"ansible.builtin.debug": {"msg": f"TEST-KEY-{number} {{{{ _vllm_drain_key | to_json }}}}"}},
        ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), NO_COLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", **RUN_ENV)  # fmt: skip
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", f"ansible_python_interpreter={sys.executable}", str(tmp_path / "play.yml")]  # fmt: skip
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    keys = [shown(result.stdout, f"TEST-KEY-{number}") for number in range(len(CASES))]
    assert keys == [key for _content, key in CASES]


def test_the_drain_reads_the_running_process_first():
    """The running engine's environment where systemd names its main process, else secrets.env; never shown."""
    tasks = yaml.safe_load((ROLE / "tasks" / "drain.yml").read_text())
    find = next(task for task in tasks if "ansible.builtin.command" in task)
    slurp = next(task for task in tasks if "ansible.builtin.slurp" in task)
    assert find["ansible.builtin.command"]["argv"][:4] == ["systemctl", "show", "--property=MainPID", "--value"]
    assert find["register"] == "__vllm_drain_pid" and slurp["register"] == "__vllm_drain_secrets"
    source = slurp["ansible.builtin.slurp"]["src"]
    assert "'/proc/' ~ __vllm_drain_pid.stdout" in source and "_vllm_secrets_file" in source
    assert slurp["no_log"] is True
