"""roles/ray/files/ray_nodes.py: which expected nodes the GCS does not report alive with their GPUs, and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[5]
CASES = yaml.safe_load((Path(__file__).parent / "ray_nodes_cases.yml").read_text())


ray_nodes = load_script(ROOT / "roles/ray/files/ray_nodes.py", "ray_nodes")


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_compare(case):
    missing = ray_nodes.compare(case["nodes"], ray_nodes.parse_expected(case["expected"]))
    assert [entry["host"] for entry in missing] == [host for host, _why in case["missing"]]
    for entry, (_host, why) in zip(missing, case["missing"]):
        assert why in entry["why"]


def test_an_unreachable_head_reports_every_node_missing_with_the_reason(monkeypatch, capsys):
    def refuse(address, timeout):
        raise ConnectionError(f"{address} refused")

    monkeypatch.setattr(ray_nodes, "gcs_nodes", refuse)
    assert ray_nodes.main(["--address", "10.0.0.11:6379", "ws-a=10.0.0.11=4", "ws-b=10.0.0.12=4"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [entry["host"] for entry in result["missing"]] == ["ws-a", "ws-b"]
    assert "10.0.0.11:6379 did not answer: ConnectionError" in result["error"]


def test_it_asks_again_until_every_node_joined(monkeypatch, capsys):
    answers = [[], [{"address": "10.0.0.11", "alive": True, "resources": {"GPU": 1.0}}]]
    monkeypatch.setattr(ray_nodes, "gcs_nodes", lambda address, timeout: answers.pop(0))
    ray_nodes.main(["--address", "h:1", "--wait", "30", "--interval", "0", "ws-a=10.0.0.11=1"])
    assert json.loads(capsys.readouterr().out)["missing"] == []
    assert answers == []


def test_the_token_comes_from_the_secrets_file_not_argv(tmp_path, monkeypatch):
    secrets = tmp_path / "secrets.env"
    secrets.write_text("# comment\nRAY_AUTH_MODE=token\nRAY_AUTH_TOKEN=abc\nOTHER=x\n")
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("OTHER", raising=False)
    ray_nodes._load_secrets(str(secrets))
    import os

    assert os.environ["RAY_AUTH_TOKEN"] == "abc"
    assert "OTHER" not in os.environ


@pytest.mark.parametrize(("require", "missing", "code"), [(False, True, 0), (True, True, 1), (True, False, 0)])
def test_require_fails_while_a_node_is_missing(monkeypatch, capsys, require, missing, code):
    """--require (the head's vLLM unit, ExecStartPre=): exit 1 while a node is missing, so that the start fails."""
    gone = [{"host": "gpu-b", "address": "10.0.0.2", "why": "never registered"}] if missing else []
    monkeypatch.setattr(ray_nodes, "ask", lambda *_: {"nodes": [], "error": "", "missing": gone})
    argv = ["--address", "10.0.0.1:6379", "gpu-b=10.0.0.2=4"] + (["--require"] if require else [])
    assert ray_nodes.main(argv) == code
    assert json.loads(capsys.readouterr().out)["missing"] == gone
