# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Predicted speed of a model on a layout: decode tokens/s (one sequence and N at once), prefill and TTFT.

A first-principles roofline, per pipeline stage and decode step:

* bytes read per step = the weights the step touches (attention and dense/shared MLP always; of the routed
  experts the share that N sequences touch, ``1 - (1 - k/E)^N`` per layer; the LM head on the last stage)
  / TP + per sequence the KV cache read at the context (full-attention layers: every token; sliding
  window: the window; Gated-DeltaNet: the state read and written) on one rank;
* time = max(bytes / (peak bandwidth x kernel efficiency), FLOPs / (peak tensor throughput x efficiency))
  + 2 all-reduces per layer over the TP group's link (latency + ring volume / link bandwidth) + a fixed
  cost per layer (norms, launches) + a fixed cost per engine step;
* pipeline stages run one after another for one sequence (the pipeline bubble: PP adds memory, not
  single-stream speed), with a hand-off of one activation between stages; with N sequences vLLM keeps PP
  micro-batches in flight, so a cycle takes PP x the slowest stage; data-parallel replicas add up.

Prefill: chunks of ``max_num_batched_tokens`` at the tensor-throughput roof (2 FLOPs per active parameter
per token plus the attention over the prompt so far), all-reduces of the chunk's activations at the link's
bandwidth; chunks overlap across pipeline stages. TTFT = prefill of the prompt + one decode step.

Peak figures per GPU model come from ``_hardware/gpu_specs.json`` (datasheets); the efficiencies and
latencies from ``performance.json`` beside this file, calibrated on the published measurements in
tests/unit/fixtures/performance/records.yml (docs/performance-accuracy.md). Plain data in, plain data out.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import pp_layer_bounds
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import step_costs
from ansible_collections.inferops.llm.plugins.module_utils._hardware.gpu_specs import GpuSpec, gpu_spec
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import (
    LAYER_LINEAR,
    LAYER_SLIDING,
    ModelArchitecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import WeightsEstimate

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "performance.json"), encoding="utf-8") as _handle:
    CONSTANTS: Dict[str, Any] = json.load(_handle)

OBJECTIVES = ("latency", "throughput")
DEFAULT_OBJECTIVE = "latency"  # one agent or a few users waiting on each answer: the homelab case
DEFAULT_PROMPT_TOKENS = 4096
DEFAULT_CONTEXT_TOKENS = 8192

# Weight formats as the kernels see them: the quantization scheme -> (format, GEMM precision).
_FORMATS = {
    None: ("bf16", "bf16"),
    "bf16": ("bf16", "bf16"),
    "fp8": ("fp8", "fp8"),
    "fp8_block": ("fp8", "fp8"),
    "awq_int4": ("int4", "bf16"),
    "gptq_int4": ("int4", "bf16"),
    "int4": ("int4", "bf16"),
    "bnb_int4": ("int4", "bf16"),
    "gptq_int8": ("int8", "bf16"),
    "int8": ("int8", "bf16"),
    "bnb_int8": ("int8", "bf16"),
    "nvfp4": ("nvfp4", "fp4"),
    "mxfp4": ("mxfp4", "fp4"),
}


def weight_format(scheme: Optional[str], gguf: bool = False) -> Tuple[str, str]:
    """(kernel format, GEMM input precision) of a quantization scheme; GGUF files are their own format."""
    if gguf:
        return "gguf", "int8"
    return _FORMATS.get(scheme, ("bf16", "bf16"))


@dataclass(frozen=True)
class Workload:
    """What the prediction is for: the objective, the context at which decode runs, the prompt length."""

    objective: str = DEFAULT_OBJECTIVE
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    host_memory_bandwidth_gbps: Optional[float] = None  # where layers run on the CPU (Ollama offload)


@dataclass(frozen=True)
class ModelTraffic:
    """Bytes and FLOPs of one token through each decoder layer (whole model, before TP)."""

    layer_kinds: Tuple[str, ...]
    layer_bytes: Tuple[float, ...]  # always read per step (attention/GDN projections, dense or shared MLP)
    expert_bytes: Tuple[float, ...]  # all routed experts of the layer (0 for dense layers)
    layer_flops: Tuple[float, ...]  # 2 x parameters one token uses (routed experts: the top-k)
    head_bytes: float  # LM head (the embedding when tied), read once per step
    head_flops: float
    num_experts: int
    experts_per_tok: int
    hidden_size: int
    attention_width: int  # heads x head_dim (attention FLOPs per token and context token: 4 x this)
    sliding_window: Optional[int]
    kernel_format: str
    precision: str
    layer_kernels: Tuple[int, ...] = ()  # dense weight matrices (GEMV kernels) per layer: gemv_kernel.kernels
    moe_layers: Tuple[bool, ...] = ()  # layers with routed experts (vLLM's routing kernels: moe_routing)

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)


