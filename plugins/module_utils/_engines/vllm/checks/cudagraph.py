# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""cudagraph-capture-size."""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool


def check_cudagraph(s: Mapping[str, Any]) -> List[Finding]:
    findings = []
    if as_bool(s.get("enforce_eager")):
        return findings
    sizes = [int(x) for x in s.get("cudagraph_capture_sizes") or []]
    max_size = s.get("max_cudagraph_capture_size")
    if sizes and max_size and int(max_size) != max(sizes):
        findings.append(
            Finding(
                "cudagraph-capture-size",
                "error",
                f"max_cudagraph_capture_size ({max_size}) must equal the largest of cudagraph_capture_sizes "
                f"({max(sizes)})",
                "vllm_max_cudagraph_capture_size",
                max(sizes),
            )
        )
    largest = max(sizes) if sizes else int(max_size) if max_size else None
    seqs = s.get("max_num_seqs")
    if largest is not None and seqs and int(seqs) > largest:
        findings.append(
            Finding(
                "cudagraph-capture-size",
                "warning",
                f"max_num_seqs ({seqs}) exceeds the largest captured CUDA graph ({largest}): larger decode batches "
                "run without graphs",
                "vllm_max_num_seqs",
                largest,
            )
        )
    spec = s.get("speculative_config") or {}
    k = int(spec.get("num_speculative_tokens") or 0) if isinstance(spec, Mapping) else 0
    if k and largest is not None and largest < k + 1:
        findings.append(
            Finding(
                "cudagraph-capture-size",
                "error",
                f"no CUDA graph size is a multiple of num_speculative_tokens + 1 ({k + 1}) below "
                f"max_cudagraph_capture_size {largest}",
                "vllm_max_cudagraph_capture_size",
                k + 1,
            )
        )
    return findings
