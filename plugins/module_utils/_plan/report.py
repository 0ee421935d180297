# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Text renderings of host plans: the Markdown report of one host and the table of all hosts.

Input is the plan dict of module_utils/plan.py (see docs/plan.md); output is plain text.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES
from ansible_collections.inferops.llm.plugins.module_utils._plan.picture import text_bar

TABLE_COLUMNS = (
    "host",
    "engine",
    "model",
    "layout",
    "GPUs",
    "weights/GPU",
    "KV/GPU",
    "KV tokens",
    "concurrency",
    "decode tok/s",
    "memory (fullest GPU)",
    "checks",
)


# Printed under the table on the console (make plan), for the columns that need a word.
TABLE_LEGEND = (
    "vLLM figures are per GPU, Ollama's totals; concurrency: full-length sequences the KV cache holds at the "
    "context length, then the sequences run at once at inferops_context_tokens (max_num_seqs and the KV cache "
    "allow them); decode tok/s: one request alone (xN: N requests at once, tokens/s of all together); memory: "
    "the fullest GPU's total in 20 characters, W weights, o non-KV overhead, K KV cache, . free, "
    "] where gpu_memory_utilization ends (vLLM); the picture per GPU is plans/<host>.svg"
)


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        # settings such as gpu_memory_utilization 0.885 keep their digits; GiB figures get two decimals
        return f"{value:,.{digits}f}" if abs(value) >= 10 else f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def _gib(value: Any) -> str:
    return "-" if value is None else f"{value:.2f} GiB"


def _cell(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else _num(value)
    return text.replace("|", "\\|")


def check_counts(plan: Mapping[str, Any]) -> Dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for check in plan.get("checks") or []:
        severity = check.get("severity")
        if severity in counts:
            counts[severity] += 1
    return counts


def _layout_text(layout: Mapping[str, Any]) -> str:
    return "TP{} PP{} DP{}".format(
        layout.get("tensor_parallel_size", "?"),
        layout.get("pipeline_parallel_size", "?"),
        layout.get("data_parallel_size", "?"),
    )


def _concurrency(plan: Mapping[str, Any]) -> str:
    memory = plan.get("memory") or {}
    conc = memory.get("max_concurrency")
    if conc is None:
        return "-"
    settings = plan.get("settings") or {}
    length = (settings.get("max_model_len") or settings.get("context_length") or {}).get("value")
    suffix = f" @ {_num(length)}" if isinstance(length, int) else ""
    text = f"{conc:.2f}x{suffix}" if isinstance(conc, float) else f"{conc}x{suffix}"
    # Beside it, the sequences run at once at the expected context (inferops_context_tokens): what the
    # settings allow (max_num_seqs) and the KV cache holds, and what the speed prediction uses.
    performance = plan.get("performance") or {}
    at, context = performance.get("concurrency"), performance.get("context_tokens")
    if isinstance(at, int) and isinstance(context, int) and context != length:
        text += f", {at} @ {_num(context)}"
    return text


def table_row(plan: Mapping[str, Any]) -> List[str]:
    """The table cells of one plan (a plan without ``engine`` is a host whose planning failed)."""
    host = str(plan.get("host", "?"))
    if not plan.get("engine"):
        # The reasons go below the table (render_findings), not into one long cell.
        return [host, "-", "no plan: its inputs are refused (below)"] + [""] * (len(TABLE_COLUMNS) - 3)
    model = plan.get("model") or {}
    layout = plan.get("layout") or {}
    memory = plan.get("memory") or {}
    counts = check_counts(plan)
    weights = memory.get("weights_gib")
    kv = memory.get("kv_cache_gib")
    return [
        host,
        f"{plan['engine']} {plan.get('engine_version', '')}".strip(),
        f"{model.get('repo', '?')}@{model.get('revision', '?')}",
        "layers split" if ENGINES[plan["engine"]].splits_layers else _layout_text(layout),
        ",".join(str(i) for i in layout.get("gpus") or []) or "-",
        _gib(weights),
        _gib(kv),
        _num(memory.get("kv_cache_tokens")),
        _concurrency(plan),
        _decode(plan),
        text_bar(plan),
        f"{counts['error']} error, {counts['warning']} warning",
    ]


def _decode(plan: Mapping[str, Any]) -> str:
    """Predicted single-stream decode, and the aggregate at the concurrency the KV cache holds."""
    performance = plan.get("performance") or {}
    single = performance.get("single_stream_decode_tokens_per_s")
    if single is None:
        return "-"
    return (
        f"{single:.0f} (x{performance.get('concurrency')}: {performance.get('aggregate_decode_tokens_per_s', 0):.0f})"
    )


def render_table(plans: Sequence[Mapping[str, Any]]) -> List[str]:
    """A Markdown table of all plans, padded so that it also reads as plain text (one string per line)."""
    rows = [list(TABLE_COLUMNS)] + [table_row(plan) for plan in plans]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths)) + " |"

    separator = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return [line(rows[0]), separator] + [line(row) for row in rows[1:]]