def model_traffic(
    arch: ModelArchitecture,
    components: Mapping[str, int],
    params: Mapping[str, int],
    kernel_format: str,
    precision: str,
) -> ModelTraffic:
    """Per-layer traffic from the weights' components (bytes as loaded) and the parameter counts."""
    kinds = tuple(arch.layer_types)
    linear = sum(1 for k in kinds if k == LAYER_LINEAR) or 1
    attention = sum(1 for k in kinds if k != LAYER_LINEAR) or 1
    moe_layers = [arch.is_moe and i >= arch.first_k_dense_replace for i in range(len(kinds))]
    n_moe = sum(moe_layers) or 1
    n = len(kinds) or 1

    def per_layer(values: Mapping[str, int], index: int, kind: str) -> Tuple[float, float]:
        own = (
            values.get("linear_attn_linear", 0) / linear
            if kind == LAYER_LINEAR
            else values.get("attn_linear", 0) / attention
        )
        shared = (values.get("dense_or_shared_mlp", 0) + values.get("router", 0) + values.get("small_other", 0)) / n
        experts = values.get("experts", 0) / n_moe if moe_layers[index] else 0.0
        return own + shared, experts

    layer_bytes, expert_bytes, layer_flops = [], [], []
    share = (arch.num_experts_per_tok / arch.num_experts) if arch.is_moe and arch.num_experts else 0.0
    for index, kind in enumerate(kinds):
        always, experts = per_layer(components, index, kind)
        layer_bytes.append(always)
        expert_bytes.append(experts)
        p_always, p_experts = per_layer(params, index, kind)
        layer_flops.append(2.0 * (p_always + p_experts * share))
    head = components.get("lm_head", 0) or components.get("embed", 0)
    head_params = params.get("lm_head", 0) or params.get("embed", 0)
    count = CONSTANTS["gemv_kernel"]["kernels"]
    shared = bool(arch.num_shared_experts or arch.shared_expert_intermediate_size)
    layer_kernels = tuple(
        count["attention"]
        + (count["experts"] + (count["shared_experts"] if shared else 0) if moe_layers[i] else count["mlp"])
        for i in range(len(kinds))
    )
    return ModelTraffic(
        layer_kinds=kinds,
        layer_bytes=tuple(layer_bytes),
        expert_bytes=tuple(expert_bytes),
        layer_flops=tuple(layer_flops),
        head_bytes=float(head),
        head_flops=2.0 * head_params,
        num_experts=arch.num_experts,
        experts_per_tok=arch.num_experts_per_tok,
        hidden_size=arch.hidden_size,
        attention_width=arch.num_attention_heads * arch.head_dim,
        sliding_window=arch.sliding_window,
        kernel_format=kernel_format,
        precision=precision,
        layer_kernels=layer_kernels,
        moe_layers=tuple(bool(x) for x in moe_layers),
    )


def traffic_for(
    served: ModelArchitecture,
    weights: WeightsEstimate,
    counts: Mapping[str, int],
    scheme: Optional[str],
    gguf: bool = False,
) -> ModelTraffic:
    """The model's per-layer traffic from the weights the engine loads (components in bytes), the parameter
    counts (the catalogue's, else weights.estimate_params of the served architecture) and the quantization
    scheme the weights are stored in."""
    kernel, precision = weight_format(scheme, gguf=gguf)
    return model_traffic(served, weights.components, dict(counts), kernel, precision)


@dataclass(frozen=True)
class Link:
    """One collective path: per-call latency (s) and bandwidth (bytes/s); ``label`` for the report."""

    latency_s: float
    bandwidth: float
    label: str
    hop_s: float = 0.0  # per extra ring step beyond two ranks (NCCL; 0 for vLLM's one-shot custom all-reduce)


@dataclass(frozen=True)
class Stage:
    """One pipeline stage of one replica: its layers, its GPUs' spec and the TP group's link."""

    start: int
    end: int
    spec: GpuSpec
    tp_link: Optional[Link]
    handoff: Optional[Link]  # to the next stage (None on the last)
    last: bool


