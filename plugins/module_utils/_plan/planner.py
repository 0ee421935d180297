# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's plan: what the pinned engine will do with this model on these GPUs (``build_plan``).

Orchestration only: ``inputs`` validates the host's variables; ``vllm_plan`` / ``ollama_plan`` run the
planner loop of each engine (layout candidates from ``layout``, settings from the engine's one resolver,
memory from its budget, findings from its checks); ``standby`` adds an Ollama kept beside vLLM;
``service`` derives the contract the engine roles render. The keys are documented in docs/plan.md.

Inputs are the host's variables (a mapping of name -> value; only the names ``inputs`` lists are read,
so secrets such as ``vllm_api_key`` or an HF token never enter the plan).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding, finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.start_timeout import start_timeout
from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import ClusterContext
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import (
    normalize_hardware,
    plan_findings,
    revision_check,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    _number,
    defined_names,
    validate_inputs,
    vllm_key_findings,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.metrics import measured_applies
from ansible_collections.inferops.llm.plugins.module_utils._plan.model_source import resolve_model_source, source_keys
from ansible_collections.inferops.llm.plugins.module_utils._plan.ollama_plan import ollama_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.refusals import ollama_checksum_findings, ray_findings
from ansible_collections.inferops.llm.plugins.module_utils._plan.service import service_section
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import with_measured_speed
from ansible_collections.inferops.llm.plugins.module_utils._plan.suggestions import verify_suggestions, with_values
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_cpu_plan import vllm_cpu_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_plan import vllm_plan

ENGINES = ("vllm", "ollama")


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

    def draft(values: Mapping[str, Any]) -> Dict[str, Any]:
        names = None if defined is None else [*defined, *(str(name).split(".")[0] for name in values)]
        return _draft_plan(with_values(variables, values), hardware, measured, cluster, cluster_findings, names, models)

    plan = draft({})
    plan["checks"] = verify_suggestions(plan["checks"], lambda values: draft(values)["checks"])
    unique: List[Dict[str, str]] = []
    for item in plan["checks"]:
        entry = Finding.from_mapping(item).to_plan()
        if entry not in unique:
            unique.append(entry)
    plan["checks"] = unique
    plan["host"] = host
    if plan["engine"] == "vllm":
        plan["start"] = start_timeout(plan["model"]["weights_bytes"], plan["model"]["repo"], measured)
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
) -> Dict[str, Any]:
    """The engine's plan with every check, each finding with its suggestion still to verify (build_plan)."""
    inputs = validate_inputs(variables, defined)
    source_findings = resolve_model_source(inputs, models)
    if inputs.engine == "vllm" and inputs.device == "cpu":
        plan = vllm_cpu_plan(inputs, _host_memory_mib(hardware), measured, _host_cpu_cores(hardware))
    else:
        gear = normalize_hardware(hardware)
        engine_plan = ollama_plan(inputs, gear) if inputs.engine == "ollama" else None
        plan = engine_plan or vllm_plan(inputs, gear, measured, cluster)
    unknown = [finding_entry("unknown-variable", "warning", message) for message in inputs.warnings]
    # What the roles would refuse after the driver and the download (inputs.vllm_key_findings, _plan/refusals.py).
    names = defined_names(variables, variables) if defined is None else defined
    if inputs.engine == "vllm":
        unknown += vllm_key_findings(variables, names)
        if cluster is not None and cluster.backend == "ray":
            unknown += plan_findings(ray_findings(variables, names, inputs.engine_version))
    else:
        unknown += plan_findings(ollama_checksum_findings(variables, hardware.get("architecture")))
    plan["checks"] = unknown + source_findings + [dict(f) for f in cluster_findings] + plan["checks"]
    plan["model"].update(source_keys(inputs))
    revision = revision_check(inputs.model, (inputs.model_source or {}).get("commit"))
    if revision:
        plan["checks"].insert(0, revision)
    return plan


def _host_cpu_cores(hardware: Mapping[str, Any]) -> Optional[int]:
    """The host's physical CPU cores (hardware ``cpu_cores``: the gathered processor facts), if known."""
    value = _number(hardware.get("cpu_cores"), "int")
    return int(value) if value and value > 0 else None


def _host_memory_mib(hardware: Mapping[str, Any]) -> Optional[int]:
    """The host's memory in MiB (hardware ``memory_mib``: inferops_host_memory_mib or ansible_memtotal_mb)."""
    value = _number(hardware.get("memory_mib"), "int")
    return int(value) if value and value > 0 else None
