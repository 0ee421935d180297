# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""tensor-parallel-divisibility: the layout against the model's dimensions."""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.parallelism import (
    ParallelDims,
    fp8_block_split_fails,
    pipeline_parallel_problems,
    tensor_parallel_problems,
)


def check_parallel(arch: Mapping[str, Any], s: Mapping[str, Any], layout: Mapping[str, Any]) -> List[Finding]:
    findings = []
    dims = ParallelDims.from_model(arch)
    tp = int(s.get("tensor_parallel_size") or layout.get("tensor_parallel_size") or 1)
    pp = int(s.get("pipeline_parallel_size") or layout.get("pipeline_parallel_size") or 1)
    ep = as_bool(s.get("enable_expert_parallel"))
    if ep is None:
        ep = bool(layout.get("expert_parallel"))
    seen = set()
    for problem in layout.get("problems", []):
        seen.add(problem["message"])
        findings.append(
            Finding(
                "tensor-parallel-divisibility",
                problem.get("severity", "error"),
                problem["message"],
                problem["variable"],
                problem["suggested"],
            )
        )
    # the problems of every usual TP size and of this one, asked once each
    tp_problems = {size: tensor_parallel_problems(dims, size, expert_parallel=ep) for size in (1, 2, 4, 8, 3, 6, tp)}
    valid_tps = [t for t in (1, 2, 4, 8, 3, 6) if not tp_problems[t]]
    for message in tp_problems[tp]:
        text = f"tensor_parallel_size {tp}: {message}"
        if text in seen:
            continue
        if "block-FP8" in message:
            variable, suggested = "vllm_enable_expert_parallel", True
        else:
            variable, suggested = "vllm_tensor_parallel_size", max([t for t in valid_tps if t <= tp] or [1])
        findings.append(Finding("tensor-parallel-divisibility", "error", text, variable, suggested))
    for message in pipeline_parallel_problems(dims, pp):
        text = f"pipeline_parallel_size {pp}: {message}"
        if text not in seen:
            findings.append(Finding("tensor-parallel-divisibility", "error", text, "vllm_pipeline_parallel_size", 1))
    if ep and not fp8_block_split_fails(dims, tp) and not dims.num_experts:
        findings.append(
            Finding(
                "tensor-parallel-divisibility",
                "warning",
                "expert parallel is on but the model has no experts",
                "vllm_enable_expert_parallel",
                False,
            )
        )
    return findings
