"""_hardware/gpu_specs.py and the plan of a GPU missing there: memory planned, no invented speed (issue 26)."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._hardware.gpu_specs import gpu_spec
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_table

COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "NVIDIA GeForce RTX 3080 Laptop GPU",
        "NVIDIA GeForce RTX 2080 with Max-Q Design",
        "NVIDIA Quadro RTX 5000 Mobile",
    ],
)
def test_a_laptop_part_never_matches_the_desktop_row(name):
    spec = gpu_spec(name)
    assert spec is None or "laptop" in spec.model.lower() or "mobile" in spec.model.lower(), spec


def _plan(name):
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "meta-llama/Llama-3.1-8B-Instruct", "revision": COMMIT},
        "vllm_max_model_len": 8192,
    }
    gpus = [{"index": 0, "name": name, "memory_mib": 24576, "compute_capability": "8.9"}]
    return build_plan(variables, {"gpus": gpus, "topology": {}, "driver": {}}, host="h")


def test_an_unknown_gpu_gets_memory_and_no_invented_speed():
    name = "NVIDIA Imaginary 9000"
    plan = _plan(name)
    (finding,) = [c for c in plan["checks"] if c["id"] == "gpu-specs-unknown"]
    assert finding["severity"] == "warning"
    assert name in finding["message"] and "gpu_specs.json" in finding["message"]
    performance = plan["performance"]
    for key in ("single_stream_decode_tokens_per_s", "aggregate_decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s"):
        assert performance[key] is None, key
        assert all(alternative[key] is None for alternative in performance["alternatives"])
    assert "no speed predicted" in performance["basis"]
    assert performance["concurrency"] >= 1
    assert plan["memory"]["kv_cache_tokens"] > 0  # memory does not need the table
    header, _separator, row = render_table([plan])
    cells = dict(zip((c.strip() for c in header.split("|")[1:-1]), (c.strip() for c in row.split("|")[1:-1])))
    assert cells["decode tok/s"] == "-"


def test_a_known_gpu_has_its_speed_and_no_finding():
    plan = _plan("NVIDIA GeForce RTX 4090")
    assert "gpu-specs-unknown" not in {c["id"] for c in plan["checks"]}
    assert plan["performance"]["single_stream_decode_tokens_per_s"] > 0


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "GeForce RTX 4090 Laptop"),
        ("NVIDIA GeForce RTX 4060 Laptop GPU", "GeForce RTX 4060 Laptop"),
        ("NVIDIA GeForce RTX 5090 Laptop GPU", "GeForce RTX 5090 Laptop"),
        ("NVIDIA GeForce RTX 5070 Ti Laptop GPU", "GeForce RTX 5070 Ti Laptop"),
        ("NVIDIA GeForce RTX 5070 Laptop GPU", "GeForce RTX 5070 Laptop"),
        ("NVIDIA GeForce RTX 3080 Laptop GPU", "GeForce RTX 3080 Laptop"),
        ("NVIDIA RTX 2000 Ada Generation", "RTX 2000 Ada"),
        ("NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada"),
        ("NVIDIA RTX A2000 12GB", "RTX A2000"),
        ("NVIDIA RTX A5500", "RTX A5500"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ],
)
def test_laptop_and_workstation_parts_have_their_own_rows(name, model):
    assert gpu_spec(name).model == model


def test_a_laptop_row_is_slower_than_its_desktop_namesake():
    for number in ("4090", "4080", "5090", "5080", "3080"):
        laptop = gpu_spec(f"NVIDIA GeForce RTX {number} Laptop GPU")
        desktop = gpu_spec(f"NVIDIA GeForce RTX {number}")
        assert laptop.memory_bandwidth_gbps < desktop.memory_bandwidth_gbps, number
        assert laptop.source.startswith("https://") and "Laptop" in laptop.source
