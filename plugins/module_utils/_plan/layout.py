# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Tensor/pipeline/data/expert parallel layout for vLLM (and the GPU set for Ollama).

Pure functions over plain data: the GPU list and ``nvidia-smi topo -m`` matrix as parsed by
``gpu_topology`` and the model's parallelism-relevant dimensions. ``layout_search`` enumerates every
valid TP x PP placement; it never calls back into the memory code: the planner loop
(``_plan/vllm_plan.py``) budgets every candidate, adds data-parallel replicas (``replica_groups``) and
ranks the options by predicted speed (``_plan/speed.py``), then builds the result with ``auto_result`` /
``explicit_result`` / ``finish_layout``. ``rank_smallest_first`` orders the candidates and is the choice
of the ``parallel_layout`` filter, which is given a memory need but has no speed model.

Why one file of about 780 lines: the topology's link classes and the placement of TP groups are used
together by every candidate; the parallel_layout filter and the planner share all of it. vLLM's divisibility
rules (``ParallelDims`` and the ``*_problems`` functions) live in ``_engines/vllm/parallelism.py``, which the
startup check shares; they are imported here, so ``from _plan.layout import ParallelDims`` still works.

Rules and their sources are listed in docs/checks.md#tensor-parallel-divisibility and in the
research notes (topology/notes.md section 2): vLLM's head/KV-head divisibility, the FP8 block rule
for MoE, custom all-reduce limits, NCCL's PCIe bandwidth model, and the vLLM parallelism guide.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ansible_collections.inferops.llm.plugins.module_utils._core.units import MIB
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.parallelism import (
    LayoutError,
    ParallelDims,
    fp8_block_split_fails,
    pipeline_parallel_problems,
    tensor_parallel_problems,
    valid_splits,
)

# GPU-to-GPU link classes of `nvidia-smi topo -m`, best first. Legacy drivers print SOC for SYS.
LINK_RANK = {"NV": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
# Worst link class a tensor-parallel group spans before it ranks behind the others: a SYS hop crosses the
# socket interconnect. A preference, not a filter: such groups are still candidates, and the speed model
# prices the hop (performance.json allreduce_latency_us.sys_extra).
TP_WORST_LINK = LINK_RANK["NODE"]
# NCCL's PCIe model (topo.cc): GB/s = lanes * per-lane speed / 80, speed in 100 Mb/s units per generation.
_PCIE_LANE_SPEED = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}
# A TP all-reduce runs at the pace of the slowest link: below Gen4 x8 (= Gen3 x16, 12 GB/s in NCCL's
# model) a GPU is a narrow/chipset link, and PCIe TP groups with it rank last (club-3090 PCIE_P2P.md 3a);
# the speed model prices the narrow link by its NCCL bandwidth.
MIN_TP_PCIE_GBPS = 12.0
# Custom all-reduce world sizes (vLLM custom_all_reduce.py _SUPPORTED_WORLD_SIZES).
CUSTOM_AR_WORLD_SIZES = (2, 4, 6, 8)


# GeForce model numbers (RTX 2060 ... 5090) when a declared name omits "GeForce".
_CONSUMER_MODEL = re.compile(r"\bRTX [2-5]0[5-9]0\b")


# ---------------------------------------------------------------------------------------------- topology


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    memory_mib: int
    pcie_gbps: Optional[float]  # None when the PCIe link is unknown (declared hardware)

    @property
    def consumer(self) -> bool:
        # GeForce cards: the stock driver refuses peer-to-peer over PCIe (topo -p2p reads GNS/CNS).
        upper = self.name.upper()
        return "GEFORCE" in upper or "TITAN" in upper or bool(_CONSUMER_MODEL.search(upper))


def _pcie_gbps(entry: Mapping[str, Any]) -> Optional[float]:
    # Idle GPUs report Gen1 as the current generation, so the generation comes from the max field; the
    # width comes from the current field when known (a x16 card in a x4 slot reports width.max 16).
    gen = entry.get("pcie_gen_max") or entry.get("pcie_gen_current")
    width = entry.get("pcie_width_current") or entry.get("pcie_width_max")
    if not gen or not width:
        return None
    speed = _PCIE_LANE_SPEED.get(int(gen))
    return None if speed is None else int(width) * speed / 80.0


