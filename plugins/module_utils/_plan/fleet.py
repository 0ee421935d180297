# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Every host of a play planned in one call: single hosts one by one, the hosts of a cluster together.

The controller-side entry point for fleets (``plan.yml`` over many hosts) and for multi-host deployments:
the hosts that share ``inferops_cluster`` are planned by ``cluster.plan_cluster`` first, so that each node's
plan knows its rank, the head and the cluster's findings.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import Member, plan_cluster
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan


def plan_fleet(
    members: Sequence[Member],
    measured: Optional[Mapping[str, Mapping[str, Any]]] = None,
    models: Optional[ModelResolver] = None,
) -> Dict[str, Dict[str, Any]]:
    """``{host: {"plan": dict}}`` or ``{host: {"errors": [message, ...]}}`` for every member, in order.

    members: each host's whitelisted variables, hardware and gathered facts (inventory order).
    measured: the vLLM role's local fact per host, where a previous start left one.
    models: the run's ModelResolver (one per run: each (repo, revision) is read once for all hosts).
    """
    measured = measured or {}
    clusters: Dict[str, List[Member]] = {}
    for member in members:
        name = member.variables.get("inferops_cluster")
        if name not in (None, ""):
            clusters.setdefault(str(name), []).append(member)
    contexts: Dict[str, Any] = {}
    findings: Dict[str, List[Dict[str, str]]] = {}
    for name, cluster_members in clusters.items():
        planned = plan_cluster(name, cluster_members)
        for member in cluster_members:
            contexts[member.host] = planned["contexts"][member.host]
            findings[member.host] = planned["findings"]
    result: Dict[str, Dict[str, Any]] = {}
    for member in members:
        try:
            plan = build_plan(
                member.variables,
                member.hardware,
                measured.get(member.host),
                member.host,
                cluster=contexts.get(member.host),
                cluster_findings=findings.get(member.host, ()),
                defined=member.defined,
                models=models,
            )
        except PlanInputError as exc:
            result[member.host] = {"errors": list(exc.errors)}
        except ValueError as exc:  # a plan that cannot be computed stops this host, not the fleet
            result[member.host] = {"errors": PlanInputError([f"the plan cannot be computed: {exc}"]).errors}
        else:
            result[member.host] = {"plan": plan}
    return result
