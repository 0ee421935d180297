# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Compatibility checks of model x vLLM version x GPUs x settings, run before any service starts.

``check_vllm(...) -> list[dict]`` (``check_release`` when the release is resolved already): every finding is
``{"id", "severity", "message", "variable", "suggested"}``;
the ids are registered in _core/findings.py and documented in docs/checks.md. One module per family.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding, finding_entries
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_dict
from ansible_collections.inferops.llm.plugins.module_utils._engines.driver import check_driver
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.architecture import (
    check_architecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import (
    compute_capability_x10,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.context import check_context
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.cudagraph import check_cudagraph
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.hybrid import (
    check_mamba_block,
    check_prefix_caching,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.kv import check_kv_and_backend
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.kv_scales import check_kv_scales
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.memory import (
    check_max_num_seqs,
    check_memory,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.parallel import check_parallel
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.parsers import check_parsers
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.quantization import (
    check_engine_format,
    check_quantization,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import VllmVersion, vllm_version


def check_vllm(*, version: Any, **inputs: Any) -> List[Dict[str, Any]]:
    """Every finding for one vLLM host: check_release's inputs (keywords), with the version as text or VllmVersion.

    version: vllm_version, or the VllmVersion the plan resolved. model: ModelArchitecture (or its
    to_dict()). settings: resolved engine settings in `vllm serve` snake_case (max_model_len, max_num_seqs,
    max_num_batched_tokens, kv_cache_dtype, enable_prefix_caching, mamba_cache_mode, mamba_block_size,
    enable_chunked_prefill, tool_call_parser, enable_auto_tool_choice, reasoning_parser, attention_backend,
    hf_overrides, max_cudagraph_capture_size, cudagraph_capture_sizes, enforce_eager, calculate_kv_scales, dtype,
    tensor_parallel_size, pipeline_parallel_size, enable_expert_parallel, speculative_config).
    gpus: the GPUs the layout uses (compute_capability, memory_mib, name). model_format: safetensors,
    gguf or bitsandbytes. layout: select_layout() output. budget: the vllm_budget.vllm_memory_budget()
    result for these settings and layout, unchanged (block_size, num_blocks, max_concurrency,
    kv_cache_bytes, layout.groups/blocks_per_request/bytes_per_block, requested_bytes,
    gpu_total_bytes, vram_used_bytes, findings); its own findings come back as memory-fit findings
    with a variable and a suggested value, or are covered by mamba-block-size, max-num-seqs and
    context-length. env: the service environment. driver: {"version": "580.95.05", "cuda": None}
    (installed driver; cuda only for a build other than the default PyPI wheel).
    """
    vv = version if isinstance(version, VllmVersion) else vllm_version(version)
    return check_release(vv, **inputs)


def check_release(
    vv: VllmVersion,
    *,
    model: Any,
    settings: Mapping[str, Any],
    gpus: Sequence[Mapping[str, Any]],
    repo: str = "",
    model_format: str = "safetensors",
    layout: Optional[Mapping[str, Any]] = None,
    budget: Optional[Mapping[str, Any]] = None,
    env: Optional[Mapping[str, Any]] = None,
    driver: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """check_vllm of the release a planner resolved already (its VllmVersion): nothing is parsed again."""
    ver = vv.number
    arch = as_dict(model)
    s = dict(settings)
    budget = dict(budget or {})
    env = dict(env or {})
    ccs = [c for c in (compute_capability_x10(g) for g in gpus) if c is not None]
    min_cc = min(ccs) if ccs else None
    hybrid = bool(arch.get("is_hybrid"))
    findings: List[Finding] = []
    findings += check_architecture(vv, arch, repo, model_format)
    findings += check_engine_format(vv, arch, model_format)
    findings += check_quantization(ver, arch, s, min_cc)
    findings += check_parsers(ver, arch, s, repo)
    findings += check_context(ver, arch, s, env)
    findings += check_kv_and_backend(vv, arch, s, min_cc)
    findings += check_parallel(arch, s, layout or {})
    findings += check_prefix_caching(vv, arch, s, hybrid)
    findings += check_mamba_block(vv, s, budget, hybrid)
    findings += check_memory(s, budget, layout or {})
    findings += check_max_num_seqs(vv, arch, s, budget, hybrid)
    findings += check_cudagraph(s)
    findings += check_kv_scales(vv, arch, s, hybrid)
    # Each family makes its findings as Finding (validated where made); they become entries here, in one place.
    return finding_entries(findings) + check_driver(driver, gpus, vv)