def gpus_from_facts(gpus: Sequence[Mapping[str, Any]]) -> List[Gpu]:
    result = []
    for position, entry in enumerate(gpus):
        if not isinstance(entry, Mapping):
            raise LayoutError(f"GPU entry {position} must be a mapping, got {type(entry).__name__}")
        if entry.get("memory_mib") in (None, ""):
            raise LayoutError(f"GPU {entry.get('index', position)} has no memory_mib; declare it in inferops_gpus")
        result.append(
            Gpu(
                index=int(entry.get("index", position)),
                name=str(entry.get("name", "")),
                memory_mib=int(entry["memory_mib"]),
                pcie_gbps=_pcie_gbps(entry),
            )
        )
    if len({gpu.index for gpu in result}) != len(result):
        raise LayoutError("GPU indices must be unique in inferops_gpus / gpu_facts")
    return result


def link_rank(cell: str) -> Tuple[int, int]:
    """(class rank, NVLink count) for one `topo -m` cell: NV# < PIX < PXB < PHB < NODE < SYS."""
    text = str(cell).strip().upper()
    if text.startswith("NV") and text[2:].isdigit():
        return LINK_RANK["NV"], int(text[2:])
    if text == "SOC":
        text = "SYS"
    if text not in LINK_RANK:
        raise LayoutError(f"unknown topology cell {cell!r} (expected NV#, PIX, PXB, PHB, NODE, SYS)")
    return LINK_RANK[text], 0


class Topology:
    """Pairwise GPU links by GPU index, with P2P grants when `topo -p2p r` was gathered."""

    def __init__(self, gpus: Sequence[Gpu], topology: Optional[Mapping[str, Any]]):
        self.gpus = {gpu.index: gpu for gpu in gpus}
        positions = {gpu.index: pos for pos, gpu in enumerate(gpus)}
        topology = topology or {}
        matrix = topology.get("matrix")
        self.declared = bool(matrix)
        p2p = topology.get("p2p")
        self._links: Dict[Tuple[int, int], Tuple[int, int]] = {}
        self._p2p: Dict[Tuple[int, int], bool] = {}
        for a, b in itertools.permutations(self.gpus, 2):
            if matrix:
                try:
                    cell = matrix[positions[a]][positions[b]]
                except (IndexError, TypeError) as exc:
                    raise LayoutError(
                        f"topology matrix has no cell for GPU{a}/GPU{b}; it must be {len(gpus)}x{len(gpus)}"
                    ) from exc
                self._links[(a, b)] = link_rank(cell)
            else:
                # Undeclared topology: assume GPUs behind one CPU root complex, the common workstation case.
                self._links[(a, b)] = (LINK_RANK["PHB"], 0)
            if p2p:
                self._p2p[(a, b)] = str(p2p[positions[a]][positions[b]]).strip().upper() == "OK"

    def link(self, a: int, b: int) -> Tuple[int, int]:
        return self._links[(a, b)]

    def nvlinked(self, group: Sequence[int]) -> bool:
        return all(self.link(a, b)[0] == LINK_RANK["NV"] for a, b in itertools.combinations(group, 2))

    @property
    def p2p_known(self) -> bool:
        return bool(self._p2p)

    def p2p_confirmed(self, group: Sequence[int]) -> bool:
        return bool(self._p2p) and all(self._p2p[(a, b)] for a, b in itertools.permutations(group, 2))

    def narrow(self, index: int) -> bool:
        gbps = self.gpus[index].pcie_gbps
        return gbps is not None and gbps < MIN_TP_PCIE_GBPS

    def tp_eligible(self, group: Sequence[int]) -> bool:
        """Whether a TP group avoids SYS hops and narrow PCIe links (NVLink pairs are exempt). A preference:
        groups that do not are placed last, never dropped (the speed model prices their links)."""
        for a, b in itertools.combinations(group, 2):
            rank = self.link(a, b)[0]
            if rank > TP_WORST_LINK:
                return False
            if rank != LINK_RANK["NV"] and (self.narrow(a) or self.narrow(b)):
                return False
        return True

    def group_key(self, group: Sequence[int]) -> Tuple[Any, ...]:
        pairs = [self.link(a, b) for a, b in itertools.combinations(group, 2)]
        worst = max((rank for rank, _count in pairs), default=0)
        total = sum(rank for rank, _count in pairs)
        nvlinks = -sum(count for _rank, count in pairs)
        memory = [self.gpus[i].memory_mib for i in group]
        return (worst, len(set(memory)) > 1, total, nvlinks, -min(memory), tuple(sorted(group)))


# ---------------------------------------------------------------------------------------------- layout


MemoryFit = Union[Mapping[Tuple[int, int], Union[float, int, bool]], float, int, None]


@dataclass
class Candidate:
    tp: int
    pp: int
    groups: List[List[int]]  # one TP group per pipeline stage, in stage order
    expert_parallel: bool = False
    notes: List[str] = field(default_factory=list)

    @property
    def world(self) -> int:
        return self.tp * self.pp


