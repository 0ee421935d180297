"""The service units restart whatever way the process ends, with a bounded delay, and never give up.

Rendered with the roles' own variables and Ansible's Templar (unit_render.py). systemd 252 is Debian 12's,
257 Debian 13's: RestartSteps=/RestartMaxDelaySec= only from 254 on.
"""

from __future__ import annotations

import pytest
from unit_render import directives, render_all, vllm_plan

PLAN = vllm_plan("cuda")
RAY_CLUSTER = {
    "role": "head", "name": "c1", "node_rank": 0, "nnodes": 2, "head": "gpu-a", "head_address": "10.0.0.1",
    "ports": {"ray": 6379}, "ray_start": ["ray", "start", "--head", "--block"],
}  # fmt: skip


def facts(systemd):
    return {"systemd": {"version": systemd}} if systemd else {}


def vllm_vars(systemd=252, ray=False, **more):
    plan = dict(PLAN, service={"config": dict(PLAN["service"]["config"]), "environment": {}})
    if ray:
        plan["service"]["config"]["distributed-executor-backend"] = "ray"
    return {"inferops_plan": plan, "__vllm_service": plan["service"], "ansible_facts": facts(systemd), **more}


def role_vars(role, systemd):
    if role == "vllm":
        return vllm_vars(systemd)
    more = {
        "ollama": {"__ollama_environment": {}},
        "ray": {"inferops_plan": PLAN, "__ray_cluster": RAY_CLUSTER},
        "gateway": {"__gateway_plan": {"routes": [], "profiles": []}},
    }[role]
    return {**more, "ansible_facts": facts(systemd)}


TEMPLATES = {"vllm": "vllm.service.j2", "ollama": "ollama.service.j2", "ray": "ray.service.j2",
             "gateway": "gateway.service.j2"}  # fmt: skip
NODES = [{"host": "gpu-a", "address": "10.0.0.1", "gpus": 4}, {"host": "gpu-b", "address": "10.0.0.2", "gpus": 4}]
JOBS = {f"{role}-{systemd}": (role, TEMPLATES[role], role_vars(role, systemd)) for role in TEMPLATES
        for systemd in (252, 257, 0)}  # fmt: skip
JOBS.update(
    {
        "vllm-drain": ("vllm", TEMPLATES["vllm"], vllm_vars(vllm_shutdown_timeout=5, vllm_stop_grace_sec=20)),
        "vllm-limit": ("vllm", TEMPLATES["vllm"], vllm_vars(vllm_start_limit_interval_sec=3600)),
        "vllm-ray": ("vllm", TEMPLATES["vllm"], vllm_vars(ray=True, ray_service_name="ray")),
        "vllm-bad-bound": ("vllm", TEMPLATES["vllm"], vllm_vars(257, vllm_restart_max_delay_sec=5)),
        "ray-dropin": ("ray", "vllm-ray-cluster.conf.j2", {"__ray_cluster": RAY_CLUSTER, "__ray_nodes": NODES}),
    }
)
RENDERED = render_all(JOBS)


def rendered(key):
    assert "text" in RENDERED[key], RENDERED[key].get("error")
    return directives(RENDERED[key]["text"])


# (role, first delay, bound) with the roles' defaults
DEFAULTS = [("vllm", "10", "300"), ("ollama", "5", "120"), ("ray", "10", "120"), ("gateway", "5", "60")]


@pytest.mark.parametrize(("role", "first", "bound"), DEFAULTS)
def test_debian13_restarts_always_with_a_growing_bounded_delay(role, first, bound):
    unit = rendered(f"{role}-257")
    assert unit["Restart"] == ["always"]
    assert unit["RestartSec"] == [first]
    assert unit["RestartSteps"] == ["5"]
    assert unit["RestartMaxDelaySec"] == [bound]
    assert unit["StartLimitIntervalSec"] == ["0"]


@pytest.mark.parametrize("systemd", [252, 0], ids=["debian12", "no-facts"])
@pytest.mark.parametrize(("role", "first", "bound"), DEFAULTS)
def test_older_systemd_restarts_always_at_a_fixed_delay(role, first, bound, systemd):
    unit = rendered(f"{role}-{systemd}")
    assert unit["Restart"] == ["always"]
    assert unit["RestartSec"] == [first]
    assert "RestartSteps" not in unit
    assert "RestartMaxDelaySec" not in unit
    assert unit["StartLimitIntervalSec"] == ["0"]


def test_vllm_stop_timeout_is_the_drain_plus_the_grace():
    assert rendered("vllm-252")["TimeoutStopSec"] == ["90"]
    assert rendered("vllm-drain")["TimeoutStopSec"] == ["25"]


def test_vllm_start_limit_can_still_be_set():
    limited = rendered("vllm-limit")
    assert limited["StartLimitIntervalSec"] == ["3600"]
    assert limited["StartLimitBurst"] == ["3"]


def test_the_head_of_a_ray_cluster_starts_after_ray():
    head = rendered("vllm-ray")
    assert head["After"] == ["network-online.target ray.service"]
    assert head["Wants"] == ["network-online.target ray.service"]
    single = rendered("vllm-252")
    assert single["After"] == ["network-online.target"]


def test_a_bound_below_the_first_delay_is_refused_naming_the_variable():
    assert "vllm_restart_max_delay_sec (5) is below vllm_restart_sec (10)" in RENDERED["vllm-bad-bound"]["error"]


def test_the_ray_head_drop_in_waits_for_every_node():
    (pre,) = rendered("ray-dropin")["ExecStartPre"]
    assert pre.startswith('+"/opt/ray/current/bin/python"')
    assert "--require --address 10.0.0.1:6379" in pre
    assert pre.endswith("gpu-a=10.0.0.1=4 gpu-b=10.0.0.2=4")
