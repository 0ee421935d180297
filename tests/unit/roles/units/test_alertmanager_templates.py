"""The monitoring role's Alertmanager files as the role writes them; amtool and promtool accept them.

Rendered with the role's variables (unit_render.py). prometheus.yml's scrape jobs (an include of
scrape_jobs.j2, tested with the targets elsewhere) are left out here.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from unit_render import ROOT, render_all

RECEIVERS = [
    {"name": "ops", "webhook_url": "http://127.0.0.1:9999/alerts"},
    {"name": "oncall", "email_to": ["oncall@example.org"], "severities": ["critical"]},
]
SMTP = {"smarthost": "mail.example.org:587", "from": "alerts@example.org"}
PROMETHEUS = (
    (ROOT / "roles/monitoring/templates/prometheus.yml.j2").read_text().replace("{% include 'scrape_jobs.j2' %}", "")
)
COMMON = {"monitoring_alert_receivers": RECEIVERS, "monitoring_alert_smtp": SMTP}
RENDERED = render_all(
    {
        "alertmanager": ("monitoring", "alertmanager.yml.j2", COMMON),
        "defaults": ("monitoring", "alertmanager.default.j2", COMMON),
        "prometheus": ("monitoring", "expr:" + PROMETHEUS, COMMON),
        "prometheus-others": (
            "monitoring", "expr:" + PROMETHEUS,
            {**COMMON, "monitoring_alertmanager_install": False, "monitoring_alertmanagers": ["am.example.org:9093"]},
        ),
        "prometheus-none": ("monitoring", "expr:" + PROMETHEUS, {**COMMON, "monitoring_install": False}),
    }
)  # fmt: skip


def text(key):
    assert "text" in RENDERED[key], RENDERED[key].get("error")
    return RENDERED[key]["text"]


def test_alertmanager_routes_every_alert_to_each_receiver():
    config = yaml.safe_load(text("alertmanager"))
    assert [route["receiver"] for route in config["route"]["routes"]] == ["ops", "oncall"]
    assert config["receivers"][1]["webhook_configs"][0]["url"] == "http://127.0.0.1:9999/alerts"


def test_alertmanager_listens_on_loopback_without_a_cluster():
    assert '--web.listen-address=127.0.0.1:9093 --cluster.listen-address="' in text("defaults")


def test_prometheus_sends_its_alerts_to_the_alertmanagers():
    assert yaml.safe_load(text("prometheus"))["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == [
        "127.0.0.1:9093"
    ]
    others = yaml.safe_load(text("prometheus-others"))
    assert others["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == ["am.example.org:9093"]
    assert "alerting" not in yaml.safe_load(text("prometheus-none"))


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool (Debian package prometheus-alertmanager) missing")
def test_amtool_accepts_alertmanager_yml(tmp_path):
    path = tmp_path / "alertmanager.yml"
    path.write_text(text("alertmanager"))
    result = subprocess.run(["amtool", "check-config", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) missing")
def test_promtool_accepts_prometheus_yml(tmp_path):
    path = tmp_path / "prometheus.yml"
    path.write_text(text("prometheus"))
    result = subprocess.run(
        ["promtool", "check", "config", "--syntax-only", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