def _place_groups(topo: Topology, available: Sequence[int], tp: int, pp: int) -> Optional[List[List[int]]]:
    """GPU groups for pp stages of tp GPUs each (None if impossible).

    Pipeline-only layouts pick all stages at once: the largest GPUs first, then the set with the best
    worst link (one NUMA node before a SYS hop), then the lowest indices. With tensor parallelism,
    greedy: the best-connected TP group (groups without SYS hops and narrow links first), then the next
    best among the rest. A placement is None only when there are too few GPUs: link rules order groups,
    they never remove a layout that fits (the speed model decides between them).
    """
    if len(available) < tp * pp:
        return None
    if tp == 1:
        best = min(itertools.combinations(available, pp), key=lambda c: _stage_set_key(topo, c))
        return [[i] for i in best]
    remaining = list(available)
    groups: List[List[int]] = []
    for _stage in range(pp):
        options = [list(g) for g in itertools.combinations(remaining, tp)]
        chosen = sorted(min(options, key=lambda g: (not topo.tp_eligible(g), topo.group_key(g))))
        groups.append(chosen)
        remaining = [i for i in remaining if i not in chosen]
    # Stage order: by lowest GPU index, which keeps neighbouring stages on neighbouring slots.
    groups.sort(key=lambda g: g[0])
    return groups


def _stage_set_key(topo: Topology, gpus: Sequence[int]) -> Tuple[Any, ...]:
    ranks = [topo.link(a, b)[0] for a, b in itertools.combinations(gpus, 2)]
    return (
        -sum(topo.gpus[i].memory_mib for i in gpus),
        sum(topo.narrow(i) for i in gpus),
        max(ranks, default=0),
        sum(ranks),
        tuple(gpus),
    )


def _fits(memory_fit: MemoryFit, topo: Topology, cand: Candidate, utilization: float) -> bool:
    """Whether the candidate fits; memory_fit maps (tp, pp) to the per-GPU need in bytes for an even split
    or a bool verdict, or is a total need in bytes spread evenly. Mixed-VRAM pipelines are split by VRAM weight."""
    if memory_fit is None:
        return True
    if isinstance(memory_fit, Mapping):
        need = memory_fit.get((cand.tp, cand.pp), False)
    else:
        need = float(memory_fit) / cand.world
    if isinstance(need, bool):
        return need
    usable = [min(topo.gpus[i].memory_mib for i in group) * MIB * utilization for group in cand.groups]
    if cand.pp > 1 and len(set(usable)) > 1:
        # VRAM-weighted stages: stage s carries need * world * usable_s / sum(usable) bytes.
        return need * cand.pp <= sum(usable)
    return need <= min(usable)


def _score(topo: Topology, cand: Candidate) -> Tuple[Any, ...]:
    """Heuristic order of placements (the parallel_layout filter keeps the first that fits; the plan ranks by
    predicted speed): TP groups over SYS hops or narrow links, and TP > 2 without full NVLink, last."""
    slow_tp = cand.tp > 1 and not all(topo.tp_eligible(g) for g in cand.groups)
    pcie_wide_tp = slow_tp or (cand.tp > 2 and not all(topo.nvlinked(g) for g in cand.groups))
    mixed_tp = any(len({topo.gpus[i].memory_mib for i in g}) > 1 for g in cand.groups)
    keys = [topo.group_key(g) for g in cand.groups] if cand.tp > 1 else [(0,)]
    return (pcie_wide_tp, mixed_tp, -cand.tp, max(keys), sum(k[0] for k in keys))


def pp_layer_partition(num_layers: int, stage_memory: Sequence[float]) -> List[int]:
    """Layers per pipeline stage in proportion to each stage's memory (largest remainder, >= 1 each)."""
    total = float(sum(stage_memory))
    shares = [num_layers * m / total for m in stage_memory]
    counts = [max(1, math.floor(s)) for s in shares]
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - math.floor(shares[i])), i))
    step = 0
    while sum(counts) < num_layers:
        counts[order[step % len(order)]] += 1
        step += 1
    while sum(counts) > num_layers:
        reducible = [i for i in range(len(counts)) if counts[i] > 1]
        biggest = max(reducible, key=lambda i: (counts[i] - shares[i], counts[i]))
        counts[biggest] -= 1
    return counts


