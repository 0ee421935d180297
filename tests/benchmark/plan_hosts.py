# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark of `make plan` at fleet size (not a test): plan N declared hosts, report the cost.

Builds an inventory of N hosts (copies of the example inventory's hosts, hardware declared, so no
host is contacted), runs playbooks/plan.yml over it, and times it. Also times the plan computation
alone (_plan/fleet.py's plan_fleet, as plan.yml's one task calls it, in this process), so that the Ansible
overhead per host shows. Prints a Markdown report; `make benchmark` writes it to build/benchmark-report.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "inventories" / "example"


def example_hosts() -> dict:
    """host name -> variables of the example inventory, as Ansible merges them (`ansible-inventory --list`:
    group_vars of every group of the host, then host_vars; templates left unrendered, as in the reports)."""
    listed = subprocess.run(
        ["ansible-inventory", "-i", str(EXAMPLE), "--list"], capture_output=True, text=True, check=True
    )
    return json.loads(listed.stdout)["_meta"]["hostvars"]


def write_inventory(directory: Path, count: int) -> list:
    """An inventory of `count` hosts cycling through the example hosts; returns (name, variables) pairs.

    Each cycle through the examples is its own deployment: a cluster's nodes (inferops_cluster) get the
    cycle's cluster name, and the cycle's first gateway host of the example is in group gateway only for
    the first cycle (one gateway, as in the example inventory).
    """
    examples = sorted(example_hosts().items())
    (directory / "host_vars").mkdir(parents=True)
    hosts, gateway = [], []
    for number in range(count):
        base, variables = examples[number % len(examples)]
        cycle = number // len(examples)
        variables = dict(variables)
        if variables.get("inferops_cluster"):
            variables["inferops_cluster"] = f"{variables['inferops_cluster']}-{cycle:03d}"
        name = f"{base}-{number:03d}"
        if "gateway_profiles" in variables and not gateway:
            gateway.append(name)
        (directory / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump(variables, sort_keys=False))
        hosts.append((name, variables))
    inventory = {"all": {"hosts": {name: None for name, _vars in hosts}}}
    if gateway:
        inventory["all"]["children"] = {"gateway": {"hosts": {gateway[0]: None}}}
    (directory / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return hosts


def time_plan_fleet(hosts: list) -> float:
    """Seconds to compute every host's plan in this process as plan.yml's task does (_plan/fleet.py: the hosts
    of a cluster together), from the variables it reads (the planning inputs; keys as names only) and the
    declared hardware, topology parsing included. Raises SystemExit when a host cannot be planned."""
    sys.path.insert(0, str(ROOT / "build" / "collections"))
    from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology
    from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
    from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
    from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
    from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
        VARIABLE_NAME_PATTERN,
        defined_names,
        input_names,
    )

    prefix = re.compile(VARIABLE_NAME_PATTERN)
    start = time.perf_counter()
    members = []
    for name, variables in hosts:
        defined = defined_names([key for key in variables if prefix.match(key)], variables, follow=True)
        hardware = {
            "gpus": variables["inferops_gpus"],
            "topology": parse_topology(variables.get("inferops_gpu_topology_text", "")),
            "driver": variables.get("inferops_gpu_driver", {}),
            "memory_mib": variables.get("inferops_host_memory_mib"),
        }
        planning = {key: variables[key] for key in input_names() if key in defined}
        members.append(Member(host=name, variables=planning, hardware=hardware, defined=defined))
    planned = plan_fleet(members, {}, ModelResolver.from_environment(os.environ))
    json.dumps(planned)
    seconds = time.perf_counter() - start
    failed = {host: entry["errors"] for host, entry in planned.items() if "errors" in entry}
    if failed:
        raise SystemExit(f"hosts that cannot be planned: {json.dumps(failed, indent=2)}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--forks", type=int, default=int(os.environ.get("ANSIBLE_FORKS", "5")))
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "benchmark")
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    inventory = args.workdir / "inventory"
    hosts = write_inventory(inventory, args.hosts)
    python_seconds = time_plan_fleet(hosts)

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
    log = args.workdir / "plan.log"
    start = time.perf_counter()
    with log.open("w") as output:  # the table and the findings of 200 hosts: kept apart from the report
        result = subprocess.run(command, env=env, cwd=ROOT, check=False, stdout=output, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    plans = args.workdir / "plans"
    written = {kind: len([p for p in plans.glob(f"*.{kind}") if p.stem != "gateway"]) for kind in ("json", "md", "svg")}

    cores = os.cpu_count()
    print(f"# `plan.yml` benchmark: {args.hosts} declared hosts\n")
    print(f"- machine: {cores} CPU cores; ansible-playbook --forks {args.forks}; exit status {result.returncode}")
    print(f"- reports written: {written['json']} JSON, {written['md']} Markdown, {written['svg']} SVG (+ gateway.json)")
    print(f"- ansible-playbook's output: {log}")
    print(f"- ansible-playbook wall time: {wall:.1f} s, {wall / args.hosts * 1000:.0f} ms per host")
    print(
        f"- plan computation alone (_plan/fleet.py in one process): {python_seconds:.2f} s, "
        f"{python_seconds / args.hosts * 1000:.1f} ms per host"
    )
    print(f"- Ansible's share (tasks, templating, writing the reports): {(wall - python_seconds) / wall:.0%}")
    return 0 if result.returncode == 0 and set(written.values()) == {args.hosts} else 1


if __name__ == "__main__":
    sys.exit(main())
