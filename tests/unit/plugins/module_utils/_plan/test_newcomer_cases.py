"""The newcomer's cases of issue 26 (newcomer_cases.yml), each planned as plan.yml plans it, and what the console
then shows: every error and warning once, and a refused host's input errors below the table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_console

TABLE = yaml.safe_load((Path(__file__).parent / "newcomer_cases.yml").read_text(encoding="utf-8"))
CASES = TABLE["cases"]
RTX4090 = {"name": "NVIDIA GeForce RTX 4090", "memory_mib": 24564, "compute_capability": "8.9", "count": 1}
# NVLink-less PCIe GPUs, as `nvidia-smi topo -m` shows GPUs behind one host bridge
LINK = "PHB"


def _members(case, gpu=None):
    variables = {k: v for k, v in TABLE["base"].items() if k not in case.get("drop", [])}
    variables.update(case.get("variables", {}))
    gpus = {**RTX4090, **case.get("gpus", {}), **(gpu or {})}
    count = gpus.pop("count")
    topology = {}
    if case.get("topology", True) and count > 1:
        topology = {"matrix": [["X" if a == b else LINK for b in range(count)] for a in range(count)], "p2p": None}
    hardware = {
        "gpus": [dict(gpus, index=i) for i in range(count)],
        "topology": topology,
        "driver": {"driver_loaded": True, "driver_version": "580.95.05", "cuda_version": "13.0"},
    }
    nodes = int(case.get("nodes", 1))
    members = []
    for number in range(nodes):
        own = dict(variables)
        if nodes > 1:
            own.update(
                inferops_cluster="lab",
                inferops_cluster_address=f"10.0.0.{11 + number}",
                inferops_cluster_interface="enp65s0f0",
            )
        members.append(Member(host=f"h{number}", variables=own, hardware=hardware, facts={"python": "3.11.2"}))
    return members


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_newcomers_case(case):
    results = plan_fleet(_members(case))
    result = results["h0"]
    errors = result.get("errors", [])
    plan = result.get("plan")
    if "refused" in case:
        expected = case["refused"]
        named = [e for e in errors if e.startswith(expected["variable"])]
        assert named, errors or plan["checks"]
        assert any(expected.get("says", "") in e for e in named), named
    else:
        assert plan is not None, errors
    checks = plan["checks"] if plan else []
    for expected in case.get("checks", []):
        found = [c for c in checks if c["id"] == expected["id"] and c["severity"] == expected["severity"]]
        found = [c for c in found if expected.get("says", "") in c["message"]]
        assert found, (expected, [(c["id"], c["severity"], c["message"]) for c in checks])
        if "not_says" in expected:
            assert all(expected["not_says"] not in c["message"] for c in found), found
    assert not [c for c in checks if c["id"] in case.get("absent", [])], checks
    for text in case.get("no_message_says", []):
        assert not [c["message"] for c in checks if text in c["message"]], text
    settings = (plan or {}).get("settings", {})
    for name, value in case.get("settings", {}).items():
        assert settings[name]["value"] == value, (name, settings[name])
    for name, source in case.get("settings_source", {}).items():
        assert settings[name]["source"] == source, (name, settings[name])
    for name, value in case.get("no_setting", {}).items():
        assert (settings.get(name) or {}).get("value") != value, (name, settings.get(name))
    performance = (plan or {}).get("performance", {})
    for name, value in case.get("performance", {}).items():
        assert performance[name] == value, (name, performance)
    for name, least in case.get("performance_at_least", {}).items():
        assert performance[name] >= least, (name, performance)
    if "slower_than" in case:
        other = dict(case["slower_than"])
        share = other.pop("by", 1.0)
        faster = plan_fleet(_members(case, other))["h0"]["plan"]["performance"]["single_stream_decode_tokens_per_s"]
        assert performance["single_stream_decode_tokens_per_s"] < share * faster, (performance, faster)
    # The console: every error and warning once, below the table; a refused host's input errors there too.
    plans = [r.get("plan", {"host": host}) for host, r in results.items()]
    console = "\n".join(render_console(plans, {h: r["errors"] for h, r in results.items() if "errors" in r}))
    for check in checks:
        if check["severity"] in ("error", "warning"):
            hosts = sum(check in r.get("plan", {}).get("checks", []) for r in results.values())  # a cluster's
            assert console.count(f"{check['severity']}: {check['id']}: {check['message']}") == hosts, check
    for error in errors:
        assert console.count(f"error: {error}") == 1, error
