"""roles/vllm: every cache the service writes lies under vllm_state_dir, the one path ProtectSystem=strict leaves
writable, and none under the temporary directory that PrivateTmp= empties at every stop (torch's inductor cache
defaults there: a restart compiled again).

Rendered with the role's own variables and Ansible's Templar (unit_render.py).
"""

from __future__ import annotations

import pytest
from unit_render import directives, render_all, vllm_plan

STATE_DIR = "/srv/vllm-state"
PLAN = vllm_plan("cpu")
CACHES = ("HOME", "XDG_CACHE_HOME", "VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "PYTHONPYCACHEPREFIX")
RENDERED = render_all({"unit": ("vllm", "vllm.service.j2", {
    "inferops_plan": PLAN, "__vllm_service": PLAN["service"], "ansible_facts": {}, "vllm_state_dir": STATE_DIR,
})})["unit"]  # fmt: skip


def unit() -> dict:
    assert "text" in RENDERED, RENDERED.get("error")
    return directives(RENDERED["text"])


@pytest.mark.parametrize("name", CACHES)
def test_each_cache_is_under_the_writable_state_dir(name):
    environment = dict(line.strip('"').split("=", 1) for line in unit().get("Environment", []))
    assert environment[name] == STATE_DIR or environment[name].startswith(STATE_DIR + "/"), environment
    assert STATE_DIR in " ".join(unit()["ReadWritePaths"])
    assert unit()["PrivateTmp"] == ["yes"]
