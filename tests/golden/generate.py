"""Golden plans of the example inventory, and the plan tables of README.md and docs/plan.md.

`make golden` (python tests/golden/generate.py) plans every host of inventories/example through the same
entry point as plan.yml (_plan/fleet.py plan_fleet; hardware is declared, so no host is needed), writes
tests/golden/plans/<host>.json and rewrites the table between the markers
`<!-- BEGIN generated: plan-table -->` and `<!-- END generated: plan-table -->` of README.md and
docs/plan.md. tests/unit/plugins/module_utils/_plan/test_golden.py fails when a plan or a table differs
from what this script would write: run it after a change that moves a figure, and review the diff.
`--check` only reports the differences.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build" / "collections"))

from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology  # noqa: E402
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member  # noqa: E402
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet  # noqa: E402
from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import (  # noqa: E402
    ENDPOINT_VARIABLES,
    plan_fleet_gateway,
    render_gateway_table,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import VARIABLE_NAME_PATTERN  # noqa: E402
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_console  # noqa: E402

INVENTORY = ROOT / "inventories" / "example"
GOLDEN = ROOT / "tests" / "golden" / "plans"
GATEWAY_GOLDEN = ROOT / "tests" / "golden" / "gateway.json"
DOCS = (ROOT / "README.md", ROOT / "docs" / "plan.md")
BEGIN, END = "<!-- BEGIN generated: plan-table -->", "<!-- END generated: plan-table -->"


def _groups() -> Dict[str, Any]:
    return yaml.safe_load((INVENTORY / "hosts.yml").read_text(encoding="utf-8"))["all"]["children"]


def host_variables(host: str) -> Dict[str, Any]:
    """A host's variables: its groups' group_vars, then its host_vars (as Ansible merges them here)."""
    variables: Dict[str, Any] = {}
    for group, content in _groups().items():
        group_file = INVENTORY / "group_vars" / f"{group}.yml"
        if host in content["hosts"] and group_file.exists():
            variables.update(yaml.safe_load(group_file.read_text(encoding="utf-8")) or {})
    variables.update(yaml.safe_load((INVENTORY / "host_vars" / f"{host}.yml").read_text(encoding="utf-8")))
    return variables


def gateway_plan(plans: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The gateway of the example inventory (the first host of group gateway), as plan.yml computes it."""
    (gateway, *_rest) = _groups()["gateway"]["hosts"]
    engines = {host: host_variables(host) for host in plans}
    endpoints = {host: {k: v[k] for k in ENDPOINT_VARIABLES if k in v} for host, v in engines.items()}
    keyed = [host for host, v in engines.items() if "vllm_api_key" in v]
    return plan_fleet_gateway(plans, endpoints, gateway, host_variables(gateway), keyed)


def inventory_members() -> List[Member]:
    """The example hosts in inventory order, with their group and host variables merged as Ansible does."""
    hosts = yaml.safe_load((INVENTORY / "hosts.yml").read_text(encoding="utf-8"))
    members = []
    for group, content in hosts["all"]["children"].items():
        if group == "gateway":  # the gateway runs on an engine host listed in its engine's group
            continue
        group_file = INVENTORY / "group_vars" / f"{group}.yml"
        group_vars = yaml.safe_load(group_file.read_text(encoding="utf-8")) if group_file.exists() else {}
        for host in content["hosts"]:
            variables: Dict[str, Any] = dict(group_vars or {})
            variables.update(yaml.safe_load((INVENTORY / "host_vars" / f"{host}.yml").read_text(encoding="utf-8")))
            hardware = {
                "gpus": variables.get("inferops_gpus"),
                "topology": parse_topology(variables.get("inferops_gpu_topology_text") or ""),
                "driver": variables.get("inferops_gpu_driver") or {},
            }
            names = [k for k in variables if re.match(VARIABLE_NAME_PATTERN, k)]  # as plan_fleet reads them
            members.append(Member(host=host, variables={k: variables[k] for k in names}, hardware=hardware))
    return members


def golden_plans() -> Dict[str, Dict[str, Any]]:
    result = plan_fleet(inventory_members())
    bad = {host: entry["errors"] for host, entry in result.items() if "errors" in entry}
    if bad:
        raise SystemExit(f"example hosts that cannot be planned: {bad}")
    return {host: entry["plan"] for host, entry in result.items()}


def table_block(plans: Dict[str, Dict[str, Any]]) -> str:
    # What plan.yml prints (inferops.llm.plan_fleet's console): table, legend, gateway, findings.
    table = render_console(list(plans.values()), None, render_gateway_table(gateway_plan(plans)))
    return "\n".join([BEGIN, "```text", *table, "```", END])


def with_table(text: str, block: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + block + text[end:]


def dumps(plan: Dict[str, Any]) -> str:
    return json.dumps(plan, indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report differences, write nothing")
    args = parser.parse_args()
    plans = golden_plans()
    block = table_block(plans)
    stale = []
    wanted = {GOLDEN / f"{host}.json": dumps(plan) for host, plan in plans.items()}
    wanted[GATEWAY_GOLDEN] = dumps(gateway_plan(plans))
    wanted.update({doc: with_table(doc.read_text(encoding="utf-8"), block) for doc in DOCS})
    for path, content in wanted.items():
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
    for extra in sorted(set(GOLDEN.glob("*.json")) - set(wanted)):
        stale.append(extra.relative_to(ROOT))
        if not args.check:
            extra.unlink()
    print(("differs: " if args.check else "written: ") + (", ".join(map(str, stale)) or "nothing"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
