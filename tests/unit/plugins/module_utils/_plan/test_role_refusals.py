"""Refusals a role would make after the driver and the download are plan findings first (issue 26)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from ansible.parsing.vault import EncryptedString

from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    VLLM_LOOPBACK_HOSTS,
    defined_names,
    key_left_empty,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.refusals import DEFAULT_RAY_VERSION

from .test_cluster import node

ROOT = Path(__file__).resolve().parents[5]
VARIABLES = {
    "inferops_engine": "vllm",
    "vllm_version": "0.33.0",
    "inferops_model": {
        "repo": "meta-llama/Llama-3.1-8B-Instruct",
        "revision": "0e9e39f249a16976918f6564b8830bc894c89659",
    },
    "vllm_max_model_len": 8192,
}
HARDWARE = {
    "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "memory_mib": 24564, "compute_capability": "8.9"}],
    "topology": {},
    "driver": {},
}


def test_the_plan_and_the_vllm_role_share_the_loopback_addresses():
    role_vars = yaml.safe_load((ROOT / "roles" / "vllm" / "vars" / "main.yml").read_text())
    assert tuple(role_vars["_vllm_loopback_hosts"]) == VLLM_LOOPBACK_HOSTS


# The key's raw (untemplated) inventory value: MISSING leaves it undefined; a vaulted value is never decrypted.
MISSING = object()
VAULTED = EncryptedString(ciphertext="$ANSIBLE_VAULT;1.1;AES256\n6162\n")


@pytest.mark.parametrize(
    "host, key, refused",
    [
        ("0.0.0.0", MISSING, True),
        ("192.168.1.20", MISSING, True),
        ("0.0.0.0", "", True),
        ("0.0.0.0", None, True),
        ("0.0.0.0", "sk-0123456789abcdef", False),
        ("0.0.0.0", "{{ vault_vllm_api_key }}", False),
        ("0.0.0.0", VAULTED, False),
        ("127.0.0.1", MISSING, False),
        ("127.0.0.1", "", False),
        ("localhost", MISSING, False),
        (None, MISSING, False),
    ],
)
def test_vllm_beyond_loopback_needs_a_key(host, key, refused):
    """As plan_fleet reads it: the names the host defines, a key left empty ("" or no value) not among them."""
    variables = dict(VARIABLES, vllm_host=host)
    raw = dict(variables) if key is MISSING else dict(variables, vllm_api_key=key)
    defined = defined_names(raw, raw)
    plan = build_plan(variables, HARDWARE, defined=defined)
    errors = [c for c in plan["checks"] if c["id"] == "vllm-api-key-required"]
    assert bool(errors) == refused
    if refused:
        assert errors[0]["severity"] == "error"
        assert "vllm_api_key" in errors[0]["message"] and "vllm_host: 127.0.0.1" in errors[0]["message"]
        assert "empty vllm_api_key is no key" in errors[0]["message"]
        # The service contract carries it: the engine role refuses to start while it is there.
        assert any(e.startswith("vllm-api-key-required:") for e in plan["service"]["errors"])


def test_a_vllm_host_that_cannot_be_listened_on_is_an_input_error():
    with pytest.raises(ValueError, match="vllm_host"):
        build_plan(dict(VARIABLES, vllm_host="0.0.0.0:8000"), HARDWARE)


@pytest.mark.parametrize(
    "host, allow, refused",
    [
        ("0.0.0.0", None, True),
        ("0.0.0.0", False, True),
        ("10.0.0.5", "false", True),
        ("0.0.0.0", True, False),
        ("0.0.0.0", "true", False),
        ("127.0.0.1", None, False),
        ("::1", False, False),
    ],
)
def test_vllm_beyond_loopback_needs_allow_remote(host, allow, refused):
    """The vllm role refuses a non-loopback vllm_host unless vllm_allow_remote (vLLM's key covers /v1 only)."""
    variables = dict(VARIABLES, vllm_host=host)
    if allow is not None:
        variables["vllm_allow_remote"] = allow
    plan = build_plan(variables, HARDWARE, defined=[*variables, "vllm_api_key"])
    errors = [c for c in plan["checks"] if c["id"] == "vllm-allow-remote-required"]
    assert bool(errors) == refused
    assert not [c for c in plan["checks"] if c["id"] == "vllm-api-key-required"]
    if refused:
        assert errors[0]["severity"] == "error"
        assert "vllm_allow_remote: true" in errors[0]["message"] and "vllm_host: 127.0.0.1" in errors[0]["message"]
        assert any(e.startswith("vllm-allow-remote-required:") for e in plan["service"]["errors"])


def test_a_vaulted_or_templated_key_is_not_read():
    """Only None and "" leave a key empty; a vaulted value is not decrypted (it could not be here: no vault
    secret is loaded, so reading it would raise) and a template is not rendered."""
    assert key_left_empty(None) and key_left_empty("")
    assert not key_left_empty(VAULTED)
    assert not key_left_empty("{{ vault_vllm_api_key }}")
    assert not key_left_empty("sk-0123456789abcdef")


# A key set to a template, followed through the host's untemplated variables (HostVars.raw_get) only when the
# template is one variable and nothing else; each case: the key's raw value, the other variables, empty or not.
KEY_REFERENCE_CASES = {
    "reference to an empty string": ("{{ my_key }}", {"my_key": ""}, True),
    "reference without spaces to null": ("{{my_key}}", {"my_key": None}, True),
    "chain to an empty string": ("{{ a }}", {"a": "{{ b }}", "b": ""}, True),
    "reference to a vaulted value": ("{{ my_key }}", {"my_key": VAULTED}, False),
    "reference to a key": ("{{ my_key }}", {"my_key": "sk-0123456789abcdef"}, False),
    "reference to an undefined name": ("{{ vault_vllm_api_key }}", {}, False),
    "a filter is not rendered": ("{{ my_key | default('') }}", {}, False),
    "text beside the reference": (" {{ my_key }}", {"my_key": ""}, False),
    "a lookup is not rendered": ("{{ lookup('env', 'KEY') }}", {}, False),
    "a reference cycle": ("{{ a }}", {"a": "{{ a }}"}, False),
}


@pytest.mark.parametrize("raw, others, empty", KEY_REFERENCE_CASES.values(), ids=KEY_REFERENCE_CASES.keys())
def test_a_key_set_to_one_variable_is_followed_without_rendering(raw, others, empty):
    untemplated = {"vllm_api_key": raw, **others}
    assert key_left_empty(raw, untemplated) is empty
    assert not key_left_empty(raw)  # without the host's untemplated variables a template is a key
    names = ["vllm_api_key", "vllm_host"]
    assert defined_names(names, untemplated, follow=True) == (["vllm_host"] if empty else names)
    assert defined_names(names, untemplated) == names


# A node of a Ray cluster (test_cluster.node): what the ray role and vLLM's workers need, each case the node's
# changes (None removes the variable), and the variable the error names (None: no error).
RAY_CASES = {
    "met": ({}, None),
    "no token": ({"ray_auth_token": None}, "ray_auth_token"),
    "empty token": ({"ray_auth_token": ""}, "ray_auth_token"),
    "no token, auth off on purpose": ({"ray_auth_token": None, "ray_allow_no_auth": True}, None),
    "templated token": ({"ray_auth_token": "{{ vault_ray_auth_token }}"}, None),
    "no requirements": ({"ray_extra_requirements": None}, "ray_extra_requirements"),
    "another vllm": ({"ray_extra_requirements": ["vllm==0.32.0"]}, "ray_extra_requirements"),
    "pin among others": ({"ray_extra_requirements": ["numpy<2", "vllm == 0.33.0"]}, None),
}


@pytest.mark.parametrize("changes, named", RAY_CASES.values(), ids=RAY_CASES.keys())
def test_a_ray_cluster_needs_its_requirements(changes, named):
    members = []
    for host, address in (("ws-a", "10.0.0.11"), ("ws-b", "10.0.0.12")):
        member = node(host, address)
        variables = {k: v for k, v in {**member.variables, **changes}.items() if v is not None}
        members.append(replace(member, variables=variables))
    for entry in plan_fleet(members).values():
        checks = entry["plan"]["checks"]
        found = [c for c in checks if c["severity"] == "error" or c["id"] == "ray-requirements"]
        if named is None:
            assert not found, found
            continue
        (finding,) = found
        assert finding["id"] == "ray-requirements" and finding["message"].startswith(named), finding
        refused = any(e.startswith("ray-requirements:") for e in entry["plan"]["service"]["errors"])
        if named == "ray_extra_requirements":  # the ray role runs Ray without vLLM; vLLM's start fails
            assert finding["severity"] == "warning" and not refused, finding
            assert 'a value that passes: ray_extra_requirements: ["vllm==0.33.0"' in finding["message"], finding
        else:  # the ray role refuses it: an error, which stops the node
            assert finding["severity"] == "error" and refused, finding
            assert "ray_allow_no_auth: true" in finding["message"], finding


def test_an_mp_cluster_needs_no_ray():
    members = [node(h, a, inferops_cluster_backend="mp") for h, a in (("ws-a", "10.0.0.11"), ("ws-b", "10.0.0.12"))]
    members = [replace(m, variables={k: v for k, v in m.variables.items() if k[:4] != "ray_"}) for m in members]
    for entry in plan_fleet(members).values():
        assert not [c for c in entry["plan"]["checks"] if c["id"] == "ray-requirements"]


def test_the_plan_knows_the_ray_release_both_roles_pin():
    ray = yaml.safe_load((ROOT / "roles" / "ray" / "defaults" / "main.yml").read_text())["ray_version"]
    vllm = yaml.safe_load((ROOT / "roles" / "vllm" / "defaults" / "main.yml").read_text())["vllm_ray_version"]
    assert ray == vllm == DEFAULT_RAY_VERSION


# The head's vLLM joins the cluster as a Ray driver: each case the nodes' changes and the value that passes
# (None: no finding). Unset, each variable is its role's default (DEFAULT_RAY_VERSION).
RAY_VERSION_CASES = {
    "defaults": ({}, None),
    "both pinned alike": ({"ray_version": "2.52.0", "vllm_ray_version": "2.52.0"}, None),
    "cluster pinned, vllm default": ({"ray_version": "2.52.0"}, "2.52.0"),
    "vllm pinned, cluster default": ({"vllm_ray_version": "2.52.0"}, DEFAULT_RAY_VERSION),
    "both pinned apart": ({"ray_version": "2.61.1", "vllm_ray_version": "2.60.0"}, "2.61.1"),
}


@pytest.mark.parametrize("changes, passing", RAY_VERSION_CASES.values(), ids=RAY_VERSION_CASES.keys())
def test_the_head_runs_the_clusters_ray_release_beside_vllm(changes, passing):
    members = [node(h, a, **changes) for h, a in (("ws-a", "10.0.0.11"), ("ws-b", "10.0.0.12"))]
    planned = plan_fleet(members)
    found = {
        host: [c for c in entry["plan"]["checks"] if c["id"] == "ray-version-mismatch"]
        for host, entry in planned.items()
    }
    assert not found["ws-b"], found  # the vllm role runs on the head only
    if passing is None:
        assert not found["ws-a"], found
        return
    (finding,) = found["ws-a"]
    assert finding["severity"] == "error" and finding["message"].startswith("vllm_ray_version"), finding
    # verified by a re-plan (_plan/suggestions.py): shown as a value that passes, not "no value that passes"
    assert finding["message"].endswith(f'(a value that passes: vllm_ray_version: "{passing}")'), finding
    assert any(e.startswith("ray-version-mismatch:") for e in planned["ws-a"]["plan"]["service"]["errors"])
