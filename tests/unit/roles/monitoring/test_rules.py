"""The monitoring role's rules (promtool check/test rules) and its Grafana dashboard's queries."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan import metrics, scrape

ROOT = Path(__file__).resolve().parents[4]
ROLE = ROOT / "roles" / "monitoring"
DASHBOARD = ROLE / "files" / "grafana" / "dashboards" / "inferops-llm.json"
VLLM = yaml.safe_load((ROLE / "files" / "vllm_metrics.yml").read_text())
PROMTOOL = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool (Debian package prometheus) not installed"
)
MEASURED = {"kv_cache_tokens": 1, "max_concurrency": 1, "weights_gib": 1, "kv_cache_gib": 1, "load_seconds": 1,
            "timestamp": "2026-11-24T00:00:00Z"}  # fmt: skip
SUFFIXES = {"gauge": [""], "counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}


def render_rules(**overrides):
    """The rules template rendered with the role's defaults (and overrides), as the template module would."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["comment"] = lambda text: "# " + text
    variables = dict(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()), ansible_managed="Ansible managed")
    variables.update(overrides)
    return env.from_string((ROLE / "templates" / "inferops.rules.yml.j2").read_text()).render(variables)


def rules():
    return [rule for group in yaml.safe_load(render_rules())["groups"] for rule in group["rules"]]


def vllm_names():
    return {family + suffix for family, kind in VLLM["families"].items() for suffix in SUFFIXES[kind]}


def collection_names():
    """Every family the textfile of any golden plan (with a measured start) and the converge file holds."""
    names = set(metrics.metric_names(metrics.converge_families(0.0)))
    for path in (ROOT / "tests" / "golden" / "plans").glob("*.json"):
        plan = json.loads(path.read_text())
        fact = dict(MEASURED, version=plan["engine_version"], model=plan["model"])
        names |= set(metrics.metric_names(metrics.plan_families(plan, fact)))
    return names


def dashboard_exprs():
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(panel["title"], target["expr"]) for panel in panels for target in panel["targets"]]


def known_names():
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    return vllm_names() | collection_names() | recorded | {"up", "node_systemd_unit_state"}


@PROMTOOL
def test_promtool_accepts_the_rules(tmp_path):
    (tmp_path / "inferops.rules.yml").write_text(render_rules())
    result = subprocess.run(
        ["promtool", "check", "rules", str(tmp_path / "inferops.rules.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@PROMTOOL
def test_the_alerts_fire_on_synthetic_series(tmp_path):
    """rules_test.yml: each alert fires when its condition holds long enough, and not otherwise."""
    (tmp_path / "inferops.rules.yml").write_text(render_rules())
    shutil.copy(Path(__file__).with_name("rules_test.yml"), tmp_path / "rules_test.yml")
    result = subprocess.run(
        ["promtool", "test", "rules", "rules_test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_the_issue_asks_for_is_there():
    alerts = {rule["alert"]: rule for rule in rules() if "alert" in rule}
    assert set(alerts) == {
        "InferopsEngineDown",
        "InferopsKVCacheFull",
        "InferopsKVTokensBelowPlan",
        "InferopsDecodeBelowPrediction",
        "InferopsPlanWarnings",
    }
    assert alerts["InferopsKVCacheFull"]["for"] == "10m"
    assert "> 0.9" in alerts["InferopsKVCacheFull"]["expr"]


def test_the_thresholds_come_from_the_role_variables():
    rendered = yaml.safe_load(render_rules(monitoring_engine_down_for="10s", monitoring_kv_usage_threshold=0.8))
    alerts = {rule["alert"]: rule for group in rendered["groups"] for rule in group["rules"] if "alert" in rule}
    assert alerts["InferopsEngineDown"]["for"] == "10s"
    assert "> 0.8" in alerts["InferopsKVCacheFull"]["expr"]


@pytest.mark.parametrize("where", ["rules", "dashboard"])
def test_queries_use_only_names_the_pinned_vllm_and_the_collection_expose(where):
    exprs = (
        [(rule.get("alert") or rule["record"], rule["expr"]) for rule in rules()]
        if where == "rules"
        else dashboard_exprs()
    )
    known = known_names()
    unknown = {(title, name) for title, expr in exprs for name in scrape.metric_names_in(expr) if name not in known}
    assert unknown == set()


def test_the_dashboard_shows_what_the_issue_asks_for():
    names = {name for _title, expr in dashboard_exprs() for name in scrape.metric_names_in(expr)}
    for needed in (
        "vllm:kv_cache_usage_perc",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:generation_tokens_total",
        "inferops_plan_kv_cache_tokens",
        "inferops_measured_kv_cache_tokens",
        "inferops_predicted_decode_tokens_per_second",
        "inferops:vllm_decode_tokens_per_second:per_stream",
    ):
        assert needed in names
    assert not names & {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds_bucket"}


def test_every_dashboard_query_filters_by_the_host_variable():
    for title, expr in dashboard_exprs():
        assert re.search(r'host=~"\$host"', expr), title
