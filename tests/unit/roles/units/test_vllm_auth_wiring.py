"""roles/vllm: with vllm_api_key the unit puts the key middleware on PYTHONPATH, and says whether /metrics is open.

Rendered with the role's own variables and Ansible's Templar (unit_render.py); the middleware itself:
tests/unit/roles/vllm/files/test_inferops_vllm_auth.py. The key stays in secrets.env: never in the unit.
"""

from __future__ import annotations

import pytest
from unit_render import directives, render_all, vllm_plan

KEY = "k3y-in-the-vault-7f3a"
PLAN = vllm_plan("cpu")
# (vllm_api_key, vllm_open_metrics) -> the environment the middleware adds, or None
CASES = {
    "no-key": ("", False, None),
    "key": (KEY, False, "0"),
    "key-open-metrics": (KEY, True, "1"),
    "no-key-open-metrics": ("", True, None),
}


def variables(key, open_metrics):
    return {"inferops_plan": PLAN, "__vllm_service": PLAN["service"], "ansible_facts": {},
            "vllm_api_key": key, "vllm_open_metrics": open_metrics}  # fmt: skip


RENDERED = render_all({name: ("vllm", "vllm.service.j2", variables(key, open_metrics))
                       for name, (key, open_metrics, _expected) in CASES.items()})  # fmt: skip
MIDDLEWARE = render_all({"name": ("vllm", "expr:{{ _vllm_auth_middleware }} {{ _vllm_auth_dir }}", {})})["name"]


@pytest.mark.parametrize("name", CASES)
def test_the_unit_environment(name):
    open_metrics = CASES[name][2]
    assert "text" in RENDERED[name], RENDERED[name].get("error")
    lines = directives(RENDERED[name]["text"]).get("Environment", [])
    environment = dict(line.strip('"').split("=", 1) for line in lines)
    if open_metrics is None:
        assert "PYTHONPATH" not in environment and "INFEROPS_VLLM_OPEN_METRICS" not in environment
    else:
        assert environment["PYTHONPATH"] == "/opt/vllm/middleware"
        assert environment["INFEROPS_VLLM_OPEN_METRICS"] == open_metrics
    assert KEY not in RENDERED[name]["text"]


def test_the_middleware_is_the_module_the_role_installs_in_that_directory():
    # serve.yaml names it (tasks/preflight.yml), tasks/install.yml copies files/inferops_vllm_auth.py there.
    assert MIDDLEWARE["text"] == "inferops_vllm_auth.KeyRequired /opt/vllm/middleware"