_UNKNOWN = GpuSpec(
    model="unknown",
    memory_bandwidth_gbps=float(CONSTANTS["unknown_gpu"]["memory_bandwidth_gbps"]),
    bf16_tflops=float(CONSTANTS["unknown_gpu"]["bf16_tflops"]),
    fp8_tflops=0.0,
    fp4_tflops=0.0,
    int8_tops=0.0,
    nvlink_gbps=0.0,
    boost_clock_mhz=float(CONSTANTS["unknown_gpu"]["boost_clock_mhz"]),
    source="performance.json unknown_gpu",
)


def spec_for(name: str) -> Tuple[GpuSpec, bool]:
    """(spec, known) for a GPU name; unknown models get the mid-range figures of performance.json."""
    spec = gpu_spec(name)
    return (spec, True) if spec is not None else (_UNKNOWN, False)


def _pcie_bandwidth(topo: Any, group: Sequence[int]) -> float:
    known = [topo.gpus[i].pcie_gbps for i in group if topo.gpus[i].pcie_gbps]
    return (min(known) if known else float(CONSTANTS["unknown_pcie_gbps"])) * 1e9


def tp_link(topo: Any, group: Sequence[int], custom_allreduce: bool) -> Optional[Link]:
    """The all-reduce path of a TP group: NVLink when every pair is bridged, else PCIe with or without P2P."""
    if len(group) < 2:
        return None
    latency = CONSTANTS["allreduce_latency_us"]
    worst = max(topo.link(a, b)[0] for a, b in itertools.combinations(group, 2))
    if topo.nvlinked(group):
        spec, _known = spec_for(topo.gpus[group[0]].name)
        count = min(topo.link(a, b)[1] for a, b in itertools.combinations(group, 2))
        gbps = spec.nvlink_gbps or 25.0 * count
        key = "nvlink_custom" if custom_allreduce else "nvlink"
        hop = 0.0 if custom_allreduce else CONSTANTS["allreduce_hop_us"]["nvlink"] * 1e-6
        return Link(latency[key] * 1e-6, gbps * 1e9, "NVLink", hop)
    consumer = any(topo.gpus[i].consumer for i in group)
    p2p = topo.p2p_confirmed(group) if topo.p2p_known else not consumer
    bandwidth = _pcie_bandwidth(topo, group)
    extra = latency["sys_extra"] if worst >= 5 else 0.0
    names = {0: "NVLink", 1: "PIX", 2: "PXB", 3: "PHB", 4: "NODE", 5: "SYS"}
    hop = CONSTANTS["allreduce_hop_us"]["pcie"] * 1e-6
    if p2p:
        key = "pcie_p2p_custom" if custom_allreduce else "pcie_p2p"
        return Link((latency[key] + extra) * 1e-6, bandwidth, f"PCIe {names[worst]}", 0.0 if custom_allreduce else hop)
    factor = float(CONSTANTS["no_p2p_bandwidth_factor"])
    hop = CONSTANTS["allreduce_hop_us"]["pcie_no_p2p"] * 1e-6  # a ring step through host memory
    return Link((latency["pcie_no_p2p"] + extra) * 1e-6, bandwidth * factor, f"PCIe {names[worst]} without P2P", hop)


def handoff_link(topo: Any, a: int, b: int) -> Link:
    latency = CONSTANTS["pp_handoff_latency_us"]
    if a == b:
        # Consecutive stages on the same local GPU index: the next node's GPU (one GPU per node in a
        # multi-node layout). The network between nodes is not modelled; priced like the other node
        # boundaries (PCIe class) instead of failing on the missing (a, a) link.
        return Link(latency["pcie"] * 1e-6, _pcie_bandwidth(topo, [a]), "PCIe")
    if topo.link(a, b)[0] == 0:
        spec, _known = spec_for(topo.gpus[a].name)
        return Link(latency["nvlink"] * 1e-6, (spec.nvlink_gbps or 25.0) * 1e9, "NVLink")
    return Link(latency["pcie"] * 1e-6, _pcie_bandwidth(topo, [a, b]), "PCIe")


def pp_bounds(num_layers: int, pp: int, partition: Optional[Sequence[int]] = None) -> List[Tuple[int, int]]:
    """Layer ranges per stage: VLLM_PP_LAYER_PARTITION when set, else vLLM's own split (the budget's)."""
    if not partition:
        return pp_layer_bounds(num_layers, pp)
    bounds, start = [], 0
    for count in partition:
        bounds.append((start, start + int(count)))
        start += int(count)
    return bounds


