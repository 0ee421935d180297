# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Which nodes of a Ray cluster the GCS reports alive, with their resources, against the ones expected.

Run by the ray role with the Python of the Ray environment:

    ray_nodes.py --address HEAD:PORT [--secrets FILE] [--wait SECONDS] [--interval SECONDS] HOST=ADDRESS=GPUS ...

Prints one JSON object: ``nodes`` (what the GCS reports), ``missing`` (each expected host that is not alive
with its GPUs, and why) and ``error`` (the GCS could not be asked), asking again every ``--interval``
seconds until nothing is missing or ``--wait`` seconds passed. Exits 0 either way (the role decides), or with
``--require`` 1 while a node is missing: the head's vLLM unit runs it so before each start (ExecStartPre=).
``compare`` is plain Python (no Ray) so that it is unit-tested on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Sequence


def parse_expected(items: Sequence[str]) -> List[Dict[str, Any]]:
    """``host=address=gpus`` -> {"host", "address", "gpus"}."""
    expected = []
    for item in items:
        host, address, gpus = item.rsplit("=", 2)
        expected.append({"host": host, "address": address, "gpus": float(gpus)})
    return expected


def compare(nodes: Sequence[Dict[str, Any]], expected: Sequence[Dict[str, Any]]) -> List[Dict[str, str]]:
    """The expected hosts that the GCS does not report alive with their GPUs, each with the reason."""
    missing = []
    for want in expected:
        mine = [node for node in nodes if node.get("address") == want["address"]]
        alive = [node for node in mine if node.get("alive")]
        if alive:
            gpus = float((alive[0].get("resources") or {}).get("GPU", 0))
            if gpus < want["gpus"]:
                why = f"alive with {gpus:g} GPUs instead of {want['gpus']:g} (ray start --num-gpus)"
            else:
                continue
        elif mine:
            death = mine[-1].get("death") or "no reason recorded"
            why = f"registered, then left the cluster: {death}"
        else:
            why = "never registered with the head's GCS (service not running, or it cannot reach the head)"
        missing.append({"host": want["host"], "address": want["address"], "why": why})
    return missing


def _load_secrets(path: str) -> None:
    """RAY_AUTH_MODE/RAY_AUTH_TOKEN from the service's environment file (never on a command line)."""
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            key, sep, value = line.strip().partition("=")
            if sep and key.startswith("RAY_AUTH_"):
                os.environ[key] = value


def gcs_nodes(address: str, timeout: float) -> List[Dict[str, Any]]:
    from ray._raylet import GcsClient  # only where Ray is installed
    from ray.core.generated import gcs_pb2

    client = GcsClient(address=address)
    nodes = []
    for node_id, node in client.get_all_node_info(timeout=timeout).items():
        alive = node.state == gcs_pb2.GcsNodeInfo.ALIVE
        death = ""
        if not alive and node.HasField("death_info"):
            reason = type(node.death_info).Reason.Name(node.death_info.reason)
            death = f"{reason} {node.death_info.reason_message}".strip()
        nodes.append(
            {
                "id": node_id.hex(),
                "address": node.node_manager_address,
                "alive": alive,
                "head": bool(node.is_head_node),
                "resources": {k: v for k, v in node.resources_total.items() if not k.startswith("node:")},
                "death": death,
            }
        )
    return nodes


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--secrets", default="")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--wait", type=float, default=0.0)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--require", action="store_true", help="exit 1 while an expected node is missing")
    parser.add_argument("expected", nargs="*")
    args = parser.parse_intermixed_args(argv)
    expected = parse_expected(args.expected)
    _load_secrets(args.secrets)
    deadline = time.monotonic() + args.wait
    while True:
        result = ask(args.address, args.timeout, expected)
        if not result["missing"] or time.monotonic() >= deadline:
            print(json.dumps(result))
            return 1 if args.require and result["missing"] else 0
        time.sleep(args.interval)


def ask(address: str, timeout: float, expected: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    try:
        nodes = gcs_nodes(address, timeout)
    except Exception as error:  # any failure to ask the GCS is reported, not raised
        reason = f"the head's GCS at {address} did not answer: {type(error).__name__}: {error}"[:300]
        missing = [{"host": w["host"], "address": w["address"], "why": reason} for w in expected]
        return {"nodes": [], "error": reason, "missing": missing}
    return {"nodes": nodes, "error": "", "missing": compare(nodes, expected)}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
