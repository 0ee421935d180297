# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""How long a vLLM start may take before the role gives up on it: from the last measured start when
there is one, else from the model's size.

The vllm role stores each start's load time (the journal's first line to "Application startup complete.",
startup_log.parse_startup_report) in its local fact ``ansible_local.inferops_vllm.load_seconds``. The next
plan, and the role right after it measured a start, turn it into the unit's ``TimeoutStartSec`` and the
role's wait for /health:

* measured (the fact is for the same model repository): ``MEASURED_FACTOR`` x the load time, because a
  start after an upgrade recompiles (torch.compile and CUDA graphs with a cold cache) and a loaded host
  is slower; never below ``FLOOR_S``.
* first start (no fact, or one for another model): ``FIRST_START_BASE_S`` for the engine's own start
  (imports, torch.compile, CUDA-graph capture) plus ``FIRST_START_S_PER_GIB`` per GiB of weights (reading
  them from a slow disk at about 17 MB/s), never below ``FLOOR_S``.

Values are rounded up to whole ``STEP_S`` so that a slightly different measurement of the same start
does not rewrite the unit.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB

# The shortest wait: a tiny model on the CPU build, measured at about 90 s on a loaded 2-core host.
FLOOR_S = 300
# The first start of an unknown model: the engine's own start plus reading the weights.
FIRST_START_BASE_S = 600
FIRST_START_S_PER_GIB = 60
# Margin on a measured start: a cold compile cache after an upgrade, a busier host.
MEASURED_FACTOR = 3
STEP_S = 10


def _round_up(seconds: float) -> int:
    return int(math.ceil(seconds / STEP_S) * STEP_S)


def measured_load_seconds(measured: Optional[Mapping[str, Any]], repo: str) -> Optional[float]:
    """The load time of the last start in the local fact, when it served the same model repository."""
    if not measured or (measured.get("model") or {}).get("repo") != repo:
        return None
    try:
        load = float(measured.get("load_seconds"))
    except (TypeError, ValueError):
        return None
    return load if load > 0 else None


def start_timeout(weights_bytes: int, repo: str, measured: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """``{timeout_s, source, load_seconds, reason}``: the seconds a start may take (TimeoutStartSec and the
    role's /health wait); source is "measured" or "model size"."""
    load = measured_load_seconds(measured, repo)
    if load is not None:
        seconds = max(FLOOR_S, _round_up(MEASURED_FACTOR * load))
        version = (measured or {}).get("version")
        return {
            "timeout_s": seconds,
            "source": "measured",
            "load_seconds": load,
            "reason": (
                f"{MEASURED_FACTOR} x the {load:g} s the last start took (vLLM {version}) to answer, "
                f"at least {FLOOR_S} s"
            ),
        }
    weights_gib = max(0, int(weights_bytes)) / GIB
    seconds = max(FLOOR_S, _round_up(FIRST_START_BASE_S + FIRST_START_S_PER_GIB * weights_gib))
    return {
        "timeout_s": seconds,
        "source": "model size",
        "load_seconds": None,
        "reason": (
            f"first start: {FIRST_START_BASE_S} s plus {FIRST_START_S_PER_GIB} s per GiB of weights "
            f"({weights_gib:.2f} GiB), at least {FLOOR_S} s"
        ),
    }
