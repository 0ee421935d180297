"""roles/_common/files/inferops_watchdog.py: when the watchdog restarts a service, and when it leaves it alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[5]
CASES = yaml.safe_load((Path(__file__).parent / "watchdog_cases.yml").read_text())
FAILURE_SEC = 90


watchdog = load_script(ROOT / "roles/_common/files/inferops_watchdog.py", "inferops_watchdog")


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_decide(case):
    why, kept = watchdog.decide(case["unit"], case["state"], case["answered"], case["now"], FAILURE_SEC)
    if case["restart"] is None:
        assert why is None
    else:
        assert case["restart"] in why
    assert kept == case["kept"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10min", 600), ("5min 30s", 330), ("1h 2min", 3720), ("90s", 90), ("infinity", None), ("", None),
     ("300000000", 300), ("500ms", 0.5)],
)  # fmt: skip
def test_start_timeout_as_systemctl_shows_it(text, seconds):
    assert watchdog._seconds(text) == seconds


FAKE_SYSTEMCTL = """#!/bin/sh
# TEST DOUBLE of systemctl: "show" prints the unit's properties from $WATCHDOG_SHOW; anything else is logged.
if [ "$1" = show ]; then cat "$WATCHDOG_SHOW"; else echo "$@" >> "$WATCHDOG_CALLS"; fi
"""


def _run_main(tmp_path, monkeypatch, url, state):
    import json
    import os
    import time

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "systemctl").write_text(FAKE_SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    started = int((time.monotonic() - 3600) * 1e6)
    show = tmp_path / "show.txt"
    show.write_text(f"ActiveState=active\nSubState=running\nMainPID=42\nExecMainStartTimestampMonotonic={started}\n"
                    "TimeoutStartUSec=5min\n")  # fmt: skip
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("WATCHDOG_SHOW", str(show))
    monkeypatch.setenv("WATCHDOG_CALLS", str(calls))
    state_dir = tmp_path / "state"
    state_dir.mkdir(exist_ok=True)
    (state_dir / "vllm.service.json").write_text(json.dumps(state))
    config = tmp_path / "vllm.json"
    config.write_text(json.dumps({"unit": "vllm.service", "url": url, "failure_sec": 90, "request_timeout": 2,
                                  "state_dir": str(state_dir)}))  # fmt: skip
    assert watchdog.main(["inferops_watchdog.py", str(config)]) == 0
    kept = json.loads((state_dir / "vllm.service.json").read_text())
    return (calls.read_text() if calls.exists() else ""), kept


def test_main_restarts_a_silent_process_through_systemctl(tmp_path, monkeypatch, capsys):
    import socket
    import time

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    state = {"pid": "42", "answered": True, "failing_since": time.monotonic() - 120}
    calls, kept = _run_main(tmp_path, monkeypatch, f"http://127.0.0.1:{port}/health", state)
    assert calls == "restart --no-block vllm.service\n"
    assert kept == {}
    assert "<4>inferops-watchdog: restarting vllm.service" in capsys.readouterr().out


def test_main_leaves_a_process_that_answers_alone(tmp_path, monkeypatch):
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        state = {"pid": "42", "answered": True, "failing_since": 1.0}
        calls, kept = _run_main(tmp_path, monkeypatch, f"http://127.0.0.1:{server.server_port}/health", state)
    finally:
        server.shutdown()
    assert calls == ""
    assert kept == {"pid": "42", "answered": True, "failing_since": None}
