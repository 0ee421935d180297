"""Render roles' templates as the roles would: defaults, vars/main.yml, the collection's filters, Ansible's Templar.

The rendering runs in a child Python: Ansible's collection loader must be set up before anything imports
``ansible_collections``, which the other unit tests of the same pytest process do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

ROOT = Path(__file__).resolve().parents[4]
COLLECTIONS = Path(os.environ.get("INFEROPS_COLLECTIONS", ROOT / "build" / "collections"))

_CHILD = r"""
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
root = sys.argv[2]
jobs = json.load(sys.stdin)
out = {}
for key, (role, template, overrides) in jobs.items():
    loader = DataLoader()
    variables = {"ansible_managed": "Ansible managed", "ansible_facts": {}}
    for part in ("defaults", "vars"):
        try:
            path = f"{root}/roles/{role}/{part}/main.yml"
            variables.update(loader.load_from_file(path, trusted_as_template=True) or {})
        except FileNotFoundError:
            pass
    variables.update(overrides)
    text = template[5:] if template.startswith("expr:") else open(f"{root}/roles/{role}/templates/{template}").read()
    try:
        out[key] = {"text": Templar(loader=loader, variables=variables).template(trust_as_template(text))}
    except Exception as error:
        out[key] = {"error": str(error)}
json.dump(out, sys.stdout)
"""


def render_all(jobs: Mapping[str, Tuple[str, str, Mapping[str, Any]]]) -> Dict[str, Dict[str, str]]:
    """{key: (role, template, overrides)} -> {key: {"text": ...} or {"error": ...}}, in one child process.

    ``template`` is a file of roles/<role>/templates, or ``expr:`` and a template text (e.g. a role variable).
    """
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(COLLECTIONS), str(ROOT)],
        input=json.dumps(jobs), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def directives(text: str) -> dict:
    """Unit text -> {name: [values]}, comments and section headers left out."""
    found: dict = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "[")) and "=" in line:
            name, value = line.split("=", 1)
            found.setdefault(name, []).append(value)
    return found


def vllm_plan(device: str = "cpu") -> dict:
    """The smallest host plan the vllm role's unit renders from: one model at a pinned commit, its serve config."""
    return {
        "model": {"repo": "Qwen/Qwen3-8B", "revision": "b" * 40},
        "layout": {"reason": "one GPU"},
        "device": device,
        "service": {"config": {"model": "Qwen/Qwen3-8B"}, "environment": {}},
        "environment": {},
    }
