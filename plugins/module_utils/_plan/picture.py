# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A picture of one host's plan: ``plans/<host>.svg``, linked from ``<host>.md`` (issue 26).

Per GPU a bar of weights, non-KV overhead, KV cache and free memory against the card's total, with the
``gpu_memory_utilization`` line (vLLM); below, the layout on the topology: one box per GPU in rank order,
grouped by tensor-parallel group, each group labelled with its pipeline stage and data-parallel replica,
and the link type of each edge inside a TP group and between consecutive stages (from ``nvidia-smi topo
-m``; ``?`` when the plan has no topology). Built as an XML tree with the standard library's ElementTree
(no string assembly). Each drawn figure carries its number as a ``data-*`` attribute, so a test can parse
the SVG and compare it with the plan.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES

SVG_NS = "http://www.w3.org/2000/svg"
PARTS = (("weights", "#4477aa"), ("overhead", "#ee6677"), ("kv_cache", "#228833"), ("free", "#dddddd"))
_WIDTH, _LABEL, _BAR, _ROW = 780, 290, 480, 30
_BOX, _GAP = 70, 40


def _gib(value: Any) -> float:
    return round(float(value or 0.0), 3)


def _bars(plan: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Per GPU: index, name, total and the four parts in GiB (free is what the other three leave)."""
    bars = []
    for gpu in (plan.get("memory") or {}).get("per_gpu") or []:
        total = _gib(gpu.get("total_gib"))
        parts = {name: _gib(gpu.get(f"{name}_gib")) for name, _colour in PARTS[:3]}
        parts["free"] = round(max(total - sum(parts.values()), 0.0), 3)
        bars.append({"index": int(gpu["index"]), "name": str(gpu.get("name") or ""), "total": total, **parts})
    return bars


def _utilization(plan: Mapping[str, Any]) -> Optional[float]:
    entry = (plan.get("settings") or {}).get("gpu_memory_utilization") or {}
    value = entry.get("value") if isinstance(entry, Mapping) else None
    return float(value) if isinstance(value, (int, float)) else None  # only vLLM has the setting


# The console's one-line bar (text_bar): a character per part, ``]`` where gpu_memory_utilization
# ends (not ``|``, which would split a Markdown table's cell).
BAR_MARK = "]"
BAR_CHARS = {"weights": "W", "overhead": "o", "kv_cache": "K", "free": "."}
BAR_CELLS = 20


def text_bar(plan: Mapping[str, Any], cells: int = BAR_CELLS) -> str:
    """The fullest GPU's memory in ``cells`` characters against its total (the parts of the SVG's bar, each
    rounded at its cumulative end), with ``]`` inserted where gpu_memory_utilization ends (vLLM); "" without
    a per-GPU budget."""
    bars = [b for b in _bars(plan) if b["total"] > 0]
    if not bars:
        return ""
    fullest = max(bars, key=lambda b: (b["total"] - b["free"]) / b["total"])
    text, end, done = "", 0.0, 0
    for name, _colour in PARTS:
        end += fullest[name]
        upto = min(cells, round(end / fullest["total"] * cells))
        text += BAR_CHARS[name] * max(0, upto - done)
        done = max(done, upto)
    text += BAR_CHARS["free"] * (cells - done)
    utilization = _utilization(plan)
    if utilization is not None:
        at = min(cells, max(0, round(utilization * cells)))
        text = text[:at] + BAR_MARK + text[at:]
    return f"GPU{fullest['index']} {text}"


def link(topology: Optional[Mapping[str, Any]], a: int, b: int) -> str:
    """The link type between GPUs a and b in ``nvidia-smi topo -m`` (NV4, PHB, SYS, ...), or ``?``."""
    matrix = (topology or {}).get("matrix") or []
    try:
        return str(matrix[a][b])
    except (IndexError, TypeError):
        return "?"


def ranks(plan: Mapping[str, Any]) -> List[Dict[str, int]]:
    """Per rank of this host in vLLM's order (DP replica, then PP stage, then TP rank): the GPU and its groups."""
    layout = plan.get("layout") or {}
    tp = int(layout.get("tensor_parallel_size") or 1)
    pp = int(layout.get("pipeline_parallel_size") or 1)
    facts = ENGINES.get(str(plan.get("engine")))
    if facts is None or facts.splits_layers:
        tp, pp = 1, 1  # Ollama splits layers itself: each GPU drawn on its own
    gpus = layout.get("gpus") or []
    # A node of a multi-host deployment holds the ranks after those of the nodes before it.
    offset = int((plan.get("cluster") or {}).get("node_rank") or 0) * len(gpus)
    result = []
    for rank, gpu in enumerate(gpus, start=offset):
        result.append(
            {
                "rank": rank,
                "gpu": int(gpu),
                "tp_group": rank // tp,
                "stage": (rank // tp) % pp,
                "replica": rank // (tp * pp),
            }
        )
    return result


def _text(parent: ET.Element, x: float, y: float, content: str, **attributes: str) -> None:
    element = ET.SubElement(parent, "text", {"x": f"{x:g}", "y": f"{y:g}", "font-size": "12", **attributes})
    element.text = content


def _memory(svg: ET.Element, plan: Mapping[str, Any], top: int) -> int:
    bars = _bars(plan)
    scale = _BAR / max([gpu_bar["total"] for gpu_bar in bars] or [1.0])
    utilization = _utilization(plan)
    for row, gpu_bar in enumerate(bars):
        y = top + row * _ROW
        group = ET.SubElement(
            svg, "g", {"class": "gpu", "data-gpu": str(gpu_bar["index"]), "data-total-gib": f"{gpu_bar['total']:g}"}
        )
        _text(group, 0, y + 15, f"GPU {gpu_bar['index']} {gpu_bar['name']} ({gpu_bar['total']:g} GiB)")
        x = float(_LABEL)
        for name, colour in PARTS:
            width = gpu_bar[name] * scale
            rect = ET.SubElement(
                group,
                "rect",
                {
                    "x": f"{x:.2f}",
                    "y": str(y),
                    "width": f"{width:.2f}",
                    "height": "20",
                    "fill": colour,
                    "data-part": name,
                    "data-gib": f"{gpu_bar[name]:g}",
                },
            )
            ET.SubElement(
                rect, "title"
            ).text = f"GPU {gpu_bar['index']} {name.replace('_', ' ')}: {gpu_bar[name]:g} GiB"
            x += width
        if utilization is not None:
            at = _LABEL + gpu_bar["total"] * utilization * scale
            ET.SubElement(
                group,
                "line",
                {
                    "x1": f"{at:.2f}",
                    "x2": f"{at:.2f}",
                    "y1": str(y - 3),
                    "y2": str(y + 23),
                    "stroke": "black",
                    "stroke-dasharray": "3,2",
                    "class": "utilization",
                    "data-utilization": f"{utilization:g}",
                },
            )
    legend = top + len(bars) * _ROW + 5
    for number, (name, colour) in enumerate(PARTS):
        ET.SubElement(
            svg,
            "rect",
            {"x": str(_LABEL + number * 120), "y": str(legend), "width": "12", "height": "12", "fill": colour},
        )
        _text(svg, _LABEL + number * 120 + 16, legend + 11, name.replace("_", " "))
    if utilization is not None:
        _text(svg, 0, legend + 11, f"dashed: gpu_memory_utilization {utilization:g}")
    return legend + 30


def _layout(svg: ET.Element, plan: Mapping[str, Any], topology: Optional[Mapping[str, Any]], top: int) -> int:
    placed = ranks(plan)
    layout = plan.get("layout") or {}
    _text(
        svg,
        0,
        top + 12,
        f"layout: TP {layout.get('tensor_parallel_size')} x PP {layout.get('pipeline_parallel_size')}"
        f" x DP {layout.get('data_parallel_size')} (ranks left to right; edges: link type)",
    )
    y, x, previous = top + 30, 0, None
    for rank in placed:
        new_group = previous is None or rank["tp_group"] != previous["tp_group"]
        if new_group and previous is not None:
            x += _GAP
        if new_group:
            _text(svg, x, y + 58, f"stage {rank['stage']}, replica {rank['replica']}", **{"font-size": "10"})
        if previous is not None and (
            not new_group or (rank["stage"] != previous["stage"] and rank["replica"] == previous["replica"])
        ):
            kind = "tp" if not new_group else "pp"
            label = link(topology, previous["gpu"], rank["gpu"])
            edge = ET.SubElement(
                svg,
                "g",
                {
                    "class": "edge",
                    "data-kind": kind,
                    "data-from": str(previous["gpu"]),
                    "data-to": str(rank["gpu"]),
                    "data-link": label,
                },
            )
            ET.SubElement(
                edge,
                "line",
                {
                    "x1": str(x - (_GAP if new_group else 10)),
                    "x2": str(x),
                    "y1": str(y + 20),
                    "y2": str(y + 20),
                    "stroke": "black",
                },
            )
            _text(edge, x - (_GAP if new_group else 10), y + 14, label, **{"font-size": "9"})
        box = ET.SubElement(
            svg,
            "g",
            {
                "class": "rank",
                "data-rank": str(rank["rank"]),
                "data-gpu": str(rank["gpu"]),
                "data-tp-group": str(rank["tp_group"]),
                "data-stage": str(rank["stage"]),
                "data-replica": str(rank["replica"]),
            },
        )
        ET.SubElement(
            box,
            "rect",
            {"x": str(x), "y": str(y), "width": str(_BOX - 10), "height": "40", "fill": "white", "stroke": "black"},
        )
        _text(box, x + 6, y + 24, f"GPU {rank['gpu']}")
        x += _BOX
        previous = rank
    svg.set("width", str(max(_WIDTH, x)))
    return y + 70


def plan_svg(plan: Mapping[str, Any], topology: Optional[Mapping[str, Any]] = None) -> str:
    """The SVG document of one host's plan (module doc); topology: the parsed ``nvidia-smi topo -m``."""
    svg = ET.Element("svg", {"xmlns": SVG_NS, "width": str(_WIDTH), "data-host": str(plan.get("host"))})
    _text(
        svg,
        0,
        16,
        f"{plan.get('host')}: {plan.get('engine')} {plan.get('engine_version')}, "
        f"{(plan.get('model') or {}).get('repo')}",
        **{"font-size": "14"},
    )
    bottom = _layout(svg, plan, topology, _memory(svg, plan, 30))
    svg.set("height", str(bottom))
    svg.set("viewBox", f"0 0 {svg.get('width')} {bottom}")
    return ET.tostring(svg, encoding="unicode") + "\n"


def svg_numbers(document: str) -> Dict[str, Any]:
    """What a parsed SVG states (for tests and readers): per GPU its parts in GiB, the utilization line, the
    ranks and the edges."""
    root = ET.fromstring(document)
    found: Dict[str, Any] = {"gpus": {}, "utilization": None, "ranks": [], "edges": []}
    for group in root.iter(f"{{{SVG_NS}}}g"):
        kind = group.get("class")
        if kind == "gpu":
            parts = {r.get("data-part"): float(r.get("data-gib")) for r in group.iter(f"{{{SVG_NS}}}rect")}
            found["gpus"][int(group.get("data-gpu"))] = dict(parts, total=float(group.get("data-total-gib")))
            for line in group.iter(f"{{{SVG_NS}}}line"):
                found["utilization"] = float(line.get("data-utilization"))
        elif kind == "rank":
            found["ranks"].append(
                {k[5:].replace("-", "_"): int(v) for k, v in group.attrib.items() if k.startswith("data-")}
            )
        elif kind == "edge":
            found["edges"].append(
                {
                    "kind": group.get("data-kind"),
                    "from": int(group.get("data-from")),
                    "to": int(group.get("data-to")),
                    "link": group.get("data-link"),
                }
            )
    return found
