# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""memory-fit and max-num-seqs, and the table that turns budget facts into findings."""

from __future__ import annotations

import math
from typing import Any, List, Mapping, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
)

# The memory budget returns facts under its own kind names (with vLLM's error texts); this is the one place
# that says under which registered finding id each is reported. The plan lists a fact only when the checks
# below have not already reported that id (with the variable to change and a value that passes).
BUDGET_FACT_FINDINGS = {
    "vllm_max_model_len_too_long": "context-length",
    "vllm_no_kv_cache_memory": "memory-fit",
    "vllm_kv_cache_too_small": "memory-fit",
    "vllm_exceeds_gpu_memory": "memory-fit",
    "vllm_cudagraph_headroom": "memory-fit",
    "vllm_kv_cache_memory_bytes": "memory-fit",
    "vllm_align_block_size": "mamba-block-size",
    "vllm_mamba_blocks_below_max_num_seqs": "max-num-seqs",
    "vllm_overhead_uncertain": "memory-overhead-uncertain",
    "vllm_vision_profile_uncertain": "memory-overhead-uncertain",
    "vllm_gdn_prefill_unprofiled": "prefill-unprofiled",
}


# vllm_budget findings that checks.py reports itself, under a required id with the variable to change.
_BUDGET_IDS_COVERED = ("vllm_align_block_size", "vllm_mamba_blocks_below_max_num_seqs", "vllm_max_model_len_too_long")


def longest_fitting_len(budget: Mapping[str, Any]) -> Optional[int]:
    """Longest max_model_len whose one request fits the KV blocks of a vllm_memory_budget() result."""
    layout = budget.get("layout") or {}
    blocks = budget.get("num_blocks")
    block_size = budget.get("block_size")
    groups = layout.get("groups") or []
    if not blocks or not block_size or not groups:
        return None
    fixed = sum(g["blocks_per_request"] for g in groups if g["kind"] == "linear_attention")
    per_length = sum(1 for g in groups if g["kind"] != "linear_attention")
    usable = int(blocks) - 1 - fixed  # the block pool keeps one null block
    if per_length == 0 or usable < per_length:
        return None
    return usable // per_length * int(block_size)


def _utilization_for(budget: Mapping[str, Any], extra_bytes: int = 0) -> Optional[float]:
    total = budget.get("gpu_total_bytes")
    requested = budget.get("requested_bytes")
    if not total or requested is None:
        return None
    return math.ceil((int(requested) + extra_bytes) / int(total) * 100) / 100.0


def gpus_needed(budget: Mapping[str, Any], gpus: int) -> str:
    """What else must change when the weights alone outgrow ``gpus`` GPUs of this size: about how many such GPUs
    they need at this gpu_memory_utilization and overhead, and the ways to get there; "" when they fit."""
    total = int(budget.get("weights_total_bytes") or 0)
    usable = int(budget.get("requested_bytes") or 0) - int(budget.get("overhead_bytes") or 0)
    if not total or gpus < 1 or (usable > 0 and total <= usable * gpus):
        return ""
    if usable <= 0:
        return ". The non-KV overhead alone takes what gpu_memory_utilization gives one GPU: a GPU with more memory"
    needed = math.ceil(total / usable)
    hosts = math.ceil(needed / gpus)
    return (
        f". The weights alone ({total / 2**30:.1f} GiB) need about {needed} GPUs of this size at this "
        f"gpu_memory_utilization, this host has {gpus}: a multi-host deployment (inferops_cluster on {hosts} hosts "
        "like this one, docs/multi-node.md), GPUs with more memory, or a smaller (quantized) checkpoint"
    )


def check_memory(s: Mapping[str, Any], budget: Mapping[str, Any], layout: Mapping[str, Any]) -> List[Finding]:
    # What the budget allows, derived before the findings: the longest length that fits, how many GPUs the
    # weights need, the utilization that holds one request, the one that leaves the GPU its headroom.
    longest = longest_fitting_len(budget)
    needed = gpus_needed(budget, len(layout.get("gpus") or []))
    kv = int(budget.get("kv_cache_bytes") or 0)
    layout_kv = budget.get("layout") or {}
    one_request = int(layout_kv.get("blocks_per_request", 0)) * int(layout_kv.get("bytes_per_block", 0))
    excess = int(budget.get("vram_used_bytes") or 0) - int(budget.get("gpu_total_bytes") or 0)
    for_request = _utilization_for(budget, one_request - kv)
    for_headroom = _utilization_for(budget, -max(excess, 0) - (300 << 20))
    findings = []
    if layout and layout.get("fits") is False:
        findings.append(
            Finding(
                "memory-fit",
                "error",
                f"the model does not fit the GPUs in layout TP={layout.get('tensor_parallel_size')} "
                f"PP={layout.get('pipeline_parallel_size')}: {layout.get('reason')}" + needed,
                "vllm_max_model_len",
                longest,
            )
        )
    for item in budget.get("findings") or []:
        ident = item.get("id")
        if ident in _BUDGET_IDS_COVERED:
            continue
        variable, suggested = "vllm_gpu_memory_utilization", None
        if ident == "vllm_kv_cache_too_small":
            variable, suggested = "vllm_max_model_len", longest
        elif ident == "vllm_no_kv_cache_memory":
            suggested = for_request
            if suggested is None or suggested > 0.97:
                variable = "vllm_tensor_parallel_size"
                suggested = 2 * int(s.get("tensor_parallel_size") or layout.get("tensor_parallel_size") or 1)
        elif ident in ("vllm_exceeds_gpu_memory", "vllm_cudagraph_headroom"):
            suggested = for_headroom
        elif ident == "vllm_overhead_uncertain":
            variable = "vllm_max_num_seqs"
        elif ident == "vllm_vision_profile_uncertain":
            variable, suggested = "vllm_language_model_only", True
        elif ident == "vllm_gdn_prefill_unprofiled":
            variable = "vllm_max_num_batched_tokens"
        check = BUDGET_FACT_FINDINGS.get(ident, "memory-fit")
        findings.append(Finding(check, item.get("severity", "error"), item["message"], variable, suggested))
    return findings


