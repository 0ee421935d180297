"""roles/vllm: every cache the service writes lies under vllm_state_dir, the one path ProtectSystem=strict leaves
writable, and none under the temporary directory that PrivateTmp= empties at every stop (torch's inductor cache
defaults there: a restart compiled again). roles/gateway: the proxy's bytecode cache lies under gateway_state_dir.
Both keep one bytecode tree per release (each service imports through its current link).

Rendered with the role's own variables and Ansible's Templar (unit_render.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from unit_render import directives, render_all, vllm_plan

ROLES = Path(__file__).resolve().parents[4] / "roles"
STATE_DIR = "/srv/vllm-state"
PLAN = vllm_plan("cpu")
CACHES = ("HOME", "XDG_CACHE_HOME", "VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "PYTHONPYCACHEPREFIX")
GATEWAY_STATE_DIR = "/srv/litellm-state"
ALL = render_all({
    "unit": ("vllm", "vllm.service.j2", {
        "inferops_plan": PLAN, "__vllm_service": PLAN["service"], "ansible_facts": {}, "vllm_state_dir": STATE_DIR,
    }),
    "gateway": ("gateway", "gateway.service.j2", {
        "__gateway_plan": {"routes": [], "profiles": []}, "gateway_state_dir": GATEWAY_STATE_DIR,
        "gateway_litellm_version": "9.8.7",
    }),
})  # fmt: skip
RENDERED = ALL["unit"]


def unit() -> dict:
    assert "text" in RENDERED, RENDERED.get("error")
    return directives(RENDERED["text"])


@pytest.mark.parametrize("name", CACHES)
def test_each_cache_is_under_the_writable_state_dir(name):
    environment = environment_of(RENDERED)
    assert environment[name] == STATE_DIR or environment[name].startswith(STATE_DIR + "/"), environment
    assert STATE_DIR in " ".join(unit()["ReadWritePaths"])
    assert unit()["PrivateTmp"] == ["yes"]


def environment_of(rendered: dict) -> dict:
    assert "text" in rendered, rendered.get("error")
    return dict(line.strip('"').split("=", 1) for line in directives(rendered["text"]).get("Environment", []))


def test_the_vllm_bytecode_cache_has_a_tree_per_release():
    version = yaml.safe_load((ROLES / "vllm/defaults/main.yml").read_text())["vllm_version"]
    assert environment_of(RENDERED)["PYTHONPYCACHEPREFIX"] == f"{STATE_DIR}/cache/pycache/{version}"


def test_the_gateway_bytecode_cache_is_under_its_state_dir_one_tree_per_release():
    assert environment_of(ALL["gateway"])["PYTHONPYCACHEPREFIX"] == f"{GATEWAY_STATE_DIR}/pycache/9.8.7"
    assert GATEWAY_STATE_DIR in " ".join(directives(ALL["gateway"]["text"])["ReadWritePaths"])
