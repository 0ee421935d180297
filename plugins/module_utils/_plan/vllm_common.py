# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What both vLLM planners (``vllm_plan`` on GPUs, ``vllm_cpu_plan`` on the CPU build) derive from a host's
inputs: the model as vLLM sees it (after ``--hf-overrides``), its weights, and the settings resolved and
budgeted for one layout (``evaluate``), with the overhead measured at the last start where it still applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    cuda_total_bytes_from_nvidia_smi,
    memory_budget,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import (
    compute_capability_x10 as capability_x10,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import vllm_version
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.render import vllm_command
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import (
    VLLM_SETTINGS,
    ResolvedSettings,
    SettingsContext,
    refine_with_budget,
    resolve_vllm_settings,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import describe_model
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    WeightsEstimate,
    estimate_params,
    estimate_weights,
    quantization_from_name,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import (
    finding,
    load_config,
    load_image_max_pixels,
    model_section,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    HostInputs,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.performance import ModelTraffic, traffic_for

# Settings that change vLLM's non-KV overhead (activation peak, sampler warm-up, CUDA graphs): a
# measurement taken with other values says nothing about this plan.
OVERHEAD_SETTINGS = ("max_num_batched_tokens", "max_num_seqs", "enforce_eager", "max_cudagraph_capture_size")


def _merge(base: Any, override: Any) -> Any:
    """config.json updated like vLLM's --hf-overrides: nested mappings merged, other values replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base.get(key), value)
        return merged
    return override


def model_architecture(
    inputs: HostInputs, config: Optional[Mapping[str, Any]]
) -> Tuple[ModelArchitecture, ModelArchitecture, Any]:
    """(architecture as the checkpoint states it, as vLLM sees it after --hf-overrides, catalogue entry).

    config: the checkpoint's config.json (load_config), None when the catalogue describes the model."""
    architecture, entry, _source = describe_model(inputs.model, config)
    overrides = inputs.settings.get("hf_overrides")
    if not overrides:
        return architecture, architecture, entry
    base = config if config is not None else entry.config
    return architecture, ModelArchitecture.from_config(_merge(base, overrides)), entry


def model_weights(
    inputs: HostInputs, served: ModelArchitecture, params: Optional[Mapping[str, int]]
) -> Tuple[Any, WeightsEstimate, Dict[str, int]]:
    """(the inventory's ``inferops_model.quantization`` parsed, None when it names none; the weights vLLM loads:
    inventory bytes, the checkpoint's config, or the catalogue's parameter counts; the parameter counts).

    params: the catalogue's parameter counts when no config.json is read (else they are estimated)."""
    requested = inputs.settings
    quantization = quantization_from_name(inputs.model["quantization"]) if "quantization" in inputs.model else None
    weights = estimate_weights(
        served,
        params=params,
        weights_bytes=inputs.model.get("weights_bytes"),
        quantization=quantization,
        include_mtp=bool((requested.get("speculative_config") or {}).get("method") == "mtp"),
        include_vision=not requested.get("language_model_only"),
        checkpoint=inputs.checkpoint_bytes,
    )
    return quantization, weights, dict(params) if params is not None else estimate_params(served)


def weight_scheme(inputs: HostInputs, architecture: ModelArchitecture, quantization: Any) -> Optional[str]:
    """The quantization scheme the weights are stored in (the inventory's override, else the checkpoint's)."""
    if "quantization" in inputs.model:
        return quantization.scheme if quantization is not None else None
    return architecture.quantization.scheme if architecture.quantization is not None else None


def is_gguf(inputs: HostInputs) -> bool:
    return str(inputs.model.get("file", "")).endswith(".gguf")


@dataclass(frozen=True)
class VllmModel:
    """The model a vLLM planner serves, derived once from the host's inputs."""

    architecture: ModelArchitecture  # as the checkpoint states it
    served: ModelArchitecture  # as vLLM sees it after --hf-overrides
    entry: Any  # the catalogue entry
    weights: WeightsEstimate
    context: Dict[str, Any]  # what an overhead measured at the last start must match (measured_overhead)
    counts: Dict[str, int]  # parameter counts: the catalogue's when no config.json is read, else estimated
    scheme: Optional[str]  # the quantization scheme the weights are stored in (weight_scheme)
    image_max_pixels: Optional[int]  # the image processor's largest image (load_image_max_pixels)
    traffic: ModelTraffic  # bytes and FLOPs of one token through the model (the speed prediction's input)


def vllm_model(inputs: HostInputs) -> VllmModel:
    """Everything the planners need of the model, each file of the checkpoint read once."""
    config = load_config(inputs.model)
    image_max_pixels = load_image_max_pixels(inputs.model)
    architecture, served, entry = model_architecture(inputs, config)
    params = entry.params if entry is not None and config is None else None
    quantization, weights, counts = model_weights(inputs, served, params)
    context = {
        "vllm_version": inputs.engine_version,
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        **{name: inputs.settings.get(name) for name in OVERHEAD_SETTINGS},
    }
    scheme = weight_scheme(inputs, architecture, quantization)
    return VllmModel(
        architecture,
        served,
        entry,
        weights,
        context,
        counts,
        scheme,
        image_max_pixels,
        traffic_for(served, weights, counts, scheme, is_gguf(inputs)),
    )


def vllm_model_section(inputs: HostInputs, model: VllmModel) -> Dict[str, Any]:
    """The plan's model section: the served architecture, its weights, the quantization scheme."""
    architecture = model.architecture
    quantization = inputs.model.get("quantization") or (
        architecture.quantization.scheme if architecture.quantization is not None else None
    )
    return model_section(
        inputs, architecture.architecture, model.weights.total_bytes, model.weights.source, quantization
    )


def measured_overhead(
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
    then.update({name: (measured.get("settings") or {}).get(name) for name in OVERHEAD_SETTINGS})
    different = [name for name, value in then.items() if value is not None and context.get(name) not in (None, value)]
    if different:
        note = finding(
            "memory-fit",
            "info",
            f"the overhead measured at the last vLLM start is not used: {', '.join(different)} changed since",
        )
        return None, note
    return int(float(measured["overhead_gib"]) * GIB), None


def settings_context(
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
MAX_REFINE_ROUNDS = 8


@dataclass
class Evaluation:
    """One candidate layout resolved and budgeted: the settings and the budget computed with them."""

    settings: ResolvedSettings
    budget: Dict[str, Any]
    overhead_note: Optional[Dict[str, str]] = None  # why an overhead measured at the last start is not used

    @property
    def fits(self) -> bool:
        return bool(budget_figures(self.budget)["fits"])


def evaluate(
    ctx: SettingsContext,
    inputs: HostInputs,
    model: VllmModel,
    measured: Optional[Mapping[str, Any]],
    tp: int,
    pp: int,
    pinned: Optional[Mapping[str, Any]] = None,
    custom_all_reduce: Optional[bool] = None,
) -> Evaluation:
    """Resolve the settings for one layout and budget them, until the budget-dependent choices settle.

    pinned: values the engine takes from elsewhere than its flags (the CPU build's KV cache size from
    VLLM_CPU_KVCACHE_SPACE), laid over the resolved values for the budget.
    """
    overhead, note = measured_overhead(
        measured, dict(model.context, tensor_parallel_size=tp, pipeline_parallel_size=pp)
    )
    choices: Dict[str, Any] = {}

    def budget(settings: ResolvedSettings) -> Dict[str, Any]:
        return memory_budget(
            model.served,
            ctx.version,
            ctx.gpu_total_bytes,
            model.weights,
            {**settings.values, **(pinned or {})},
            tensor_parallel_size=tp,
            pipeline_parallel_size=pp,
            gpu_name=ctx.gpu_name,
            compute_capability=ctx.compute_capability,
            measured_overhead_bytes=overhead,
            image_max_pixels=model.image_max_pixels,
            custom_all_reduce=custom_all_reduce,
        )

    rounds = 0
    while True:  # resolve, budget, refine: until the choices settle (at most MAX_REFINE_ROUNDS refinements)
        settings = resolve_vllm_settings(ctx, inputs.settings, choices)
        figures = budget(settings)
        changes = refine_with_budget(ctx, inputs.settings, settings, figures) if rounds < MAX_REFINE_ROUNDS else {}
        if not changes:
            return Evaluation(settings, figures, note)
        choices.update(changes)
        rounds += 1


def budget_figures(budget: Mapping[str, Any]) -> Dict[str, Any]:
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


# The flags the settings render: a layout's own flags add only the others.
_SETTING_FLAGS = {setting.flag for setting in VLLM_SETTINGS}


def serve_command(inputs: HostInputs, settings: Mapping[str, Any], layout: Mapping[str, Any]) -> List[str]:
    """The vllm serve command line: the settings' flags, the layout's own flags, the inventory's extra args."""
    return vllm_command(
        inputs.model["repo"],
        inputs.model["revision"],
        settings,
        [flag for flag in layout.get("flags") or [] if flag not in _SETTING_FLAGS] + inputs.extra_args,
        auto_max_model_len=inputs.settings.get("max_model_len") == "auto",
    )
