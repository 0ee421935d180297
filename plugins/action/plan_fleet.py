# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Action of inferops.llm.plan_fleet: plan every host of the play in one task (docs in modules/plan_fleet.py).

One task on the controller instead of several per host: it reads, per host, only the variables the plan
knows (secrets such as vllm_api_key are never templated), the declared or gathered hardware and the local
fact of the last vLLM start, plans the hosts with _plan/fleet.py (clusters together), writes the reports and
returns the table. Hosts are never contacted.
"""

from __future__ import annotations

import json
import os
import re
import typing as t
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.inferops.llm.plugins.module_utils._core.files import write_if_changed
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain as _plain
from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES
from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology
from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member
from ansible_collections.inferops.llm.plugins.module_utils._plan.fleet import plan_fleet
from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import (
    ENDPOINT_VARIABLES,
    GatewayInputError,
    plan_fleet_gateway,
    render_gateway_table,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    KEY_VARIABLES,
    VARIABLE_NAME_PATTERN,
    defined_names,
    input_names,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.picture import plan_svg
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import (
    render_console,
    render_markdown,
    render_table,
)

_PREFIX_RE = re.compile(VARIABLE_NAME_PATTERN + ".*")

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "dest": {"type": "path", "required": True},
    "write_reports": {"type": "bool", "default": True},
    "mode": {"type": "raw", "default": "0644"},
    "show": {"type": "bool", "default": True},
    "gateway": {"type": "str", "default": ""},
    "gateway_profiles": {"type": "list", "elements": "raw"},
    "gateway_backends": {"type": "list", "elements": "raw"},
    "hf_token": {"type": "str", "no_log": True},
}


def _gateway(
    gateway: str, hostvars: t.Any, plans: dict[str, t.Any], given: dict[str, t.Any], defined: dict[str, list[str]]
) -> tuple[dict[str, t.Any] | None, list[str]]:
    """The gateway's plan over the planned hosts (routes, profiles, checks), or the input errors."""
    engine_hosts, keyed = {}, []
    for host in plans:
        host_vars = hostvars[host]
        engine_hosts[host] = {name: _plain(host_vars[name]) for name in ENDPOINT_VARIABLES if name in host_vars}
        # Whether a key is set, never its value (it stays in the vault until the gateway role runs).
        facts = ENGINES.get(str(plans[host].get("engine")))
        if facts and facts.api_key_variable and facts.api_key_variable in defined.get(host, ()):
            keyed.append(host)
    gateway_vars = hostvars[gateway]
    variables = {}
    for name in ("gateway_profiles", "gateway_backends"):
        if given.get(name) is not None:  # from the gateway role, whose defaults hostvars do not hold
            variables[name] = _plain(given[name])
        elif name in gateway_vars:
            variables[name] = _plain(gateway_vars[name])
    try:
        return plan_fleet_gateway(plans, engine_hosts, gateway, variables, keyed), []
    except GatewayInputError as exc:
        return None, exc.errors


