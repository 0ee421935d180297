"""roles/vllm drain: the key that /metrics is read with is the one the running engine was started with.

tasks/drain.yml reads the running engine's process environment (/proc/<MainPID>/environ, NUL-separated) and, where
no engine process runs, root's secrets.env (lines); vars/main.yml's _vllm_drain_key takes VLLM_API_KEY from either.
Rendered with Jinja2 as Ansible would, with Ansible's b64decode, regex_replace and match stubbed.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import jinja2
import pytest
import yaml

ROLE = Path(__file__).resolve().parents[4] / "roles" / "vllm"
VARIABLES = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
TASKS = yaml.safe_load((ROLE / "tasks" / "drain.yml").read_text())
SECRETS = "/etc/vllm/secrets.env"
ENV = jinja2.Environment(undefined=jinja2.StrictUndefined)
ENV.filters["b64decode"] = lambda text: base64.b64decode(text).decode()
ENV.filters["regex_replace"] = lambda text, pattern, replacement: re.sub(pattern, replacement, text)
ENV.tests["match"] = lambda text, pattern: re.match(pattern, text) is not None


def key_of(content: str | None) -> str:
    context = {} if content is None else {"__vllm_drain_secrets": {"content": base64.b64encode(content.encode()).decode()}}
    return ENV.from_string(VARIABLES["_vllm_drain_key"]).render(context).strip()


@pytest.mark.parametrize(
    ("content", "key"),
    [
        # the running engine's environment: the key it runs with, not the one a changed secrets.env now holds
        ("HOME=/var/lib/vllm\0VLLM_API_KEY=sk-running-1\0HF_HUB_OFFLINE=1\0", "sk-running-1"),
        ("# managed\nVLLM_API_KEY=sk-file-2\nHF_TOKEN=hf-3\n", "sk-file-2"),
        ("HOME=/var/lib/vllm\0", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_the_drain_key_comes_from_the_environment_or_the_secrets_file(content, key):
    assert key_of(content) == key


def test_the_drain_reads_the_running_process_first():
    """The running engine's environment where systemd names its main process, else secrets.env."""
    slurp = next(task for task in TASKS if "ansible.builtin.slurp" in task)
    source = slurp["ansible.builtin.slurp"]["src"]
    render = ENV.from_string(source)
    for stdout, expected in (("4242\n", "/proc/4242/environ"), ("0\n", SECRETS), ("", SECRETS)):
        context = {"__vllm_drain_pid": {"stdout": stdout}, "_vllm_secrets_file": SECRETS}
        assert render.render(context).strip() == expected
    assert slurp["no_log"] is True