def stages_of(
    topo: Any, groups: Sequence[Sequence[int]], num_layers: int, custom_allreduce: bool, partition=None
) -> List[Stage]:
    """The stages of one replica from its TP groups in stage order."""
    result = []
    bounds = pp_bounds(num_layers, len(groups), partition)
    for position, (group, (start, end)) in enumerate(zip(groups, bounds)):
        slowest = min(
            (spec_for(topo.gpus[i].name)[0] for i in group), key=lambda s: (s.memory_bandwidth_gbps, s.bf16_tflops)
        )
        last = position == len(groups) - 1
        result.append(
            Stage(
                start=start,
                end=end,
                spec=slowest,
                tp_link=tp_link(topo, group, custom_allreduce),
                handoff=None if last else handoff_link(topo, group[-1], groups[position + 1][0]),
                last=last,
            )
        )
    return result


@dataclass(frozen=True)
class KvTraffic:
    """KV-cache bytes one rank reads per token of context and layer, and the recurrent state per layer."""

    attention_bytes_per_token: float  # per full/sliding attention layer on one rank
    state_bytes: float  # Gated-DeltaNet conv + SSM state per layer on one rank (read and written)


def experts_touched_share(num_experts: int, experts_per_tok: int, sequences: float) -> float:
    """Share of a layer's routed experts that ``sequences`` tokens touch (uniform routing)."""
    if not num_experts:
        return 0.0
    return 1.0 - (1.0 - experts_per_tok / num_experts) ** max(1.0, sequences)


def _touched(traffic: ModelTraffic, sequences: float) -> float:
    return experts_touched_share(traffic.num_experts, traffic.experts_per_tok, sequences)


def allreduce_seconds(link: Optional[Link], tp: int, message_bytes: float) -> float:
    """One all-reduce of ``message_bytes`` over a TP group of ``tp`` ranks on ``link`` (0 without one)."""
    if link is None or tp < 2:
        return 0.0
    hops = 2 * (tp - 1) - 2  # ring steps beyond the two of a two-rank all-reduce (in latency_s)
    return link.latency_s + hops * link.hop_s + 2.0 * (tp - 1) / tp * message_bytes / link.bandwidth


@dataclass
class StepTime:
    """One stage's time for one step, split by cause (seconds)."""

    memory: float
    compute: float
    allreduce: float
    fixed: float

    @property
    def total(self) -> float:
        return max(self.memory, self.compute) + self.allreduce + self.fixed


def _moe_small_kernels_us(kernel_format: str, enforce_eager: bool) -> float:
    """Microseconds (at moe_routing.clock_mhz) of a MoE layer's small kernels: top-k, align, activation, sum,
    and for FP8 the activation quantization before each expert GEMM."""
    routing = CONSTANTS["moe_routing"]
    count = int(routing["small_kernels"]) + (int(routing["fp8_small_kernels"]) if kernel_format == "fp8" else 0)
    return count * float(routing["small_kernel_us"]["eager" if enforce_eager else "cudagraph"])


def _moe_routing_seconds(engine: str, enforce_eager: bool, kernel_format: str) -> float:
    """Seconds per MoE layer and decode step of vLLM's routing kernels at moe_routing.clock_mhz (0 for
    the other engines: llama.cpp's per-layer overhead is fitted with its MoE kernels in it)."""
    if engine != "vllm":
        return 0.0
    routing = CONSTANTS["moe_routing"]
    router = float(CONSTANTS["gemv_kernel"]["latency_us"]) * float(CONSTANTS["gemv_kernel"]["clock_mhz"])
    router /= float(routing["clock_mhz"])
    return (int(routing["router_kernels"]) * router + _moe_small_kernels_us(kernel_format, enforce_eager)) * 1e-6


def expert_tile_bytes(experts_touched: float) -> float:
    """Bytes-equivalent of the per-expert tile cost of both fused expert GEMMs on one rank (moe_routing)."""
    return 2.0 * experts_touched * float(CONSTANTS["moe_routing"]["expert_tile_bytes"])


