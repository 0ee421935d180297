"""No Python that root runs reads a service's bytecode cache.

The vllm and gateway roles compile no bytecode at install: each service compiles what it imports into
PYTHONPYCACHEPREFIX under its own state directory, which the service user can write. A Python that root runs with
that environment would load the service user's bytecode as root. Two places give root the service's environment: a
unit's `ExecStart*=+` lines (they run with full privileges and the unit's Environment=) and the role tasks that pass
the service's environment (the benchmark). Each such Python runs isolated (`python -I`: every PYTHON* variable and
the user's site directory ignored), and the tasks also leave the variable out.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
PRIVILEGED_EXEC = re.compile(r"^Exec(?:Start|StartPre|StartPost|Stop|StopPost|Reload|Condition)=([-@:+!]*)(.*)$")


def privileged_python_lines() -> list[tuple[str, str]]:
    """(template, line) of every ExecXxx=+ (or !) line of the roles' templates that runs a Python."""
    found = []
    for template in sorted(ROLES.glob("*/templates/*.j2")):
        for line in template.read_text().splitlines():
            match = PRIVILEGED_EXEC.match(line.strip())
            if match and ("+" in match.group(1) or "!" in match.group(1)) and "python" in match.group(2):
                found.append((str(template.relative_to(ROLES)), line.strip()))
    return found


def service_environment_python_tasks() -> list[tuple[str, dict]]:
    """(task file, task) of every role task that runs a Python with a service's environment."""
    found = []
    for tasks_file in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in yaml.safe_load(tasks_file.read_text()) or []:
            command = task.get("ansible.builtin.command") or {}
            argv = command.get("argv") if isinstance(command, dict) else None
            if argv and str(argv[0]).endswith("/bin/python") and "_service_environment" in str(task.get("environment")):
                found.append((str(tasks_file.relative_to(ROLES)), task))
    return found


def test_the_ray_drop_in_is_the_privileged_python_found():
    """The search finds what it looks for (the vLLM unit's drop-in of the ray role)."""
    assert [name for name, _line in privileged_python_lines()] == ["ray/templates/vllm-ray-cluster.conf.j2"]


@pytest.mark.parametrize(("template", "line"), privileged_python_lines())
def test_a_privileged_exec_line_runs_python_isolated(template, line):
    assert re.search(r'bin/python"? -I ', line), f"{template}: {line}"


def test_the_benchmark_is_the_service_environment_task_found():
    assert [task["name"] for _name, task in service_environment_python_tasks()] == ["Run vLLM's serving benchmark"]


@pytest.mark.parametrize(("tasks_file", "task"), service_environment_python_tasks())
def test_a_task_with_the_service_environment_runs_python_isolated_without_its_bytecode_cache(tasks_file, task):
    argv = task["ansible.builtin.command"]["argv"]
    assert argv[1] == "-I", f"{tasks_file}: {task['name']}"
    assert "rejectattr('key', 'eq', 'PYTHONPYCACHEPREFIX')" in task["environment"], f"{tasks_file}: {task['name']}"
