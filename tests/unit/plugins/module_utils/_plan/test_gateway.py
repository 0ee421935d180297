"""The gateway's plan (_plan/gateway.py): routes, profiles, checks and model_list, against gateway_cases.yml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import (
    BUILTIN_PROFILES,
    GATEWAY_DATA,
    GatewayInputError,
    backends_from_plans,
    plan_gateway,
    render_gateway_table,
)

CASES = yaml.safe_load((Path(__file__).parent / "gateway_cases.yml").read_text())
GOLDEN = Path(__file__).resolve().parents[4] / "golden" / "plans"


@pytest.mark.parametrize("case", CASES["cases"], ids=[case["id"] for case in CASES["cases"]])
def test_plan_gateway_cases(case):
    gateway = plan_gateway(case["backends"], case["profiles"])
    assert sorted([c["id"], c["severity"]] for c in gateway["checks"]) == sorted(case["checks"])
    assert {route["model"]: len(route["backends"]) for route in gateway["routes"]} == case["routes"]
    assert len(gateway["model_list"]) == case["deployments"]


@pytest.mark.parametrize("case", CASES["input_errors"], ids=[case["says"] for case in CASES["input_errors"]])
def test_malformed_inventory_entries_are_refused(case):
    with pytest.raises(GatewayInputError) as raised:
        plan_gateway([], case["profiles"], case["backends"])
    assert case["says"] in str(raised.value)


def test_profile_sampling_reaches_the_deployment_openai_fields_direct_the_rest_in_extra_body():
    backend = CASES["backends"]["vllm_a"]
    gateway = plan_gateway(
        [backend], [{"name": "qwen-code", "model": backend["model"], "builtin": "qwen3.5-thinking-coding"}]
    )
    (deployment,) = [d for d in gateway["model_list"] if d["model_name"] == "qwen-code"]
    params = deployment["litellm_params"]
    assert params["model"] == "openai/Qwen/Qwen3.6-27B"
    assert params["api_base"] == "http://10.0.0.1:8000/v1"
    assert params["temperature"] == 0.6 and params["top_p"] == 0.95 and params["presence_penalty"] == 0.0
    assert params["extra_body"] == {
        "top_k": 20,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "chat_template_kwargs": {"enable_thinking": True},
    }


def test_inventory_values_override_a_builtin_profile():
    backend = CASES["backends"]["vllm_a"]
    profile = {
        "name": "p",
        "model": backend["model"],
        "builtin": "qwen3.5-instruct-general",
        "params": {"temperature": 0.1},
    }
    (resolved,) = plan_gateway([backend], [profile])["profiles"]
    assert resolved["params"]["temperature"] == 0.1
    assert resolved["params"]["top_p"] == 0.8
    assert resolved["thinking"] is False


def test_a_release_older_than_a_field_is_an_error():
    backend = dict(CASES["backends"]["vllm_a"], engine_version="0.11.0")
    table = {"vllm": {"temperature": "0.10.0", "min_p": "0.12.0"}, "ollama": {}}
    profile = {"name": "p", "model": backend["model"], "params": {"temperature": 1.0, "min_p": 0.05}}
    checks = plan_gateway([backend], [profile], request_params=table)["checks"]
    assert [(c["id"], c["severity"]) for c in checks] == [("gateway-profile-parameter", "error")]
    assert "added in 0.12.0" in checks[0]["message"]


def test_backend_key_is_a_reference_to_the_environment_never_the_key():
    backend = dict(CASES["backends"]["vllm_a"], api_key_env="INFEROPS_BACKEND_KEY_0")
    (deployment,) = plan_gateway([backend])["model_list"]
    assert deployment["litellm_params"]["api_key"] == "os.environ/INFEROPS_BACKEND_KEY_0"


def test_backends_from_the_golden_plans():
    plans = {path.stem: json.loads(path.read_text()) for path in sorted(GOLDEN.glob("*.json"))}
    endpoints = {
        "nvfp4-5090": {"address": "10.0.0.2", "port": 8000},
        "gguf-3090": {"address": "fd00::3", "port": 11434, "models": ["qwen3.5-35b-a3b"]},
    }
    backends = backends_from_plans(plans, endpoints)
    assert [(b["host"], b["model"], b["api_base"], b["reasoning_parser"]) for b in backends] == [
        ("gguf-3090", "qwen3.5-35b-a3b", "http://[fd00::3]:11434/v1", "ollama"),
        ("nvfp4-5090", "inferRouter/Qwen3.6-27B-NVFP4", "http://10.0.0.2:8000/v1", "qwen3"),
    ]


def test_every_builtin_profile_has_the_documented_fields_and_the_data_a_source():
    assert set(BUILTIN_PROFILES) == {
        "qwen3.5-thinking-general",
        "qwen3.5-thinking-coding",
        "qwen3.5-instruct-general",
        "qwen3.5-instruct-reasoning",
    }
    for profile in BUILTIN_PROFILES.values():
        assert set(profile["params"]) == {
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "presence_penalty",
            "repetition_penalty",
        }
        assert isinstance(profile["chat_template_kwargs"]["enable_thinking"], bool)
    assert "Best Practices" in GATEWAY_DATA["profiles"]["_source"]
    assert set(GATEWAY_DATA["request_params"]["_source"]) == {"vllm", "ollama"}


def test_table_lists_routes_profiles_and_checks():
    backend = CASES["backends"]["vllm_noparser"]
    gateway = plan_gateway([backend], [{"name": "t", "model": backend["model"], "builtin": "qwen3.5-thinking-general"}])
    text = "\n".join(render_gateway_table(gateway))
    assert "Qwen/Qwen3.6-27B -> vllm 0.33.0 http://10.0.0.3:8000/v1" in text
    assert "t -> Qwen/Qwen3.6-27B [qwen3.5-thinking-general]: temperature=1.0" in text
    assert "warning: gateway-reasoning-parser" in text


def test_fleet_endpoints_loopback_addresses_ports_models_and_key_names():
    from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import fleet_endpoints

    endpoints = fleet_endpoints(
        {
            "gpu-a": {"vllm_port": 8001},
            "gpu-b": {"ansible_host": "10.0.0.2", "gateway_backend_address": "gpu-b.lan"},
            "standby": {
                "ansible_host": "10.0.0.9",
                "ollama_models": [
                    {"pull": "qwen3:8b"},
                    {"gguf": "/m.gguf", "profiles": [{"name": "q-think"}, {"name": "q-chat"}]},
                ],
            },
        },
        gateway_host="gpu-a",
        keyed=["gpu-b"],
    )
    assert endpoints["gpu-a"]["address"] == "127.0.0.1" and endpoints["gpu-a"]["vllm_port"] == 8001
    assert endpoints["gpu-b"]["address"] == "gpu-b.lan"
    assert endpoints["gpu-b"]["api_key_env"] == "INFEROPS_BACKEND_KEY_GPU_B"
    assert endpoints["gpu-a"]["api_key_env"] is None
    assert endpoints["standby"]["models"] == ["qwen3:8b", "q-think", "q-chat"]
    assert endpoints["standby"]["ollama_port"] == 11434


def test_ollama_host_without_models_gets_a_check_naming_ollama_models():
    from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import plan_fleet_gateway

    plans = {"standby": {"engine": "ollama", "engine_version": "0.12.6", "model": {"repo": "Qwen/Qwen3-8B"}}}
    gateway = plan_fleet_gateway(plans, {"standby": {"ansible_host": "10.0.0.9"}}, "gw", {})
    assert gateway["routes"] == []
    [check] = [c for c in gateway["checks"] if c["id"] == "gateway-ollama-unrouted"]
    assert check["severity"] == "warning" and check["variable"] == "ollama_models"
    assert "standby" in check["message"] and check["suggested"] == [{"pull": "qwen3:8b"}]

    served = plan_fleet_gateway(plans, {"standby": {"ollama_models": [{"pull": "qwen3:8b"}]}}, "gw", {})
    assert [route["model"] for route in served["routes"]] == ["qwen3:8b"]
    assert not [c for c in served["checks"] if c["id"] == "gateway-ollama-unrouted"]


@pytest.mark.parametrize("case", CASES["loopback"], ids=[case["id"] for case in CASES["loopback"]])
def test_an_engine_on_another_host_bound_to_loopback_is_refused(case):
    from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import plan_fleet_gateway

    plan = {"engine": case["engine"], "engine_version": "0.33.0", "model": {"repo": "Qwen/Qwen3-8B"}}
    gateway = plan_fleet_gateway({case["host"]: plan}, {case["host"]: case["variables"]}, "gw", {})
    found = [c for c in gateway["checks"] if c["id"] == "gateway-backend-loopback"]
    if case["refused"] is None:
        assert found == []
        return
    [check] = found
    assert check["severity"] == "error" and check["variable"] == case["refused"]
    assert check["suggested"] == "0.0.0.0"
    assert case["host"] in check["message"] and f"set {case['refused']}: 0.0.0.0" in check["message"]
