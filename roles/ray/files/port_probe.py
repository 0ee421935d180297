# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""TCP reachability between the nodes of a cluster before any service listens (standard library only).

    port_probe.py listen --pidfile FILE --seconds N PORT ...   accept on every free PORT until stopped
    port_probe.py stop --pidfile FILE                           stop that listener, wait until it is gone
    port_probe.py connect --seconds N HOST,ADDRESS,PORT,NAME ...  try each target until N seconds pass

``listen`` skips a port that something already listens on (a running Ray service answers for itself).
``connect`` prints one JSON object {"checked": N, "unreachable": [{"host", "address", "port", "name", "error"}]}
and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import signal
import socket
import sys
import time
from typing import Dict, List, Sequence


def listen(ports: Sequence[int], seconds: float, pidfile: str) -> int:
    selector = selectors.DefaultSelector()
    bound = []
    for port in ports:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))  # peers connect on the cluster network
        except OSError:
            sock.close()
            continue
        sock.listen(16)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        bound.append(port)
    # The handler before the pidfile: a stop that reads the pid at once ends the loop, not the process by the signal.
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    with open(pidfile, "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + seconds
    while not stop and time.monotonic() < deadline:
        for key, _mask in selector.select(timeout=0.5):
            try:
                conn, _peer = key.fileobj.accept()
                conn.close()
            except OSError:
                pass
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    return 0


def stop(pidfile: str, seconds: float = 10.0) -> int:
    try:
        with open(pidfile, encoding="utf-8") as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return 0
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    os.unlink(pidfile)
    return 0


def connect(targets: Sequence[str], seconds: float) -> List[Dict[str, object]]:
    """Each target host,address,port,name that does not accept a TCP connection within the time."""
    pending = []
    for target in targets:
        host, address, port, name = target.split(",", 3)
        pending.append({"host": host, "address": address, "port": int(port), "name": name, "error": ""})
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for entry in pending:
            try:
                with socket.create_connection((entry["address"], entry["port"]), timeout=2):
                    pass
            except OSError as error:
                timed_out = isinstance(error, (socket.timeout, TimeoutError))
                entry["error"] = "timed out (a firewall dropping packets?)" if timed_out else str(error)
                left.append(entry)
        pending = left
        if not pending or time.monotonic() >= deadline:
            return pending
        time.sleep(0.5)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("action", choices=("listen", "stop", "connect"))
    parser.add_argument("--pidfile", default="/run/inferops-port-probe.pid")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("items", nargs="*")
    args = parser.parse_intermixed_args(argv)
    if args.action == "listen":
        return listen([int(p) for p in args.items], args.seconds, args.pidfile)
    if args.action == "stop":
        return stop(args.pidfile)
    print(json.dumps({"checked": len(args.items), "unreachable": connect(args.items, args.seconds)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