def render_findings(
    plans: Sequence[Mapping[str, Any]], refused: Optional[Mapping[str, Sequence[str]]] = None
) -> List[str]:
    """What the console shows below the table: every error and warning once, grouped by host.

    plans: the table's plans, in its order (a plan without ``engine`` is a refused host); refused: each
    refused host's input errors (each names its variable and a value that passes). A check's message
    names the variable to change and a value that passes (docs/checks.md); notes (``info``) stay in the
    host's Markdown report.
    """
    refused = refused or {}
    lines: List[str] = []
    for plan in plans:
        host = str(plan.get("host", "?"))
        if not plan.get("engine"):
            reasons = list(refused.get(host) or [plan.get("error") or "its inputs are invalid"])
            lines.append(f"{host}: no plan, {len(reasons)} input error{'s' if len(reasons) != 1 else ''}:")
            lines += [f"  error: {reason}" for reason in reasons]
            continue
        checks = [c for c in plan.get("checks") or [] if c.get("severity") in ("error", "warning")]
        checks.sort(key=lambda c: c.get("severity") != "error")  # errors first, each group in plan order
        if checks:
            lines.append(f"{host}:")
            lines += [f"  {c['severity']}: {c['id']}: {c['message']}" for c in checks]
    extra = [host for host in refused if host not in {str(p.get("host")) for p in plans}]
    for host in extra:  # e.g. the gateway's own inputs
        lines.append(f"{host}: {len(refused[host])} input error{'s' if len(refused[host]) != 1 else ''}:")
        lines += [f"  error: {reason}" for reason in refused[host]]
    if not lines:
        return ["findings: no errors or warnings (notes, if any, are in each host's report)"]
    return ["findings (errors and warnings; notes are in each host's report):", *lines]


def render_console(
    plans: Sequence[Mapping[str, Any]],
    refused: Optional[Mapping[str, Sequence[str]]] = None,
    gateway_lines: Sequence[str] = (),
) -> List[str]:
    """What plan.yml prints: the table, its legend, the gateway's lines, then the findings."""
    lines = [*render_table(plans), TABLE_LEGEND]
    if gateway_lines:
        lines += ["", *gateway_lines]
    return [*lines, "", *render_findings(plans, refused)]


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return lines


def _performance_markdown(performance: Mapping[str, Any]) -> List[str]:
    """The predicted performance (and the benchmark's measurement beside it), empty without a prediction."""
    if not performance:
        return []
    lines: List[str] = []
    lines += ["## Performance (predicted)", ""]
    lines += _markdown_table(
        ("figure", "value"),
        [(k, v) for k, v in performance.items() if k not in ("alternatives", "basis", "measured")],
    )
    measured: Mapping[str, Any] = performance.get("measured") or {}
    if measured:
        lines += ["", f"Measured by the vllm role's benchmark on {measured.get('date')}:", ""]
        lines += _markdown_table(
            ("figure", "predicted", "measured", "measured / predicted"),
            [
                (
                    "single-stream decode (tokens/s)",
                    performance.get("single_stream_decode_tokens_per_s"),
                    measured.get("decode_tokens_per_s"),
                    measured.get("decode_ratio"),
                ),
                (
                    f"TTFT (s; predicted for {performance.get('prompt_tokens')} prompt tokens, "
                    f"measured for {measured.get('prompt_tokens')})",
                    performance.get("ttft_s"),
                    measured.get("ttft_s"),
                    measured.get("ttft_ratio"),
                ),
            ],
        )
    alternatives: Sequence[Mapping[str, Any]] = performance.get("alternatives") or []
    if alternatives:
        keys = list(alternatives[0])
        lines += ["", "Alternatives:", ""]
        lines += _markdown_table(keys, [[entry.get(key) for key in keys] for entry in alternatives])
    lines += ["", f"Basis: {performance.get('basis')}.", ""]
    return lines


