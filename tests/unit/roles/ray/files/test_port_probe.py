"""roles/ray/files/port_probe.py: a listener on free ports, and a connect check that names what it cannot reach."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from script_loader import load_script

ROOT = Path(__file__).resolve().parents[5]
SCRIPT = ROOT / "roles/ray/files/port_probe.py"


port_probe = load_script(SCRIPT, "port_probe")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_listener_answers_until_stopped_and_the_check_names_the_closed_port(tmp_path):
    open_port, closed_port = _free_port(), _free_port()
    pidfile = tmp_path / "probe.pid"
    listener = subprocess.Popen(
        [sys.executable, str(SCRIPT), "listen", "--pidfile", str(pidfile), "--seconds", "30", str(open_port)]
    )
    try:
        for _attempt in range(100):
            if pidfile.exists():
                break
            time.sleep(0.05)
        unreachable = port_probe.connect(
            [f"ws-b,127.0.0.1,{open_port},Ray node manager", f"ws-b,127.0.0.1,{closed_port},Ray object manager"], 1
        )
        assert [(e["host"], e["port"], e["name"]) for e in unreachable] == [("ws-b", closed_port, "Ray object manager")]
        assert unreachable[0]["error"]
        # stop() waits until the pid is gone; the listener is this test's child, so it stays a zombie until reaped:
        # reap it while stop() waits, as init does on a host.
        with ThreadPoolExecutor(1) as pool:
            stopped = pool.submit(port_probe.stop, str(pidfile))
            assert listener.wait(timeout=10) == 0
            assert stopped.result(timeout=10) == 0
        assert not pidfile.exists()
        assert port_probe.connect([f"ws-b,127.0.0.1,{open_port},Ray node manager"], 0)
    finally:
        listener.kill()


def test_a_port_already_in_use_is_left_to_its_owner(tmp_path):
    with socket.socket() as owner:
        owner.bind(("0.0.0.0", 0))
        owner.listen(1)
        port = owner.getsockname()[1]
        pidfile = tmp_path / "probe.pid"
        assert port_probe.listen([port], 0.1, str(pidfile)) == 0
        assert port_probe.connect([f"ws-a,127.0.0.1,{port},Ray GCS"], 0) == []
