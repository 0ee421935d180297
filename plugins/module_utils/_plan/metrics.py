# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's plan and its last measured vLLM start as Prometheus metrics (node exporter textfile format).

Private to the collection. Input: the plan dict (docs/plan.md) and the vLLM role's local fact
``ansible_local.inferops_vllm`` (or None); output: families of samples, rendered as the Prometheus text
exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/) for the
textfile collector. Names follow https://prometheus.io/docs/practices/naming/: the ``inferops_`` prefix,
base units in the name (bytes, seconds), ``_info`` for metrics whose value is 1 and whose labels
carry the information. The plan reports memory in GiB; the metrics carry bytes.

docs/observability.md lists every metric; the monitoring role's rules and dashboard use them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES

GIB = 1024**3
PREFIX = "inferops_"
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
SEVERITIES = ("error", "warning", "info")

Labels = Tuple[Tuple[str, str], ...]


class MetricsError(ValueError):
    """A plan or local fact that cannot be turned into metrics."""


@dataclass
class Family:
    """One metric family: its name, HELP text, TYPE and samples (labels, value)."""

    name: str
    help: str
    type: str = "gauge"
    samples: List[Tuple[Labels, float]] = field(default_factory=list)

    def add(self, value: Any, **labels: Any) -> None:
        number = _number(value, self.name)
        if number is not None:
            self.samples.append((tuple(sorted((k, str(v)) for k, v in labels.items())), number))


