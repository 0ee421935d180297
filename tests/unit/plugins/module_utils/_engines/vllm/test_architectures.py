# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Which architectures each vLLM release's model registry lists (architectures.json, architectures.py) and
the architecture-unsupported check; cases in architectures_cases.yml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.architectures import (
    ARCHITECTURE_DATA,
    READ_RELEASES,
    registry_size,
    support,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks import check_vllm
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.architecture import (
    check_architecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    RELEASES,
    parse_vllm_version,
    vllm_version,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import catalogue_ids, find_model
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

HERE = Path(__file__).resolve().parent
TABLE = yaml.safe_load((HERE / "architectures_cases.yml").read_text(encoding="utf-8"))
CASES = TABLE["cases"]
CONFIGS = HERE.parents[3] / "fixtures" / "model_configs"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_support(case):
    verdict = support(case["architecture"], parse_vllm_version(case["version"]))
    assert verdict.status == case["status"]
    assert verdict.release == case.get("release")
    if case["status"] in ("later", "removed"):
        assert verdict.passing == case["passing"]
        # the release named passes
        assert support(case["architecture"], parse_vllm_version(case["passing"])).status == "listed"


@pytest.mark.parametrize("case", [c for c in CASES if c["status"] != "unread"], ids=lambda c: c["id"])
def test_finding(case):
    vv = vllm_version(case["version"]) if parse_vllm_version(case["version"]) >= (0, 10) else None
    if vv is None:
        pytest.skip("vllm_version refuses V0 releases before any check runs")
    found = check_architecture(vv, {"architecture": case["architecture"]}, "Org/Model")
    if case["status"] == "listed":
        assert found == []
        return
    (finding,) = [f.entry() for f in found]  # check_vllm makes the entries; the family returns Finding
    assert finding["id"] == "architecture-unsupported"
    assert "inferops_model Org/Model" in finding["message"] and "vllm_version" in finding["message"]
    assert case["architecture"] in finding["message"]
    if case["status"] == "unknown":
        assert finding["severity"] == "warning" and finding["variable"] == "inferops_model.repo"
        assert "Transformers backend" in finding["message"]
    else:
        assert finding["severity"] == "error"
        assert finding["variable"] == "vllm_version" and finding["suggested"] == case["passing"]
        assert case["passing"] in finding["message"]


@pytest.mark.parametrize("case", TABLE["lists"], ids=lambda c: c["id"])
def test_vllm_serves_the_first_class_its_registry_lists(case):
    vv = vllm_version(case["version"])
    names = case["architectures"]
    found = check_architecture(vv, {"architecture": names[0], "architectures": names}, "Org/Model")
    if case["severity"] == "none":
        assert found == []
        return
    (finding,) = [f.entry() for f in found]  # check_vllm makes the entries; the family returns Finding
    assert finding["id"] == "architecture-unsupported" and finding["severity"] == case["severity"]
    assert names[0] in finding["message"] and "vllm_version" in finding["message"]
    if case["severity"] == "info" and case.get("converted"):
        assert f"does not list {names[0]} but converts it from {case['converted']}" in finding["message"]
        assert support(case["converted"], parse_vllm_version(case["version"])).status == "listed"
    elif case["severity"] == "info":
        assert f"serves the model as {case['served']}" in finding["message"]
    elif case["severity"] == "error":
        assert (finding["variable"], finding["suggested"]) == ("vllm_version", case["passing"])
        assert all(name in finding["message"] for name in names)
        # the release named passes: one of the classes is listed there
        assert any(support(name, parse_vllm_version(case["passing"])).status == "listed" for name in names)
    else:
        assert finding["variable"] == "inferops_model.repo" and "Transformers backend" in finding["message"]


def test_the_plan_checks_every_class_of_the_config():
    config = json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text(encoding="utf-8"))
    model = {
        "repo": "Org/Model",
        "revision": "0" * 40,
        "config": dict(config, architectures=["MadeUpForCausalLM", "Qwen3ForCausalLM"]),
    }
    gpu = {"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "compute_capability": "9.0", "index": 0}
    plan = build_plan({"inferops_engine": "vllm", "vllm_version": "0.33.0", "inferops_model": model}, {"gpus": [gpu]})
    found = [(f["severity"], f["message"]) for f in plan["checks"] if f["id"] == "architecture-unsupported"]
    assert [severity for severity, _message in found] == ["info"]
    assert "serves the model as Qwen3ForCausalLM" in found[0][1]
    assert ModelArchitecture.from_config(model["config"]).architectures == ("MadeUpForCausalLM", "Qwen3ForCausalLM")


def test_gguf_architecture_is_not_a_registry_name():
    vv = vllm_version("0.20.0")
    assert check_architecture(vv, {"architecture": "qwen3moe"}, "Org/Model-GGUF", "gguf") == []


def test_check_vllm_refuses_before_anything_starts():
    config = json.loads((CONFIGS / "Qwen--Qwen3.5-35B-A3B_config.json").read_text(encoding="utf-8"))
    model = ModelArchitecture.from_config(config)
    gpu = {"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "compute_capability": "9.0", "index": 0}
    settings = {"max_model_len": 8192, "tensor_parallel_size": 1}
    old = check_vllm(version="0.16.0", model=model, settings=settings, gpus=[gpu], repo="Qwen/Qwen3.5-35B-A3B")
    errors = [f for f in old if f["id"] == "architecture-unsupported"]
    assert [(f["severity"], f["variable"], f["suggested"]) for f in errors] == [("error", "vllm_version", "0.17.0")]
    new = check_vllm(version="0.17.0", model=model, settings=settings, gpus=[gpu], repo="Qwen/Qwen3.5-35B-A3B")
    assert not [f for f in new if f["id"] == "architecture-unsupported"]


def test_every_release_record_has_its_registry_read():
    assert set(RELEASES) <= set(READ_RELEASES)
    assert READ_RELEASES[0] == "0.8.0" and READ_RELEASES[-1] == "0.33.0"
    for release, read in ARCHITECTURE_DATA["releases_read"].items():
        assert read["tag"] == f"v{release}" and read["wheel"].startswith(f"vllm-{release}-")


def test_spans_are_ordered_and_counts_match():
    counts = dict.fromkeys(READ_RELEASES, 0)
    for name, entry in ARCHITECTURE_DATA["architectures"].items():
        previous_end = -1
        for first, last in entry["releases"]:
            start = READ_RELEASES.index(first)
            end = len(READ_RELEASES) - 1 if last is None else READ_RELEASES.index(last)
            assert previous_end + 1 < start or previous_end == -1, name  # a gap between spans
            assert start <= end, name
            for index in range(start, end + 1):
                counts[READ_RELEASES[index]] += 1
            previous_end = end
    assert counts == {release: registry_size(release) for release in READ_RELEASES}


def test_catalogue_and_fixture_architectures_are_in_the_newest_registry():
    names = {find_model(repo).architecture().architecture for repo in catalogue_ids()}
    for path in sorted(CONFIGS.glob("*_config.json")):
        config = json.loads(path.read_text(encoding="utf-8"))
        if config.get("architectures"):
            names.add(config["architectures"][0])
    newest = parse_vllm_version(READ_RELEASES[-1])
    assert {name: support(name, newest).status for name in names} == dict.fromkeys(names, "listed")


@pytest.mark.parametrize(
    "architecture, version, severity",
    [
        ("Qwen3_5ForCausalLM", "0.26.0", "error"),
        ("Qwen3_5ForCausalLM", "0.27.0", None),
        ("MadeUpForCausalLM", "0.33.0", "warning"),
    ],
)
def test_the_plan_reports_it(architecture, version, severity):
    config = json.loads((CONFIGS / "Qwen--Qwen3-8B_config.json").read_text(encoding="utf-8"))
    model = {"repo": "Org/Model", "revision": "0" * 40, "config": dict(config, architectures=[architecture])}
    gpu = {"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "compute_capability": "9.0", "index": 0}
    plan = build_plan({"inferops_engine": "vllm", "vllm_version": version, "inferops_model": model}, {"gpus": [gpu]})
    found = [f["severity"] for f in plan["checks"] if f["id"] == "architecture-unsupported"]
    assert found == ([severity] if severity else [])


def test_the_release_records_name_registry_classes():
    # v2_model_runner.architectures of each record: class names that release's registry lists
    named = [
        (release, name)
        for release, record in RELEASES.items()
        for name in record.get("v2_model_runner", {}).get("architectures", [])
    ]
    assert named and [(r, n) for r, n in named if support(n, parse_vllm_version(r)).status != "listed"] == []
