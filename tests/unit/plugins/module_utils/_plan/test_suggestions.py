"""Every suggested value is verified before it is shown (issue 26 part 4): _plan/suggestions.py, and the property
that every value a plan prints as one that passes removes its finding (hosts: the bad-input corpus, the batch-limit
and newcomer cases, and suggestion_grid.yml)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.cli import parse_extra_args
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.suggestions import verify_check, with_values

from . import test_bad_inputs as bad
from . import test_batch_limits as batch
from . import test_newcomer_cases as newcomer

HERE = Path(__file__).parent
GRID = yaml.safe_load((HERE / "suggestion_grid.yml").read_text(encoding="utf-8"))
COMMIT = "0123456789abcdef0123456789abcdef01234567"
DRIVER = {"driver_loaded": True, "driver_version": "580.95.05", "cuda_version": "13.0"}
RANK = {"info": 0, "warning": 1, "error": 2}


# ------------------------------------------------------------------------------------------- the logic


def _check(severity="warning", variable="vllm_max_num_seqs", value=12, check_id="max-num-seqs"):
    message = f"{variable}: too many"
    return {
        "id": check_id,
        "severity": severity,
        "message": f"{message} (a value that passes: {variable}: {value})",
        "suggestion": {"variable": variable, "value": value, "message": message},
    }


def test_a_value_that_clears_its_finding_is_kept():
    check = _check()
    seen = []
    result = verify_check(check, [check], lambda values: seen.append(values) or [])
    assert result["message"] == check["message"]
    assert seen == [{"vllm_max_num_seqs": 12}]


def test_a_value_that_leaves_its_finding_is_not_offered():
    check = _check()
    result = verify_check(check, [check], lambda values: [_check(value=6)])
    assert "a value that passes" not in result["message"]
    assert "no value that passes: vllm_max_num_seqs: 12 alone does not clear this" in result["message"]


def test_a_weaker_finding_of_the_same_id_does_not_block():
    check = _check(severity="warning")
    note = {"id": "max-num-seqs", "severity": "info", "message": "the KV cache holds 2.00 sequences"}
    assert verify_check(check, [check], lambda values: [note])["message"] == check["message"]


def test_a_new_error_blocks():
    check = _check()
    new = {"id": "memory-fit", "severity": "error", "message": "does not fit"}
    result = verify_check(check, [check], lambda values: [new])
    assert "with it the plan still reports memory-fit (does not fit)" in result["message"]


def test_a_value_the_plan_refuses_is_not_offered():
    check = _check(severity="error", variable="vllm_gpu_memory_utilization", value=-0.5, check_id="memory-fit")

    def refuse(values):
        raise PlanInputError(["vllm_gpu_memory_utilization is out of range: it must be at least 0.01, got -0.5"])

    result = verify_check(check, [check], refuse)
    assert "it would take vllm_gpu_memory_utilization: -0.5, which the plan refuses (" in result["message"]
    assert "a value that passes" not in result["message"]


def test_the_next_suggestion_is_tried_with_the_first():
    check = _check(severity="error", variable="vllm_max_model_len", value=8192, check_id="memory-fit")
    other = _check(severity="error", variable="vllm_kv_cache_dtype", value="fp8", check_id="memory-fit")

    def replan(values):
        return [] if values.get("vllm_kv_cache_dtype") == "fp8" else [other]

    result = verify_check(check, [check], replan)
    assert result["message"].endswith(
        '(values that pass together: vllm_max_model_len: 8192, vllm_kv_cache_dtype: "fp8")'
    )


def test_with_values_sets_a_key_of_a_mapping():
    variables = {"inferops_model": {"repo": "a/b"}, "vllm_max_model_len": 4096}
    changed = with_values(variables, {"inferops_model.quantization": "awq", "vllm_max_model_len": 8192})
    assert changed == {"inferops_model": {"repo": "a/b", "quantization": "awq"}, "vllm_max_model_len": 8192}
    assert variables["inferops_model"] == {"repo": "a/b"}


# ------------------------------------------------------------------------------------------ the property

_OFFER = re.compile(r"\((a value that passes|values that pass together): ")
_NAME = re.compile(r"([A-Za-z_][\w.]*): ")


def printed_suggestions(message):
    """Each {variable: value} the message offers as passing, parsed as plan_findings writes it (JSON values)."""
    offers = []
    decoder = json.JSONDecoder()
    for match in _OFFER.finditer(message):
        values, at = {}, match.end()
        while True:
            name = _NAME.match(message, at)
            assert name, message
            value, at = decoder.raw_decode(message, name.end())
            values[name.group(1)] = value
            if message.startswith(", ", at):
                at += 2
                continue
            assert message.startswith(")", at), message
            break
        offers.append(values)
    return offers


def _grid_hosts():
    rng = random.Random(GRID["seed"])
    hosts = []
    for number in range(GRID["count"]):
        gpu, count = rng.choice(GRID["gpus"]), rng.choice(GRID["gpu_counts"])
        variables = {
            "inferops_engine": "vllm",
            "vllm_version": rng.choice(GRID["versions"]),
            "inferops_model": {"repo": rng.choice(GRID["models"]), "revision": COMMIT},
            "vllm_max_model_len": rng.choice(GRID["contexts"]),
        }
        for name, choices in GRID["optional"].items():
            if rng.random() < GRID["optional_share"]:
                variables[name] = rng.choice(choices)
        hardware = {"gpus": [dict(gpu, index=i) for i in range(count)], "topology": {}, "driver": DRIVER}
        hosts.append(pytest.param(variables, hardware, id=f"grid-{number}"))
    return hosts


def _corpus_hosts():
    hosts = []
    for case in bad.CASES:
        variables = dict(bad.BASES[case.get("base", "vllm")], **case.get("set", {}))
        hosts.append(pytest.param(variables, bad._hardware(case.get("hardware")), id=f"bad-{case['name']}"))
    for case in batch.CASES:
        gpus = dict(case["gpus"])
        count = gpus.pop("count")
        variables = {"inferops_engine": "vllm", "vllm_version": "0.33.0", **case.get("variables", {})}
        variables["inferops_model"] = {"revision": batch.COMMIT, **case["model"]}
        hardware = {"gpus": [dict(gpus, index=i) for i in range(count)], "topology": {}, "driver": batch.DRIVER}
        hosts.append(pytest.param(variables, hardware, id=f"batch-{case['id']}"))
    for case in newcomer.CASES:
        # A cluster's nodes are planned together (test_cluster.py); a 16-GPU host takes about 10 s a plan (the
        # layout search's placements) and is planned, with its suggestions verified, by test_newcomer_cases.py.
        if int(case.get("nodes", 1)) == 1 and int(case.get("gpus", {}).get("count", 1)) <= 8:
            (member,) = newcomer._members(case)
            hosts.append(pytest.param(dict(member.variables), member.hardware, id=f"newcomer-{case['id']}"))
    return hosts


def _plan_or_none(variables, hardware):
    try:
        return build_plan(variables, hardware)
    except PlanInputError:
        return None  # an input error is no plan, so it prints no finding to verify


@pytest.mark.parametrize("variables, hardware", _corpus_hosts() + _grid_hosts())
def test_every_printed_suggestion_removes_its_finding(variables, hardware):
    plan = _plan_or_none(variables, hardware)
    if plan is None:
        return
    errors_before = {c["id"] for c in plan["checks"] if c["severity"] == "error"}
    for check in plan["checks"]:
        for values in printed_suggestions(check["message"]):
            again = build_plan(with_values(variables, values), hardware)  # raises when the plan refuses it
            for other in again["checks"]:
                still = (
                    other["id"] == check["id"]
                    and RANK[other["severity"]] >= RANK[check["severity"]]
                    and any(name in other["message"] for name in values)
                )
                assert not still, (values, check["message"], other["message"])
                if other["severity"] == "error":  # no new error, and a memory-fit fix fits
                    assert other["id"] in errors_before, (values, check["message"], other["message"])
                    assert not other["id"] == check["id"] == "memory-fit", (values, other["message"])


def _input_errors(variables, hardware):
    try:
        build_plan(variables, hardware)
    except PlanInputError as exc:
        return exc.errors
    return []


def _named(errors, variable):
    """The input errors about ``variable``: each input error starts with the variable it names."""
    return [e for e in errors if e.split(" ", 1)[0].split("[", 1)[0] == variable]


_MANAGED = re.compile(
    r"^vllm_extra_args sets (\S+)(?: \(written \S+\))?, which the plan manages: set ([\w.]+): (.+) instead$"
)


def _moved(variables, flag, target, value):
    """``variables`` with the managed flag taken out of vllm_extra_args and its value set as ``target``."""
    kept = [
        arg
        for option in parse_extra_args(variables["vllm_extra_args"])
        if option.flag != flag
        for arg in (option.written, *option.values)
    ]
    return with_values(dict(variables, vllm_extra_args=kept), {target: yaml.safe_load(value)})


@pytest.mark.parametrize("variables, hardware", _corpus_hosts() + _grid_hosts())
def test_every_value_an_input_error_offers_removes_it(variables, hardware):
    """Input errors too: a value offered as passing ("a value that passes", a managed flag's "set X: v instead")
    removes the error about that variable when set."""
    for error in _input_errors(variables, hardware):
        variable = error.split(" ", 1)[0].split("[", 1)[0]
        for values in printed_suggestions(error):
            again = _input_errors(with_values(variables, values), hardware)
            assert not _named(again, variable), (values, error, again)
        managed = _MANAGED.match(error)
        if managed:
            flag, target, value = managed.groups()
            again = _input_errors(_moved(variables, flag, target, value), hardware)
            assert not _named(again, "vllm_extra_args") + _named(again, target), (error, again)


@pytest.mark.parametrize("engine", ["vllm", "ollama"])
def test_the_release_a_version_error_names_plans(engine):
    """ "such as 0.30.0" named an Ollama release without a checksum, which the plan then refuses."""
    (error,) = _input_errors(dict(bad.BASES[engine], **{f"{engine}_version": "latest"}), bad._hardware(None))
    example = re.search(r"such as ([0-9.]+)", error).group(1)
    for arch in ("x86_64", "aarch64"):
        variables = dict(bad.BASES[engine], **{f"{engine}_version": example, "ollama_arch": arch})
        checks = build_plan(variables, bad._hardware(None))["checks"]
        assert not [c for c in checks if c["severity"] == "error"], (example, checks)


def test_input_errors_offer_values_to_verify():
    """The corpus has input errors that offer values (the property above is not vacuous)."""
    offers = [
        error
        for param in _corpus_hosts()
        for error in _input_errors(*param.values)
        if printed_suggestions(error) or _MANAGED.match(error)
    ]
    assert len(offers) >= 8, offers


def test_the_property_sees_suggestions():
    """The hosts above print suggestions to verify (the property is not vacuous) and some do not verify."""
    offered = withheld = 0
    for param in _grid_hosts():
        plan = _plan_or_none(*param.values)
        for check in plan["checks"] if plan else []:
            offered += len(printed_suggestions(check["message"]))
            withheld += "(no value that passes: " in check["message"]
    assert offered >= 10 and withheld >= 5, (offered, withheld)


def test_a_model_too_large_for_the_host_says_what_else_must_change():
    """No value of one variable fits DeepSeek-V3 on four RTX 4090: the finding says how many GPUs of this size
    the weights need and how many hosts like this one a multi-host deployment takes."""
    gpu = {"name": "NVIDIA GeForce RTX 4090", "memory_mib": 24564, "compute_capability": "8.9"}
    variables = {
        "inferops_engine": "vllm",
        "vllm_version": "0.33.0",
        "inferops_model": {"repo": "deepseek-ai/DeepSeek-V3", "revision": COMMIT},
        "vllm_max_model_len": 32768,
    }
    hardware = {"gpus": [dict(gpu, index=i) for i in range(4)], "topology": {}, "driver": DRIVER}
    messages = [c["message"] for c in build_plan(variables, hardware)["checks"] if c["id"] == "memory-fit"]
    (hint,) = [m for m in messages if "does not fit on 4 GPU(s)" in m]
    needed = int(re.search(r"need about (\d+) GPUs of this size", hint).group(1))
    hosts = int(re.search(r"inferops_cluster on (\d+) hosts like this one", hint).group(1))
    assert needed > 24 and hosts == -(-needed // 4), hint  # 671B parameters in FP8 over 24 GB cards
    assert "quantized" in hint
