"""Plan and measured start as Prometheus textfile metrics (_plan/metrics.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan import metrics

ROOT = Path(__file__).resolve().parents[5]
CASES = yaml.safe_load((Path(__file__).with_name("metrics_cases.yml")).read_text())
SAMPLE = re.compile(r"^([a-z_:]+)(?:\{(.*)\})? (\S+)$")


def _plan(name):
    return json.loads((ROOT / "tests" / "golden" / "plans" / f"{name}.json").read_text())


def _samples(text):
    """metric -> labels text -> value, from the rendered textfile."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name, labels, value = SAMPLE.match(line).groups()
        found.setdefault(name, {})[labels or ""] = float(value)
    return found


def _check(found, expected):
    for name, series in expected.items():
        assert name in found, name
        for labels, value in series.items():
            assert found[name].get(labels) == pytest.approx(value), (name, labels, found[name])


@pytest.mark.parametrize("case", CASES["plans"], ids=lambda case: case["plan"])
def test_plan_samples(case):
    _check(_samples(metrics.plan_metrics_text(_plan(case["plan"]))), case["samples"])


@pytest.mark.parametrize("case", CASES["measured"], ids=lambda case: case["name"])
def test_measured_samples_only_for_the_planned_engine_and_model(case):
    found = _samples(metrics.plan_metrics_text(_plan("desktop-5090"), case["fact"]))
    _check(found, case["samples"])
    for name in case.get("absent", []):
        assert name not in found


def test_every_family_has_help_and_type_before_its_samples():
    text = metrics.plan_metrics_text(_plan("bf16-4x3090"))
    announced = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            announced.add(line.split()[2])
        elif not line.startswith("#"):
            assert SAMPLE.match(line).group(1) in announced, line
    assert text.endswith("\n")


def test_per_gpu_series_for_each_gpu_of_the_layout():
    plan = _plan("bf16-4x3090")
    found = _samples(metrics.plan_metrics_text(plan))
    assert set(found["inferops_plan_weights_bytes"]) == {f'gpu="{g["index"]}"' for g in plan["memory"]["per_gpu"]}
    assert found["inferops_plan_gpus"][""] == len(plan["layout"]["gpus"])


def test_label_values_are_escaped():
    plan = dict(_plan("desktop-5090"), model={"repo": 'a"b\\c\nd', "revision": "x"})
    text = metrics.plan_metrics_text(plan)
    assert 'repo="a\\"b\\\\c\\nd"' in text


def test_a_plan_without_an_engine_is_refused():
    with pytest.raises(metrics.MetricsError):
        metrics.plan_metrics_text({"memory": {}})


def test_a_value_that_is_not_a_number_is_refused():
    plan = dict(_plan("desktop-5090"), memory={"kv_cache_tokens": "lots"})
    with pytest.raises(metrics.MetricsError, match="lots"):
        metrics.plan_metrics_text(plan)


def test_converge_time():
    assert _samples(metrics.render(metrics.converge_families(1795315201.0))) == {
        "inferops_last_converge_timestamp_seconds": {"": 1795315201.0}
    }


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) not installed")
@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "tests" / "golden" / "plans").glob("*.json")))
def test_promtool_accepts_the_textfile_and_its_names(name):
    """promtool check metrics parses the text and lints the names (units, _total, _info conventions)."""
    text = metrics.plan_metrics_text(_plan(name), None) + metrics.render(metrics.converge_families(1.0))
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_cpu_host_exports_its_memory_without_a_gpu_label():
    from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

    from .test_vllm_cpu_plan import cpu_host

    plan = build_plan(cpu_host(vllm_cpu_kvcache_space=1), {})
    fact = {"version": "0.32.0", "model": plan["model"], "kv_cache_tokens": 1048576, "kv_cache_gib": 1.0}
    found = _samples(metrics.plan_metrics_text(plan, fact))
    assert found["inferops_engine_info"] == {'device="cpu",engine="vllm",version="0.32.0"': 1}
    assert found["inferops_plan_kv_cache_bytes"] == {"": float(metrics.GIB)}
    assert found["inferops_plan_kv_cache_tokens"] == {"": 1048576}
    assert found["inferops_measured_kv_cache_tokens"] == {"": 1048576}
    assert "inferops_plan_gpu_memory_bytes" not in found


def test_a_benchmark_in_the_fact_exports_measured_speed_beside_the_prediction():
    from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

    from .test_vllm_cpu_plan import SPEED, cpu_host

    plan = build_plan(cpu_host(vllm_cpu_kvcache_space=1, inferops_prompt_tokens=512), {"cpu_cores": 2})
    benchmark = SPEED["benchmark"]["fact"]
    fact = {"version": "0.32.0", "model": plan["model"], "benchmark": benchmark}
    found = _samples(metrics.plan_metrics_text(plan, fact))
    performance = plan["performance"]
    assert found["inferops_predicted_decode_tokens_per_second"]['streams="1"'] == pytest.approx(
        performance["single_stream_decode_tokens_per_s"]
    )
    assert found["inferops_predicted_ttft_seconds"] == {'prompt_tokens="512"': performance["ttft_s"]}
    assert found["inferops_measured_decode_tokens_per_second"] == {'streams="1"': 40.0}
    assert found["inferops_measured_ttft_seconds"] == {'prompt_tokens="512"': 0.25}
    assert found["inferops_measured_benchmark_timestamp_seconds"] == {"": 1795539600.0}
    # A fact of another version: neither the start nor the benchmark is exported.
    other = _samples(metrics.plan_metrics_text(plan, dict(fact, version="0.31.0")))
    assert "inferops_measured_decode_tokens_per_second" not in other