def fused_moe_seconds(spec: GpuSpec, kernel_format: str, experts_touched: float, expert_bytes: float) -> float:
    """One vLLM fused-experts call on one GPU in a CUDA graph, as benchmark_moe.py times it (no router GEMM):
    the touched experts' bytes plus their tile cost at the format's bandwidth, the two expert GEMMs' kernel
    latency (gemv_kernel formats) and the small kernels, clock-scaled. ``expert_bytes``: the touched experts'
    weights on this rank."""
    efficiency = CONSTANTS["bandwidth_efficiency"]["vllm"]
    share = float(efficiency.get(kernel_format, efficiency["bf16"]))
    stream = (expert_bytes + expert_tile_bytes(experts_touched)) / (spec.memory_bandwidth_gbps * 1e9 * share)
    gemv = CONSTANTS["gemv_kernel"]
    experts = int(gemv["kernels"]["experts"]) if kernel_format in gemv["formats"] else 0
    latency = experts * float(gemv["latency_us"]) * float(gemv["clock_mhz"])
    latency += _moe_small_kernels_us(kernel_format, False) * float(CONSTANTS["moe_routing"]["clock_mhz"])
    return stream + latency / spec.boost_clock_mhz * 1e-6


def llama_cpp_cuda_graphs(build_date: Optional[str], stages: int = 1) -> bool:
    """Whether a llama.cpp build of ``build_date`` (ISO date; None: the newest) decodes with CUDA graphs on a replica
    of ``stages`` pipeline stages (performance.json ``llama_cpp_eras``): not before the graphs were merged, and on a
    split over several devices (the layer split, or layers left on the CPU) only from the build that keeps them."""
    eras = CONSTANTS["llama_cpp_eras"]
    if build_date is not None and str(build_date) < str(eras["cuda_graphs_from"]):
        return False
    keeps = eras["split_keeps_graphs_from"]
    return stages <= 1 or (keeps is not None and (build_date is None or str(build_date) >= str(keeps)))


