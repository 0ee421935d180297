# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The plan of a vLLM host: the planner loop over ranked layouts (resolve, budget, refine, check)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import gib
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    cuda_total_bytes_from_nvidia_smi,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks import check_release
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.memory import BUDGET_FACT_FINDINGS
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import (
    SWITCH_OFF,
    SettingsContext,
    settings_section,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import ClusterContext
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import (
    Hardware,
    driver_facts,
    finding,
    layout_section,
    plan_findings,
    resolved,
    service_environment,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    HostInputs,
    PlanInputError,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import (
    Candidate,
    LayoutSearch,
    auto_result,
    custom_allreduce,
    describe_links,
    explicit_result,
    finish_layout,
    layout_search,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.performance import ModelTraffic, Workload
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import (
    Option,
    alternatives,
    layout_figures,
    layout_options,
    performance_section,
    rank_options,
    speed_reason,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.standby import standby_ollama, vllm_reserved_bytes
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_common import (
    Evaluation,
    VllmModel,
    evaluate,
    is_gguf,
    serve_command,
    settings_context,
    vllm_model,
    vllm_model_section,
)


@dataclass
class _Chosen:
    """The layout the planner loop picked, with the settings and budget it was evaluated with."""

    search: LayoutSearch
    layout: Dict[str, Any]
    candidate: Candidate
    evaluation: Evaluation
    ranked: List[Option]
    best: Optional[Option]
    traffic: ModelTraffic


def _choose_layout(
    inputs: HostInputs,
    gear: Hardware,
    model: VllmModel,
    ctx: SettingsContext,
    measured: Optional[Mapping[str, Any]],
    cluster: Optional[ClusterContext],
) -> _Chosen:
    """The planner loop: every valid layout (the layout search's placements x DP replicas) is resolved,
    budgeted and, when its KV cache holds a request, predicted; the fastest for the objective wins."""
    requested = inputs.settings
    evaluations: Dict[Tuple[int, int], Optional[Evaluation]] = {}

    def custom_ar(tp: int) -> Optional[bool]:
        """False when no placement of this TP size (more than two GPUs: what the records show) runs vLLM's
        custom all-reduce (its non-torch buffers are then those of one GPU); None otherwise (charged as if it
        ran, the safe side; two PCIe GPUs without peer-to-peer have no record yet)."""
        placements = [c for c in search.candidates if c.tp == tp]
        if tp > 2 and placements and not any(custom_allreduce(search.topo, c) for c in placements):
            return False
        return None

    def budgeted(tp: int, pp: int) -> Evaluation:
        return evaluate(ctx, inputs, model, measured, tp, pp, custom_all_reduce=custom_ar(tp))

    def evaluation(tp: int, pp: int) -> Optional[Evaluation]:
        """The candidate's resolved settings and budget (None when the model cannot be split this way)."""
        if (tp, pp) not in evaluations:
            try:
                evaluations[(tp, pp)] = budgeted(tp, pp)
            except ValueError:
                evaluations[(tp, pp)] = None
        return evaluations[(tp, pp)]

    search = layout_search(
        gear.gpus,
        model.architecture,
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
    workload = inputs.workload
    traffic = model.traffic
    ranked = rank_options(
        layout_options(search, search.candidates, evaluation, traffic, workload),
        workload.objective,
        len(search.available),
    )
    best = ranked[0] if ranked else None
    result = auto_result(search, best.candidate if best is not None else None)
    if best is not None:
        links = describe_links(search.topo, best.candidate.groups)
        result.update(
            data_parallel_size=best.dp,
            replica_groups=best.replicas,
            reason=speed_reason(search, best, workload.objective, links),
        )
    automatic = result["candidate"]
    if search.sizes_given:
        result, best = _pinned_result(search, result, ranked, best, requested, evaluation)
    layout = finish_layout(search, result)
    tp, pp = int(layout["tensor_parallel_size"]), int(layout["pipeline_parallel_size"])
    chosen = evaluation(tp, pp)
    if chosen is None:  # the layout itself is invalid for the model: the budget raises why
        try:
            chosen = budgeted(tp, pp)
        except ValueError as exc:
            splits = evaluation(automatic.tp, automatic.pp) is not None
            raise _cannot_split(inputs, exc, tp, pp, automatic, splits) from exc
    return _Chosen(search, layout, result["candidate"], chosen, ranked, best, traffic)


def _pinned_result(
    search: LayoutSearch,
    result: Dict[str, Any],
    ranked: Sequence[Option],
    best: Optional[Option],
    requested: Mapping[str, Any],
    evaluation: Callable[[int, int], Optional[Evaluation]],
) -> Tuple[Dict[str, Any], Optional[Option]]:
    """Pinned sizes are constraints: the unset ones come from the fastest option that keeps them."""
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
    return result, best


_NAMED_AT_END = re.compile(r" \((vllm_[a-z_]+)\)$")


def _cannot_split(
    inputs: HostInputs, exc: ValueError, tp: int, pp: int, automatic: Candidate, splits: bool
) -> PlanInputError:
    """The error of a layout the model cannot be split into, with the automatic layout's size: verified, it is
    offered only when the automatic layout plans (``splits``) and differs from this one. Otherwise the layout is
    not the cause: the error names the variable the settings' own message names (such as a kv_cache_dtype the
    release lacks), not the layout size."""
    pipeline = "pipeline" in str(exc)
    variable = "vllm_pipeline_parallel_size" if pipeline else "vllm_tensor_parallel_size"
    pinned, passing = (pp, automatic.pp) if pipeline else (tp, automatic.tp)
    if splits and passing != pinned:
        return PlanInputError(
            [
                f"{variable} {pinned} cannot split {inputs.model['repo']}: {exc} "
                f"(a value that passes: {variable}: {passing})"
            ]
        )
    message = str(exc)
    named = _NAMED_AT_END.search(message)
    if named:
        return PlanInputError([f"{named.group(1)}: {message[: named.start()]}"])
    if message.startswith("vllm_"):
        return PlanInputError([message])
    return PlanInputError(
        [f"the vLLM settings cannot be planned for {inputs.model['repo']} at TP={tp} PP={pp}: {message}"]
    )


def _performance(chosen: _Chosen, workload: Workload, used: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The plan's performance section: the chosen layout's predicted speed and the alternatives."""
    values, figures = chosen.evaluation.settings.values, chosen.evaluation.budget
    dp = int(chosen.layout["data_parallel_size"])
    predicted = layout_figures(chosen.search, chosen.traffic, chosen.candidate, figures, values, workload, [dp])[dp]
    others = (
        alternatives(chosen.ranked, chosen.best, workload.objective, len(chosen.search.available))
        if chosen.best is not None
        else []
    )
    return performance_section(predicted, others, [str(g.get("name") or "") for g in used])


def vllm_plan(
    inputs: HostInputs,
    gear: Hardware,
    measured: Optional[Mapping[str, Any]],
    cluster: Optional[ClusterContext] = None,
) -> Dict[str, Any]:
    """The plan of a vLLM host; with ``cluster``, of one node of a multi-host deployment (cluster.py)."""
    version = inputs.engine_version
    model = vllm_model(inputs)
    architecture = model.architecture
    requested = dict(inputs.settings)
    by_index = {int(g["index"]): g for g in gear.gpus}
    allowed = inputs.gpus or list(by_index)
    ctx = settings_context(inputs, architecture, model.served, [by_index[i] for i in allowed if i in by_index])
    chosen = _choose_layout(inputs, gear, model, ctx, measured, cluster)
    layout, workload = chosen.layout, inputs.workload
    used = [by_index[i] for i in layout["gpus"] if i in by_index]
    resolved_settings, figures = chosen.evaluation.settings, chosen.evaluation.budget
    memory = _vllm_memory(figures, used)
    performance = _performance(chosen, workload, used)
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
        check_release(
            ctx.version,
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
    if chosen.evaluation.overhead_note:
        findings.append(chosen.evaluation.overhead_note)
    standby = None
    if inputs.standby_ollama is not None:
        reserved = vllm_reserved_bytes(settings, figures, used)
        standby, coresidency = standby_ollama(inputs.standby_ollama, gear, reserved)
        findings += coresidency
    plan = {
        "engine": "vllm",
        "engine_version": version,
        "model": vllm_model_section(inputs, model),
        "layout": layout_section(layout),
        "memory": memory,
        "performance": performance,
        "settings": settings,
        "checks": findings,
        "command": serve_command(inputs, settings, layout),
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
