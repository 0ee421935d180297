"""The plan's service section: the contract both engine roles render."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.service import SERVICE_SCHEMA, service_section

from .test_planner import example


def test_vllm_service_carries_the_config_mapping_and_no_listen_address():
    variables, hardware = example("bf16-4x3090")
    plan = build_plan(variables, hardware, host="bf16-4x3090")
    service = plan["service"]
    assert service["schema"] == SERVICE_SCHEMA
    assert (service["engine"], service["engine_version"], service["device"]) == ("vllm", "0.33.0", "cuda")
    assert service["config"]["model"] == "Qwen/Qwen3.5-35B-A3B"
    assert service["config"]["revision"] == "main"
    assert service["config"]["tensor-parallel-size"] == 2
    assert service["config"]["pipeline-parallel-size"] == 2
    assert not {"host", "port", "api-key", "config"} & set(service["config"])
    assert service["environment"] == plan["environment"]
    assert service["argv"] == plan["command"]
    assert service["errors"] == []


def test_error_checks_become_the_services_refusal():
    variables, hardware = example("agent-2x5060ti")
    plan = build_plan(dict(variables, vllm_tensor_parallel_size=1, vllm_pipeline_parallel_size=1), hardware)
    errors = [c for c in plan["checks"] if c["severity"] == "error"]
    assert errors
    assert plan["service"]["errors"] == [f"{c['id']}: {c['message']}" for c in errors]


def test_ollama_service_config_is_the_resolved_settings():
    variables, hardware = example("gguf-3090")
    plan = build_plan(variables, hardware)
    service = plan["service"]
    assert service["engine"] == "ollama"
    assert service["config"] == {name: entry["value"] for name, entry in plan["settings"].items()}
    assert service["argv"] == ["ollama", "serve"]
    assert service["environment"]["CUDA_VISIBLE_DEVICES"] == "0"


def test_an_argv_that_cannot_be_a_config_file_is_refused():
    plan = {
        "engine": "vllm",
        "engine_version": "0.33.0",
        "checks": [],
        "command": ["vllm", "serve", "org/model", "-tp", "2"],
        "environment": {},
    }
    assert service_section(plan)["errors"] == [
        "service: use the long form of '-tp' in vllm_extra_args (e.g. --tensor-parallel-size)"
    ]


def test_the_ollama_role_renders_the_schema_the_plan_writes():
    role_vars = Path(__file__).resolve().parents[5] / "roles" / "ollama" / "vars" / "main.yml"
    assert yaml.safe_load(role_vars.read_text(encoding="utf-8"))["_ollama_service_schema"] == SERVICE_SCHEMA


def test_none_switches_off_the_parsers_the_family_would_get():
    variables, hardware = example("bf16-4x3090")
    chosen = build_plan(variables, hardware)
    assert chosen["service"]["config"]["tool-call-parser"] and chosen["service"]["config"]["reasoning-parser"]
    plan = build_plan(dict(variables, vllm_tool_call_parser="none", vllm_reasoning_parser="None"), hardware)
    config = plan["service"]["config"]
    assert not {"tool-call-parser", "reasoning-parser", "enable-auto-tool-choice"} & set(config)
    for name in ("tool_call_parser", "reasoning_parser"):
        entry = plan["settings"][name]
        assert (entry["value"], entry["source"]) == (None, "inventory")
        assert f"vllm_{name}: none" in entry["reason"]
    assert plan["service"]["errors"] == []
    assert not [c for c in plan["checks"] if c["id"] in ("tool-call-parser", "reasoning-parser")]


def test_an_empty_parser_keeps_the_plans_choice():
    variables, hardware = example("bf16-4x3090")
    chosen = build_plan(variables, hardware)["settings"]["tool_call_parser"]
    assert build_plan(dict(variables, vllm_tool_call_parser=""), hardware)["settings"]["tool_call_parser"] == chosen