def render_markdown(plan: Mapping[str, Any]) -> str:
    """The Markdown report of one host's plan."""
    model = plan.get("model") or {}
    layout = plan.get("layout") or {}
    memory = plan.get("memory") or {}
    counts = check_counts(plan)
    verdict = "fails its checks" if counts["error"] else "passes its checks"
    lines = [
        f"# Plan for {plan.get('host')}",
        "",
        f"{plan.get('engine')} {plan.get('engine_version')} serving `{model.get('repo')}` at revision "
        f"`{model.get('revision')}`: {verdict} (errors: {counts['error']}, warnings: {counts['warning']}, "
        f"notes: {counts['info']}).",
        "",
        f"![memory per GPU and the layout on the topology]({plan.get('host')}.svg)",
        "",
        "## Model",
        "",
    ]
    lines += _markdown_table(
        ("key", "value"),
        [
            ("architecture", model.get("architecture")),
            ("quantization", model.get("quantization")),
            ("weights", f"{_num(model.get('weights_bytes'))} bytes"),
            ("weights source", model.get("weights_source")),
        ],
    )
    lines += ["", "## Layout", "", f"{_layout_text(layout)} on GPUs {layout.get('gpus')}: {layout.get('reason')}", ""]
    lines += _performance_markdown(plan.get("performance") or {})
    lines += ["## Memory", ""]
    summary = [(key, memory.get(key)) for key in memory if key != "per_gpu"]
    lines += _markdown_table(("figure", "value"), summary)
    per_gpu: Sequence[Mapping[str, Any]] = memory.get("per_gpu") or []
    if per_gpu:
        keys: List[str] = []
        for entry in per_gpu:
            keys += [key for key in entry if key not in keys]
        lines += ["", "Per GPU:", ""]
        lines += _markdown_table(keys, [[entry.get(key) for key in keys] for entry in per_gpu])
    lines += ["", "## Settings", ""]
    settings: Mapping[str, Mapping[str, Any]] = plan.get("settings") or {}
    lines += _markdown_table(
        ("setting", "value", "source", "reason"),
        [
            (name, entry.get("value"), entry.get("source"), entry.get("reason") or "")
            for name, entry in settings.items()
        ],
    )
    lines += ["", "## Checks", ""]
    checks: Sequence[Mapping[str, Any]] = plan.get("checks") or []
    lines += [f"- **{c.get('severity')}** `{c.get('id')}`: {c.get('message')}" for c in checks] or ["None."]
    lines += ["", "## Service", "", "```sh"]
    environment: Optional[Mapping[str, Any]] = plan.get("environment")
    lines += [f"{name}={shlex.quote(str(value))} \\" for name, value in (environment or {}).items()]
    lines += [" ".join(shlex.quote(str(arg)) for arg in plan.get("command") or []), "```", ""]
    lines += _cluster_markdown(plan.get("cluster"))
    return "\n".join(lines)


def _cluster_markdown(cluster: Optional[Mapping[str, Any]]) -> List[str]:
    """The node's part in a multi-host deployment (plan ``cluster``), empty for a host on its own."""
    if not cluster:
        return []
    lines = ["## Cluster", ""]
    if cluster.get("backend") == "ray" and cluster.get("role") == "worker":
        lines += ["This node runs Ray only: the vLLM server on the head places its ranks here.", ""]
    lines += _markdown_table(
        ("item", "value"),
        [
            ("cluster", f"{cluster.get('name')} ({cluster.get('nnodes')} nodes, backend {cluster.get('backend')})"),
            ("role", f"{cluster.get('role')} (rank {cluster.get('node_rank')}; head {cluster.get('head')})"),
            ("address", f"{cluster.get('address')} on {cluster.get('interface') or 'the default route'}"),
            ("head address", cluster.get("head_address")),
            ("ports", ", ".join(f"{name} {port}" for name, port in (cluster.get("ports") or {}).items())),
        ],
    )
    if cluster.get("ray_start"):
        lines += ["", "```sh", " ".join(shlex.quote(str(arg)) for arg in cluster["ray_start"]), "```"]
    return [*lines, ""]
