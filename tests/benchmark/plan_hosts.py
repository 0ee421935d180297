# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark of `make plan` at fleet size (not a test): plan N declared hosts, report the cost.

Builds an inventory of N hosts (copies of the example inventory's hosts, hardware declared, so no
host is contacted), runs playbooks/plan.yml over it, and times it. Also times the plan computation
alone (module_utils.plan.build_plan, in this process), so that the Ansible overhead per host shows.
Prints a Markdown report; `make benchmark` writes it to build/benchmark/report.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "inventories" / "example"


def example_hosts() -> dict:
    """host name -> merged variables (group_vars then host_vars) of the example inventory."""
    inventory = yaml.safe_load((EXAMPLE / "hosts.yml").read_text())
    hosts = {}
    for group, body in inventory["all"]["children"].items():
        group_vars = yaml.safe_load((EXAMPLE / "group_vars" / f"{group}.yml").read_text())
        for host in body["hosts"]:
            host_vars = yaml.safe_load((EXAMPLE / "host_vars" / f"{host}.yml").read_text())
            hosts[host] = {**group_vars, **host_vars}
    return hosts


def write_inventory(directory: Path, count: int) -> list:
    """An inventory of `count` hosts cycling through the example hosts; returns (name, variables) pairs."""
    examples = sorted(example_hosts().items())
    (directory / "host_vars").mkdir(parents=True)
    hosts = []
    for number in range(count):
        base, variables = examples[number % len(examples)]
        name = f"{base}-{number:03d}"
        (directory / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump(variables, sort_keys=False))
        hosts.append((name, variables))
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {name: None for name, _vars in hosts}}}))
    return hosts


def time_build_plan(hosts: list) -> float:
    """Seconds to compute every host's plan in this process (parsing the declared topology included)."""
    sys.path.insert(0, str(ROOT / "build" / "collections"))
    from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology
    from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan

    start = time.perf_counter()
    for name, variables in hosts:
        hardware = {
            "gpus": variables["inferops_gpus"],
            "topology": parse_topology(variables.get("inferops_gpu_topology_text", "")),
            "driver": variables.get("inferops_gpu_driver", {}),
        }
        json.dumps(build_plan(variables, hardware, host=name))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--forks", type=int, default=int(os.environ.get("ANSIBLE_FORKS", "5")))
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "benchmark")
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    inventory = args.workdir / "inventory"
    hosts = write_inventory(inventory, args.hosts)
    python_seconds = time_build_plan(hosts)

    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.null")
    command = [
        "ansible-playbook",
        "-i",
        str(inventory),
        str(ROOT / "playbooks" / "plan.yml"),
        "--forks",
        str(args.forks),
        "-e",
        f"inferops_plan_dir={args.workdir / 'plans'}",
    ]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=ROOT, check=False)
    wall = time.perf_counter() - start
    written = len(list((args.workdir / "plans").glob("*.json")))

    cores = os.cpu_count()
    print(f"# `plan.yml` benchmark: {args.hosts} declared hosts\n")
    print(f"- machine: {cores} CPU cores; ansible-playbook --forks {args.forks}; exit status {result.returncode}")
    print(f"- reports written: {written} JSON (+ as many Markdown)")
    print(f"- ansible-playbook wall time: {wall:.1f} s, {wall / args.hosts * 1000:.0f} ms per host")
    print(
        f"- plan computation alone (build_plan in one process): {python_seconds:.2f} s, "
        f"{python_seconds / args.hosts * 1000:.1f} ms per host"
    )
    print(f"- Ansible's share (tasks, templating, writing the reports): {(wall - python_seconds) / wall:.0%}")
    return 0 if written == args.hosts else 1


if __name__ == "__main__":
    sys.exit(main())
