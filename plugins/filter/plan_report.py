# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.plan_markdown and inferops.llm.plan_table filters (documented in their .yml files)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain as _plain
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown, render_table


def plan_markdown(plan: t.Any) -> str:
    """The Markdown report of one plan (the inferops_plan fact)."""
    if not isinstance(plan, Mapping):
        raise AnsibleFilterError(f"plan_markdown expects a plan (the inferops_plan fact), not a {type(plan).__name__}")
    return render_markdown(_plain(plan))


def plan_table(hosts: t.Any, hostvars: t.Any) -> list[str]:
    """The table of the plans of ``hosts`` (read from ``hostvars``), one string per line."""
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Sequence):
        raise AnsibleFilterError("plan_table expects a list of host names, e.g. ansible_play_hosts_all")
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("plan_table expects hostvars as its argument")
    plans = []
    for host in hosts:
        host_vars = hostvars.get(host) or {}
        plan = host_vars.get("inferops_plan") if isinstance(host_vars, Mapping) else None
        plans.append(_plain(plan) if isinstance(plan, Mapping) else {"host": str(host)})
    return render_table(plans)


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"plan_markdown": plan_markdown, "plan_table": plan_table}