class Predictor:
    """Speed of one replica layout for one model and engine; ``figures`` gives the report's numbers."""

    def __init__(
        self,
        traffic: ModelTraffic,
        stages: Sequence[Stage],
        tp: int,
        kv: KvTraffic,
        engine: str = "vllm",
        enforce_eager: bool = False,
        version: Optional[Sequence[int]] = None,
        build_date: Optional[str] = None,
    ):
        self.traffic = traffic
        self.stages = list(stages)
        self.tp = tp
        self.kv = kv
        self.engine = engine
        efficiency = CONSTANTS["bandwidth_efficiency"][engine]
        self.bandwidth_efficiency = float(efficiency.get(traffic.kernel_format, efficiency["bf16"]))
        compute = CONSTANTS["compute_efficiency"]
        self.compute_efficiency = float(compute.get(f"{engine}_{traffic.precision}", compute[engine]))
        gemv = CONSTANTS["gemv_kernel"]
        # Shape-aware GEMV: a fixed latency per weight matrix on the formats whose kernels were measured.
        self.gemv_latency = (
            float(gemv["latency_us"]) * 1e-6 if engine == "vllm" and traffic.kernel_format in gemv["formats"] else 0.0
        )
        overhead = CONSTANTS["layer_overhead_us"]
        key = engine if engine != "vllm" else ("eager" if enforce_eager else "cudagraph")
        self.layer_overhead = float(overhead[key]) * 1e-6
        # llama.cpp: the build's era decides whether CUDA graphs hide the per-layer launch costs (llama_cpp_eras)
        self.cuda_graphs = llama_cpp_cuda_graphs(build_date, len(self.stages)) if engine == "llama.cpp" else None
        if self.cuda_graphs is False:
            self.layer_overhead += float(CONSTANTS["llama_cpp_eras"]["no_graph_layer_us"]) * 1e-6
        self.state_overhead = float(CONSTANTS["recurrent_layer_overhead_us"][engine]) * 1e-6
        self.moe_routing = _moe_routing_seconds(engine, enforce_eager, traffic.kernel_format)
        # vLLM's fixed cost per step is a fact of its release (_engines/vllm/releases.json step_overhead_ms);
        # not_modelled: None when that release's costs are modelled, else why not
        step, why = step_costs(version) if engine == "vllm" else (CONSTANTS["step_overhead_ms"][engine], None)
        self.step_overhead = float(step) * 1e-3
        self.not_modelled: Optional[str] = why

    def _precision_tflops(self, spec: GpuSpec) -> float:
        return spec.tensor_tflops(self.traffic.precision)

    def stage_decode(self, stage: Stage, sequences: float, context: int) -> StepTime:
        t = self.traffic
        weights = 0.0
        flops = 0.0
        kv_bytes = 0.0
        touched = _touched(t, sequences)
        attention_layers = 0
        for index in range(stage.start, stage.end):
            kind = t.layer_kinds[index]
            weights += t.layer_bytes[index] + t.expert_bytes[index] * touched
            flops += t.layer_flops[index] * sequences
            if kind == LAYER_LINEAR:
                kv_bytes += 2.0 * self.kv.state_bytes
            else:
                span = min(context, t.sliding_window) if kind == LAYER_SLIDING and t.sliding_window else context
                kv_bytes += self.kv.attention_bytes_per_token * span
                attention_layers += 1
                flops += 4.0 * t.attention_width * span * sequences
        if stage.last:
            weights += t.head_bytes
            flops += t.head_flops * sequences
        memory = (weights / self.tp + self._tile_bytes(stage, touched) + kv_bytes * sequences) / (
            stage.spec.memory_bandwidth_gbps * 1e9 * self.bandwidth_efficiency
        )
        compute = flops / self.tp / (self._precision_tflops(stage.spec) * 1e12 * self.compute_efficiency)
        layers = stage.end - stage.start
        message = sequences * t.hidden_size * 2.0
        allreduce = layers * 2 * allreduce_seconds(stage.tp_link, self.tp, message)
        linear = sum(1 for k in t.layer_kinds[stage.start : stage.end] if k == LAYER_LINEAR)
        fixed = layers * self._layer_time(stage.spec) + linear * self._state_time(stage.spec)
        fixed += self._gemv_time(stage) + self._moe_routing_time(stage)
        return StepTime(memory, compute, allreduce, fixed)

    def _moe_layer_count(self, stage: Stage) -> int:
        """MoE layers of the stage whose vLLM kernel costs (moe_routing) apply; 0 for the other engines."""
        if not self.moe_routing:
            return 0
        return sum(1 for moe in self.traffic.moe_layers[stage.start : stage.end] if moe)

    def _tile_bytes(self, stage: Stage, touched: float) -> float:
        """Per-expert tile cost of the stage's fused expert GEMMs on one rank (moe_routing)."""
        return self._moe_layer_count(stage) * expert_tile_bytes(self.traffic.num_experts * touched)

    def _moe_routing_time(self, stage: Stage) -> float:
        """Fixed time of the stage's MoE routing kernels (router GEMM, top-k, align, activation, sum;
        performance.json moe_routing): per MoE layer, whatever the TP size and the batch."""
        clock = float(CONSTANTS["moe_routing"]["clock_mhz"])
        return self._moe_layer_count(stage) * self.moe_routing * clock / stage.spec.boost_clock_mhz

    def _gemv_time(self, stage: Stage) -> float:
        """Fixed latency of the stage's weight-matrix kernels (does not shrink with TP; gemv_kernel)."""
        if not self.gemv_latency:
            return 0.0
        kernels = sum(self.traffic.layer_kernels[stage.start : stage.end]) if self.traffic.layer_kernels else 0
        clock = float(CONSTANTS["gemv_kernel"]["clock_mhz"])
        return kernels * self.gemv_latency * clock / stage.spec.boost_clock_mhz

    def _state_time(self, spec: GpuSpec) -> float:
        """Extra fixed time of a recurrent (Gated-DeltaNet) layer per step: its state update is a chain of
        small kernels (conv, gating, delta rule) that does not stream at bandwidth."""
        return self.state_overhead * 2000.0 / spec.boost_clock_mhz

    def _layer_time(self, spec: GpuSpec) -> float:
        """Fixed time per layer and step; small-kernel latency scales with the clock (constants at 2 GHz)."""
        return self.layer_overhead * 2000.0 / spec.boost_clock_mhz

    def _handoff(self, stage: Stage, tokens: float) -> float:
        if stage.handoff is None:
            return 0.0
        return stage.handoff.latency_s + tokens * self.traffic.hidden_size * 4.0 / stage.handoff.bandwidth

    def decode_step(self, sequences: float, context: int) -> Tuple[float, List[StepTime]]:
        """Time for ``sequences`` in one micro-batch to pass every stage (latency of one token)."""
        times = [self.stage_decode(s, sequences, context) for s in self.stages]
        total = sum(x.total for x in times) + sum(self._handoff(s, sequences) for s in self.stages)
        return total + self.step_overhead, times

    def batch_step(self, sequences: int, context: int) -> float:
        """Seconds per decode step of ``sequences`` on this replica: with PP, micro-batches of sequences / PP
        are in flight, so a step takes PP x the slowest stage (or one pass, if longer)."""
        pp = len(self.stages)
        micro = max(1.0, sequences / pp)
        latency, times = self.decode_step(micro, context)
        if pp == 1:
            return latency
        slowest = max(x.total + self._handoff(s, micro) for x, s in zip(times, self.stages))
        return max(latency, pp * slowest)

    def aggregate(self, sequences: int, context: int) -> float:
        """Tokens/s of ``sequences`` decoding together on this replica (PP micro-batches in flight)."""
        return sequences / self.batch_step(sequences, context)

    def prefill_compute(self, prompt: int) -> float:
        """GPU seconds a prompt adds to the decode steps it is scheduled into (chunked prefill).

        vLLM's V1 scheduler mixes prefill chunks into the running decode batch: the step still reads every
        weight once, so what the prompt adds is its work at the tensor roof (2 FLOPs per active parameter per
        token, the attention over the prompt so far) and the all-reduce of its activations, on every stage.
        """
        t = self.traffic
        total = 0.0
        for stage in self.stages:
            flops = 0.0
            for index in range(stage.start, stage.end):
                flops += t.layer_flops[index] * prompt
                if t.layer_kinds[index] != LAYER_LINEAR:
                    span = prompt / 2.0
                    if t.layer_kinds[index] == LAYER_SLIDING and t.sliding_window:
                        span = min(span, t.sliding_window)
                    flops += 4.0 * t.attention_width * span * prompt
            compute = flops / self.tp / (self._precision_tflops(stage.spec) * 1e12 * self.compute_efficiency)
            layers = stage.end - stage.start
            total += compute + layers * 2 * allreduce_seconds(stage.tp_link, self.tp, prompt * t.hidden_size * 2.0)
        return total

    def output_throughput(self, sequences: int, context: int, prompt: int, output: int) -> float:
        """Output tokens/s of a closed-loop benchmark at ``sequences`` concurrent requests (``vllm bench serve
        --max-concurrency``): what its "output token throughput" counts, prefill included.

        Each of the ``sequences`` slots runs one request after another: ``output`` decode steps of the batch,
        and once per request its prompt, mixed into the running steps (``prefill_compute``). Over one cycle of
        every slot the replica therefore spends ``output`` steps plus ``sequences`` prompts, and delivers
        ``sequences x output`` tokens. At one sequence this is below 1 / TPOT by the prompt's share; at many,
        the prompts of the other slots stretch every sequence's TPOT. Not counted: HTTP, tokenization and the
        client's gaps between requests, and the tail of a finite run where fewer requests remain in flight.
        """
        output = max(1, int(output))
        cycle = output * self.batch_step(sequences, context) + sequences * self.prefill_compute(prompt)
        return sequences * output / cycle

    def prefill(self, prompt: int, chunk: int) -> float:
        """Seconds to prefill one prompt in chunks of ``chunk`` tokens (chunks overlap across stages)."""
        t = self.traffic
        chunk = max(1, min(chunk, prompt))
        chunks = math.ceil(prompt / chunk)
        per_stage = []
        for stage in self.stages:
            total = 0.0
            for number in range(chunks):
                tokens = min(chunk, prompt - number * chunk)
                before = number * chunk
                weights, flops = 0.0, 0.0
                for index in range(stage.start, stage.end):
                    kind = t.layer_kinds[index]
                    weights += t.layer_bytes[index] + t.expert_bytes[index] * _touched(t, tokens)
                    flops += t.layer_flops[index] * tokens
                    if kind != LAYER_LINEAR:
                        span = before + tokens / 2.0
                        if kind == LAYER_SLIDING and t.sliding_window:
                            span = min(span, t.sliding_window)
                        flops += 4.0 * t.attention_width * span * tokens
                if stage.last and number == chunks - 1:
                    weights += t.head_bytes
                    flops += t.head_flops
                memory = weights / self.tp / (stage.spec.memory_bandwidth_gbps * 1e9 * self.bandwidth_efficiency)
                compute = flops / self.tp / (self._precision_tflops(stage.spec) * 1e12 * self.compute_efficiency)
                layers = stage.end - stage.start
                allreduce = layers * 2 * allreduce_seconds(stage.tp_link, self.tp, tokens * t.hidden_size * 2.0)
                total += max(memory, compute) + allreduce + layers * self._layer_time(stage.spec)
                total += self._handoff(stage, tokens)
            per_stage.append(total / chunks)
        # The first chunk crosses every stage; the others follow at the pace of the slowest stage.
        return sum(per_stage) + (chunks - 1) * max(per_stage) + self.step_overhead * chunks


