"""Host plans: input validation, settings sources, rendered command/environment, secrets, report keys."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.render import vllm_command
from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import find_model
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import resolved
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    PlanInputError,
    input_errors,
    input_names,
    validate_inputs,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown, render_table

COMMIT = "0123456789abcdef0123456789abcdef01234567"
HF_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
API_KEY = "sk-not-a-real-key-0123456789abcdef"

RTX3090 = {
    "index": 0,
    "name": "NVIDIA GeForce RTX 3090",
    "memory_mib": 24576,
    "compute_capability": "8.6",
    "pcie_gen_max": 4,
    "pcie_width_current": 16,
}
TOPO_3090X2_NVLINK = """\
        GPU0    GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV4     0-15    0               N/A
GPU1    NV4      X      0-15    0               N/A
"""
# The report's key order is the golden plans' (tests/golden/plans, `make golden`), not a copy kept here.
GOLDEN = Path(__file__).resolve().parents[5] / "tests" / "golden" / "plans"
PLAN_KEYS = [k for k in json.loads((GOLDEN / "bf16-4x3090.json").read_text()) if k != "standby_ollama"]
MODEL_KEYS = {"repo", "revision", "architecture", "weights_bytes", "weights_source", "quantization"}
LAYOUT_KEYS = {"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "gpus", "reason"}
MEMORY_KEYS = {
    "gpu_total_gib",
    "weights_gib",
    "overhead_gib",
    "kv_cache_gib",
    "kv_cache_tokens",
    "max_concurrency",
    "block_size",
    "vram_used_gib",
    "per_gpu",
}


def ollama_vars(**overrides):
    variables = {
        "inferops_engine": "ollama",
        "ollama_version": "0.30.4",
        "inferops_model": {
            "repo": "unsloth/Qwen3.5-35B-A3B-GGUF",
            "revision": COMMIT,
            "file": "Qwen3.5-35B-A3B-UD-Q3_K_XL.gguf",
            "base_model": "Qwen3.5-35B-A3B",
            "weights_bytes": 16_589_310_180,
        },
        "ollama_context_length": 65536,
        "ollama_flash_attention": True,
    }
    variables.update(overrides)
    return variables


def one_3090():
    return {"gpus": [dict(RTX3090)], "topology": {}, "driver": {"driver_loaded": True, "driver_version": "570.172.08"}}


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("variables", "names"),
    [
        ({}, ["inferops_engine"]),
        ({"inferops_engine": "sglang"}, ["inferops_engine"]),
        (
            {"inferops_engine": "vllm", "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": "main"}},
            ["vllm_version"],
        ),
        (
            {
                "inferops_engine": "vllm",
                "vllm_version": "0.33",
                "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": "x"},
            },
            ["vllm_version"],
        ),
        (
            {"inferops_engine": "vllm", "vllm_version": ">=0.30", "inferops_model": None},
            ["vllm_version", "inferops_model"],
        ),
        ({"inferops_engine": "ollama", "ollama_version": "latest"}, ["ollama_version", "inferops_model"]),
    ],
)
def test_required_inputs_are_named(variables, names):
    errors = input_errors(variables)
    assert len(errors) == len(names)
    for error, name in zip(errors, names):
        assert error.startswith(name)


def test_version_error_shows_an_exact_pin():
    (error,) = input_errors(
        {"inferops_engine": "vllm", "vllm_version": "0.33", "inferops_model": {"repo": "a/b", "revision": "main"}}
    )
    assert "exact vllm release such as 0.33.0" in error
    assert "'0.33'" in error


def test_model_description_is_checked_key_by_key():
    errors = input_errors(
        {
            "inferops_engine": "vllm",
            "vllm_version": "0.33.0",
            "inferops_model": {"repo": "not a repo", "revison": "main", "weights_bytes": -5},
        }
    )
    text = "\n".join(errors)
    assert "inferops_model has unknown keys 'revison' (did you mean revision?)" in text
    assert "inferops_model.repo must be a Hugging Face repository id" in text
    assert "inferops_model.revision is required" in text
    assert "inferops_model.weights_bytes must be a positive integer" in text


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("vllm_max_num_seqs", "many", "vllm_max_num_seqs must be an integer"),
        ("vllm_max_num_seqs", 0, "vllm_max_num_seqs is out of range: it must be from 1 to"),
        ("vllm_gpu_memory_utilization", 1.5, "vllm_gpu_memory_utilization is out of range: it must be at most 1"),
        ("vllm_enable_prefix_caching", "sometimes", "vllm_enable_prefix_caching must be true or false"),
        ("vllm_hf_overrides", "rope", "vllm_hf_overrides must be a mapping"),
        ("vllm_mamba_cache_mode", "full", "vllm_mamba_cache_mode must be one of align, none, all"),
        ("vllm_kv_cache_memory_bytes", "lots", "vllm_kv_cache_memory_bytes must be a byte count"),
        ("vllm_calculate_kv_scales", True, "vllm_calculate_kv_scales: --calculate-kv-scales exists only up to 0.33.0"),
        ("vllm_gpus", "0,1", "vllm_gpus must be a non-empty list"),
    ],
)
def test_engine_settings_are_typed_and_version_checked(name, value, expected):
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT},
        name: value,
    }
    errors = input_errors(variables)
    assert any(error.startswith(expected) for error in errors), errors


def test_settings_accept_inventory_spellings():
    inputs = validate_inputs(
        {
            "inferops_engine": "vllm",
            "vllm_version": "0.21.0",
            "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT, "quantization": "fp8"},
            "vllm_max_num_seqs": "8",
            "vllm_enable_prefix_caching": "yes",
            "vllm_max_model_len": "auto",
            "vllm_kv_cache_memory_bytes": "20600M",
            "vllm_calculate_kv_scales": False,
            "vllm_tool_call_parser": None,
        }
    )
    assert inputs.settings == {
        "max_num_seqs": 8,
        "enable_prefix_caching": True,
        "max_model_len": "auto",
        "kv_cache_memory_bytes": 20600 * 2**20,
        "calculate_kv_scales": False,
    }
    # The checkpoint's scheme describes the model (weights estimate); it is not a --quantization flag.
    assert inputs.model["quantization"] == "fp8"


def test_extra_args_may_not_duplicate_managed_flags():
    errors = input_errors(
        {
            "inferops_engine": "vllm",
            "vllm_version": "0.33.0",
            "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT},
            "vllm_extra_args": ["--max-model-len=8192", "--disable-log-requests"],
        }
    )
    assert errors == [
        "vllm_extra_args sets --max-model-len, which the plan manages: set vllm_max_model_len: 8192 instead"
    ]


@pytest.mark.parametrize(
    "variables",
    [
        {"vllm_extra_args": ["--api-key", API_KEY]},
        {"vllm_extra_args": [f"--hf-token={HF_TOKEN}"]},
        {"vllm_environment": {"HF_TOKEN": HF_TOKEN}},
        {"vllm_environment": {"SOMETHING": HF_TOKEN}},
        {"vllm_hf_overrides": {"token": HF_TOKEN}},
    ],
)
def test_credentials_are_refused_without_being_echoed(variables):
    base = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT},
    }
    errors = input_errors({**base, **variables})
    assert errors
    assert "credential" in errors[0]
    text = json.dumps(errors)
    assert HF_TOKEN not in text
    assert API_KEY not in text


def test_input_names_leave_secrets_out():
    names = input_names()
    assert "vllm_max_model_len" in names
    assert "ollama_context_length" in names
    assert not {"vllm_api_key", "vllm_hf_token", "inferops_hf_token", "ollama_api_key"} & set(names)


# ------------------------------------------------------------------------------ rendering


def test_vllm_command_uses_the_serve_flags():
    settings = {
        "max_model_len": resolved("auto", "inventory"),
        "enable_prefix_caching": resolved(False, "inventory"),
        "enable_chunked_prefill": resolved(True, "inventory"),
        "trust_remote_code": resolved(False, "inventory"),
        "block_size": resolved(16, "default", "vLLM 0.33.0 default"),
        "hf_overrides": resolved({"text_config": {"rope_parameters": {"factor": 4.0}}}, "inventory"),
        "gpu_memory_utilization": resolved(0.885, "inventory"),
        "attention_backend": resolved(None, "default", "left to vLLM"),
        "tool_call_parser": resolved("qwen3_coder", "chosen"),
    }
    argv = vllm_command("Qwen/Qwen3.6-35B-A3B", "main", settings, ["--disable-log-requests"])
    assert argv == [
        "vllm",
        "serve",
        "Qwen/Qwen3.6-35B-A3B",
        "--revision",
        "main",
        "--max-model-len",
        "-1",
        "--gpu-memory-utilization",
        "0.885",
        "--no-enable-prefix-caching",
        "--enable-chunked-prefill",
        "--tool-call-parser",
        "qwen3_coder",
        "--hf-overrides",
        '{"text_config":{"rope_parameters":{"factor":4.0}}}',
        "--disable-log-requests",
    ]


# ------------------------------------------------------------------------------ Ollama plans


def test_ollama_plan_has_the_documented_keys_and_types():
    plan = build_plan(ollama_vars(), one_3090(), host="gguf-3090")
    # "start" (the start timeout) is vLLM's: Ollama loads a model on its first request.
    assert list(plan) == [key for key in PLAN_KEYS if key != "start"]
    assert plan["host"] == "gguf-3090"
    assert (plan["engine"], plan["engine_version"]) == ("ollama", "0.30.4")
    assert set(plan["model"]) == MODEL_KEYS
    assert plan["model"]["weights_bytes"] == 16_589_310_180
    assert plan["model"]["weights_source"] == "inventory"
    assert plan["model"]["quantization"] == "UD-Q3_K_XL"
    assert set(plan["layout"]) == LAYOUT_KEYS
    assert plan["layout"]["gpus"] == [0]
    assert set(plan["memory"]) == MEMORY_KEYS
    for key in MEMORY_KEYS - {"per_gpu", "block_size", "kv_cache_tokens"}:
        assert isinstance(plan["memory"][key], float), key
    assert plan["memory"]["block_size"] is None
    assert plan["memory"]["kv_cache_tokens"] == 65536
    assert plan["memory"]["vram_used_gib"] == pytest.approx(sum(g["used_gib"] for g in plan["memory"]["per_gpu"]))
    assert plan["command"] == ["ollama", "serve"]
    assert all(set(check) == {"id", "severity", "message"} for check in plan["checks"])
    json.dumps(plan)  # plain JSON types only


def test_ollama_settings_say_where_each_value_came_from():
    plan = build_plan(ollama_vars(ollama_num_parallel=4), one_3090(), host="h")
    settings = plan["settings"]
    assert settings["context_length"] == {"value": 65536, "source": "inventory"}
    assert settings["flash_attention"] == {"value": True, "source": "inventory"}
    assert settings["kv_cache_type"]["source"] == "default"
    assert settings["kv_cache_type"]["value"] == "f16"
    # Ollama serves qwen35moe one sequence at a time whatever the inventory says.
    assert settings["num_parallel"]["value"] == 1
    assert settings["num_parallel"]["source"] == "default"
    assert "forced" in settings["num_parallel"]["reason"]
    assert plan["environment"]["OLLAMA_NUM_PARALLEL"] == "1"
    assert plan["environment"]["OLLAMA_CONTEXT_LENGTH"] == "65536"
    assert plan["environment"]["CUDA_VISIBLE_DEVICES"] == "0"


def test_branch_revision_warns_and_commit_does_not():
    pinned = build_plan(ollama_vars(), one_3090())
    assert "model-revision" not in [c["id"] for c in pinned["checks"]]
    variables = ollama_vars()
    variables["inferops_model"] = dict(variables["inferops_model"], revision="main")
    branch = build_plan(variables, one_3090())
    (finding,) = [c for c in branch["checks"] if c["id"] == "model-revision"]
    assert finding["severity"] == "warning"
    assert "inferops_model.revision 'main'" in finding["message"]


def test_ollama_without_the_gguf_size_names_weights_bytes():
    variables = ollama_vars()
    del variables["inferops_model"]["weights_bytes"]
    with pytest.raises(PlanInputError, match=r"inferops_model\.weights_bytes is required for Ollama"):
        build_plan(variables, one_3090())


def test_several_gpus_without_a_topology_are_planned_over_the_host_bridge():
    gpus = [dict(RTX3090), dict(RTX3090, index=1)]
    assumed = build_plan(ollama_vars(), {"gpus": gpus, "topology": {}})
    assert ids(assumed, "warning") >= {"topology-assumed"}
    note = next(c for c in assumed["checks"] if c["id"] == "topology-assumed")
    assert "inferops_gpu_topology_text" in note["message"] and "PHB" in note["message"]
    plan = build_plan(ollama_vars(), {"gpus": gpus, "topology": parse_topology(TOPO_3090X2_NVLINK)})
    assert plan["layout"]["gpus"] == [0]  # the model fits one card: Ollama uses the fewest GPUs
    assert "topology-assumed" not in ids(plan)


def test_the_seed_host_without_its_topology_text_gets_tp2_and_a_warning():
    variables, hardware = example("agent-2x5060ti")
    plan = build_plan(variables, dict(hardware, topology={}))
    assert (plan["layout"]["tensor_parallel_size"], plan["layout"]["pipeline_parallel_size"]) == (2, 1)
    assert "topology-assumed" in ids(plan, "warning")
    # PHB without peer-to-peer on GeForce cards: NCCL over the host, custom all-reduce off
    assert plan["environment"]["NCCL_P2P_DISABLE"] == "1"
    assert "--disable-custom-all-reduce" in plan["command"]


def test_no_gpus_is_a_clear_error():
    with pytest.raises(PlanInputError, match="no GPUs to plan for: declare inferops_gpus"):
        build_plan(ollama_vars(), {"gpus": []})


def test_secrets_in_the_host_variables_never_reach_the_plan():
    variables = ollama_vars(
        vllm_api_key=API_KEY,
        vllm_hf_token=HF_TOKEN,
        ollama_environment_extra={"OLLAMA_KEEP_ALIVE": "24h"},
    )
    plan = build_plan(variables, one_3090(), host="h")
    text = json.dumps(plan) + render_markdown(plan)
    assert API_KEY not in text
    assert HF_TOKEN not in text
    assert plan["environment"]["OLLAMA_KEEP_ALIVE"] == "24h"


def test_inputs_are_not_modified():
    variables = ollama_vars()
    hardware = one_3090()
    before = copy.deepcopy((variables, hardware))
    build_plan(variables, hardware)
    assert (variables, hardware) == before


# ------------------------------------------------------------------------------ report


def test_markdown_and_table_show_the_plan():
    plan = build_plan(ollama_vars(), one_3090(), host="gguf-3090")
    markdown = render_markdown(plan)
    assert markdown.startswith("# Plan for gguf-3090\n")
    assert "| context_length | 65,536 | inventory |" in markdown
    assert "OLLAMA_CONTEXT_LENGTH=65536 \\\n" in markdown
    assert markdown.rstrip().endswith("ollama serve\n```")
    header, separator, row, failed = render_table([plan, {"host": "broken"}])
    assert header.split("|")[1].strip() == "host"
    assert set(separator) <= {"|", "-"}
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert cells[:3] == ["gguf-3090", "ollama 0.30.4", f"unsloth/Qwen3.5-35B-A3B-GGUF@{COMMIT}"]
    assert cells[-1] == "0 error, 0 warning"
    assert "no plan" in failed
    assert len({len(line) for line in (header, separator, row, failed)}) == 1


# ------------------------------------------------------------------------------ vLLM plans

EXAMPLE = Path(__file__).resolve().parents[5] / "inventories" / "example"


def example(host: str):
    """(variables, hardware) of a host of the bundled example inventory."""
    variables = yaml.safe_load((EXAMPLE / "host_vars" / f"{host}.yml").read_text())
    groups = yaml.safe_load((EXAMPLE / "hosts.yml").read_text())["all"]["children"]
    (group, *_others) = [name for name, content in groups.items() if host in content["hosts"] and name != "gateway"]
    variables.update(yaml.safe_load((EXAMPLE / "group_vars" / f"{group}.yml").read_text()))
    hardware = {
        "gpus": variables["inferops_gpus"],
        "topology": parse_topology(variables["inferops_gpu_topology_text"]),
        "driver": variables["inferops_gpu_driver"],
    }
    return variables, hardware


def ids(plan, severity=None):
    return {c["id"] for c in plan["checks"] if severity is None or c["severity"] == severity}


def test_vllm_plan_has_the_documented_keys_and_types():
    variables, hardware = example("agent-2x5060ti")
    plan = build_plan(variables, hardware, host="agent-2x5060ti")
    assert list(plan) == [*PLAN_KEYS, "standby_ollama"]  # this host keeps Ollama on standby
    assert set(plan["model"]) == MODEL_KEYS
    assert plan["model"]["weights_source"].startswith("parameter counts x bits per weight (awq")
    assert set(plan["layout"]) == LAYOUT_KEYS
    assert set(plan["memory"]) == MEMORY_KEYS
    for key in ("gpu_total_gib", "weights_gib", "overhead_gib", "kv_cache_gib", "vram_used_gib", "max_concurrency"):
        assert isinstance(plan["memory"][key], float), key
    assert isinstance(plan["memory"]["kv_cache_tokens"], int)
    # Qwen3.6-35B-A3B with fp8 KV: the GDN state pads the attention page to 2096 tokens per block.
    assert plan["memory"]["block_size"] == 2096
    assert [g["index"] for g in plan["memory"]["per_gpu"]] == [0, 1]
    assert all(set(entry) >= {"value", "source"} for entry in plan["settings"].values())
    assert {entry["source"] for entry in plan["settings"].values()} <= {"inventory", "default", "chosen"}
    json.dumps(plan)


def test_vllm_settings_sources_and_the_rendered_service():
    variables, hardware = example("agent-2x5060ti")
    plan = build_plan(variables, hardware, host="agent-2x5060ti")
    settings = plan["settings"]
    assert settings["max_model_len"] == {"value": 65536, "source": "inventory"}
    assert settings["tool_call_parser"] == {"value": "qwen3_coder", "source": "inventory"}
    assert settings["reasoning_parser"]["source"] == "chosen"
    assert settings["reasoning_parser"]["value"] == "qwen3"
    assert settings["gpu_memory_utilization"] == {"value": 0.92, "source": "default", "reason": "vLLM 0.26.0 default"}
    assert settings["mamba_cache_mode"]["value"] == "align"
    argv = plan["command"]
    assert argv[:5] == ["vllm", "serve", "QuantTrio/Qwen3.6-35B-A3B-AWQ", "--revision", "main"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "4096"
    assert argv[argv.index("--attention-backend") + 1] == "TRITON_ATTN"
    assert "--enable-prefix-caching" in argv
    assert "--reasoning-parser" in argv  # chosen settings are rendered...
    assert "--gpu-memory-utilization" not in argv  # ...the release's own defaults are not
    # Two GeForce cards without peer-to-peer: NCCL P2P and custom all-reduce off, GPUs in rank order.
    assert "--disable-custom-all-reduce" in argv
    assert plan["environment"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert plan["environment"]["NCCL_P2P_DISABLE"] == "1"


def test_the_documented_deployments_pass_their_checks():
    # The nodes of a cluster (inferops_cluster) are planned together, as plan.yml and the plan role do.
    members = []
    for host_vars in sorted((EXAMPLE / "host_vars").glob("*.yml")):
        variables, hardware = example(host_vars.stem)
        members.append(Member(host=host_vars.stem, variables=variables, hardware=hardware))
    for host, entry in plan_fleet(members).items():
        assert ids(entry["plan"], "error") == set(), (host, entry["plan"]["checks"])


def test_old_settings_carried_over_to_a_hybrid_model_fail_as_in_the_write_up():
    # seeds/000: the Qwen3-32B settings on Qwen3.6-35B-A3B with vLLM 0.26.0.
    variables, hardware = example("agent-2x5060ti")
    variables.update(
        vllm_tool_call_parser="hermes",
        vllm_max_num_batched_tokens=2048,
        vllm_max_num_seqs=32,
        vllm_hf_overrides={
            "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768}
        },
    )
    plan = build_plan(variables, hardware)
    assert {"tool-call-parser", "rope-scaling", "mamba-block-size"} <= ids(plan, "error")
    assert "max-num-seqs" in ids(plan)
    (block,) = [c for c in plan["checks"] if c["id"] == "mamba-block-size"]
    assert "2096" in block["message"]
    assert "vllm_max_num_batched_tokens" in block["message"]


def test_unset_settings_are_chosen_so_that_the_checks_pass():
    variables, hardware = example("agent-2x5060ti")
    for name in [n for n in variables if n.startswith("vllm_") and n != "vllm_version"]:
        del variables[name]
    plan = build_plan(variables, hardware)
    assert ids(plan, "error") == set()
    settings = plan["settings"]
    # 0.26.0 asserts block_size <= max_num_batched_tokens for hybrids in align mode (the default there).
    assert settings["max_num_batched_tokens"]["source"] == "chosen"
    assert settings["max_num_batched_tokens"]["value"] >= plan["memory"]["block_size"]
    assert settings["tool_call_parser"] == {
        "value": "qwen3_coder",
        "source": "chosen",
        "reason": settings["tool_call_parser"]["reason"],
    }
    assert plan["layout"]["tensor_parallel_size"] * plan["layout"]["pipeline_parallel_size"] == 2
    assert settings["tensor_parallel_size"]["source"] == "chosen"


def test_auto_max_model_len_is_predicted_and_left_to_vllm():
    variables, hardware = example("desktop-5090")
    plan = build_plan(variables, hardware)
    entry = plan["settings"]["max_model_len"]
    assert entry["source"] == "inventory"
    assert isinstance(entry["value"], int)
    assert 0 < entry["value"] <= 262144
    argv = plan["command"]
    assert argv[argv.index("--max-model-len") + 1] == "-1"
    assert argv[argv.index("--limit-mm-per-prompt") + 1] == '{"video":0}'
    assert plan["environment"]["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "1"


def test_nvlink_pairs_carry_the_tensor_parallel_groups():
    variables, hardware = example("bf16-4x3090")
    plan = build_plan(variables, hardware)
    assert plan["layout"]["tensor_parallel_size"] == 2
    assert plan["layout"]["pipeline_parallel_size"] == 2
    assert plan["layout"]["gpus"] in ([0, 1, 2, 3], [2, 3, 0, 1])
    assert "NCCL_P2P_DISABLE" not in plan["environment"]
    assert "--disable-custom-all-reduce" not in plan["command"]


def test_measured_overhead_replaces_the_model_only_for_the_same_configuration():
    variables, hardware = example("longctx-h100")
    modelled = build_plan(variables, hardware)
    # The shape the vLLM role stores in /etc/ansible/facts.d/inferops_vllm.fact after a healthy start.
    measured = {
        "schema": 1,
        "version": "0.21.0",
        "model": {"repo": "88plug/Qwen3.6-35B-A3B-W8A16", "revision": "main"},
        "layout": {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "gpus": [0]},
        "settings": {"max_num_batched_tokens": 4096, "max_num_seqs": 2},
        "overhead_gib": 6.5,
    }
    calibrated = build_plan(variables, hardware, measured=measured)
    assert calibrated["memory"]["overhead_gib"] == 6.5
    assert calibrated["memory"]["kv_cache_gib"] < modelled["memory"]["kv_cache_gib"]
    for changed, name in (
        ({"version": "0.20.1"}, "vllm_version"),
        ({"settings": {"max_num_batched_tokens": 8192}}, "max_num_batched_tokens"),
        ({"model": {"repo": "88plug/Qwen3.6-35B-A3B-W8A16", "revision": COMMIT}}, "revision"),
    ):
        stale = build_plan(variables, hardware, measured={**measured, **changed})
        assert stale["memory"]["overhead_gib"] == modelled["memory"]["overhead_gib"]
        assert any(f"{name} changed" in c["message"] for c in stale["checks"]), name


def test_vllm_secrets_never_reach_plan_command_or_environment():
    variables, hardware = example("longctx-h100")
    variables.update(vllm_api_key=API_KEY, vllm_hf_token=HF_TOKEN, hf_token=HF_TOKEN)
    plan = build_plan(variables, hardware)
    text = json.dumps(plan) + render_markdown(plan)
    assert API_KEY not in text
    assert HF_TOKEN not in text
    assert not {"--api-key", "--hf-token"} & {arg.split("=")[0] for arg in plan["command"]}


def test_a_host_without_driver_is_told_how_to_get_gpu_memory():
    gathered = {
        "gpus": [{"index": 0, "name": None, "memory_mib": None, "pcie_gen_max": 4}],
        "topology": {},
        "driver": {"driver_loaded": False, "driver_version": None},
    }
    with pytest.raises(PlanInputError, match="memory is unknown until the NVIDIA driver is loaded"):
        build_plan(ollama_vars(), gathered)


def test_ollama_listen_address_follows_the_role_variables():
    plan = build_plan(ollama_vars(ollama_host="0.0.0.0"), one_3090())
    assert plan["environment"]["OLLAMA_HOST"] == "0.0.0.0:11434"
    plan = build_plan(ollama_vars(ollama_port=11500), one_3090())
    assert plan["environment"]["OLLAMA_HOST"] == "127.0.0.1:11500"
    assert input_errors(ollama_vars(ollama_port="http")) == ["ollama_port must be a TCP port such as 11434, got 'http'"]


def test_download_patterns_are_accepted_in_the_model_description():
    # model_download reads allow_patterns / ignore_patterns from the same inferops_model mapping.
    model = {"repo": "Qwen/Qwen3-8B", "revision": "main", "allow_patterns": ["*.json"], "ignore_patterns": ["*.pth"]}
    errors = input_errors({"inferops_engine": "vllm", "vllm_version": "0.33.0", "inferops_model": model})
    assert not any("unknown keys" in error for error in errors)


# ------------------------------------------------------------------------------ Ollama on standby beside vLLM

STANDBY = {
    "version": "0.30.4",
    "model": {
        "repo": "Qwen/Qwen3-8B-GGUF",
        "revision": COMMIT,
        "file": "Qwen3-8B-Q4_K_M.gguf",
        "weights_bytes": 5_027_783_488,
        "base_model": "Qwen/Qwen3-8B",
    },
}


def vllm_on_gpu0_of_two_3090s(**overrides):
    """Qwen3-8B on GPU 0 of two NVLinked RTX 3090s; GPU 1 is free for Ollama."""
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT},
        "vllm_gpus": [0],
        "vllm_max_model_len": 8192,
    }
    variables.update(overrides)
    hardware = {
        "gpus": [dict(RTX3090, index=0), dict(RTX3090, index=1)],
        "topology": parse_topology(TOPO_3090X2_NVLINK),
        "driver": {"driver_loaded": True, "driver_version": "580.95.05"},
    }
    return variables, hardware


def test_standby_ollama_warns_when_both_engines_cannot_be_resident():
    # Seed deployment 1: vLLM takes 0.92 of both 16 GB cards; an 8B Q4_K_M with its default context does not fit beside.
    variables, hardware = example("agent-2x5060ti")
    plan = build_plan(variables, hardware, host="agent-2x5060ti")
    (warning,) = [c for c in plan["checks"] if c["id"] == "ollama-coresidency"]
    assert warning["severity"] == "warning"
    assert "vllm_gpu_memory_utilization" in warning["message"]
    assert "inferops_standby_ollama.gpus" in warning["message"]
    assert ids(plan, "error") == set()
    standby = plan["standby_ollama"]
    assert standby["engine_version"] == "0.30.4"
    assert standby["model"] == {"repo": "Qwen/Qwen3-8B-GGUF", "revision": "main", "file": "Qwen3-8B-Q4_K_M.gguf"}
    assert standby["gpus"] == [0]  # Ollama takes the fewest GPUs that hold the model
    assert 5_027_783_488 / 2**30 < standby["vram_used_gib"] < 16
    json.dumps(plan)


def test_standby_ollama_on_a_gpu_vllm_does_not_use_is_not_warned():
    variables, hardware = vllm_on_gpu0_of_two_3090s(inferops_standby_ollama=dict(STANDBY, gpus=[1]))
    plan = build_plan(variables, hardware)
    assert plan["layout"]["gpus"] == [0]
    assert plan["standby_ollama"]["gpus"] == [1]
    assert "ollama-coresidency" not in ids(plan)
    assert ids(plan, "error") == set()
    # The same model on vLLM's GPU is warned about, and fits once vLLM leaves it room.
    variables["inferops_standby_ollama"] = dict(STANDBY, gpus=[0], context_length=4096)
    assert "ollama-coresidency" in ids(build_plan(variables, hardware, host="h"), "warning")
    variables["vllm_gpu_memory_utilization"] = 0.6
    assert "ollama-coresidency" not in ids(build_plan(variables, hardware))


def test_plans_without_standby_ollama_have_no_standby_key():
    variables, hardware = vllm_on_gpu0_of_two_3090s()
    assert list(build_plan(variables, hardware)) == PLAN_KEYS
    assert "inferops_standby_ollama" in input_names("vllm")
    assert "inferops_standby_ollama" not in input_names("ollama")


@pytest.mark.parametrize(
    ("standby", "expected"),
    [
        ("ollama", "inferops_standby_ollama must be a mapping with version"),
        (dict(STANDBY, version="latest"), "inferops_standby_ollama.version must be an exact ollama release"),
        ({"model": STANDBY["model"]}, "inferops_standby_ollama.version is required"),
        (dict(STANDBY, model=None), "inferops_standby_ollama.model is required"),
        (
            dict(STANDBY, model={"repo": "Qwen/Qwen3-8B-GGUF", "revision": "main"}),
            "inferops_standby_ollama.model.weights_bytes is required",
        ),
        (
            dict(STANDBY, model=dict(STANDBY["model"], weights_bytes=-1)),
            "inferops_standby_ollama.model.weights_bytes must be a positive",
        ),
        (dict(STANDBY, gpus="0"), "inferops_standby_ollama.gpus must be a non-empty list"),
        (dict(STANDBY, kv_cache_type="q5_1"), "inferops_standby_ollama.kv_cache_type must be one of"),
        (dict(STANDBY, num_parallel=0), "inferops_standby_ollama.num_parallel is out of range: it must be from 1 to"),
        (dict(STANDBY, num_gpu=99), "inferops_standby_ollama has unknown keys 'num_gpu'"),
    ],
)
def test_standby_ollama_input_errors_name_the_variable(standby, expected):
    variables, _hardware = vllm_on_gpu0_of_two_3090s(inferops_standby_ollama=standby)
    errors = input_errors(variables)
    assert any(error.startswith(expected) for error in errors), errors


def test_standby_ollama_errors_found_while_planning_name_the_variable():
    variables, hardware = vllm_on_gpu0_of_two_3090s(inferops_standby_ollama=dict(STANDBY, gpus=[2]))
    with pytest.raises(PlanInputError, match=r"^inferops_standby_ollama.gpus lists GPU 2, which the host does not"):
        build_plan(variables, hardware)
    unknown = dict(STANDBY, model=dict(STANDBY["model"], base_model="Nobody/NoSuchModel"))
    variables, hardware = vllm_on_gpu0_of_two_3090s(inferops_standby_ollama=unknown)
    with pytest.raises(PlanInputError, match=r"^inferops_standby_ollama.model.base_model 'Nobody/NoSuchModel'"):
        build_plan(variables, hardware)
    old = dict(STANDBY, version="0.5.7")
    variables, hardware = vllm_on_gpu0_of_two_3090s(inferops_standby_ollama=old)
    with pytest.raises(PlanInputError, match=r"^inferops_standby_ollama.version 0.5.7: planning supports Ollama 0.9.7"):
        build_plan(variables, hardware)


def test_standby_ollama_belongs_to_vllm_hosts():
    errors = input_errors(ollama_vars(inferops_standby_ollama=STANDBY))
    assert errors == [
        "inferops_standby_ollama describes an Ollama kept beside vLLM; on an Ollama host use inferops_model and the "
        "ollama_* variables instead"
    ]


def test_with_a_fixed_kv_cache_size_vllm_holds_what_it_uses():
    # vllm_kv_cache_memory_bytes replaces gpu_memory_utilization: vLLM holds weights, overhead and that KV cache.
    standby = dict(STANDBY, gpus=[0], context_length=4096)
    # 16 sequences: vLLM's default 256 would warm the sampler up over 256 x the vocabulary (2 GiB more overhead).
    variables, hardware = vllm_on_gpu0_of_two_3090s(
        inferops_standby_ollama=standby, vllm_max_model_len=4096, vllm_max_num_seqs=16
    )
    assert "ollama-coresidency" in ids(build_plan(variables, hardware))
    variables["vllm_kv_cache_memory_bytes"] = "1g"
    plan = build_plan(variables, hardware)
    assert plan["memory"]["vram_used_gib"] + plan["standby_ollama"]["vram_used_gib"] < plan["memory"]["gpu_total_gib"]
    assert "ollama-coresidency" not in ids(plan)
    assert ids(plan, "error") == set()
    variables["vllm_kv_cache_memory_bytes"] = "4g"
    assert "ollama-coresidency" in ids(build_plan(variables, hardware), "warning")


RTX_PRO_6000 = {
    "name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "memory_mib": 97887,
    "compute_capability": "12.0",
    "pcie_gen_max": 5,
    "pcie_gen_current": 5,
    "pcie_width_max": 16,
    "pcie_width_current": 16,
}
QWEN3_235B_FP8 = json.loads(
    (
        Path(__file__).resolve().parents[3] / "fixtures" / "model_configs" / "Qwen--Qwen3-235B-A22B-FP8_config.json"
    ).read_text()
)


CHATGLM3_6B = json.loads(
    (Path(__file__).resolve().parents[3] / "fixtures" / "model_configs" / "THUDM--chatglm3-6b_config.json").read_text()
)


def test_a_chatglm_checkpoint_plans_with_its_own_key_names():
    """THUDM/chatglm3-6b names its vocabulary padded_vocab_size and its 2 KV heads multi_query_group_num (vLLM's
    ChatGLMConfig): the plan read neither (no vocab_size: an error) and would have cached 32 heads a layer."""
    variables, hardware = example("desktop-5090")
    variables["inferops_model"] = {"repo": "THUDM/chatglm3-6b", "revision": COMMIT, "config": CHATGLM3_6B}
    variables["inferops_model"]["weights_bytes"] = 12_487_168_064
    plan = build_plan(variables, hardware, host="desktop-5090")
    assert ids(plan, "error") == set()
    assert plan["model"]["architecture"] == "ChatGLMModel"
    per_token = plan["memory"]["kv_cache_gib"] * 2**30 / plan["memory"]["kv_cache_tokens"]
    assert per_token == pytest.approx(28 * 2 * 2 * 128 * 2, rel=1e-3)  # layers x K,V x heads x head dim x 2 bytes


def test_a_pinned_tensor_parallel_size_is_a_constraint_within_the_host():
    """4x RTX PRO 6000 with vllm_tensor_parallel_size 4: TP=4 PP=1 on the four GPUs, not TP=4 x an automatic PP."""
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "vllm_tensor_parallel_size": 4,
        "inferops_model": {"repo": "Qwen/Qwen3-235B-A22B-FP8", "revision": COMMIT, "config": QWEN3_235B_FP8},
    }
    gpus = [dict(RTX_PRO_6000, index=i) for i in range(4)]
    plan = build_plan(variables, {"gpus": gpus})
    layout = plan["layout"]
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"], layout["gpus"]) == (4, 1, [0, 1, 2, 3])
    assert ids(plan, "error") == set()
    pinned_tp1 = build_plan(dict(variables, vllm_tensor_parallel_size=1), {"gpus": gpus})
    assert pinned_tp1["layout"]["tensor_parallel_size"] == 1
    assert pinned_tp1["layout"]["pipeline_parallel_size"] * 1 <= 4  # the search chooses PP within the host
    assert ids(pinned_tp1, "error") == set()


def test_the_checkpoint_image_processor_sets_the_encoder_profile(tmp_path):
    # Issue 17: the Qwen3.5/3.6 encoder profile is one dummy image at the checkpoint's size.longest_edge; the
    # plan reads preprocessor_config.json beside inferops_model.config_file, else charges the family's value.
    variables, hardware = example("desktop-5090")
    default = build_plan(copy.deepcopy(variables), hardware, host="desktop-5090")
    config = find_model("Qwen/Qwen3.5-35B-A3B").config
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"longest_edge": 4194304}}))
    variables["inferops_model"]["config_file"] = str(tmp_path / "config.json")
    read = build_plan(variables, hardware, host="desktop-5090")

    def message(plan):
        return next(c["message"] for c in plan["checks"] if "multimodal encoder profile" in c["message"])

    assert "16,777,216 pixels" in message(default) and "family's published value" in message(default)
    assert "4,194,304 pixels, from the checkpoint's image processor" in message(read)
    assert read["memory"]["overhead_gib"] < default["memory"]["overhead_gib"]
