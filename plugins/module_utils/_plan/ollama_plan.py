# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The plan of an Ollama host, and the Ollama model budget it shares with the standby beside vLLM."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import MIB, gib
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_tuple
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    architecture_from_shape,
    ollama_budget,
    shape_from_architecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.checks import check_ollama
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import llama_cpp_of
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.render import ollama_environment
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.settings import (
    OLLAMA_SETTINGS,
    resolve_ollama_settings,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import describe_model
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import estimate_weights
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import (
    Hardware,
    driver_facts,
    layout_section,
    load_config,
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
    ollama_layout,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import ollama_performance, performance_section


def ollama_model_budget(
    version: str,
    model: Mapping[str, Any],
    requested: Mapping[str, Any],
    gpus: Optional[List[int]],
    gpus_var: str,
    gear: Hardware,
    shape: Optional[Dict[str, Any]] = None,
) -> Tuple[ModelArchitecture, Dict[str, Any], Dict[str, Any]]:
    """(architecture, ollama_budget result, layout) of a GGUF model served by Ollama on the allowed GPUs.

    model: an inferops_model mapping; requested: Ollama settings set in inventory; gpus: the GPUs Ollama
    may use (None: all), from the variable gpus_var. Shared by Ollama hosts and the Ollama kept on
    standby beside vLLM. shape: the GGUF file's own header (``_model/gguf.py``), when the plan read it; the
    architecture then comes from it too (base_model is not needed); else the base model's architecture.
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
    if shape is None:  # the base model's architecture, and the GGUF shape it implies
        config = load_config(model)
        architecture, entry, _arch_source = describe_model(model, config)
        shape = shape_from_architecture(architecture)
    else:  # the GGUF's own header: what Ollama loads, whatever base_model says
        config, architecture, entry = None, architecture_from_shape(shape), None
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
    budget = ollama_budget(resolution, shape, budget_gpus, weights_bytes=int(weights_bytes))
    budget["setting_sources"] = {**resolution.sources, **budget["setting_sources"]}
    budget["checks"] = resolution.checks + budget["checks"]
    budget["params"] = dict(entry.params) if entry is not None and config is None else None
    return architecture, budget, layout


def _settings_section(inputs: HostInputs, budget: Mapping[str, Any]) -> Dict[str, Any]:
    """The plan's settings: what the budget resolved (with its source), else what the inventory gave."""
    settings: Dict[str, Any] = {}
    for setting in OLLAMA_SETTINGS:
        if setting.name in budget["settings"]:
            source = budget["setting_sources"].get(setting.name, "default")
            if source in ("inventory", "default", "chosen"):
                reason = f"Ollama {inputs.engine_version} default" if source == "default" else None
                settings[setting.name] = resolved(budget["settings"][setting.name], source, reason)
            else:
                settings[setting.name] = resolved(budget["settings"][setting.name], "default", source)
        elif setting.name in inputs.settings:
            settings[setting.name] = resolved(inputs.settings[setting.name], "inventory")
    return settings


def _memory_section(budget: Mapping[str, Any]) -> Dict[str, Any]:
    """The plan's memory section from the budget, per GPU as Ollama places the layers."""
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
    return {
        "gpu_total_gib": memory["gpu_total_gib"],
        "weights_gib": memory["weights_gib"],
        "overhead_gib": memory["overhead_gib"],
        "kv_cache_gib": memory["kv_cache_gib"],
        "kv_cache_tokens": int(memory["kv_cache_tokens"]),
        "max_concurrency": float(memory["max_concurrency"]),
        "block_size": None,
        "vram_used_gib": memory["vram_used_gib"],
        "per_gpu": per_gpu,
    }


def ollama_plan(inputs: HostInputs, gear: Hardware) -> Dict[str, Any]:
    requested = inputs.settings
    architecture, budget, layout = ollama_model_budget(
        inputs.engine_version, inputs.model, requested, inputs.gpus, "ollama_gpus", gear, inputs.gguf_shape
    )
    by_index = {int(g["index"]): g for g in gear.gpus}
    settings = _settings_section(inputs, budget)
    used_gpus = [int(gpu["index"]) for gpu in budget["per_gpu"]]
    layout = dict(layout, gpus=used_gpus)
    if used_gpus != [int(i) for i in layout["env"].get("CUDA_VISIBLE_DEVICES", "").split(",") if i]:
        layout["env"] = dict(layout["env"], CUDA_VISIBLE_DEVICES=",".join(str(i) for i in used_gpus))
        layout["reason"] = f"the model fits GPU {','.join(str(i) for i in used_gpus)}; Ollama uses the fewest GPUs"
    quantization = inputs.model.get("quantization") or _gguf_type(inputs.model.get("file"))
    performance = performance_section(
        ollama_performance(
            architecture,
            estimate_weights(architecture, params=budget["params"], weights_bytes=int(inputs.model["weights_bytes"])),
            budget["params"],
            budget["per_gpu"],
            {i: str(g.get("name") or "") for i, g in by_index.items()},
            inputs.workload,
            int(budget["settings"].get("num_parallel") or 1),
            int(budget["settings"].get("context_length") or 4096),
            int(budget["settings"].get("num_batch") or 512),
            llama_cpp_date=llama_cpp_of(version_tuple(inputs.engine_version)).get("date"),
        ),
        [],
        [str(by_index[i].get("name") or "") for i in used_gpus],
    )
    return {
        "engine": "ollama",
        "engine_version": inputs.engine_version,
        "model": model_section(
            inputs,
            architecture.architecture,
            int(inputs.model["weights_bytes"]),
            inputs.checkpoint_bytes[1] if inputs.checkpoint_bytes else "inventory",
            quantization,
        ),
        "layout": layout_section(layout),
        "memory": _memory_section(budget),
        "performance": performance,
        "settings": settings,
        "checks": list(gear.notes)
        + plan_findings(budget["checks"])
        + plan_findings(layout.get("problems") or [])
        + plan_findings(
            check_ollama(
                model=architecture,
                settings={name: entry["value"] for name, entry in settings.items()},
                model_format="gguf" if str(inputs.model.get("file", "")).endswith(".gguf") else "safetensors",
                budget={"fits": not any(c["id"] == "ollama-partial-offload" for c in budget["checks"])},
                gpus=[by_index[i] for i in used_gpus],
                driver=driver_facts(gear.driver),
            )
        ),
        "command": ["ollama", "serve"],
        "environment": service_environment(
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