def bottleneck(predictor: Predictor, context: int, objective: str, sequences: int) -> str:
    """The dominant cost of a decode step, in words."""
    pp = len(predictor.stages)
    batch = 1.0 if objective == "latency" else max(1.0, sequences / pp)
    _latency, times = predictor.decode_step(batch, context)
    memory = sum(max(x.memory, x.compute) for x in times if x.memory >= x.compute)
    compute = sum(max(x.memory, x.compute) for x in times if x.compute > x.memory)
    allreduce = sum(x.allreduce for x in times)
    fixed = sum(x.fixed for x in times) + predictor.step_overhead
    parts = {
        "memory bandwidth": memory,
        "compute": compute,
        "TP all-reduce": allreduce,
        "per-layer and per-step overhead": fixed,
    }
    name = max(parts, key=lambda k: parts[k])
    if name == "TP all-reduce":
        links = sorted({s.tp_link.label for s in predictor.stages if s.tp_link is not None})
        name += f" over {', '.join(links)}"
    if name == "memory bandwidth":
        name += " (weights and KV cache read per token)"
    if pp > 1 and objective == "latency":
        name += f"; pipeline bubble: one sequence keeps one of {pp} stages busy at a time"
    return name


def predict(
    predictor: Predictor,
    workload: Workload,
    *,
    replicas: int,
    kv_cache_tokens: int,
    max_num_seqs: int,
    max_model_len: int,
    max_num_batched_tokens: int,
    fits_at_context: Optional[Callable[[int], int]] = None,
) -> Dict[str, Any]:
    """The report's figures for one layout (``replicas`` identical replicas of ``predictor``'s layout).

    ``fits_at_context(tokens)``: how many requests of that many tokens one replica's KV cache holds at once
    (vLLM's blocks: a hybrid model's recurrent state costs the same at any length); without it,
    ``kv_cache_tokens // tokens``."""
    context = max(1, min(workload.context_tokens, max_model_len))
    prompt = max(1, min(workload.prompt_tokens, max_model_len - 1))
    fitting = fits_at_context(context) if fits_at_context is not None else int(kv_cache_tokens // context)
    per_replica = max(1, min(int(max_num_seqs), int(fitting)))
    single, _times = predictor.decode_step(1.0, context)
    aggregate = predictor.aggregate(per_replica, context) * replicas
    prefill = predictor.prefill(prompt, max_num_batched_tokens)
    return {
        "objective": workload.objective,
        "context_tokens": context,
        "single_stream_decode_tokens_per_s": round(1.0 / single, 1),
        "concurrency": per_replica * replicas,
        "aggregate_decode_tokens_per_s": round(aggregate, 1),
        "prompt_tokens": prompt,
        "prefill_tokens_per_s": round(prompt / prefill, 1),
        "ttft_s": round(prefill + single, 3),
        "bottleneck": bottleneck(predictor, context, workload.objective, per_replica),
    }


def predict_layout(
    traffic: ModelTraffic,
    topo: Any,
    groups: Sequence[Sequence[int]],
    tp: int,
    custom_allreduce: bool,
    partition: Optional[Sequence[int]],
    kv: KvTraffic,
    enforce_eager: bool,
    workload: Workload,
    replicas: Sequence[int],
    **limits: Any,
) -> Dict[int, Dict[str, Any]]:
    """The figures of one vLLM replica's layout (its TP groups in stage order on ``topo``) for each count of
    identical replicas in ``replicas``: the stages and the predictor are built once. ``limits``: predict's
    keyword arguments but ``replicas``."""
    stages = stages_of(topo, groups, traffic.num_layers, custom_allreduce, partition)
    predictor = Predictor(traffic, stages, tp, kv, "vllm", enforce_eager)
    return {
        count: predict(
            predictor,
            workload,
            replicas=count,
            kv_cache_tokens=limits["kv_cache_tokens"],
            max_num_seqs=limits["max_num_seqs"],
            max_model_len=limits["max_model_len"],
            max_num_batched_tokens=limits["max_num_batched_tokens"],
            fits_at_context=limits.get("fits_at_context"),
        )
        for count in replicas
    }
