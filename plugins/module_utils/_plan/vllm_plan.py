# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The plan of a vLLM host: the planner loop over ranked layouts (resolve, budget, refine, check)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import gib
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    cuda_total_bytes_from_nvidia_smi,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks import check_vllm
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.memory import BUDGET_FACT_FINDINGS
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.render import vllm_command
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import (
    SWITCH_OFF,
    VLLM_SETTINGS,
    settings_section,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import ClusterContext
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import (
    Hardware,
    driver_facts,
    finding,
    layout_section,
    model_section,
    plan_findings,
    resolved,
    service_environment,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    HostInputs,
    PlanInputError,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import (
    auto_result,
    custom_allreduce,
    explicit_result,
    finish_layout,
    layout_search,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import (
    alternatives,
    figures_for,
    layout_options,
    performance_section,
    predictor_for,
    rank_options,
    speed_reason,
    traffic_for,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.standby import standby_ollama, vllm_reserved_bytes
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_common import (
    OVERHEAD_SETTINGS,
    Evaluation,
    catalogue_params,
    evaluate,
    is_gguf,
    measured_overhead,
    model_architecture,
    model_weights,
    settings_context,
    weight_scheme,
)


def vllm_plan(
    inputs: HostInputs,
    gear: Hardware,
    measured: Optional[Mapping[str, Any]],
    cluster: Optional[ClusterContext] = None,
) -> Dict[str, Any]:
    """The plan of a vLLM host; with ``cluster``, of one node of a multi-host deployment (cluster.py)."""
    version = inputs.engine_version
    architecture, served, entry = model_architecture(inputs)
    requested = dict(inputs.settings)
    weights = model_weights(inputs, served, entry)
    by_index = {int(g["index"]): g for g in gear.gpus}
    allowed = inputs.gpus or list(by_index)
    engine_gpus = [by_index[i] for i in allowed if i in by_index]
    ctx = settings_context(inputs, architecture, served, engine_gpus)
    context = {
        "vllm_version": version,
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        **{name: requested.get(name) for name in OVERHEAD_SETTINGS},
    }
    evaluations: Dict[Tuple[int, int], Optional[Evaluation]] = {}

    def custom_ar(tp: int) -> Optional[bool]:
        """False when no placement of this TP size (more than two GPUs: what the records show) runs vLLM's
        custom all-reduce (its non-torch buffers are then those of one GPU); None otherwise (charged as if it
        ran, the safe side; two PCIe GPUs without peer-to-peer have no record yet)."""
        placements = [c for c in search.candidates if c.tp == tp]
        if tp > 2 and placements and not any(custom_allreduce(search.topo, c) for c in placements):
            return False
        return None

    def evaluation(tp: int, pp: int) -> Optional[Evaluation]:
        """The candidate's resolved settings and budget (None when the model cannot be split this way)."""
        if (tp, pp) not in evaluations:
            try:
                evaluations[(tp, pp)] = evaluate(
                    ctx, inputs, served, weights, measured, context, tp, pp, custom_all_reduce=custom_ar(tp)
                )
            except ValueError:
                evaluations[(tp, pp)] = None
        return evaluations[(tp, pp)]

    # The planner loop: the layout code ranks every valid layout; each is resolved, budgeted and kept
    # when its KV cache holds a request; the first that fits wins.
    search = layout_search(
        gear.gpus,
        architecture,
        topology=gear.topology,
        multi_node=cluster.multi_node() if cluster is not None else None,
        requested={
            "tensor_parallel_size": requested.get("tensor_parallel_size"),
            "pipeline_parallel_size": requested.get("pipeline_parallel_size"),
            "data_parallel_size": requested.get("data_parallel_size"),
            "enable_expert_parallel": requested.get("enable_expert_parallel"),
            "gpus": inputs.gpus,
        },
    )
    # The planner loop: every valid layout (the layout search's placements x DP replicas) is resolved,
    # budgeted and, when its KV cache holds a request, predicted; the fastest for the objective wins.
    workload = inputs.workload
    traffic = traffic_for(
        served, weights, catalogue_params(inputs, entry), weight_scheme(inputs, architecture), is_gguf(inputs)
    )
    ranked = rank_options(
        layout_options(search, search.candidates, evaluation, traffic, workload),
        workload.objective,
        len(search.available),
    )
    best = ranked[0] if ranked else None
    result = auto_result(search, best.candidate if best is not None else None)
    if best is not None:
        result.update(
            data_parallel_size=best.dp,
            replica_groups=best.replicas,
            reason=speed_reason(search, best, workload.objective),
        )
    automatic = result["candidate"]
    if search.sizes_given:
        # Pinned sizes are constraints: the unset ones come from the fastest option that keeps them.
        pinned = {
            name: int(requested[name])
            for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
            if requested.get(name) not in (None, "")
        }
        kept = [o for o in ranked if all(o.sizes()[name] == value for name, value in pinned.items())]
        fill = kept[0] if kept else None
        result = explicit_result(
            search,
            result["candidate"],
            fill.candidate if fill is not None else None,
            fill.dp if fill is not None else 1,
        )
        found = evaluation(result["candidate"].tp, result["candidate"].pp)
        result["fits"] = bool(result["fits"] and found is not None and found.fits)
        if fill is not None and fill.candidate is result["candidate"]:
            best = fill
    layout = finish_layout(search, result)
    tp, pp = int(layout["tensor_parallel_size"]), int(layout["pipeline_parallel_size"])
    used = [by_index[i] for i in layout["gpus"] if i in by_index]
    chosen = evaluation(tp, pp)
    if chosen is None:  # the layout itself is invalid for the model: the budget raises why
        try:
            chosen = evaluate(ctx, inputs, served, weights, measured, context, tp, pp, custom_all_reduce=custom_ar(tp))
        except ValueError as exc:
            pipeline = "pipeline" in str(exc)
            variable = "vllm_pipeline_parallel_size" if pipeline else "vllm_tensor_parallel_size"
            passing = automatic.pp if pipeline else automatic.tp
            raise PlanInputError(
                [
                    f"{variable} {pp if pipeline else tp} cannot split {inputs.model['repo']}: {exc} "
                    f"(a value that passes: {variable}: {passing})"
                ]
            ) from exc
    resolved_settings, figures = chosen.settings, chosen.budget
    speed = predictor_for(search, traffic, result["candidate"], figures, resolved_settings.values)
    performance = performance_section(
        figures_for(speed, workload, int(layout["data_parallel_size"]), figures, resolved_settings.values),
        alternatives(ranked, best, workload.objective, len(search.available)) if best is not None else [],
        [str(g.get("name") or "") for g in used],
    )
    settings = settings_section(resolved_settings, requested, layout, figures, version)
    resolved_values = {name: entry["value"] for name, entry in settings.items()}
    environment = service_environment(
        layout["env"], cluster.environment() if cluster is not None else {}, inputs.environment
    )
    if cluster is not None and cluster.backend == "ray" and "distributed_executor_backend" not in requested:
        settings["distributed_executor_backend"] = resolved(
            "ray", "chosen", f"one deployment over the {cluster.nnodes} nodes of Ray cluster {cluster.name}"
        )
    findings = plan_findings(
        check_vllm(
            version=version,
            model=architecture,
            settings=resolved_values,
            gpus=used,
            repo=inputs.model["repo"],
            model_format="gguf" if is_gguf(inputs) else "safetensors",
            layout=layout,
            budget=figures,
            env=environment,
            driver=driver_facts(gear.driver),
        )
    )
    findings = list(gear.notes) + findings + _batch_cap_note(settings) + _choice_notes(settings, architecture)
    reported = {f["id"] for f in findings}
    for fact in figures["findings"]:
        check_id = BUDGET_FACT_FINDINGS[fact["id"]]
        if check_id not in reported:
            findings.append(finding(check_id, fact["severity"], fact["message"]))
    _overhead, note = measured_overhead(measured, dict(context, tensor_parallel_size=tp, pipeline_parallel_size=pp))
    if note:
        findings.append(note)
    quantization = inputs.model.get("quantization") or (
        architecture.quantization.scheme if architecture.quantization is not None else None
    )
    standby = None
    if inputs.standby_ollama is not None:
        standby, coresidency = standby_ollama(inputs.standby_ollama, gear, vllm_reserved_bytes(settings, figures, used))
        findings += coresidency
    plan = {
        "engine": "vllm",
        "engine_version": version,
        "model": model_section(inputs, architecture.architecture, weights.total_bytes, weights.source, quantization),
        "layout": layout_section(layout),
        "memory": _vllm_memory(figures, used),
        "performance": performance,
        "settings": settings,
        "checks": findings,
        "command": vllm_command(
            inputs.model["repo"],
            inputs.model["revision"],
            settings,
            [flag for flag in layout.get("flags") or [] if flag not in _SETTING_FLAGS] + inputs.extra_args,
            auto_max_model_len=requested.get("max_model_len") == "auto",
        ),
        "environment": environment,
    }
    if standby is not None:
        plan["standby_ollama"] = standby
    if cluster is not None:
        plan["cluster"] = cluster.section()
    return plan


def _batch_cap_note(settings: Mapping[str, Any]) -> list:
    """An info finding when the plan caps max_num_seqs below vLLM's default (only for a physical reason)."""
    entry = settings.get("max_num_seqs") or {}
    if entry.get("source") != "chosen":
        return []
    message = (
        f"max_num_seqs is {entry['value']} instead of vLLM's default: {entry.get('reason')}. "
        "Set vllm_max_num_seqs to choose otherwise"
    )
    return [finding("max-num-seqs", "info", message)]


def _choice_notes(settings: Mapping[str, Any], architecture: ModelArchitecture) -> list:
    """Info findings for choices of the plan that change what clients get, each saying how to choose otherwise."""
    notes = []
    kv = settings.get("kv_cache_dtype") or {}
    if kv.get("source") == "chosen" and str(kv.get("value")).startswith("fp8"):
        notes.append(
            finding(
                "kv-cache-dtype",
                "info",
                f"the plan chose kv_cache_dtype {kv['value']} ({kv.get('reason')}); FP8 keys and values round the "
                "attention inputs, which can change outputs slightly. vllm_kv_cache_dtype: auto keeps the model's "
                "dtype at twice the KV memory",
            )
        )
    for name, check in (("tool_call_parser", "tool-call-parser"), ("reasoning_parser", "reasoning-parser")):
        entry = settings.get(name) or {}
        if entry.get("source") == "chosen" and entry.get("value"):
            notes.append(
                finding(
                    check,
                    "info",
                    f"the plan chose {name} {entry['value']} ({entry.get('reason')}); set vllm_{name} to another "
                    f"parser, or to {SWITCH_OFF} to start vLLM without one",
                )
            )
    length = (settings.get("max_model_len") or {}).get("value")
    model_len = architecture.derived_max_model_len
    if isinstance(length, int) and model_len and length < model_len:
        notes.append(
            finding(
                "context-length",
                "info",
                f"max_model_len {length:,} is shorter than the model's {model_len:,} tokens: longer requests are "
                f"refused. vllm_max_model_len: {model_len} (or auto) serves the model's full length if it fits",
            )
        )
    return notes


_SETTING_FLAGS = {setting.flag for setting in VLLM_SETTINGS}


def _vllm_memory(figures: Mapping[str, Any], used: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The plan's memory section from the budget (per GPU, as each rank logs it)."""
    per_rank = figures["weights_per_rank_bytes"]
    per_gpu = []
    for position, gpu in enumerate(used):
        rank_weights = per_rank[position % len(per_rank)] if per_rank else figures["weights_bytes"]
        per_gpu.append(
            {
                "index": int(gpu["index"]),
                "name": gpu.get("name"),
                "total_gib": gib(cuda_total_bytes_from_nvidia_smi(int(gpu["memory_mib"]))),
                "weights_gib": gib(rank_weights),
                "overhead_gib": gib(figures["overhead_bytes"]),
                "kv_cache_gib": gib(figures["kv_cache_bytes"]),
            }
        )
    return {
        "gpu_total_gib": gib(figures["gpu_total_bytes"]),
        "weights_gib": gib(figures["weights_bytes"]),
        "overhead_gib": gib(figures["overhead_bytes"]),
        "kv_cache_gib": gib(figures["kv_cache_bytes"]),
        "kv_cache_tokens": int(figures["kv_cache_tokens"]),
        "max_concurrency": round(float(figures["max_concurrency"]), 2),
        "block_size": int(figures["block_size"]),
        "vram_used_gib": gib(figures["vram_used_bytes"]),
        "per_gpu": per_gpu,
    }
