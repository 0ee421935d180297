# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's plan: what the pinned engine will do with this model on these GPUs (``build_plan``).

Orchestration only: ``inputs`` validates the host's variables; the engine's planner (``engines.py``: the
seam, ``vllm_plan`` / ``vllm_cpu_plan`` / ``ollama_plan`` behind it) runs the planner loop of its engine
(layout candidates from ``layout``, settings from the engine's one resolver, memory from its budget,
findings from its checks); ``standby`` adds an Ollama kept beside vLLM;
``service`` derives the contract the engine roles render. The keys are documented in docs/plan.md.

Inputs are the host's variables (a mapping of name -> value; only the names ``inputs`` lists are read,
so secrets such as ``vllm_api_key`` or an HF token never enter the plan).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding, finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import ClusterContext
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import revision_check
from ansible_collections.inferops.llm.plugins.module_utils._plan.engines import EnginePlanner, planner_for
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import defined_names, validate_inputs
from ansible_collections.inferops.llm.plugins.module_utils._plan.metrics import measured_applies
from ansible_collections.inferops.llm.plugins.module_utils._plan.model_source import resolve_model_source, source_keys
from ansible_collections.inferops.llm.plugins.module_utils._plan.service import service_section
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import with_measured_speed
from ansible_collections.inferops.llm.plugins.module_utils._plan.suggestions import verify_suggestions, with_values


def build_plan(
    variables: Mapping[str, Any],
    hardware: Mapping[str, Any],
    measured: Optional[Mapping[str, Any]] = None,
    host: Optional[str] = None,
    cluster: Optional[ClusterContext] = None,
    cluster_findings: Sequence[Mapping[str, str]] = (),
    defined: Optional[Sequence[str]] = None,
    models: Optional[ModelResolver] = None,
) -> Dict[str, Any]:
    """The plan dict of one host (keys documented in docs/plan.md).

    variables: the host's variables (see input_names()); hardware: ``{"gpus": [...], "topology": {...},
    "driver": {...}}`` as gpu_facts returns them or as declared in inventory (topology parsed);
    measured: the vLLM role's local fact from a previous start (ansible_local.inferops_vllm), if any.
    defined: every name with a collection prefix the host defines (names only), for unknown names, less a key
    left empty (inputs.defined_names); None: the names of ``variables``.
    models: the run's ModelResolver (the controller's Hugging Face cache and Hub, _model/hub.py); without one the
    model comes from inferops_model.config / config_file or the catalogue only.
    Every value a finding suggests is verified by planning the host again with it (_plan/suggestions.py).
    Raises PlanInputError (each message names its variable) for inputs that cannot be planned.
    """

    def draft(values: Mapping[str, Any]) -> Tuple[Dict[str, Any], EnginePlanner]:
        names = None if defined is None else [*defined, *(str(name).split(".", maxsplit=1)[0] for name in values)]
        return _draft_plan(with_values(variables, values), hardware, measured, cluster, cluster_findings, names, models)

    plan, engine = draft({})
    plan["checks"] = verify_suggestions(plan["checks"], lambda values: draft(values)[0]["checks"])
    unique: List[Dict[str, str]] = []
    for item in plan["checks"]:
        entry = Finding.from_mapping(item).to_plan()
        if entry not in unique:
            unique.append(entry)
    plan["checks"] = unique
    plan["host"] = host
    start = engine.start(plan, measured)
    if start is not None:
        plan["start"] = start
    plan["service"] = service_section(plan)
    if plan.get("performance") and measured_applies(plan, measured) and measured is not None:
        plan["performance"] = with_measured_speed(plan["performance"], measured.get("benchmark"))
    order = (
        "host",
        "engine",
        "engine_version",
        "device",  # only on CPU hosts (vllm_device: cpu)
        "model",
        "layout",
        "memory",
        "performance",  # predicted speed and the alternatives (_plan/speed.py)
        "settings",
        "checks",
        "command",
        "environment",
        "start",  # vLLM: how long a start may take (TimeoutStartSec and the /health wait)
        "service",  # the contract both engine roles render (_plan/service.py)
        "standby_ollama",  # only on vLLM hosts with inferops_standby_ollama
        "cluster",  # only on the nodes of a multi-host deployment (inferops_cluster)
    )
    return {key: plan[key] for key in order if key in plan}


def _draft_plan(
    variables: Mapping[str, Any],
    hardware: Mapping[str, Any],
    measured: Optional[Mapping[str, Any]],
    cluster: Optional[ClusterContext],
    cluster_findings: Sequence[Mapping[str, str]],
    defined: Optional[Sequence[str]],
    models: Optional[ModelResolver],
) -> Tuple[Dict[str, Any], EnginePlanner]:
    """The engine's plan with every check, each finding with its suggestion still to verify (build_plan), and
    the engine's planner."""
    inputs = validate_inputs(variables, defined)
    source_findings = resolve_model_source(inputs, models)
    engine = planner_for(inputs)
    plan = engine.plan(inputs, hardware, measured, cluster)
    unknown = [finding_entry("unknown-variable", "warning", message) for message in inputs.warnings]
    names = defined_names(variables, variables) if defined is None else defined
    unknown += engine.key_findings(inputs, variables, names, hardware, cluster)
    plan["checks"] = unknown + source_findings + [dict(f) for f in cluster_findings] + plan["checks"]
    plan["model"].update(source_keys(inputs))
    revision = revision_check(inputs.model, (inputs.model_source or {}).get("commit"))
    if revision:
        plan["checks"].insert(0, revision)
    return plan, engine
