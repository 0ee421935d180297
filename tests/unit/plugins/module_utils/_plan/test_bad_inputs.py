"""The bad-input corpus (bad_inputs/cases.yml): every case planned as plan.yml plans it (_plan/fleet.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._core.safety import looks_like_secret
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown, render_table

CASES = yaml.safe_load((Path(__file__).parent / "bad_inputs" / "cases.yml").read_text(encoding="utf-8"))["cases"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BASES = {
    "vllm": {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "Qwen/Qwen3-8B", "revision": COMMIT},
        "vllm_max_model_len": 8192,
    },
    "ollama": {
        "inferops_engine": "ollama",
        "ollama_version": "0.30.4",
        "inferops_model": {
            "repo": "unsloth/Qwen3.5-35B-A3B-GGUF",
            "revision": COMMIT,
            "file": "Qwen3.5-35B-A3B-UD-Q3_K_XL.gguf",
            "base_model": "Qwen3.5-35B-A3B",
            "weights_bytes": 16_589_310_180,
        },
        "ollama_context_length": 8192,
    },
}


def _hardware(spec):
    spec = spec or {}
    gpus = [
        {
            "index": i,
            "name": "NVIDIA GeForce RTX 3090",
            "memory_mib": spec.get("memory_mib", 24576),
            "compute_capability": "8.6",
        }
        for i in range(spec.get("gpus", 1))
    ]
    return {"gpus": gpus, "topology": {}, "driver": {"driver_loaded": True, "driver_version": "580.95.05"}}


def _plan(case):
    variables = dict(BASES[case.get("base", "vllm")])
    variables.update(case.get("set", {}))
    member = Member(host="h", variables=variables, hardware=_hardware(case.get("hardware")))
    return plan_fleet([member])["h"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input(case):
    result = _plan(case)
    errors = result.get("errors", [])
    plan = result.get("plan")
    checks = plan["checks"] if plan else []
    if "refused" in case:
        assert errors, f"accepted: {checks}"
        named = [e for e in errors if e.startswith(case["refused"])]
        assert named, f"no error starts with {case['refused']}: {errors}"
        if "says" in case:
            assert any(case["says"] in e for e in named), named
    for key, severity in (("finding", "error"), ("warning", "warning")):
        if key in case:
            expected = case[key]
            assert not errors, errors
            found = [c for c in checks if c["id"] == expected["id"] and c["severity"] == severity]
            assert any(expected["variable"] in c["message"] for c in found), checks
            if "says" in case:
                assert any(case["says"] in c["message"] for c in found), found
    if case.get("passes"):
        assert not errors, errors
    for absent in case.get("absent", []):
        assert plan and absent not in [c["id"] for c in checks], checks
    texts = list(errors)
    if plan:
        texts += [json.dumps(plan), render_markdown(plan)]
    texts.append(render_table([plan or {"host": "h", "error": "; ".join(errors)}]))
    for text in texts:
        for secret in case.get("must_not_contain", []):
            assert secret not in text
    for message in errors + [c["message"] for c in checks]:
        assert not any(c in message for c in "\r\n\x00"), message
        assert not looks_like_secret(message), message


def test_the_corpus_covers_every_class():
    refused = {c["refused"].split(".")[0].split("[")[0] for c in CASES if "refused" in c}
    assert {"vllm_extra_args", "inferops_model", "vllm_environment", "vllm_version", "vllm_gpus"} <= refused
    assert len(CASES) >= 60