def _candidates_for_world(
    topo: Topology, available: Sequence[int], world: int, splits: Sequence[Tuple[int, int, bool]]
) -> List[Candidate]:
    """The placements of ``world`` GPUs per node for each split vLLM accepts (parallelism.valid_splits)."""
    result = []
    for tp, pp, ep in splits:
        groups = _place_groups(topo, available, tp, world // tp)
        if groups is None:
            continue
        result.append(Candidate(tp=tp, pp=pp, groups=groups, expert_parallel=ep))
    return result


def _needs(topo: Topology, cand: Candidate) -> Tuple[Dict[str, str], List[str], List[str]]:
    """Environment, extra vLLM flags and reason fragments that this placement needs."""
    env: Dict[str, str] = {}
    flags: List[str] = []
    why: List[str] = []
    if cand.expert_parallel:
        flags.append("--enable-expert-parallel")
        why.append("experts kept whole (expert parallel): block-FP8 expert width does not split into 128s")
    if cand.tp > 1:
        nvlinked = all(topo.nvlinked(g) for g in cand.groups)
        p2p = all(topo.p2p_confirmed(g) for g in cand.groups)
        consumer = any(topo.gpus[i].consumer for g in cand.groups for i in g)
        if not nvlinked and not p2p and (consumer or topo.p2p_known):
            flags.append("--disable-custom-all-reduce")
            why.append("custom all-reduce off: no peer-to-peer between the TP GPUs")
            if consumer:
                env["NCCL_P2P_DISABLE"] = "1"
    return env, flags, why


def custom_allreduce(topo: Topology, cand: Candidate) -> bool:
    """Whether vLLM runs its custom all-reduce kernel for this placement (custom_all_reduce.py): world 2, 4, 6
    or 8, and full NVLink or (two GPUs only) working PCIe peer-to-peer; ``_needs`` turns it off otherwise."""
    if cand.tp not in CUSTOM_AR_WORLD_SIZES:
        return False
    _env, flags, _why = _needs(topo, cand)
    if "--disable-custom-all-reduce" in flags:
        return False
    if all(topo.nvlinked(g) for g in cand.groups):
        return True
    return cand.tp == 2 and not any(topo.gpus[i].consumer for g in cand.groups for i in g)


def replica_groups(topo: Topology, available: Sequence[int], cand: Candidate, dp: int) -> Optional[List[List[int]]]:
    """TP groups of ``dp - 1`` more replicas of ``cand`` on the GPUs it leaves free (None when they do not fit)."""
    used = {i for g in cand.groups for i in g}
    groups: List[List[int]] = []
    for _replica in range(dp - 1):
        free = [i for i in available if i not in used]
        placed = _place_groups(topo, free, cand.tp, len(cand.groups))
        if placed is None:
            return None
        groups += placed
        used |= {i for g in placed for i in g}
    return groups


def describe_links(topo: Topology, groups: Sequence[Sequence[int]]) -> str:
    """``GPU0+1 over NVLink, GPU2+3 over PHB``: the worst link inside each TP group."""
    return _describe_links(topo, groups)


def _describe_links(topo: Topology, groups: Sequence[Sequence[int]]) -> str:
    names = {v: k for k, v in LINK_RANK.items()}
    parts = []
    for group in groups:
        if len(group) < 2:
            continue
        worst = max(topo.link(a, b)[0] for a, b in itertools.combinations(group, 2))
        label = names[worst] if worst else "NVLink"
        parts.append(f"GPU{'+'.join(str(i) for i in group)} over {label}")
    return ", ".join(parts)


@dataclass
class LayoutSearch:
    """Every valid layout of one host for a model (the planner budgets and predicts each).

    candidates: ordered by ``ranking`` (the parallel_layout filter takes the first that fits). largest: the
    best layout of the largest world, shown when none fits. sizes_given: the inventory pins a parallel size
    (or names GPUs the host lacks): the explicit layout is then built from those sizes (``explicit_result``).
    """

    dims: ParallelDims
    topo: Topology
    available: List[int]
    requested: Dict[str, Any]
    nnodes: int
    node_rank: int
    multi_node: Optional[Mapping[str, Any]]
    sizes_given: bool
    chosen_gpus: List[int]
    candidates: List[Candidate]
    largest: Optional[Candidate]


def rank_smallest_first(topo: Topology, candidates: Sequence[Candidate]) -> List[Candidate]:
    """Today's ranking: the fewest GPUs first, then the best-linked, widest TP placement (``_score``).

    One replaceable function: the planner tries candidates in this order and keeps the first that fits.
    """
    return sorted(candidates, key=lambda cand: (cand.tp * cand.pp, _score(topo, cand)))


Ranking = Callable[[Topology, Sequence[Candidate]], List[Candidate]]


def layout_search(
    gpus: Sequence[Mapping[str, Any]],
    model: Any,
    *,
    topology: Optional[Mapping[str, Any]] = None,
    requested: Optional[Mapping[str, Any]] = None,
    multi_node: Optional[Mapping[str, Any]] = None,
    ranking: Ranking = rank_smallest_first,
) -> LayoutSearch:
    """Enumerate the valid vLLM layouts (TP x PP and GPU placement) of a host, ranked by ``ranking``.

    gpus: GPU facts (index, name, memory_mib, pcie_gen_max, pcie_width_current, ...), in the order of the
    topology matrix. model: ParallelDims, a ModelArchitecture or a mapping of the same names. topology:
    ``{"matrix": [[cell, ...], ...], "p2p": [[...]]}``. requested: inventory settings (tensor_parallel_size,
    pipeline_parallel_size, data_parallel_size, enable_expert_parallel, gpus). multi_node: ``{"nnodes": N,
    "node_rank": r, "master_addr": "10.0.0.1"}``: TP inside the node, PP across nodes.
    """
    gpu_list = gpus_from_facts(gpus)
    if not gpu_list:
        raise LayoutError("no GPUs: gather gpu_facts or declare inferops_gpus")
    topo = Topology(gpu_list, topology)
    requested = dict(requested or {})
    available = [gpu.index for gpu in gpu_list]
    dims = model if isinstance(model, ParallelDims) else ParallelDims.from_model(model)
    nnodes = int((multi_node or {}).get("nnodes") or 1)
    node_rank = int((multi_node or {}).get("node_rank") or 0)
    if nnodes < 1 or not 0 <= node_rank < nnodes:
        raise LayoutError(f"node_rank {node_rank} is outside 0..{nnodes - 1}; fix inferops_vllm_nodes")
    sizes = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel")
    sizes_given = any(requested.get(k) not in (None, "") for k in sizes)
    chosen_gpus = [int(i) for i in requested.get("gpus") or []]
    if chosen_gpus and not set(chosen_gpus) <= set(available):
        sizes_given = True  # the explicit path reports the unknown GPUs with the other problems
    elif chosen_gpus and not sizes_given:
        # Only the GPU set is pinned: choose the layout among those GPUs.
        available = [i for i in available if i in chosen_gpus]
    splits = {world: valid_splits(dims, world, nnodes) for world in range(1, len(available) + 1)}
    options: List[Candidate] = []
    largest: Optional[Candidate] = None
    for world in range(1, len(available) + 1):
        found = _candidates_for_world(topo, available, world, splits[world])
        if found:
            largest = min(found, key=lambda c: _score(topo, c))
        options += found
    return LayoutSearch(
        dims=dims,
        topo=topo,
        available=available,
        requested=requested,
        nnodes=nnodes,
        node_rank=node_rank,
        multi_node=multi_node,
        sizes_given=sizes_given,
        chosen_gpus=chosen_gpus,
        candidates=ranking(topo, options),
        largest=largest,
    )


def auto_result(search: LayoutSearch, fitting: Optional[Candidate]) -> Dict[str, Any]:
    """The automatic layout: the first ranked candidate that fits, or the largest one (``fits`` False)."""
    source = {k: "chosen" for k in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")}
    if search.chosen_gpus and not search.sizes_given:
        source["gpus"] = "inventory"
    if fitting is not None:
        return {
            "candidate": fitting,
            "data_parallel_size": 1,
            "fits": True,
            "reason": _reason(search.topo, fitting, len(search.available), search.nnodes),
            "source": source,
        }
    largest = search.largest or Candidate(tp=1, pp=search.nnodes, groups=[[search.available[0]]])
    return {
        "candidate": largest,
        "data_parallel_size": 1,
        "fits": False,
        "reason": f"does not fit on {len(search.available)} GPU(s) x {search.nnodes} node(s) in any valid layout; "
        f"showing TP={largest.tp} PP={largest.pp}",
        "source": source,
    }


def finish_layout(search: LayoutSearch, result: Mapping[str, Any]) -> Dict[str, Any]:
    """The layout as plain data: tensor_parallel_size, pipeline_parallel_size, data_parallel_size,
    expert_parallel, gpus (rank order: CUDA_VISIBLE_DEVICES), tp_groups, env, flags, fits, reason,
    source (inventory|chosen per size) and problems ({variable, message, suggested})."""
    topo, nnodes, multi_node = search.topo, search.nnodes, search.multi_node
    cand: Candidate = result["candidate"]
    dp = result["data_parallel_size"]
    env, flags, why = _needs(topo, cand)
    order = [i for g in cand.groups for i in g] + [i for g in result.get("replica_groups", []) for i in g]
    env = dict(_ENV_BASE, CUDA_VISIBLE_DEVICES=",".join(str(i) for i in order), **env)
    pp_local = cand.pp // nnodes
    stage_memory = [min(topo.gpus[i].memory_mib for i in g) * len(g) for g in cand.groups]
    if pp_local > 1 and len(set(stage_memory)) > 1 and nnodes == 1:
        partition = pp_layer_partition(search.dims.num_hidden_layers, stage_memory)
        env["VLLM_PP_LAYER_PARTITION"] = ",".join(str(n) for n in partition)
        why.append(f"layers split by VRAM {env['VLLM_PP_LAYER_PARTITION']}")
    if nnodes > 1 and (multi_node or {}).get("launcher", "mp") == "mp":
        # vLLM's own multi-node launcher; with Ray the head starts every rank itself.
        flags += ["--nnodes", str(nnodes), "--node-rank", str(search.node_rank)]
        if (multi_node or {}).get("master_addr"):
            flags += ["--master-addr", str(multi_node["master_addr"])]
        if (multi_node or {}).get("master_port"):
            flags += ["--master-port", str(multi_node["master_port"])]
        if search.node_rank > 0:
            flags.append("--headless")
    reason = result["reason"]
    if why:
        reason = f"{reason}; {'; '.join(why)}"
    return {
        "tensor_parallel_size": cand.tp,
        "pipeline_parallel_size": cand.pp,
        "data_parallel_size": dp,
        "expert_parallel": cand.expert_parallel,
        "gpus": order,
        "tp_groups": [list(g) for g in cand.groups] + [list(g) for g in result.get("replica_groups", [])],
        "env": env,
        "flags": flags,
        "fits": result["fits"],
        "reason": reason,
        "source": result["source"],
        "problems": result.get("problems", []),
    }


_ENV_BASE = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}  # CUDA's default order is fastest-first, not nvidia-smi's


def ollama_layout(gpus: Sequence[Mapping[str, Any]], requested: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Ollama's GPU set: every GPU it may see (``ollama_gpus``); it splits layers over them itself."""
    gpu_list = gpus_from_facts(gpus)
    if not gpu_list:
        raise LayoutError("no GPUs: gather gpu_facts or declare inferops_gpus")
    available = [gpu.index for gpu in gpu_list]
    requested = dict(requested or {})
    chosen = [int(i) for i in requested.get("gpus") or available]
    unknown = sorted(set(chosen) - set(available))
    problems = []
    if unknown:
        problems.append(
            {
                "variable": "ollama_gpus",
                "message": f"GPUs {unknown} are not on this host (it has {available})",
                "suggested": available,
            }
        )
    visible = [i for i in chosen if i in available]
    return {
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "data_parallel_size": 1,
        "expert_parallel": False,
        "gpus": visible,
        "tp_groups": [[i] for i in visible],
        "env": dict(_ENV_BASE, CUDA_VISIBLE_DEVICES=",".join(str(i) for i in visible)),
        "flags": [],
        "fits": True,
        "reason": f"Ollama splits layers over the GPUs it sees: {','.join(str(i) for i in visible)}",
        "source": {"gpus": "inventory" if requested.get("gpus") else "chosen"},
        "problems": problems,
    }


def select_layout(
    gpus: Sequence[Mapping[str, Any]],
    model: Any,
    *,
    topology: Optional[Mapping[str, Any]] = None,
    memory_fit: MemoryFit = None,
    gpu_memory_utilization: float = 0.9,
    engine: str = "vllm",
    requested: Optional[Mapping[str, Any]] = None,
    replicas: bool = False,
    multi_node: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Pick the layout for one host from a memory need given as data (the parallel_layout filter).

    memory_fit: the total bytes the model needs (spread evenly), or a mapping ``(tp, pp)`` -> per-GPU
    bytes needed (or a bool verdict), or None (everything fits). The plan does not use this: its planner
    loop budgets each ranked candidate of ``layout_search`` itself. replicas: one replica per free slot
    (data parallel) when the model fits fewer GPUs than the host has. Other arguments as ``layout_search``.
    """
    if engine == "ollama":
        return ollama_layout(gpus, requested)
    search = layout_search(gpus, model, topology=topology, requested=requested, multi_node=multi_node)
    fitting = next((c for c in search.candidates if _fits(memory_fit, search.topo, c, gpu_memory_utilization)), None)
    auto = auto_result(search, fitting)
    if search.sizes_given:
        result = explicit_result(search, auto["candidate"])
        result["fits"] = result["fits"] and _fits(memory_fit, search.topo, result["candidate"], gpu_memory_utilization)
    else:
        result = auto
        if replicas and search.nnodes == 1:
            _add_replicas(search.topo, search.available, result, memory_fit, gpu_memory_utilization)
    return finish_layout(search, result)


def _reason(topo: Topology, cand: Candidate, host_gpus: int, nnodes: int) -> str:
    world = cand.tp * (cand.pp // nnodes)
    if world == 1 and nnodes == 1:
        return "fits one GPU: TP=1" + (f" (GPU{cand.groups[0][0]})" if host_gpus > 1 else "")
    text = f"smallest layout that fits: TP={cand.tp} PP={cand.pp}"
    links = _describe_links(topo, cand.groups)
    if links:
        text += f" with TP groups {links}"
    if nnodes > 1:
        text += f"; TP inside each node, PP across {nnodes} nodes"
    elif cand.tp == 1 and cand.pp > 1:
        text += "; no TP group with a fast enough link, or head counts do not split"
    return text


def _add_replicas(
    topo: Topology, available: Sequence[int], result: Dict[str, Any], memory_fit: MemoryFit, utilization: float
) -> None:
    """One more replica of the same shape on every free set of GPUs that can hold it."""
    cand: Candidate = result["candidate"]
    used = {i for g in cand.groups for i in g}
    replica_groups: List[List[int]] = []
    while True:
        free = [i for i in available if i not in used]
        groups = _place_groups(topo, free, cand.tp, cand.pp)
        if groups is None:
            break
        replica = Candidate(tp=cand.tp, pp=cand.pp, groups=groups, expert_parallel=cand.expert_parallel)
        if not _fits(memory_fit, topo, replica, utilization):
            break
        replica_groups += groups
        used |= {i for g in groups for i in g}
    if replica_groups:
        result["data_parallel_size"] = 1 + len(replica_groups) // cand.pp
        result["replica_groups"] = replica_groups
        result["reason"] += f"; {result['data_parallel_size']} data-parallel replicas (one per free GPU set)"


def constrained_candidates(search: LayoutSearch) -> List[Candidate]:
    """The ranked candidates that keep every parallel size the inventory pins (a pinned TP fixes TP and the
    search chooses the rest, within the host's GPUs)."""
    pinned = {
        "tp": search.requested.get("tensor_parallel_size"),
        "pp": search.requested.get("pipeline_parallel_size"),
    }
    return [
        cand
        for cand in search.candidates
        if all(value in (None, "") or int(value) == getattr(cand, name) for name, value in pinned.items())
    ]


def _size_problems(
    dims: ParallelDims, tp: int, pp: int, ep: bool, nnodes: int, auto_cand: Candidate
) -> List[Dict[str, Any]]:
    """What vLLM refuses in the inventory's TP and PP sizes, each with the automatic choice's size to use."""
    problems: List[Dict[str, Any]] = []
    for message in tensor_parallel_problems(dims, tp, expert_parallel=ep):
        suggested: Any = auto_cand.tp
        variable = "vllm_tensor_parallel_size"
        if "block-FP8" in message:
            variable, suggested = "vllm_enable_expert_parallel", True
        problems.append(
            {"variable": variable, "message": f"tensor_parallel_size {tp}: {message}", "suggested": suggested}
        )
    for message in pipeline_parallel_problems(dims, pp):
        problems.append(
            {
                "variable": "vllm_pipeline_parallel_size",
                "message": f"pipeline_parallel_size {pp}: {message}",
                "suggested": auto_cand.pp,
            }
        )
    if nnodes > 1 and pp % nnodes:
        problems.append(
            {
                "variable": "vllm_pipeline_parallel_size",
                "message": f"pipeline_parallel_size {pp} is not a multiple of the {nnodes} nodes (PP spans nodes)",
                "suggested": auto_cand.pp,
            }
        )
    return problems


def _inventory_groups(
    topo: Topology,
    available: Sequence[int],
    chosen_gpus: Sequence[int],
    sizes: Tuple[int, int, int, int],
    auto_cand: Candidate,
    problems: List[Dict[str, Any]],
) -> Tuple[List[List[int]], List[List[int]]]:
    """(TP groups, replica groups) of the inventory's sizes (TP, PP on this node, DP, the GPUs they need): on
    the GPUs vllm_gpus names, else placed on the host's; what does not fit is added to ``problems``."""
    tp, pp_local, dp, needed = sizes
    if chosen_gpus:
        unknown = sorted(set(chosen_gpus) - set(available))
        if unknown or len(chosen_gpus) != needed:
            problems.append(
                {
                    "variable": "vllm_gpus",
                    "message": f"vllm_gpus {chosen_gpus} must name {needed} GPUs of this host {available} "
                    f"(TP {tp} x PP {pp_local} x DP {dp})",
                    "suggested": [i for g in auto_cand.groups for i in g],
                }
            )
        ordered = [i for i in chosen_gpus if i in available]
        groups = [ordered[k : k + tp] for k in range(0, tp * pp_local, tp)] or [[available[0]]]
        groups = [g for g in groups if g] or [[available[0]]]
        replica_groups = [ordered[k : k + tp] for k in range(tp * pp_local, len(ordered), tp)]
    else:
        replica_groups = []
        groups = None
        if needed <= len(available):
            groups = _place_groups(topo, available, tp, pp_local) or [
                available[k : k + tp] for k in range(0, tp * pp_local, tp)
            ]
            if tp > 1 and not all(topo.tp_eligible(g) for g in groups):
                problems.append(
                    {
                        "variable": "vllm_tensor_parallel_size",
                        "message": f"no group of {tp} GPUs on this host avoids SYS hops and narrow PCIe links; "
                        "tensor-parallel all-reduce will run at the slowest link",
                        "suggested": auto_cand.tp,
                        "severity": "warning",
                    }
                )
            if dp > 1:
                free = [i for i in available if i not in {x for g in groups for x in g}]
                replica_groups = _place_groups(topo, free, tp, pp_local * (dp - 1)) or [
                    free[k : k + tp] for k in range(0, len(free), tp)
                ]
        elif dp > 1 and tp * pp_local <= len(available):
            # One replica fits: the data-parallel size asks for more replicas than the host has GPUs for.
            problems.append(
                {
                    "variable": "vllm_data_parallel_size",
                    "message": f"TP {tp} x PP {pp_local} x DP {dp} = {needed} GPUs per node, this host has "
                    f"{len(available)} GPU(s)",
                    "suggested": max(1, len(available) // (tp * pp_local)),
                }
            )
            groups = [available[k : k + tp] for k in range(0, tp * pp_local, tp)]
        else:
            problems.append(
                {
                    "variable": "vllm_tensor_parallel_size"
                    if tp > len(available) or pp_local == 1
                    else "vllm_pipeline_parallel_size",
                    "message": f"TP {tp} x PP {pp_local} x DP {dp} = {needed} GPUs per node, this host has "
                    f"{len(available)} GPU(s)",
                    "suggested": auto_cand.tp if tp > len(available) or pp_local == 1 else auto_cand.pp,
                }
            )
            groups = [available[k : k + tp] for k in range(0, len(available), tp)][:pp_local] or [[available[0]]]
    return groups, replica_groups


def explicit_result(
    search: LayoutSearch, auto_cand: Candidate, fill: Optional[Candidate] = None, fill_dp: int = 1
) -> Dict[str, Any]:
    """The inventory's layout with the problems it has; the sizes it leaves unset come from ``fill`` (the best
    candidate that keeps the pinned sizes), else from ``auto_cand`` (the automatic choice).

    ``fits`` says only whether the host has the GPUs; the caller adds the memory verdict of the candidate.
    """
    dims, topo, available, requested, nnodes = (
        search.dims,
        search.topo,
        search.available,
        search.requested,
        search.nnodes,
    )
    # Sizes the inventory left unset come from the best candidate that keeps the pinned ones.
    fill = fill or auto_cand
    tp = int(requested.get("tensor_parallel_size") or fill.tp)
    pp = int(requested.get("pipeline_parallel_size") or fill.pp)
    dp = int(requested.get("data_parallel_size") or fill_dp)
    ep_requested = requested.get("enable_expert_parallel")
    ep = bool(ep_requested) if ep_requested not in (None, "") else fp8_block_split_fails(dims, tp)
    source = {
        name: "inventory" if requested.get(name) not in (None, "") else "chosen"
        for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
    }
    problems = _size_problems(dims, tp, pp, ep, nnodes, auto_cand)
    pp_local = max(1, pp // nnodes)
    needed = tp * pp_local * (dp if nnodes == 1 else 1)
    chosen_gpus = [int(i) for i in requested.get("gpus") or []]
    groups, replica_groups = _inventory_groups(
        topo, available, chosen_gpus, (tp, pp_local, dp, needed), auto_cand, problems
    )
    cand = Candidate(tp=tp, pp=pp, groups=groups, expert_parallel=ep)
    fits = needed <= len(available)
    reason = f"inventory layout TP={tp} PP={pp} DP={dp}"
    links = _describe_links(topo, groups)
    if links:
        reason += f" with TP groups {links}"
    if (tp, pp) != (auto_cand.tp, auto_cand.pp):
        reason += f" (automatic choice would be TP={auto_cand.tp} PP={auto_cand.pp})"
    return {
        "candidate": cand,
        "data_parallel_size": dp,
        "replica_groups": replica_groups,
        "fits": fits,
        "reason": reason,
        "source": source,
        "problems": problems,
    }