def state_seqs_limit(budget: Mapping[str, Any]) -> Optional[Tuple[int, int]]:
    """For a hybrid model: (the most running sequences whose recurrent state leaves at least half of the KV
    cache blocks for attention tokens, the blocks each sequence pins whatever its length); None without
    recurrent-state blocks. Fewer sequences also shrink vLLM's sampler warm-up, so the cache only grows: the
    limit computed on this budget still holds after it is applied (for the one-sequence floor too, unless
    even one sequence pins more than half)."""
    blocks = budget.get("num_blocks")
    groups = (budget.get("layout") or {}).get("groups") or []
    state = sum(int(g["blocks_per_request"]) for g in groups if g["kind"] == "linear_attention")
    if not blocks or not state:
        return None
    return max(1, int(blocks) // (2 * state)), state


def _state_warning(seqs: int, limit: Tuple[int, int], blocks: int, budget: Mapping[str, Any]) -> Finding:
    """The hybrid max-num-seqs warning: the state rule's own limit, not the number of full-length sequences
    (vLLM admits requests by the blocks they use, so shorter ones share the rest)."""
    fitting, state_blocks = limit
    pinned = seqs * state_blocks
    state = f"for their Gated-DeltaNet/Mamba state ({state_blocks} blocks each, whatever their length)"
    if pinned > blocks:
        # More than the cache holds: vLLM cannot run them all; each also needs a block per attention group.
        groups = (budget.get("layout") or {}).get("groups") or []
        attention = sum(1 for g in groups if g["kind"] != "linear_attention")
        most = blocks // (state_blocks + max(1, attention))
        effect = (
            f"{seqs} running sequences would pin {pinned} KV cache blocks {state}, more than the {blocks} "
            f"the KV cache holds: at most {most} run at once, each with one block of attention tokens, and "
            "long requests get preempted."
        )
    else:
        effect = (
            f"{seqs} running sequences pin {pinned} of the {blocks} KV cache blocks {state}, leaving less "
            "than half for attention tokens: long requests get preempted and memory runs short."
        )
    return Finding(
        "max-num-seqs",
        "warning",
        f"{effect} The most sequences whose state leaves half of the blocks to attention tokens pass (fewer "
        "sequences also shrink the sampler warm-up, so the cache grows); vLLM admits a request by the blocks it "
        "uses, so shorter requests share that half",
        "vllm_max_num_seqs",
        fitting,
    )


def check_max_num_seqs(
    vv: VllmVersion, arch: Mapping[str, Any], s: Mapping[str, Any], budget: Mapping[str, Any], hybrid: bool
) -> List[Finding]:
    findings = []
    seqs = s.get("max_num_seqs")
    batched = s.get("max_num_batched_tokens")
    limit = state_seqs_limit(budget) if hybrid else None
    if not seqs:
        return findings
    seqs = int(seqs)
    if batched and int(batched) < seqs:
        findings.append(
            Finding(
                "max-num-seqs",
                "error",
                f"max_num_batched_tokens ({batched}) must be >= max_num_seqs ({seqs}): vLLM refuses to start",
                "vllm_max_num_seqs",
                int(batched),
            )
        )
    blocks = budget.get("num_blocks")
    eager = as_bool(s.get("enforce_eager"))
    if hybrid and blocks is not None and not eager and vv.mamba_blocks_cudagraph_error and seqs > int(blocks):
        findings.append(
            Finding(
                "max-num-seqs",
                "error",
                f"max_num_seqs ({seqs}) exceeds the {blocks} Mamba cache blocks: CUDA graph capture cannot proceed"
                + ("" if int(blocks) > 0 else "; with no KV cache block at all no max_num_seqs helps (memory-fit)"),
                "vllm_max_num_seqs",
                int(blocks) if int(blocks) > 0 else None,
            )
        )
        return findings
    if limit is not None and seqs * limit[1] * 2 > int(blocks):
        # The state rule's own limit, not the number of full-length sequences: vLLM admits requests by the
        # blocks they use, so shorter ones share the rest (the info finding below says how many full-length).
        findings.append(_state_warning(seqs, limit, int(blocks), budget))
        return findings
    concurrency = budget.get("max_concurrency")
    if concurrency is not None and seqs > max(1, math.floor(float(concurrency))):
        findings.append(
            Finding(
                "max-num-seqs",
                "info",
                f"the KV cache holds {float(concurrency):.2f} sequences of max_model_len at once; with max_num_seqs "
                f"{seqs} shorter requests share it (vLLM admits a request by the blocks it uses) and full-length "
                "ones queue",
                "vllm_max_num_seqs",
                None,
            )
        )
    return findings
