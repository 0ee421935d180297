# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""An Ollama kept on standby beside vLLM: what vLLM holds per GPU, and whether both fit."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    coresidency_checks,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    cuda_total_bytes_from_nvidia_smi,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import Hardware, finding
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    STANDBY_VAR,
    PlanInputError,
    StandbyOllama,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.ollama_plan import ollama_model_budget


def vllm_reserved_bytes(
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


def standby_ollama(
    standby: StandbyOllama, gear: Hardware, vllm_reserved_bytes: Mapping[int, int]
) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(the plan's standby_ollama summary, ollama-coresidency findings) of an Ollama kept beside vLLM."""
    try:
        budget = ollama_model_budget(
            standby.version,
            standby.model,
            standby.settings,
            standby.gpus,
            f"{STANDBY_VAR}.gpus",
            gear,
            standby.gguf_shape,
        )[1]
    except ValueError as exc:
        # The shared code names an Ollama host's variables; here they live under inferops_standby_ollama.
        message = str(exc).replace("inferops_model", f"{STANDBY_VAR}.model")
        raise PlanInputError([message.replace("ollama_version", f"{STANDBY_VAR}.version")]) from exc
    totals = {int(g["index"]): cuda_total_bytes_from_nvidia_smi(int(g["memory_mib"])) for g in gear.gpus}
    findings = [
        finding("ollama-coresidency", check["severity"], check["message"])
        for check in coresidency_checks(budget, vllm_reserved_bytes, totals, gpus_variable=f"{STANDBY_VAR}.gpus")
    ]
    summary = {
        "engine_version": standby.version,
        "model": {key: standby.model.get(key) for key in ("repo", "revision", "file")},
        "gpus": [int(gpu["index"]) for gpu in budget["per_gpu"]],
        "vram_used_gib": budget["memory"]["vram_used_gib"],
    }
    return summary, findings
