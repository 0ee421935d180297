"""plans/<host>.svg (_plan/picture.py): the picture of every example host, parsed and checked against its plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology
from ansible_collections.inferops.llm.plugins.module_utils._plan.picture import plan_svg, svg_numbers, text_bar
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown, render_table

ROOT = Path(__file__).resolve().parents[5]
GOLDEN = ROOT / "tests" / "golden" / "plans"
sys.path.insert(0, str(ROOT / "tests" / "golden"))
from generate import host_variables  # noqa: E402  (the example inventory as the golden plans read it)

HOSTS = sorted(path.stem for path in GOLDEN.glob("*.json"))


def _example(host):
    plan = json.loads((GOLDEN / f"{host}.json").read_text(encoding="utf-8"))
    text = host_variables(host).get("inferops_gpu_topology_text") or ""
    return plan, parse_topology(text) if text else {}


@pytest.mark.parametrize("host", HOSTS)
def test_the_picture_states_the_plan(host):
    plan, topology = _example(host)
    drawn = svg_numbers(plan_svg(plan, topology))
    per_gpu = plan["memory"]["per_gpu"]
    assert sorted(drawn["gpus"]) == sorted(int(g["index"]) for g in per_gpu)
    for gpu in per_gpu:
        gpu_bar = drawn["gpus"][int(gpu["index"])]
        assert gpu_bar["total"] == pytest.approx(gpu["total_gib"])
        for part in ("weights", "overhead", "kv_cache"):
            assert gpu_bar[part] == pytest.approx(gpu[f"{part}_gib"]), (part, gpu_bar)
        assert gpu_bar["free"] == pytest.approx(
            max(gpu["total_gib"] - gpu_bar["weights"] - gpu_bar["overhead"] - gpu_bar["kv_cache"], 0)
        )
    if plan["engine"] == "vllm":
        assert drawn["utilization"] == pytest.approx(plan["settings"]["gpu_memory_utilization"]["value"])
    else:
        assert drawn["utilization"] is None
    layout = plan["layout"]
    assert [r["gpu"] for r in drawn["ranks"]] == layout["gpus"]
    if plan["engine"] == "vllm":
        tp, pp = layout["tensor_parallel_size"], layout["pipeline_parallel_size"]
        groups = {}
        for rank in drawn["ranks"]:
            groups.setdefault(rank["tp_group"], []).append(rank)
        assert all(len(members) == tp for members in groups.values())
        if "cluster" not in plan:  # a node of a cluster holds some stages (test below)
            assert {r["stage"] for r in drawn["ranks"]} == set(range(pp))
        assert sum(e["kind"] == "tp" for e in drawn["edges"]) == len(groups) * (tp - 1)
    for edge in drawn["edges"]:
        expected = topology["matrix"][edge["from"]][edge["to"]] if topology else "?"
        assert edge["link"] == expected, edge


@pytest.mark.parametrize("host", HOSTS)
def test_the_console_bar_states_the_fullest_gpu(host):
    """The table's one-line bar (issue 26 part 3): 20 characters of the fullest GPU's total, each part within
    half a character of its share, and ``]`` where gpu_memory_utilization ends."""
    plan, _topology = _example(host)
    line_bar = text_bar(plan)
    (row,) = [line for line in render_table([plan]) if line_bar in line]
    assert len(row.split("|")) == len(render_table([plan])[0].split("|"))  # one cell
    label, cells = line_bar.split(" ")
    fullest = max(
        plan["memory"]["per_gpu"],
        key=lambda g: (g["weights_gib"] + g["overhead_gib"] + g["kv_cache_gib"]) / g["total_gib"],
    )
    assert label == f"GPU{fullest['index']}"
    if plan["engine"] == "vllm":
        at = cells.index("]")
        assert at / 20 == pytest.approx(plan["settings"]["gpu_memory_utilization"]["value"], abs=0.5 / 20)
        cells = cells.replace("]", "", 1)
    else:
        assert "]" not in cells
    assert len(cells) == 20 and cells == "".join(sorted(cells, key="WoK.".index)), cells
    used = 0.0
    for number, part in enumerate(("weights", "overhead", "kv_cache")):
        used += fullest[f"{part}_gib"]
        drawn = sum(cells.count(char) for char in "WoK"[: number + 1])
        assert drawn == pytest.approx(used / fullest["total_gib"] * 20, abs=0.5), (part, cells)


def test_a_host_without_a_plan_gets_no_bar():
    assert text_bar({"host": "refused", "error": "x"}) == ""


def test_nvlink_pairs_are_the_tp_groups_of_the_4x3090():
    """bf16-4x3090: TP inside each NVLink pair, the stage boundary over the PCIe host bridge."""
    plan, topology = _example("bf16-4x3090")
    edges = [(e["kind"], e["from"], e["to"], e["link"]) for e in svg_numbers(plan_svg(plan, topology))["edges"]]
    assert edges == [("tp", 0, 1, "NV4"), ("pp", 1, 2, "PHB"), ("tp", 2, 3, "NV4")]


def test_the_report_links_the_picture():
    plan, _topology = _example("desktop-5090")
    assert "(desktop-5090.svg)" in render_markdown(plan)


def test_the_nodes_of_a_cluster_hold_consecutive_ranks_and_stages():
    """ws-a and ws-b (TP4 x PP2 over two hosts): ws-a ranks 0-3 stage 0, ws-b ranks 4-7 stage 1."""
    drawn = {host: svg_numbers(plan_svg(*_example(host)))["ranks"] for host in ("ws-a", "ws-b")}
    assert [r["rank"] for r in drawn["ws-a"] + drawn["ws-b"]] == list(range(8))
    assert {r["stage"] for r in drawn["ws-a"]} == {0} and {r["stage"] for r in drawn["ws-b"]} == {1}
