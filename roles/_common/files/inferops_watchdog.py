# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Restart a service that runs but whose health endpoint has stopped answering.

Run by ``inferops-watchdog@<service>.timer`` every few seconds as a oneshot:

    inferops_watchdog.py /etc/inferops/watchdog/<service>.json

The JSON file names ``unit``, ``url``, ``failure_sec`` (how long a process that answered once may go without
answering) and optionally ``request_timeout`` and ``state_dir``. Between runs it keeps, per unit, the process
it watched and since when that process has not answered (``/run/inferops-watchdog/<unit>.json``).

What it leaves alone: a unit that is not active (systemd's ``Restart=`` deals with a process that ended), and
a process that has not answered yet while it is younger than the unit's own start timeout
(``TimeoutStartUSec``, which the roles compute from the last measured start): a model still loading.
``decide`` is plain Python without I/O, unit-tested on its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Mapping, Optional, Tuple

STATE_DIR = "/run/inferops-watchdog"
PROPERTIES = ("ActiveState", "SubState", "MainPID", "ExecMainStartTimestampMonotonic", "TimeoutStartUSec")


def _seconds(value: Any) -> Optional[float]:
    """systemctl's ``TimeoutStartUSec`` (``5min 30s``, ``infinity``) or microseconds -> seconds; None: none."""
    text = str(value or "").strip()
    if not text or text == "infinity":
        return None
    if text.isdigit():
        return int(text) / 1e6
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400}
    total = 0.0
    for part in text.split():
        number = part.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = part[len(number) :] or "s"
        if unit not in units or not number:
            return None
        total += float(number) * units[unit]
    return total


def decide(
    unit: Mapping[str, str], state: Mapping[str, Any], answered: bool, now: float, failure_sec: float
) -> Tuple[Optional[str], Dict[str, Any]]:
    """(why the unit must be restarted, or None; the state to keep until the next run).

    ``unit``: the PROPERTIES of ``systemctl show``; ``now``: CLOCK_MONOTONIC seconds, the clock of
    ``ExecMainStartTimestampMonotonic``; ``state``: what the last run kept.
    """
    pid = str(unit.get("MainPID", "0"))
    if unit.get("ActiveState") != "active" or pid in ("", "0"):
        return None, {}
    if str(state.get("pid")) != pid:
        state = {"pid": pid, "answered": False, "failing_since": None}
    state = dict(state)
    if answered:
        state.update(answered=True, failing_since=None)
        return None, state
    started = int(unit.get("ExecMainStartTimestampMonotonic") or 0) / 1e6
    age = now - started if started else 0.0
    if not state["answered"]:
        grace = _seconds(unit.get("TimeoutStartUSec"))
        if grace is not None and age > grace:
            return (
                f"process {pid} has not answered since it started {age:.0f} s ago, longer than the unit's start "
                f"timeout ({grace:.0f} s)",
                {},
            )
        return None, state
    if state["failing_since"] is None:
        state["failing_since"] = now
    silent = now - state["failing_since"]
    if silent >= failure_sec:
        why = f"process {pid} answered before, and has not answered for {silent:.0f} s (failure_sec {failure_sec:g})"
        return why, {}
    return None, state


def _probe(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _show(unit: str) -> Dict[str, str]:
    argv = ["systemctl", "show", unit, *[f"--property={name}" for name in PROPERTIES]]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def main(argv: list) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    unit = config["unit"]
    state_dir = config.get("state_dir", STATE_DIR)
    state_file = os.path.join(state_dir, unit + ".json")
    try:
        with open(state_file, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        state = {}
    props = _show(unit)
    answered = props.get("ActiveState") == "active" and _probe(config["url"], float(config.get("request_timeout", 10)))
    why, state = decide(props, state, answered, time.monotonic(), float(config["failure_sec"]))
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    with open(state_file + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(state_file + ".tmp", state_file)
    if why:
        # "<4>": warning priority in the journal (SyslogLevelPrefix=).
        print(f"<4>inferops-watchdog: restarting {unit}: {config['url']}: {why}", flush=True)
        subprocess.run(["systemctl", "restart", "--no-block", unit], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
