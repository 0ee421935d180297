# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The layout chosen by predicted speed: every valid TP x PP x DP layout that fits, ranked for the objective.

``layout_options`` turns the layout search's candidates (TP x PP placements) and their memory budgets into
options with data-parallel replicas on the GPUs a replica leaves free, and predicts each with
``performance.py``. ``rank_options`` orders them: layouts that use every GPU given to the engine first (DP
replicas where one replica fits on fewer GPUs), then the objective's figure (``latency``: single-stream
decode; ``throughput``: aggregate decode at the concurrency the KV cache holds), then fewer GPUs per replica.
``performance_section`` is the plan's ``performance`` section: the chosen layout's figures and the three
best alternatives with why each lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    attention_bytes_per_token,
    gdn_state_bytes,
    sequences_at_length,
)
from ansible_collections.inferops.llm.plugins.module_utils._hardware.gpu_specs import GpuSpec
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import WeightsEstimate, estimate_params
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import (
    Candidate,
    LayoutSearch,
    custom_allreduce,
    pp_layer_partition,
    replica_groups,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.performance import (
    CONSTANTS,
    KvTraffic,
    Link,
    ModelTraffic,
    Predictor,
    Stage,
    Workload,
    predict,
    predict_layout,
    spec_for,
    traffic_for,
)


@dataclass
class Option:
    """One layout the engine could run: a placement, its replicas, its memory budget and predicted speed."""

    candidate: Candidate
    dp: int
    replicas: List[List[int]]  # TP groups of the replicas after the first
    budget: Mapping[str, Any]
    figures: Dict[str, Any] = field(default_factory=dict)
    slow_links: bool = False  # a TP group crosses a SYS hop or a narrow PCIe link (priced in the figures)

    @property
    def gpus(self) -> int:
        return self.candidate.tp * len(self.candidate.groups) * self.dp

    def sizes(self) -> Dict[str, int]:
        return {
            "tensor_parallel_size": self.candidate.tp,
            "pipeline_parallel_size": self.candidate.pp,
            "data_parallel_size": self.dp,
        }


def kv_traffic(budget: Mapping[str, Any]) -> KvTraffic:
    layout = budget["layout"]
    state = layout.get("gdn_state") or {}
    return KvTraffic(float(layout["attention_bytes_per_token_per_layer"]), float(state.get("page_bytes") or 0))


def _limits(budget: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, Any]:
    """What the budget and the settings bound a prediction with (predict's keyword arguments)."""
    return {
        "kv_cache_tokens": int(budget["kv_cache_tokens"]),
        "max_num_seqs": int(settings.get("max_num_seqs") or 256),
        "max_model_len": int(budget["max_model_len"]),
        "max_num_batched_tokens": int(settings.get("max_num_batched_tokens") or 2048),
        "fits_at_context": _fits_at_context(budget),
    }


def layout_figures(
    search: LayoutSearch,
    traffic: ModelTraffic,
    candidate: Candidate,
    budget: Mapping[str, Any],
    settings: Mapping[str, Any],
    workload: Workload,
    replicas: Sequence[int],
) -> Dict[int, Dict[str, Any]]:
    """The predicted figures of ``candidate`` with each count of data-parallel replicas in ``replicas``, asked
    of performance.py in one call; across nodes, the local stages repeat once per node."""
    custom = custom_allreduce(search.topo, candidate) and not settings.get("disable_custom_all_reduce")
    groups = [list(g) for g in candidate.groups] * max(1, search.nnodes)
    partition = None
    if search.nnodes == 1 and len(groups) > 1:
        memory = [min(search.topo.gpus[i].memory_mib for i in g) * len(g) for g in groups]
        if len(set(memory)) > 1:
            partition = pp_layer_partition(traffic.num_layers, memory)
    return predict_layout(
        traffic,
        search.topo,
        groups,
        candidate.tp,
        custom,
        partition,
        kv_traffic(budget),
        bool(settings.get("enforce_eager")),
        workload,
        replicas,
        **_limits(budget, settings),
    )


def figures_for(predictor: Predictor, workload: Workload, dp: int, budget: Mapping[str, Any], settings: Mapping):
    return predict(predictor, workload, replicas=dp, **_limits(budget, settings))


def _fits_at_context(budget: Mapping[str, Any]) -> Optional[Callable[[int], int]]:
    """Requests of a length the budget's KV cache blocks hold (None for a budget without its block layout)."""
    layout, blocks = budget.get("layout"), budget.get("num_blocks")
    if not isinstance(layout, Mapping) or not layout.get("groups") or blocks is None:
        return None
    return lambda tokens: sequences_at_length(layout, int(blocks), tokens)


Evaluate = Callable[[int, int], Optional[Any]]  # (tp, pp) -> evaluation with .fits, .budget, .settings.values


def layout_options(
    search: LayoutSearch,
    candidates: Sequence[Candidate],
    evaluate: Evaluate,
    traffic: ModelTraffic,
    workload: Workload,
    pinned_dp: Optional[int] = None,
) -> List[Option]:
    """Every fitting candidate with 1..n data-parallel replicas (or the pinned count), predicted."""
    options: List[Option] = []
    for candidate in candidates:
        found = evaluate(candidate.tp, candidate.pp)
        if found is None or not found.fits:
            continue
        world = candidate.tp * len(candidate.groups)
        counts = [pinned_dp] if pinned_dp else range(1, len(search.available) // world + 1)
        if search.nnodes > 1:
            counts = [1]
        placed = []
        for dp in counts:
            replicas = replica_groups(search.topo, search.available, candidate, dp)
            if replicas is None:
                continue
            groups = candidate.groups + replicas
            slow = candidate.tp > 1 and not all(search.topo.tp_eligible(g) for g in groups)
            placed.append(Option(candidate, dp, replicas, found.budget, slow_links=slow))
        if not placed:
            continue
        figures = layout_figures(
            search, traffic, candidate, found.budget, found.settings.values, workload, [o.dp for o in placed]
        )
        for option in placed:
            option.figures = figures[option.dp]
        options.extend(placed)
    return options


def objective_value(figures: Mapping[str, Any], objective: str) -> float:
    """The figure a layout is ranked by (higher is better)."""
    if objective == "throughput":
        return float(figures["aggregate_decode_tokens_per_s"])
    return float(figures["single_stream_decode_tokens_per_s"])


def rank_options(options: Sequence[Option], objective: str, engine_gpus: int) -> List[Option]:
    """Every GPU used first, then the objective's figure (higher first), then fewer GPUs per replica.

    A first option whose TP groups cross a SYS hop or a narrow link gives way to the best option without
    one when that is predicted within ``layout_tie_pct`` of it: the model does not tell such layouts apart,
    and the better-linked one has less to lose where the link costs are off."""
    # each option's figure read once: (figure, option), in the ranking's order
    scored = sorted(
        ((objective_value(o.figures, objective), o) for o in options),
        key=lambda pair: (
            pair[1].gpus != engine_gpus,
            -pair[0],
            pair[1].candidate.tp * pair[1].candidate.pp,
            pair[1].candidate.pp,
        ),
    )
    ranked = [option for _value, option in scored]
    if ranked and ranked[0].slow_links:
        tie = float(CONSTANTS["layout_tie_pct"]["value"]) / 100.0
        best = scored[0][0]
        for index, (value, option) in enumerate(scored[1:], start=1):
            if option.gpus != ranked[0].gpus and ranked[0].gpus == engine_gpus:
                break
            if value < best * (1.0 - tie):
                break
            if not option.slow_links:
                ranked.insert(0, ranked.pop(index))
                break
    return ranked


_FIGURES = (
    "single_stream_decode_tokens_per_s",
    "concurrency",
    "aggregate_decode_tokens_per_s",
    "prefill_tokens_per_s",
    "ttft_s",
)


def _why_lost(best: Option, other: Option, objective: str, engine_gpus: int) -> str:
    if other.gpus != engine_gpus and best.gpus == engine_gpus:
        idle = engine_gpus - other.gpus
        return f"leaves {idle} of the {engine_gpus} GPUs idle"
    key = "aggregate_decode_tokens_per_s" if objective == "throughput" else "single_stream_decode_tokens_per_s"
    mine, theirs = float(best.figures[key]), float(other.figures[key])
    what = "aggregate decode" if objective == "throughput" else "single-stream decode"
    if theirs > mine and best.slow_links is False and other.slow_links:
        return (
            f"predicted as fast ({theirs:g} vs {mine:g} tokens/s {what}, within the model's tie band) with TP "
            "over a SYS hop or a narrow PCIe link: the better-linked layout wins"
        )
    if theirs < mine:
        return f"{100.0 * (1 - theirs / mine):.0f}% slower {what} ({theirs:g} vs {mine:g} tokens/s)"
    return f"as fast ({theirs:g} tokens/s) on more GPUs per replica"


def alternatives(ranked: Sequence[Option], chosen: Option, objective: str, engine_gpus: int) -> List[Dict[str, Any]]:
    """The three best options other than the chosen one, with their figures and why each lost."""
    result = []
    for option in ranked:
        if option is chosen or (
            option.sizes() == chosen.sizes() and option.candidate.groups == chosen.candidate.groups
        ):
            continue
        entry: Dict[str, Any] = dict(option.sizes())
        entry["gpus"] = [i for g in option.candidate.groups for i in g] + [i for g in option.replicas for i in g]
        entry.update({k: option.figures[k] for k in _FIGURES})
        entry["reason"] = _why_lost(chosen, option, objective, engine_gpus)
        result.append(entry)
        if len(result) == 3:
            break
    return result


def performance_section(
    figures: Mapping[str, Any], alternatives_list: Sequence[Mapping[str, Any]], gpu_names: Sequence[str]
) -> Dict[str, Any]:
    """The plan's ``performance`` section (keys read downstream: keep them stable)."""
    section = dict(figures)
    section["alternatives"] = [dict(a) for a in alternatives_list]
    unknown = sorted({name for name in gpu_names if not spec_for(name)[1]})
    section["basis"] = (
        "roofline over datasheet peaks with kernel efficiencies calibrated on published measurements "
        "(docs/performance-accuracy.md)"
    )
    if unknown:
        # No invented speed (the gpu-specs-unknown finding says how to add the row): the layout is still
        # ranked on mid-range figures, which compare layouts of the same GPUs, but no figure is reported.
        section["basis"] = f"{', '.join(unknown)} not in the GPU table (gpu_specs.json): no speed predicted"
        for entry in (section, *section["alternatives"]):
            entry.update({key: None for key in SPEED_FIGURES if key in entry})
    return section


# The figures of a performance section that depend on the GPU's speed (concurrency does not).
SPEED_FIGURES = ("single_stream_decode_tokens_per_s", "aggregate_decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s")


def speed_reason(search: LayoutSearch, option: Option, objective: str, links: str) -> str:
    """Why the automatic layout was chosen, in words (``links``: layout.describe_links of its TP groups)."""
    cand = option.candidate
    if option.gpus == 1 and search.nnodes == 1 and len(search.available) == 1:
        return "fits one GPU: TP=1"
    shape = f"TP={cand.tp} PP={cand.pp}" + (f" x DP={option.dp}" if option.dp > 1 else "")
    figure = (
        f"{option.figures['aggregate_decode_tokens_per_s']:g} tokens/s aggregate decode at "
        f"{option.figures['concurrency']} sequences"
        if objective == "throughput"
        else f"{option.figures['single_stream_decode_tokens_per_s']:g} tokens/s single-stream decode"
    )
    text = f"fastest layout for {objective}: {shape} ({figure})"
    if links:
        text += f" with TP groups {links}"
    if search.nnodes > 1:
        text += f"; TP inside each node, PP across {search.nnodes} nodes"
    if option.dp > 1:
        text += f"; {option.dp} data-parallel replicas"
    return text


def _cpu_spec(bandwidth_gbps: float, tflops: Optional[float] = None) -> GpuSpec:
    host = CONSTANTS["host_memory_bandwidth_gbps"]
    return GpuSpec(
        model="CPU",
        memory_bandwidth_gbps=float(bandwidth_gbps),
        bf16_tflops=float(tflops if tflops else host["cpu_tflops"]),
        fp8_tflops=0.0,
        fp4_tflops=0.0,
        int8_tops=0.0,
        nvlink_gbps=0.0,
        boost_clock_mhz=2000.0,
        source="performance.json host_memory_bandwidth_gbps",
    )


def ollama_performance(
    served: ModelArchitecture,
    weights: WeightsEstimate,
    params: Optional[Mapping[str, int]],
    per_gpu: Sequence[Mapping[str, Any]],
    gpu_names: Mapping[int, str],
    workload: Workload,
    num_parallel: int,
    context_length: int,
    num_batch: int,
    host_bandwidth_gbps: Optional[float] = None,
    llama_cpp_date: Optional[str] = None,
) -> Dict[str, Any]:
    """The performance section of an Ollama host: llama.cpp runs its layer split one GPU after another, and
    the layers left on the CPU at the host's memory bandwidth. No alternatives: Ollama chooses its split.
    ``llama_cpp_date``: the date of the llama.cpp the release runs (its era; None: the newest)."""
    counts = dict(params) if params is not None else estimate_params(served)
    traffic = traffic_for(served, weights, counts, None, gguf=True)
    blocks = traffic.num_layers
    gpu_blocks = [int(g["layers"]) for g in per_gpu]
    output_on_gpu = sum(gpu_blocks) > blocks
    if output_on_gpu:
        gpu_blocks[-1] -= 1
    cpu_blocks = max(0, blocks - sum(gpu_blocks))
    stages: List[Stage] = []
    start = 0
    bandwidth = host_bandwidth_gbps or float(CONSTANTS["host_memory_bandwidth_gbps"]["default"])
    cpu = Stage(0, cpu_blocks, _cpu_spec(bandwidth), None, None, not output_on_gpu) if cpu_blocks else None
    start = cpu_blocks
    handoff = Link(float(CONSTANTS["pp_handoff_latency_us"]["pcie"]) * 1e-6, 24e9, "PCIe")
    for position, (gpu, count) in enumerate(zip(per_gpu, gpu_blocks)):
        last = position == len(per_gpu) - 1
        spec, _known = spec_for(gpu_names.get(int(gpu["index"]), ""))
        stages.append(Stage(start, start + count, spec, None, None if last else handoff, last and output_on_gpu))
        start += count
    if cpu is not None:
        stages.append(cpu)
    kv = KvTraffic(float(attention_bytes_per_token(served, "auto", 1)), 0.0)
    if served.is_hybrid:
        kv = KvTraffic(kv.attention_bytes_per_token, float(gdn_state_bytes(served, 1)["page_bytes"]))
    predictor = Predictor(traffic, stages, 1, kv, "llama.cpp", build_date=llama_cpp_date)
    figures = predict(
        predictor,
        workload,
        replicas=1,
        kv_cache_tokens=int(context_length) * max(1, int(num_parallel)),
        max_num_seqs=max(1, int(num_parallel)),
        max_model_len=int(context_length),
        max_num_batched_tokens=int(num_batch or 512),
    )
    if cpu_blocks:
        figures["bottleneck"] = (
            f"host memory bandwidth: {cpu_blocks} of {blocks} layers run on the CPU at about {bandwidth:g} GB/s"
        )
    return figures


def cpu_compute_tflops(cores: Optional[int]) -> Optional[float]:
    """A rough FP32 peak of the cores vLLM's CPU build computes on (performance.json ``cpu_core``): vLLM's
    default binding keeps one CPU for the API server when there are two or more; None when unknown."""
    if not cores or int(cores) < 1:
        return None
    core = CONSTANTS["cpu_core"]
    workers = int(cores) - 1 if int(cores) > 1 else 1
    return workers * float(core["clock_ghz"]) * float(core["flops_per_cycle"]) / 1000.0


def vllm_cpu_performance(
    traffic: ModelTraffic,
    kv: KvTraffic,
    workload: Workload,
    budget: Mapping[str, Any],
    settings: Mapping[str, Any],
    cores: Optional[int],
) -> Dict[str, Any]:
    """The performance section of a vLLM CPU host: one stage on the host's CPU, no TP, the memory bandwidth
    of ``inferops_host_memory_bandwidth_gbps`` (else performance.json's desktop default) and a compute roof
    from the cores when known. A rough figure: the basis says so."""
    host = CONSTANTS["host_memory_bandwidth_gbps"]
    bandwidth = workload.host_memory_bandwidth_gbps or float(host["default"])
    tflops = cpu_compute_tflops(cores)
    stage = Stage(0, traffic.num_layers, _cpu_spec(bandwidth, tflops), None, None, True)
    predictor = Predictor(traffic, [stage], 1, kv, "vllm_cpu")
    figures = figures_for(predictor, workload, 1, budget, settings)
    section = dict(figures)
    section["alternatives"] = []
    compute = (
        f"{tflops * 1000:g} GFLOPS from {cores} cores (one kept for the API server) at an assumed "
        f"{CONSTANTS['cpu_core']['clock_ghz']:g} GHz x {CONSTANTS['cpu_core']['flops_per_cycle']} FLOPs/cycle"
        if tflops
        else f"core count unknown: {float(host['cpu_tflops']):g} TFLOPS assumed"
    )
    source = (
        "inferops_host_memory_bandwidth_gbps"
        if workload.host_memory_bandwidth_gbps
        else "a desktop default (set inferops_host_memory_bandwidth_gbps)"
    )
    section["basis"] = (
        f"rough CPU roofline, not calibrated on published measurements: memory bandwidth {bandwidth:g} GB/s "
        f"from {source}, compute {compute}; first-guess efficiencies for vLLM's CPU build (performance.json "
        "vllm_cpu); the vllm role's benchmark tag measures it (docs/plan.md#speed)"
    )
    return section


MEASURED_KEYS = ("decode_tokens_per_s", "ttft_s")


def with_measured_speed(section: Mapping[str, Any], benchmark: Any) -> Dict[str, Any]:
    """The performance section with the vllm role's last benchmark (``benchmark`` of the local fact) beside
    the prediction: ``measured`` holds the figures, when and how they were taken, and measured/predicted."""
    result = dict(section)
    if not isinstance(benchmark, Mapping):
        return result
    figures = {}
    for key in MEASURED_KEYS:
        try:
            figures[key] = float(benchmark[key])
        except (KeyError, TypeError, ValueError):
            return result
    measured: Dict[str, Any] = dict(figures)
    for key in ("date", "prompt_tokens", "output_tokens", "num_prompts", "max_concurrency", "tool"):
        if benchmark.get(key) is not None:
            measured[key] = benchmark[key]
    # measured / predicted: above 1 the engine decodes faster (decode) or answers later (TTFT) than predicted.
    for ratio, key, predicted in (
        ("decode_ratio", "decode_tokens_per_s", section.get("single_stream_decode_tokens_per_s")),
        ("ttft_ratio", "ttft_s", section.get("ttft_s")),
    ):
        measured[ratio] = round(figures[key] / float(predicted), 3) if predicted else None
    result["measured"] = measured
    return result
