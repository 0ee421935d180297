# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Peak memory bandwidth and tensor throughput per GPU model, for the performance model.

The data is ``gpu_specs.json`` beside this file: one row per GPU model with the vendor's datasheet
source and how dense figures were derived from published sparse ones. ``gpu_spec(name)`` finds the row
for a name as ``nvidia-smi`` prints it (``NVIDIA GeForce RTX 3090``); the longest matching term wins, and
a term matches only as whole words (``NVIDIA L4`` does not match ``NVIDIA L40S``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_specs.json")


@dataclass(frozen=True)
class GpuSpec:
    """Peak figures of one GPU model (dense tensor TFLOPS with FP32 accumulate; GB/s = 10^9 bytes/s)."""

    model: str
    memory_bandwidth_gbps: float
    bf16_tflops: float
    fp8_tflops: float
    fp4_tflops: float
    int8_tops: float
    nvlink_gbps: float
    boost_clock_mhz: float
    source: str

    def tensor_tflops(self, precision: str) -> float:
        """Peak dense throughput for a GEMM input precision (bf16, fp8, fp4, int8); a precision the GPU lacks
        runs at the bf16 rate (weights dequantized to bf16, as vLLM's Marlin/W8A16 kernels do)."""
        value = {"fp8": self.fp8_tflops, "fp4": self.fp4_tflops, "int8": self.int8_tops}.get(precision, 0.0)
        return value or self.bf16_tflops


def _load() -> Tuple[List[Tuple[str, GpuSpec]], List[GpuSpec]]:
    with open(_DATA, encoding="utf-8") as handle:
        rows = json.load(handle)["gpus"]
    terms: List[Tuple[str, GpuSpec]] = []
    specs: List[GpuSpec] = []
    for row in rows:
        spec = GpuSpec(
            model=row["model"],
            memory_bandwidth_gbps=float(row["memory_bandwidth_gbps"]),
            bf16_tflops=float(row["bf16_tflops"]),
            fp8_tflops=float(row["fp8_tflops"]),
            fp4_tflops=float(row["fp4_tflops"]),
            int8_tops=float(row["int8_tops"]),
            nvlink_gbps=float(row["nvlink_gbps"]),
            boost_clock_mhz=float(row["boost_clock_mhz"]),
            source=row["source"],
        )
        specs.append(spec)
        terms += [(term.upper(), spec) for term in row["match"]]
    terms.sort(key=lambda item: -len(item[0]))
    return terms, specs


_TERMS, _SPECS = _load()
_CACHE: Dict[str, Optional[GpuSpec]] = {}


# Words that make a GPU another part than the desktop card of the same number (a laptop RTX 4090 has about
# half the desktop card's bandwidth): a name with one of them matches only a term with one of them.
_VARIANT_RE = re.compile(r"(?<![A-Z0-9])(LAPTOP|MOBILE|MAX-Q)(?![A-Z0-9])")


def gpu_spec(name: str) -> Optional[GpuSpec]:
    """The spec row for a GPU name, or None when the model is not in the table."""
    key = str(name or "").upper()
    if key not in _CACHE:
        variant = bool(_VARIANT_RE.search(key))
        _CACHE[key] = next(
            (
                spec
                for term, spec in _TERMS
                if bool(_VARIANT_RE.search(term)) == variant
                and re.search(rf"(?<![A-Z0-9]){re.escape(term)}(?![A-Z0-9])", key)
            ),
            None,
        )
    return _CACHE[key]


def add_row_hint(name: str) -> str:
    """How to add a GPU to the table, for a finding's message."""
    return (
        f"add a row for {name!r} to plugins/module_utils/_hardware/gpu_specs.json (memory bandwidth, dense tensor "
        "TFLOPS, boost clock and the datasheet URL, like the other rows; 'match' holds the name as nvidia-smi "
        "prints it)"
    )


def gpu_models() -> List[str]:
    """The GPU models in the table (for error messages and docs)."""
    return [spec.model for spec in _SPECS]
