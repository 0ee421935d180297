"""One vLLM deployment over several hosts: the cluster's checks and each node's plan."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown

COMMIT = "0123456789abcdef0123456789abcdef01234567"
RTX4090 = {
    "name": "NVIDIA GeForce RTX 4090",
    "memory_mib": 24564,
    "compute_capability": "8.9",
    "pcie_gen_max": 4,
    "pcie_gen_current": 4,
    "pcie_width_max": 16,
    "pcie_width_current": 16,
}
TOPO_4 = {
    "matrix": [["X" if a == b else "PHB" for b in range(4)] for a in range(4)],
    "p2p": [["X" if a == b else "NS" for b in range(4)] for a in range(4)],
}


def node(host, address, interface="enp65s0f0", gpus=4, **extra):
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "meta-llama/Llama-3.3-70B-Instruct", "revision": COMMIT},
        "vllm_max_model_len": 32768,
        "inferops_cluster": "lab",
        "inferops_cluster_address": address,
        "inferops_cluster_interface": interface,
        # what the ray role and vLLM's workers need (ray-requirements, test_role_refusals.py)
        "ray_auth_token": "not-a-secret",
        "ray_extra_requirements": ["vllm==0.33.0"],
    }
    variables.update(extra)
    topology = {"matrix": [row[:gpus] for row in TOPO_4["matrix"][:gpus]], "p2p": None}
    hardware = {"gpus": [dict(RTX4090, index=i) for i in range(gpus)], "topology": topology}
    return Member(host=host, variables=variables, hardware=hardware, facts={"python": "3.11.2"})


def test_three_hosts_of_one_gpu_each_are_three_pipeline_stages():
    # One GPU per node: consecutive stages sit on GPU 0 of different nodes (this used to raise KeyError (0, 0)
    # in the performance model's handoff between stages).
    model = {"inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT}, "vllm_max_model_len": 8192}
    plans = plan_fleet([node(f"n{i}", f"10.0.0.{11 + i}", gpus=1, **model) for i in range(3)])
    for host in ("n0", "n1", "n2"):
        plan = plans[host]["plan"]
        assert (plan["layout"]["tensor_parallel_size"], plan["layout"]["pipeline_parallel_size"]) == (1, 3)
        assert plan["cluster"]["ray_start"][-3:] == ["--num-gpus", "1", "--block"]


def test_two_hosts_of_four_gpus_run_tp_inside_and_pp_across():
    plans = plan_fleet([node("ws-a", "10.0.0.11"), node("ws-b", "10.0.0.12")])
    head, worker = plans["ws-a"]["plan"], plans["ws-b"]["plan"]
    for plan in (head, worker):
        tp, pp = plan["layout"]["tensor_parallel_size"], plan["layout"]["pipeline_parallel_size"]
        # 70B in BF16 needs all eight 24 GB cards; TP stays inside a node, the stages span both nodes
        assert tp * pp == 8 and tp <= 4 and pp % 2 == 0
        assert len(plan["layout"]["gpus"]) == 4
        assert not [c for c in plan["checks"] if c["severity"] == "error"], plan["checks"]
    assert head["cluster"]["role"] == "head" and worker["cluster"]["role"] == "worker"
    assert head["cluster"]["ray_start"] == [
        "ray", "start", "--head", "--port", "6379", "--node-ip-address", "10.0.0.11", "--num-gpus", "4", "--block",
    ]  # fmt: skip
    assert worker["cluster"]["ray_start"][:4] == ["ray", "start", "--address", "10.0.0.11:6379"]
    assert worker["environment"]["NCCL_SOCKET_IFNAME"] == "enp65s0f0"
    assert worker["environment"]["GLOO_SOCKET_IFNAME"] == "enp65s0f0"
    assert worker["environment"]["VLLM_HOST_IP"] == "10.0.0.12"
    assert head["settings"]["distributed_executor_backend"]["value"] == "ray"
    assert "--distributed-executor-backend" in head["command"] and "--nnodes" not in head["command"]
    # the contract the vllm role renders: the Ray backend and the layout in the config, the cluster's address
    assert head["service"]["config"]["distributed-executor-backend"] == "ray"
    assert head["service"]["config"]["tensor-parallel-size"] * head["service"]["config"]["pipeline-parallel-size"] == 8
    assert head["service"]["environment"]["RAY_ADDRESS"] == "10.0.0.11:6379"
    assert "RAY_ADDRESS" not in worker["service"]["environment"] and "RAY_ADDRESS" not in head["environment"]


def test_the_mp_backend_uses_vllms_own_launcher():
    members = [node(h, a, inferops_cluster_backend="mp") for h, a in (("ws-a", "10.0.0.11"), ("ws-b", "10.0.0.12"))]
    plans = plan_fleet(members)
    worker = plans["ws-b"]["plan"]["command"]
    assert worker[worker.index("--nnodes") + 1] == "2" and worker[worker.index("--node-rank") + 1] == "1"
    assert worker[worker.index("--master-addr") + 1] == "10.0.0.11" and "--headless" in worker
    assert plans["ws-a"]["plan"]["cluster"]["ray_start"] == []
    assert "--master-port" not in worker  # vLLM's default, 29501
    assert "RAY_ADDRESS" not in plans["ws-a"]["plan"]["service"]["environment"]


def test_the_mp_backend_passes_a_master_port_other_than_vllms_default():
    members = [
        node(h, a, inferops_cluster_backend="mp", inferops_cluster_master_port=29600)
        for h, a in (("ws-a", "10.0.0.11"), ("ws-b", "10.0.0.12"))
    ]
    for entry in plan_fleet(members).values():
        config = entry["plan"]["service"]["config"]
        assert config["master-port"] == 29600 and config["master-addr"] == "10.0.0.11"


CASES = [
    ("two heads", {"ws-b": {"inferops_cluster_head": True}, "ws-a": {"inferops_cluster_head": True}}, "cluster-head"),
    ("versions differ", {"ws-b": {"vllm_version": "0.32.0"}}, "cluster-version"),
    (
        "revisions differ",
        {"ws-b": {"inferops_model": {"repo": "meta-llama/Llama-3.3-70B-Instruct", "revision": "main"}}},
        "cluster-version",
    ),
    ("no address", {"ws-b": {"inferops_cluster_address": None}}, "cluster-network"),
    ("same address", {"ws-b": {"inferops_cluster_address": "10.0.0.11"}}, "cluster-network"),
    ("not an address", {"ws-b": {"inferops_cluster_address": "10.0.0.12; reboot"}}, "cluster-network"),
    ("loopback", {"ws-a": {"inferops_cluster_address": "127.0.0.1"}}, "cluster-network"),
    ("bad backend", {"ws-a": {"inferops_cluster_backend": "slurm"}}, "cluster-head"),
    ("bad port", {"ws-a": {"inferops_cluster_ray_port": 70000}}, "cluster-network"),
]


@pytest.mark.parametrize(("case", "changes", "check_id"), CASES, ids=[c[0] for c in CASES])
def test_cluster_errors_stop_every_node(case, changes, check_id):
    members = []
    for host, address in (("ws-a", "10.0.0.11"), ("ws-b", "10.0.0.12")):
        member = node(host, address)
        variables = dict(member.variables, **changes.get(host, {}))
        members.append(Member(host=host, variables=variables, hardware=member.hardware, facts=member.facts))
    plans = plan_fleet(members)
    for host in ("ws-a", "ws-b"):
        errors = [c for c in plans[host]["plan"]["checks"] if c["severity"] == "error" and c["id"] == check_id]
        assert errors, (case, plans[host]["plan"]["checks"])
        assert plans[host]["plan"]["service"]["errors"]


def test_a_line_break_in_a_cluster_variable_is_an_input_error():
    members = [node("ws-a", "10.0.0.11"), node("ws-b", "10.0.0.12")]
    bad = dict(members[1].variables, inferops_cluster_interface="eth0\nExecStartPre=/bin/sh")
    members[1] = Member(host="ws-b", variables=bad, hardware=members[1].hardware, facts=members[1].facts)
    errors = plan_fleet(members)["ws-b"]["errors"]
    assert any(e.startswith("inferops_cluster_interface contains a line feed") for e in errors), errors
    assert not any("\n" in e for e in errors)


def test_python_and_gpu_differences_are_reported():
    a = node("ws-a", "10.0.0.11")
    b = node("ws-b", "10.0.0.12", gpus=2)
    b = Member(host=b.host, variables=b.variables, hardware=b.hardware, facts={"python": "3.13.5"})
    checks = plan_fleet([a, b])["ws-a"]["plan"]["checks"]
    found = {(c["id"], c["severity"]) for c in checks}
    assert ("cluster-python", "error") in found
    assert ("cluster-gpus", "warning") in found


def test_hosts_outside_a_cluster_are_planned_alone():
    single = node("solo", "10.0.0.20")
    variables = {k: v for k, v in single.variables.items() if not k.startswith("inferops_cluster")}
    plans = plan_fleet([Member(host="solo", variables=variables, hardware=single.hardware)])
    assert "cluster" not in plans["solo"]["plan"]
    bad = Member(host="bad", variables={"inferops_engine": "tgi"}, hardware=single.hardware)
    assert plan_fleet([bad])["bad"]["errors"][0].startswith("inferops_engine")


def test_the_report_shows_each_nodes_part_in_the_cluster():
    plans = plan_fleet([node("ws-a", "10.0.0.11"), node("ws-b", "10.0.0.12")])
    worker = render_markdown(plans["ws-b"]["plan"])
    assert "| role | worker (rank 1; head ws-a) |" in worker and "runs Ray only" in worker
    assert "ray start --address 10.0.0.11:6379 --node-ip-address 10.0.0.12 --num-gpus 4 --block" in worker
    head = render_markdown(plans["ws-a"]["plan"])
    assert "| role | head (rank 0; head ws-a) |" in head and "runs Ray only" not in head
    solo = plan_fleet([node("solo", "10.0.0.9", inferops_cluster="")])["solo"]["plan"]
    assert "## Cluster" not in render_markdown(solo)
