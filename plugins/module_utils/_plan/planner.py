# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's plan: what the pinned engine will do with this model on these GPUs.

Orchestration only. The maths lives elsewhere and is called from here:
``model_arch`` / ``model_catalogue`` (architecture, weights), ``vllm_budget`` and
``ollama_budget`` (memory), ``layout`` (TP/PP/DP and GPU order), ``checks`` (findings and the
values chosen for unset settings). This module validates the host's inputs, assembles those
results into the plan dict of docs/plan.md and renders the service's argv and environment.

Inputs are the host's variables (a mapping of name -> value; only the names listed here are read,
so secrets such as ``vllm_api_key`` or an HF token never enter the plan).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB, MIB, gib
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    coresidency_checks,
    ollama_budget,
    shape_from_architecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.render import ollama_environment
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.settings import (
    OLLAMA_SETTINGS,
    resolve_ollama_settings,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    cuda_total_bytes_from_nvidia_smi,
    vllm_memory_budget,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import vllm_version
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.render import vllm_command
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import (
    VLLM_SETTINGS,
    ResolvedSettings,
    SettingsContext,
    refine_with_budget,
    resolve_vllm_settings,
    settings_section,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import describe_model
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    estimate_weights,
    quantization_from_name,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.checks import (
    _cc as capability_x10,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.checks import (
    check_ollama,
    check_vllm,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    _COMMIT_RE,
    STANDBY_VAR,
    HostInputs,
    PlanInputError,
    StandbyOllama,
    _number,
    _plain,
    validate_inputs,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import (
    auto_result,
    explicit_result,
    finish_layout,
    layout_search,
    ollama_layout,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.service import service_section

ENGINES = ("vllm", "ollama")
SEVERITIES = ("error", "warning", "info")


# ------------------------------------------------------------------------------------ rendering


def resolved(value: Any, source: str, reason: Optional[str] = None) -> Dict[str, Any]:
    """One entry of the plan's ``settings``: value, source (inventory|default|chosen), reason."""
    entry: Dict[str, Any] = {"value": value, "source": source}
    if reason:
        entry["reason"] = reason
    return entry


def revision_check(model: Mapping[str, Any]) -> Optional[Dict[str, str]]:
    """A warning when the revision is a branch or tag: the download is then not reproducible."""
    revision = str(model.get("revision", ""))
    if _COMMIT_RE.match(revision):
        return None
    return {
        "id": "model-revision",
        "severity": "warning",
        "message": (
            f"inferops_model.revision {revision!r} is a branch or tag, not a commit: a later download may get "
            "different weights. Pin the 40-character commit sha of the revision you tested."
        ),
    }


# ------------------------------------------------------------------------------------ assembly


@dataclass
class Hardware:
    """The host's GPUs as gathered by gpu_facts or declared in inventory."""

    gpus: List[Dict[str, Any]]
    topology: Optional[Dict[str, Any]]
    driver: Dict[str, Any]


def _hardware(hardware: Mapping[str, Any]) -> Hardware:
    gpus = hardware.get("gpus")
    if isinstance(gpus, (str, bytes)) or not isinstance(gpus, Sequence) or not gpus:
        raise PlanInputError(
            [
                "no GPUs to plan for: declare inferops_gpus (and inferops_gpu_topology_text for more than one GPU) "
                "or let the plan role gather them with inferops.llm.gpu_facts on a host with NVIDIA GPUs"
            ]
        )
    gpu_list = [_plain(gpu) for gpu in gpus]
    driver = hardware.get("driver")
    driver_loaded = not isinstance(driver, Mapping) or driver.get("driver_loaded") is not False
    for position, gpu in enumerate(gpu_list):
        if not isinstance(gpu, dict) or _number(gpu.get("memory_mib"), "int") is None:
            if not driver_loaded:
                raise PlanInputError(
                    [
                        "the GPUs' memory is unknown until the NVIDIA driver is loaded: install the driver first "
                        "(site.yml --tags driver, inferops_manage_driver: true) or declare inferops_gpus in inventory"
                    ]
                )
            raise PlanInputError([f"inferops_gpus[{position}] needs index, name and memory_mib (as gpu_facts returns)"])
        gpu.setdefault("index", position)
    topology = hardware.get("topology")
    topology = _plain(topology) if isinstance(topology, Mapping) and topology.get("matrix") else None
    if topology is None and len(gpu_list) > 1:
        raise PlanInputError(
            [
                "inferops_gpu_topology_text is required when inferops_gpus lists more than one GPU: paste the "
                "output of `nvidia-smi topo -m` (the layout depends on how the GPUs are linked)"
            ]
        )
    if topology is not None and len(topology["matrix"]) != len(gpu_list):
        raise PlanInputError(
            [
                f"inferops_gpu_topology_text shows {len(topology['matrix'])} GPUs but inferops_gpus lists "
                f"{len(gpu_list)}: declare both from the same host"
            ]
        )
    return Hardware(gpus=gpu_list, topology=topology, driver=_plain(driver) if isinstance(driver, Mapping) else {})


def _load_config(model: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """config.json given inline or as a file on the controller (None: use the catalogue)."""
    if isinstance(model.get("config"), dict):
        return model["config"]
    path = model.get("config_file")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise PlanInputError([f"inferops_model.config_file {path!r} cannot be read as config.json: {exc}"]) from exc
    if not isinstance(config, dict):
        raise PlanInputError([f"inferops_model.config_file {path!r} does not hold a JSON object"])
    return config


def _driver(driver: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The installed driver as checks.check_driver reads it (None when unknown or not loaded)."""
    if not driver.get("driver_version"):
        return None
    return {"version": str(driver["driver_version"]), "cuda": None}


def _finding(check_id: str, severity: str, message: str) -> Dict[str, str]:
    return {"id": check_id, "severity": severity if severity in SEVERITIES else "warning", "message": message}


def plan_findings(
    findings: Sequence[Mapping[str, Any]], default_id: str = "tensor-parallel-divisibility"
) -> List[Dict[str, str]]:
    """Findings as the plan lists them: id, severity, and a message naming the variable and a passing value."""
    result = []
    for finding in findings:
        message = str(finding.get("message", ""))
        variable = finding.get("variable")
        if variable and str(variable) not in message:
            message = f"{variable}: {message}"
        suggested = finding.get("suggested")
        if variable and suggested not in (None, "", []) and str(suggested) not in message:
            message += f" (a value that passes: {variable}: {json.dumps(suggested)})"
        severity = finding.get("severity") or "error"
        result.append(_finding(str(finding.get("id") or default_id), str(severity), message))
    return result


def build_plan(
    variables: Mapping[str, Any],
    hardware: Mapping[str, Any],
    measured: Optional[Mapping[str, Any]] = None,
    host: Optional[str] = None,
) -> Dict[str, Any]:
    """The plan dict of one host (keys documented in docs/plan.md).

    variables: the host's variables (see input_names()); hardware: ``{"gpus": [...], "topology": {...},
    "driver": {...}}`` as gpu_facts returns them or as declared in inventory (topology parsed);
    measured: the vLLM role's local fact from a previous start (ansible_local.inferops_vllm), if any.
    Raises PlanInputError (each message names its variable) for inputs that cannot be planned.
    """
    inputs = validate_inputs(variables)
    gear = _hardware(hardware)
    plan = _ollama_plan(inputs, gear) if inputs.engine == "ollama" else _vllm_plan(inputs, gear, measured)
    revision = revision_check(inputs.model)
    if revision:
        plan["checks"].insert(0, revision)
    plan["host"] = host
    unique: List[Dict[str, str]] = []
    for finding in plan["checks"]:
        if finding not in unique:
            unique.append(finding)
    plan["checks"] = unique
    plan["service"] = service_section(plan)
    order = (
        "host",
        "engine",
        "engine_version",
        "model",
        "layout",
        "memory",
        "settings",
        "checks",
        "command",
        "environment",
        "service",  # the contract both engine roles render (_plan/service.py)
        "standby_ollama",  # only on vLLM hosts with inferops_standby_ollama
    )
    return {key: plan[key] for key in order if key in plan}


def _model_section(
    inputs: HostInputs, architecture: str, weights_bytes: int, weights_source: str, quantization: Optional[str]
) -> Dict[str, Any]:
    return {
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        "architecture": architecture,
        "weights_bytes": int(weights_bytes),
        "weights_source": weights_source,
        "quantization": quantization,
    }


def _layout_section(layout: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "tensor_parallel_size": int(layout["tensor_parallel_size"]),
        "pipeline_parallel_size": int(layout["pipeline_parallel_size"]),
        "data_parallel_size": int(layout["data_parallel_size"]),
        "gpus": [int(i) for i in layout["gpus"]],
        "reason": str(layout["reason"]),
    }


def _environment(
    layout_env: Mapping[str, Any], engine_env: Mapping[str, str], user_env: Mapping[str, str]
) -> Dict[str, str]:
    environment = {str(k): str(v) for k, v in layout_env.items()}
    environment.update(engine_env)
    environment.update(user_env)
    return environment


def _ollama_model_budget(
    version: str,
    model: Mapping[str, Any],
    requested: Mapping[str, Any],
    gpus: Optional[List[int]],
    gpus_var: str,
    gear: Hardware,
) -> Tuple[ModelArchitecture, Dict[str, Any], Dict[str, Any]]:
    """(architecture, ollama_budget result, layout) of a GGUF model served by Ollama on the allowed GPUs.

    model: an inferops_model mapping; requested: Ollama settings set in inventory; gpus: the GPUs Ollama
    may use (None: all), from the variable gpus_var. Shared by Ollama hosts and the Ollama kept on
    standby beside vLLM.
    """
    known = sorted(int(g["index"]) for g in gear.gpus)
    missing = [i for i in gpus or () if i not in known]
    if missing:
        raise PlanInputError(
            [
                f"{gpus_var} lists GPU {', '.join(map(str, missing))}, which the host does not have; "
                f"use indices among {known}"
            ]
        )
    architecture, _entry, _arch_source = describe_model(model, _load_config(model))
    weights_bytes = model.get("weights_bytes")
    if not weights_bytes:
        raise PlanInputError(
            [
                "inferops_model.weights_bytes is required for Ollama: the size in bytes of the GGUF file "
                f"({model.get('file') or 'inferops_model.file'}) as listed on its Hugging Face page"
            ]
        )
    layout = ollama_layout(gear.gpus, requested={"gpus": gpus})
    by_index = {int(g["index"]): g for g in gear.gpus}
    budget_gpus = [
        {
            "index": i,
            "memory_total_bytes": int(by_index[i]["memory_mib"]) * MIB,
            "compute_capability": by_index[i].get("compute_capability"),
        }
        for i in layout["gpus"]
    ]
    shape = shape_from_architecture(architecture)
    resolution = resolve_ollama_settings(
        version,
        shape,
        budget_gpus,
        context_length=requested.get("context_length"),
        num_parallel=requested.get("num_parallel"),
        kv_cache_type=requested.get("kv_cache_type"),
        flash_attention=requested.get("flash_attention"),
        num_gpu=requested.get("num_gpu"),
        num_batch=requested.get("num_batch"),
        gpu_overhead_bytes=int(requested.get("gpu_overhead_bytes") or 0),
        sched_spread=bool(requested.get("sched_spread")),
    )
    budget = ollama_budget(version, shape, budget_gpus, weights_bytes=int(weights_bytes), settings=resolution.values)
    budget["setting_sources"] = {**resolution.sources, **budget["setting_sources"]}
    budget["checks"] = resolution.checks + budget["checks"]
    return architecture, budget, layout


def _ollama_plan(inputs: HostInputs, gear: Hardware) -> Dict[str, Any]:
    requested = inputs.settings
    architecture, budget, layout = _ollama_model_budget(
        inputs.engine_version, inputs.model, requested, inputs.gpus, "ollama_gpus", gear
    )
    by_index = {int(g["index"]): g for g in gear.gpus}
    settings: Dict[str, Any] = {}
    for setting in OLLAMA_SETTINGS:
        if setting.name in budget["settings"]:
            source = budget["setting_sources"].get(setting.name, "default")
            if source in ("inventory", "default", "chosen"):
                reason = f"Ollama {inputs.engine_version} default" if source == "default" else None
                settings[setting.name] = resolved(budget["settings"][setting.name], source, reason)
            else:
                settings[setting.name] = resolved(budget["settings"][setting.name], "default", source)
        elif setting.name in requested:
            settings[setting.name] = resolved(requested[setting.name], "inventory")
    memory = budget["memory"]
    per_gpu = [
        {
            "index": gpu["index"],
            "total_gib": gpu["total_gib"],
            "used_gib": gpu["used_gib"],
            "free_gib": gpu["free_gib"],
            "layers": gpu["layers"],
            "weights_gib": gib(gpu["weights_bytes"]),
            "kv_cache_gib": gib(gpu["kv_cache_bytes"] + gpu["recurrent_state_bytes"]),
            "overhead_gib": gib(gpu["compute_bytes"] + gpu["reserve_bytes"]),
        }
        for gpu in budget["per_gpu"]
    ]
    used_gpus = [int(gpu["index"]) for gpu in budget["per_gpu"]]
    layout = dict(layout, gpus=used_gpus)
    if used_gpus != [int(i) for i in layout["env"].get("CUDA_VISIBLE_DEVICES", "").split(",") if i]:
        layout["env"] = dict(layout["env"], CUDA_VISIBLE_DEVICES=",".join(str(i) for i in used_gpus))
        layout["reason"] = f"the model fits GPU {','.join(str(i) for i in used_gpus)}; Ollama uses the fewest GPUs"
    quantization = inputs.model.get("quantization") or _gguf_type(inputs.model.get("file"))
    return {
        "engine": "ollama",
        "engine_version": inputs.engine_version,
        "model": _model_section(
            inputs, architecture.architecture, int(inputs.model["weights_bytes"]), "inventory", quantization
        ),
        "layout": _layout_section(layout),
        "memory": {
            "gpu_total_gib": memory["gpu_total_gib"],
            "weights_gib": memory["weights_gib"],
            "overhead_gib": memory["overhead_gib"],
            "kv_cache_gib": memory["kv_cache_gib"],
            "kv_cache_tokens": int(memory["kv_cache_tokens"]),
            "max_concurrency": float(memory["max_concurrency"]),
            "block_size": None,
            "vram_used_gib": memory["vram_used_gib"],
            "per_gpu": per_gpu,
        },
        "settings": settings,
        "checks": plan_findings(budget["checks"])
        + plan_findings(layout.get("problems") or [])
        + plan_findings(
            check_ollama(
                model=architecture,
                settings={name: entry["value"] for name, entry in settings.items()},
                model_format="gguf" if str(inputs.model.get("file", "")).endswith(".gguf") else "safetensors",
                budget={"fits": not any(c["id"] == "ollama_partial_offload" for c in budget["checks"])},
                gpus=[by_index[i] for i in used_gpus],
                driver=_driver(gear.driver),
            )
        ),
        "command": ["ollama", "serve"],
        "environment": _environment(
            layout["env"],
            ollama_environment(
                settings,
                {
                    "host": inputs.listen,
                    "gpus": used_gpus,
                    "sched_spread": requested.get("sched_spread"),
                    "gpu_overhead_bytes": requested.get("gpu_overhead_bytes"),
                    "extra_environment": inputs.environment,
                },
            ),
            {},
        ),
    }


_GGUF_TYPE_RE = re.compile(r"(UD-)?(I?Q\d_[A-Z0-9_]+|Q\d_\d|BF16|F16|F32|MXFP4(?:_MOE)?)", re.IGNORECASE)


def _gguf_type(file_name: Optional[str]) -> Optional[str]:
    """The quantization a GGUF file name announces (Unsloth UD-Q3_K_XL, Q4_K_M, ...)."""
    match = _GGUF_TYPE_RE.search(str(file_name or ""))
    return match.group(0).upper() if match else None


# Budget findings restate some checks with vLLM's own error text; they are listed under the check's id
# and only when the check itself did not already report that topic.
_BUDGET_FINDING_IDS = {
    "vllm_max_model_len_too_long": "context-length",
    "vllm_no_kv_cache_memory": "memory-fit",
    "vllm_kv_cache_too_small": "memory-fit",
    "vllm_exceeds_gpu_memory": "memory-fit",
    "vllm_cudagraph_headroom": "memory-fit",
    "vllm_kv_cache_memory_bytes": "memory-fit",
    "vllm_align_block_size": "mamba-block-size",
    "vllm_mamba_blocks_below_max_num_seqs": "max-num-seqs",
}
# Settings that change vLLM's non-KV overhead (activation peak, sampler warm-up, CUDA graphs): a
# measurement taken with other values says nothing about this plan.
_OVERHEAD_SETTINGS = ("max_num_batched_tokens", "max_num_seqs", "enforce_eager", "max_cudagraph_capture_size")


def _merge(base: Any, override: Any) -> Any:
    """config.json updated like vLLM's --hf-overrides: nested mappings merged, other values replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base.get(key), value)
        return merged
    return override


def _architecture(inputs: HostInputs) -> Tuple[ModelArchitecture, ModelArchitecture, Any]:
    """(architecture as the checkpoint states it, as vLLM sees it after --hf-overrides, catalogue entry)."""
    config = _load_config(inputs.model)
    architecture, entry, _source = describe_model(inputs.model, config)
    overrides = inputs.settings.get("hf_overrides")
    if not overrides:
        return architecture, architecture, entry
    base = config if config is not None else entry.config
    return architecture, ModelArchitecture.from_config(_merge(base, overrides)), entry


def _measured_overhead(
    measured: Optional[Mapping[str, Any]], context: Mapping[str, Any]
) -> Tuple[Optional[int], Optional[Dict[str, str]]]:
    """The overhead per GPU (bytes) measured at the last vLLM start, when it was the same configuration.

    measured: the vLLM role's local fact ansible_local.inferops_vllm (``version``, ``model`` {repo,
    revision}, ``layout``, ``settings``, ``overhead_gib``, ...). context: this plan's version, repo,
    revision, layout sizes and inventory settings.
    """
    if not measured or measured.get("overhead_gib") is None:
        return None, None
    model = measured.get("model") or {}
    layout = measured.get("layout") or {}
    then = {
        "vllm_version": measured.get("version"),
        "repo": model.get("repo"),
        "revision": model.get("revision"),
        "tensor_parallel_size": layout.get("tensor_parallel_size"),
        "pipeline_parallel_size": layout.get("pipeline_parallel_size"),
    }
    then.update({name: (measured.get("settings") or {}).get(name) for name in _OVERHEAD_SETTINGS})
    different = [name for name, value in then.items() if value is not None and context.get(name) not in (None, value)]
    if different:
        note = _finding(
            "memory-fit",
            "info",
            f"the overhead measured at the last vLLM start is not used: {', '.join(different)} changed since",
        )
        return None, note
    return int(float(measured["overhead_gib"]) * GIB), None


def _settings_context(
    inputs: HostInputs, checkpoint: ModelArchitecture, served: ModelArchitecture, gpus: Sequence[Mapping[str, Any]]
) -> SettingsContext:
    """What the release defaults and the plan's choices depend on: the release, the model, the engine's GPUs."""
    smallest = min(gpus, key=lambda g: int(g["memory_mib"]))
    capabilities = [c for c in (capability_x10(g) for g in gpus) if c is not None]
    return SettingsContext(
        version=vllm_version(inputs.engine_version),
        checkpoint=checkpoint,
        served=served,
        gpu_total_bytes=cuda_total_bytes_from_nvidia_smi(int(smallest["memory_mib"])),
        gpu_name=str(smallest.get("name") or ""),
        compute_capability=smallest.get("compute_capability"),
        min_capability=min(capabilities) if capabilities else None,
        repo=inputs.model["repo"],
    )


# A fixed point is reached in two or three rounds (batch size, then max_num_seqs); this bounds the loop.
_MAX_REFINE_ROUNDS = 8


@dataclass
class _Evaluation:
    """One candidate layout resolved and budgeted: the settings and the budget computed with them."""

    settings: ResolvedSettings
    budget: Dict[str, Any]

    @property
    def fits(self) -> bool:
        return bool(_figures(self.budget)["fits"])


def _evaluate(
    ctx: SettingsContext,
    inputs: HostInputs,
    served: ModelArchitecture,
    weights: Any,
    measured: Optional[Mapping[str, Any]],
    context: Mapping[str, Any],
    tp: int,
    pp: int,
) -> _Evaluation:
    """Resolve the settings for one layout and budget them, until the budget-dependent choices settle."""
    overhead, _note = _measured_overhead(measured, dict(context, tensor_parallel_size=tp, pipeline_parallel_size=pp))
    choices: Dict[str, Any] = {}
    settings = resolve_vllm_settings(ctx, inputs.settings, choices)

    def budget() -> Dict[str, Any]:
        return vllm_memory_budget(
            served,
            ctx.version,
            ctx.gpu_total_bytes,
            tensor_parallel_size=tp,
            pipeline_parallel_size=pp,
            weights=weights,
            settings=settings.values,
            gpu_name=ctx.gpu_name,
            compute_capability=ctx.compute_capability,
            measured_overhead_bytes=overhead,
        )

    figures = budget()
    for _round in range(_MAX_REFINE_ROUNDS):
        changes = refine_with_budget(ctx, inputs.settings, settings, figures)
        if not changes:
            break
        choices.update(changes)
        settings = resolve_vllm_settings(ctx, inputs.settings, choices)
        figures = budget()
    return _Evaluation(settings, figures)


def _vllm_plan(inputs: HostInputs, gear: Hardware, measured: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    version = inputs.engine_version
    architecture, served, entry = _architecture(inputs)
    requested = dict(inputs.settings)
    weights = estimate_weights(
        served,
        params=entry.params if entry is not None and _load_config(inputs.model) is None else None,
        weights_bytes=inputs.model.get("weights_bytes"),
        quantization=quantization_from_name(inputs.model["quantization"]) if "quantization" in inputs.model else None,
        include_mtp=bool((requested.get("speculative_config") or {}).get("method") == "mtp"),
        include_vision=not requested.get("language_model_only"),
    )
    by_index = {int(g["index"]): g for g in gear.gpus}
    allowed = inputs.gpus or list(by_index)
    engine_gpus = [by_index[i] for i in allowed if i in by_index]
    ctx = _settings_context(inputs, architecture, served, engine_gpus)
    context = {
        "vllm_version": version,
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        **{name: requested.get(name) for name in _OVERHEAD_SETTINGS},
    }
    evaluations: Dict[Tuple[int, int], Optional[_Evaluation]] = {}

    def evaluation(tp: int, pp: int) -> Optional[_Evaluation]:
        """The candidate's resolved settings and budget (None when the model cannot be split this way)."""
        if (tp, pp) not in evaluations:
            try:
                evaluations[(tp, pp)] = _evaluate(ctx, inputs, served, weights, measured, context, tp, pp)
            except ValueError:
                evaluations[(tp, pp)] = None
        return evaluations[(tp, pp)]

    # The planner loop: the layout code ranks every valid layout; each is resolved, budgeted and kept
    # when its KV cache holds a request; the first that fits wins.
    search = layout_search(
        gear.gpus,
        architecture,
        topology=gear.topology,
        requested={
            "tensor_parallel_size": requested.get("tensor_parallel_size"),
            "pipeline_parallel_size": requested.get("pipeline_parallel_size"),
            "data_parallel_size": requested.get("data_parallel_size"),
            "enable_expert_parallel": requested.get("enable_expert_parallel"),
            "gpus": inputs.gpus,
        },
    )
    fitting = None
    for candidate in search.candidates:
        found = evaluation(candidate.tp, candidate.pp)
        if found is not None and found.fits:
            fitting = candidate
            break
    result = auto_result(search, fitting)
    if search.sizes_given:
        result = explicit_result(search, result["candidate"])
        found = evaluation(result["candidate"].tp, result["candidate"].pp)
        result["fits"] = bool(result["fits"] and found is not None and found.fits)
    layout = finish_layout(search, result)
    tp, pp = int(layout["tensor_parallel_size"]), int(layout["pipeline_parallel_size"])
    used = [by_index[i] for i in layout["gpus"] if i in by_index]
    chosen = evaluation(tp, pp)
    if chosen is None:  # the layout itself is invalid for the model: the budget states why
        _evaluate(ctx, inputs, served, weights, measured, context, tp, pp)
    resolved_settings, figures = chosen.settings, chosen.budget
    settings = settings_section(resolved_settings, requested, layout, figures, version)
    resolved_values = {name: entry["value"] for name, entry in settings.items()}
    environment = _environment(layout["env"], {}, inputs.environment)
    findings = plan_findings(
        check_vllm(
            version=version,
            model=architecture,
            settings=resolved_values,
            gpus=used,
            repo=inputs.model["repo"],
            model_format="gguf" if str(inputs.model.get("file", "")).endswith(".gguf") else "safetensors",
            layout=layout,
            budget=figures,
            env=environment,
            driver=_driver(gear.driver),
        )
    )
    reported = {f["id"] for f in findings}
    for finding in figures["findings"]:
        check_id = _BUDGET_FINDING_IDS.get(finding["id"], finding["id"])
        if check_id not in reported:
            findings.append(_finding(check_id, finding["severity"], finding["message"]))
    _overhead, note = _measured_overhead(measured, dict(context, tensor_parallel_size=tp, pipeline_parallel_size=pp))
    if note:
        findings.append(note)
    quantization = inputs.model.get("quantization") or (
        architecture.quantization.scheme if architecture.quantization is not None else None
    )
    standby = None
    if inputs.standby_ollama is not None:
        standby, coresidency = _standby_ollama(
            inputs.standby_ollama, gear, _vllm_reserved_bytes(settings, figures, used)
        )
        findings += coresidency
    plan = {
        "engine": "vllm",
        "engine_version": version,
        "model": _model_section(inputs, architecture.architecture, weights.total_bytes, weights.source, quantization),
        "layout": _layout_section(layout),
        "memory": _vllm_memory(figures, used),
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
    return plan


def _vllm_reserved_bytes(
    settings: Mapping[str, Mapping[str, Any]], figures: Mapping[str, Any], used: Sequence[Mapping[str, Any]]
) -> Dict[int, int]:
    """What vLLM holds on each of its GPUs: gpu_memory_utilization x the GPU's total (as CUDA reports it),
    or its predicted use when vllm_kv_cache_memory_bytes fixes the KV cache size."""
    if (settings.get("kv_cache_memory_bytes") or {}).get("value"):
        # A fixed KV cache size replaces the utilization: vLLM then holds only what it needs.
        return {int(gpu["index"]): int(figures["vram_used_bytes"]) for gpu in used}
    utilization = float(settings["gpu_memory_utilization"]["value"])
    return {
        int(gpu["index"]): math.ceil(utilization * cuda_total_bytes_from_nvidia_smi(int(gpu["memory_mib"])))
        for gpu in used
    }


def _standby_ollama(
    standby: StandbyOllama, gear: Hardware, vllm_reserved_bytes: Mapping[int, int]
) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(the plan's standby_ollama summary, ollama-coresidency findings) of an Ollama kept beside vLLM."""
    try:
        budget = _ollama_model_budget(
            standby.version, standby.model, standby.settings, standby.gpus, f"{STANDBY_VAR}.gpus", gear
        )[1]
    except ValueError as exc:
        # The shared code names an Ollama host's variables; here they live under inferops_standby_ollama.
        message = str(exc).replace("inferops_model", f"{STANDBY_VAR}.model")
        raise PlanInputError([message.replace("ollama_version", f"{STANDBY_VAR}.version")]) from exc
    totals = {int(g["index"]): cuda_total_bytes_from_nvidia_smi(int(g["memory_mib"])) for g in gear.gpus}
    findings = [
        _finding("ollama-coresidency", check["severity"], check["message"])
        for check in coresidency_checks(budget, vllm_reserved_bytes, totals, gpus_variable=f"{STANDBY_VAR}.gpus")
    ]
    summary = {
        "engine_version": standby.version,
        "model": {key: standby.model.get(key) for key in ("repo", "revision", "file")},
        "gpus": [int(gpu["index"]) for gpu in budget["per_gpu"]],
        "vram_used_gib": budget["memory"]["vram_used_gib"],
    }
    return summary, findings


def _figures(budget: Mapping[str, Any]) -> Dict[str, Any]:
    """The budget figures checks.py reads."""
    layout = budget["layout"]
    request = layout["blocks_per_request"] * layout["bytes_per_block"]
    return {
        "block_size": budget["block_size"],
        "num_gpu_blocks": budget["num_blocks"],
        "max_concurrency": budget["max_concurrency"],
        "kv_cache_bytes": budget["kv_cache_bytes"],
        "request_kv_bytes": request,
        "fits": budget["kv_cache_bytes"] >= request + layout["bytes_per_block"],
    }


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