def _member(host: str, hostvars: t.Any) -> tuple[Member, t.Any]:
    """The host as the planner sees it, reading only the planning variables and facts."""
    host_vars = hostvars[host]
    # Names only (iterating hostvars templates nothing): every name with a collection prefix (inferops_,
    # vllm_, ray_, gateway_, ...) for the unknown-variable check, and the values of the planning inputs
    # alone (secrets are never templated). A key (vllm_api_key) left empty is no key: read untemplated
    # (raw_get), so that a vaulted key is not decrypted.
    defined = [str(name) for name in host_vars if _PREFIX_RE.fullmatch(str(name))]
    if any(name in KEY_VARIABLES for name in defined):
        raw_get = getattr(hostvars, "raw_get", None)
        # raw_get: every variable of the host untemplated, so a key set to "{{ name }}" is followed to that name's
        # raw value (None or "": no key); a vaulted value stays encrypted, nothing is rendered.
        defined = defined_names(defined, raw_get(host), follow=True) if raw_get else defined_names(defined, host_vars)
    names = [name for name in input_names() if name in defined]
    variables = {name: _plain(host_vars[name]) for name in names}
    facts = _plain(host_vars["ansible_facts"]) if "ansible_facts" in host_vars else {}
    if "inferops_gpus" in host_vars:
        text = _plain(host_vars["inferops_gpu_topology_text"]) if "inferops_gpu_topology_text" in host_vars else ""
        hardware = {
            "gpus": _plain(host_vars["inferops_gpus"]),
            "topology": parse_topology(text or ""),
            "driver": _plain(host_vars["inferops_gpu_driver"]) if "inferops_gpu_driver" in host_vars else {},
        }
    else:
        hardware = {
            "gpus": facts.get("inferops_gpus") or [],
            "topology": facts.get("inferops_gpu_topology") or {},
            "driver": facts.get("inferops_gpu_driver") or {},
        }
    memory = _plain(host_vars["inferops_host_memory_mib"]) if "inferops_host_memory_mib" in host_vars else None
    hardware["memory_mib"] = memory or facts.get("memtotal_mb")
    # Physical cores (processor_cores is per socket): the compute roof of a vLLM CPU plan's speed.
    if facts.get("architecture"):  # gathered: the ollama role's archive (x86_64, aarch64)
        hardware["architecture"] = str(facts["architecture"])
    cores, sockets = facts.get("processor_cores"), facts.get("processor_count")
    if isinstance(cores, int) and isinstance(sockets, int) and cores > 0 and sockets > 0:
        hardware["cpu_cores"] = cores * sockets
    gathered: dict[str, t.Any] = {}
    version = (facts.get("python") or {}).get("version") or {}
    if version.get("major") is not None:
        gathered["python"] = f"{version['major']}.{version.get('minor')}"
    interface = variables.get("inferops_cluster_interface")
    if interface and isinstance(facts.get(str(interface)), Mapping):
        address = (facts[str(interface)].get("ipv4") or {}).get("address")
        if address:
            gathered.update(address=address, interface=str(interface))
    measured = (facts.get("ansible_local") or {}).get("inferops_vllm")
    member = Member(host=host, variables=variables, hardware=hardware, facts=gathered, defined=defined)
    return member, measured


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp: t.Any = None, task_vars: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        result = super().run(tmp, task_vars)
        _spec, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            mode = int(str(args["mode"]), 8)
        except ValueError as error:
            raise AnsibleActionFail(f"plan_fleet: mode must be octal such as '0644', got {args['mode']!r}") from error
        hostvars = (task_vars or {}).get("hostvars") or {}
        members, measured = [], {}
        gateway = args["gateway"]
        if gateway and gateway not in hostvars:
            raise AnsibleActionFail(f"plan_fleet: gateway {gateway!r} is not a host of the inventory")
        for host in args["hosts"]:
            if host == gateway and "inferops_model" not in hostvars[host]:
                continue  # the gateway's own host, without an engine
            if "/" in host or host.startswith("."):
                raise AnsibleActionFail(f"plan_fleet: {host!r} cannot name a report file")
            member, fact = _member(host, hostvars)
            members.append(member)
            if fact:
                measured[host] = _plain(fact)
        # The checkpoints' files from the controller's Hugging Face cache or Hub, once per (repo, revision) for
        # the whole run (_model/hub.py); the token goes to the requests only.
        models = ModelResolver.from_environment(os.environ, token=args.get("hf_token") or None)
        planned = plan_fleet(members, measured, models)
        plans = {host: entry["plan"] for host, entry in planned.items() if "plan" in entry}
        input_errors = {host: entry["errors"] for host, entry in planned.items() if "errors" in entry}
        defined = {member.host: list(member.defined or ()) for member in members}
        gateway_plan, gateway_errors = _gateway(gateway, hostvars, plans, args, defined) if gateway else (None, [])
        if gateway_errors:
            input_errors[f"{gateway} (gateway)"] = gateway_errors
        written: list[str] = []
        if args["write_reports"] and gateway_plan is not None:
            path = os.path.join(os.path.realpath(args["dest"]), "gateway.json")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if write_if_changed(path, json.dumps(gateway_plan, indent=2) + "\n", mode):
                written.append(path)
        if args["write_reports"] and plans:
            dest = os.path.realpath(args["dest"])
            os.makedirs(dest, exist_ok=True)
            topologies = {member.host: member.hardware.get("topology") for member in members}
            for host, plan in plans.items():
                for path, content in (
                    (os.path.join(dest, f"{host}.json"), json.dumps(plan, indent=2) + "\n"),
                    (os.path.join(dest, f"{host}.md"), render_markdown(plan)),
                    (os.path.join(dest, f"{host}.svg"), plan_svg(plan, topologies.get(host))),
                ):
                    if write_if_changed(path, content, mode):
                        written.append(path)
        check_errors = {
            host: [f"{c['id']}: {c['message']}" for c in plan["checks"] if c["severity"] == "error"]
            for host, plan in plans.items()
        }
        if gateway_plan is not None:
            check_errors[f"{gateway} (gateway)"] = [
                f"{c['id']}: {c['message']}" for c in gateway_plan["checks"] if c["severity"] == "error"
            ]
        rows = [plans.get(host) or {"host": host} for host in planned]
        gateway_lines = render_gateway_table(gateway_plan) if gateway_plan is not None else []
        table = render_table(rows) + (["", *gateway_lines] if gateway_lines else [])
        # The gateway's own checks are printed with its routes (gateway_lines); its input errors as findings.
        console = render_console(rows, input_errors, gateway_lines)
        if args["show"]:
            self._display.display("\n".join(console))
        result.update(
            changed=bool(written),
            plans=plans,
            input_errors=input_errors,
            check_errors={host: errors for host, errors in check_errors.items() if errors},
            table=table,
            console=console,
            gateway=gateway_plan,
            gateway_table=gateway_lines,
            written=written,
        )
        return result
