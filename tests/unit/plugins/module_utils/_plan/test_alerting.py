"""_plan/alerting.py: Alertmanager's configuration from the inventory; amtool accepts what it writes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.alerting import NOBODY, alertmanager_config

CASES = yaml.safe_load((Path(__file__).parent / "alerting_cases.yml").read_text())
SECRETS = ["s3cr3t-hook", "sm7p-pass"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_errors_name_the_variable_and_never_a_secret(case):
    _config, errors = alertmanager_config(case["receivers"], case.get("smtp"), case.get("route"))
    assert len(errors) == len(case["errors"]), errors
    for error, expected in zip(errors, case["errors"]):
        assert expected in error
        assert not [secret for secret in SECRETS if secret in error]


def test_every_alert_reaches_every_matching_receiver():
    config, errors = alertmanager_config(CASES[0]["receivers"], CASES[0]["smtp"])
    assert errors == []
    route = config["route"]
    assert route["receiver"] == NOBODY and route["group_by"] == ["alertname", "host"]
    assert route["routes"] == [
        {"receiver": "ops", "continue": True},
        {"receiver": "oncall", "continue": True, "matchers": ['severity=~"critical"']},
    ]
    receivers = {r["name"]: r for r in config["receivers"]}
    assert receivers["ops"]["webhook_configs"] == [
        {"url": "https://hooks.example.org/alerts?token=s3cr3t-hook", "send_resolved": True}
    ]
    assert receivers["oncall"]["email_configs"] == [
        {"to": "oncall@example.org, boss@example.org", "send_resolved": True}
    ]
    assert config["global"]["smtp_smarthost"] == "mail.example.org:587"
    assert config["global"]["smtp_auth_password"] == "sm7p-pass"


def test_without_email_there_is_no_smtp_section():
    config, _errors = alertmanager_config([{"name": "ops", "webhook_url": "https://a.example.org/x"}])
    assert "global" not in config


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool (Debian package prometheus-alertmanager) missing")
@pytest.mark.parametrize("index", [0, 1])
def test_amtool_accepts_the_configuration(tmp_path, index):
    config, errors = alertmanager_config(CASES[index]["receivers"], CASES[index].get("smtp"))
    assert errors == []
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = subprocess.run(["amtool", "check-config", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