def _number(value: Any, name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    try:
        number = float(value)
    except (TypeError, ValueError) as error:
        raise MetricsError(f"{name}: {value!r} is not a number") from error
    if math.isnan(number) or math.isinf(number):
        raise MetricsError(f"{name}: {value!r} is not a finite number")
    return number


def _gib_bytes(value: Any) -> Optional[float]:
    return None if value is None else round(float(value) * GIB)


def _timestamp(text: Any) -> Optional[float]:
    """Seconds since the epoch of an ISO 8601 UTC time such as 2026-11-22T02:40:01Z, or None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def measured_applies(plan: Mapping[str, Any], measured: Optional[Mapping[str, Any]]) -> bool:
    """Whether the local fact was measured with the plan's engine version and model revision."""
    facts = ENGINES.get(str(plan.get("engine")))
    if not measured or facts is None or not facts.startup_report:
        return False
    model = measured.get("model") or {}
    planned = plan.get("model") or {}
    return (
        str(measured.get("version")) == str(plan.get("engine_version"))
        and model.get("repo") == planned.get("repo")
        and model.get("revision") == planned.get("revision")
    )


FamilyMaker = Callable[..., Family]


def _predicted_families(family: FamilyMaker, performance: Mapping[str, Any]) -> None:
    """The performance model's predictions of the plan (predicted_*)."""
    decode = family(
        "predicted_decode_tokens_per_second",
        "Decode speed the performance model predicts: per stream (streams=1) and over all streams"
        " at the plan's concurrency.",
    )
    decode.add(performance.get("single_stream_decode_tokens_per_s"), streams="1")
    if performance.get("concurrency") and performance.get("concurrency") != 1:
        decode.add(performance.get("aggregate_decode_tokens_per_s"), streams=performance["concurrency"])
    family(
        "predicted_ttft_seconds",
        "Time to first token the performance model predicts for a prompt of prompt_tokens.",
    ).add(performance.get("ttft_s"), prompt_tokens=performance.get("prompt_tokens") or "")
    family("predicted_prefill_tokens_per_second", "Prefill speed the performance model predicts.").add(
        performance.get("prefill_tokens_per_s")
    )


def _finding_families(family: FamilyMaker, checks: Sequence[Mapping[str, Any]]) -> None:
    """The plan's findings: a count per severity and one series per finding."""
    findings = family("plan_findings", "Checks of the plan that found something, by severity.")
    counts = {severity: 0 for severity in SEVERITIES}
    for check in checks:
        severity = str(check.get("severity") or "info")
        counts[severity] = counts.get(severity, 0) + 1
    for severity, count in counts.items():
        findings.add(count, severity=severity)
    finding_info = family("plan_finding_info", "One series per finding of the plan's checks (id and severity).")
    for check in checks:
        finding_info.add(1, id=check.get("id") or "", severity=check.get("severity") or "info")


def _measured_families(family: FamilyMaker, measured: Mapping[str, Any]) -> None:
    """What vLLM reported at its last start (measured_*), and the vllm role's benchmark where it ran."""
    family("measured_kv_cache_tokens", "KV cache tokens vLLM reported at its last start.").add(
        measured.get("kv_cache_tokens")
    )
    family("measured_max_concurrency", "Maximum concurrency vLLM reported at its last start.").add(
        measured.get("max_concurrency")
    )
    family("measured_weights_bytes", "Weights memory per GPU vLLM reported at its last start.").add(
        _gib_bytes(measured.get("weights_gib"))
    )
    family("measured_kv_cache_bytes", "KV cache memory per GPU vLLM reported at its last start.").add(
        _gib_bytes(measured.get("kv_cache_gib"))
    )
    family("measured_load_seconds", "Seconds from the process start to 'startup complete' at the last start.").add(
        measured.get("load_seconds")
    )
    family("measured_start_timestamp_seconds", "Time of the last measured vLLM start.").add(
        _timestamp(measured.get("timestamp"))
    )
    benchmark = measured.get("benchmark")
    if isinstance(benchmark, Mapping):
        # The vllm role's benchmark tag (vLLM's serving benchmark, one request at a time): beside the
        # predicted_ series, with the same labels.
        family(
            "measured_decode_tokens_per_second",
            "Decode speed of one stream (streams=1) that vLLM's serving benchmark measured: 1 / median TPOT.",
        ).add(benchmark.get("decode_tokens_per_s"), streams="1")
        family(
            "measured_ttft_seconds",
            "Median time to first token that vLLM's serving benchmark measured for prompts of prompt_tokens.",
        ).add(benchmark.get("ttft_s"), prompt_tokens=benchmark.get("prompt_tokens") or "")
        family("measured_benchmark_timestamp_seconds", "Time of the last benchmark of the vllm role.").add(
            _timestamp(benchmark.get("date"))
        )


def plan_families(plan: Mapping[str, Any], measured: Optional[Mapping[str, Any]] = None) -> List[Family]:
    """The metric families of one host's plan and, when it applies to that plan, its measured start."""
    if not isinstance(plan, Mapping) or not plan.get("engine"):
        raise MetricsError("the plan must be a mapping with an engine (inferops_plan)")
    model = plan.get("model") or {}
    memory = plan.get("memory") or {}
    performance = plan.get("performance") or {}
    layout = plan.get("layout") or {}
    service = plan.get("service") or {}
    settings = plan.get("settings") or {}

    def family(name: str, text: str, kind: str = "gauge") -> Family:
        made = Family(PREFIX + name, text, kind)
        families.append(made)
        return made

    families: List[Family] = []
    family("engine_info", "Engine the collection deployed on this host, its pinned version and device.").add(
        1,
        engine=plan["engine"],
        version=plan.get("engine_version") or "",
        device=service.get("device") or plan.get("device") or "",
    )
    family("model_info", "Model the host serves: repository, pinned revision, quantization, architecture.").add(
        1,
        repo=model.get("repo") or "",
        revision=model.get("revision") or "",
        quantization=model.get("quantization") or "",
        architecture=model.get("architecture") or "",
    )
    family("plan_gpus", "GPUs the plan uses (tensor x pipeline x data parallel).").add(len(layout.get("gpus") or []))
    family("plan_tensor_parallel_size", "Tensor-parallel size of the plan's layout.").add(
        layout.get("tensor_parallel_size")
    )
    family("plan_kv_cache_tokens", "KV cache tokens the plan budgets for the whole engine.").add(
        memory.get("kv_cache_tokens")
    )
    family("plan_max_concurrency", "Requests of the full context length that fit the planned KV cache at once.").add(
        memory.get("max_concurrency")
    )
    max_len = settings.get("max_model_len") or settings.get("context_length") or {}
    family("plan_max_model_len_tokens", "Longest request (prompt + output tokens) the engine accepts.").add(
        max_len.get("value") if isinstance(max_len, Mapping) else None
    )
    per_gpu = {
        "plan_weights_bytes": (
            "weights_gib",
            "Model weights the plan places on each GPU (no gpu label: a CPU host's memory).",
        ),
        "plan_kv_cache_bytes": (
            "kv_cache_gib",
            "KV cache the plan budgets on each GPU (no gpu label: a CPU host's memory).",
        ),
        "plan_overhead_bytes": (
            "overhead_gib",
            "Non-KV overhead (activations, graphs, context) the plan budgets per GPU.",
        ),
        "plan_gpu_memory_bytes": ("total_gib", "Memory of each GPU as the plan saw it."),
    }
    for name, (key, text) in per_gpu.items():
        made = family(name, text)
        for gpu in memory.get("per_gpu") or []:
            made.add(_gib_bytes(gpu.get(key)), gpu=gpu.get("index", ""))
        if not memory.get("per_gpu") and key != "total_gib":
            # A CPU host (vLLM's CPU build): the host's memory, without a gpu label.
            made.add(_gib_bytes(memory.get(key)))
    if performance:
        _predicted_families(family, performance)
    _finding_families(family, plan.get("checks") or [])

    applies = measured_applies(plan, measured)
    family(
        "measured_applies",
        "1 when the last measured vLLM start was of the plan's engine version and model revision, else 0.",
    ).add(applies)
    if applies and measured is not None:
        _measured_families(family, measured)
    return [made for made in families if made.samples]


def converge_families(now: float) -> List[Family]:
    """The time of this converge (rewritten on every run, apart from the plan's metrics)."""
    made = Family(PREFIX + "last_converge_timestamp_seconds", "Time the collection last converged this host.")
    made.add(now)
    return [made]


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _value(number: float) -> str:
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def render(families: Sequence[Family]) -> str:
    """The families as text exposition format: HELP and TYPE before each family's samples."""
    lines: List[str] = []
    seen: Dict[str, bool] = {}
    for made in families:
        if not _NAME.match(made.name) or made.name in seen:
            raise MetricsError(f"metric name {made.name!r} is invalid or repeated")
        seen[made.name] = True
        lines.append(f"# HELP {made.name} {_escape_help(made.help)}")
        lines.append(f"# TYPE {made.name} {made.type}")
        for labels, number in made.samples:
            for key, _label_value in labels:
                if not _LABEL.match(key) or key.startswith("__"):
                    raise MetricsError(f"{made.name}: label name {key!r} is invalid")
            text = ",".join(f'{key}="{_escape_label(value)}"' for key, value in labels)
            lines.append(f"{made.name}{{{text}}} {_value(number)}" if text else f"{made.name} {_value(number)}")
    return "\n".join(lines) + "\n" if lines else ""


def plan_metrics_text(plan: Mapping[str, Any], measured: Optional[Mapping[str, Any]] = None) -> str:
    """The textfile of a host's plan and measured start."""
    return render(plan_families(plan, measured))


def metric_names(families: Sequence[Family]) -> List[str]:
    """Names of the families (what a Prometheus query may use)."""
    return [made.name for made in families]
