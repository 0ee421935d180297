# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Fit the performance model's tuned constants on the calibration part of the records, never on validation.

Run from the collection root:

    PYTHONPATH=build/collections python tests/accuracy/fit.py

The records are split by source (records.yml ``split``, issue #27). Every fit here reads its records through
``calibration_records``, which drops the validation part before anything is predicted, so that the validation
figures of docs/performance-accuracy.md stay out of sample. The unit test
tests/unit/plugins/module_utils/_plan/test_performance_fit.py checks that a fit does not move when the
validation records change. Prints each fitted value beside the one in ``_plan/performance.json``.
"""

from __future__ import annotations

import contextlib
import pathlib
import statistics
import sys
from typing import Any, Callable, Dict, Iterator, List, Tuple

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import performance as accuracy  # tests/accuracy/performance.py, beside this file
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._hardware.gpu_specs import gpu_spec
from ansible_collections.inferops.llm.plugins.module_utils._plan import performance as model
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import gpus_from_facts

Loader = Callable[[], Tuple[List[Dict[str, Any]], List[Dict[str, Any]], Dict[str, Any]]]


def calibration_records(loader: Loader = accuracy.load) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """The evaluable records of the calibration part (and the model mapping); validation records never leave."""
    records, _pairs, models = loader()
    split = models["_split"]
    chosen = [r for r in records if split[r["source"]] == "calibration" and not accuracy._why_skipped(r, models)]
    return chosen, models


@contextlib.contextmanager
def constant(section: str, key: str, value: float) -> Iterator[None]:
    """``performance.json``'s ``section.key`` set to ``value`` while the block runs (Predictor reads it)."""
    table = model.CONSTANTS[section]
    before = table[key]
    table[key] = value
    try:
        yield
    finally:
        table[key] = before


def _decode_errors(records: List[Dict[str, Any]], models: Dict[str, Any]) -> List[float]:
    errors = []
    for record in records:
        measured = (record.get("measured") or {}).get("decode_tokens_per_s")
        if measured is None or int(record.get("concurrency") or 1) != 1 or record["id"] in models["_pairs_only"]:
            continue
        predictor = accuracy.predictor_for_record(record, models[record["model"]])
        errors.append(accuracy.predicted(record, predictor, "decode_tokens_per_s") / float(measured) - 1.0)
    return errors


# The ``layer_overhead_us`` entry each engine's decode reads (vLLM: with CUDA graphs, its default).
LAYER_OVERHEAD_KEY = {"vllm": "cudagraph", "llama.cpp": "llama.cpp"}


def _devices(record: Dict[str, Any]) -> int:
    return int(record.get("pipeline_parallel_size") or 1) * int(record.get("tensor_parallel_size") or 1)


def _graphs(record: Dict[str, Any]) -> bool:
    """Whether the record's llama.cpp build decodes with CUDA graphs (performance.json ``llama_cpp_eras``)."""
    return model.llama_cpp_cuda_graphs(record.get("llama_cpp_build_date"), _devices(record))


def _bisect(records: List[Dict[str, Any]], models: Dict[str, Any], section: str, key: str) -> float:
    """The value of ``section.key`` (0-400) at which the median signed single-stream decode error of ``records`` is
    zero (bisection; the prediction falls as the cost grows)."""
    low, high = 0.0, 400.0
    for _step in range(60):
        middle = (low + high) / 2.0
        with constant(section, key, middle):
            errors = _decode_errors(records, models)
        if statistics.median(errors) > 0.0:
            low = middle  # predicted too fast: more overhead
        else:
            high = middle
    return round((low + high) / 2.0, 1)


def fit_layer_overhead_us(loader: Loader = accuracy.load, engine: str = "vllm") -> float:
    """``layer_overhead_us`` of ``engine``: the per-layer fixed cost (us at 2 GHz) at which the median signed
    error of single-stream decode over the calibration records of ``engine`` is zero. llama.cpp: the single-device
    records whose build decodes with CUDA graphs, the cost ``no_graph_layer_us`` adds to (a split's records also
    hold the hand-off between its devices)."""
    records, models = calibration_records(loader)
    records = [
        r for r in records if r["engine"] == engine and (engine != "llama.cpp" or (_graphs(r) and _devices(r) == 1))
    ]
    if not records:
        raise ValueError(f"no calibration record of engine {engine!r} to fit on")
    return _bisect(records, models, "layer_overhead_us", LAYER_OVERHEAD_KEY[engine])


def fit_no_graph_layer_us(loader: Loader = accuracy.load) -> float:
    """``llama_cpp_eras.no_graph_layer_us``: what a layer costs llama.cpp on top of ``layer_overhead_us`` without
    CUDA graphs, fitted on the calibration records of single-device builds from before the graphs (so that the
    split records, whose cost also holds the hand-off, do not set it)."""
    records, models = calibration_records(loader)
    chosen = [r for r in records if r["engine"] == "llama.cpp" and not _graphs(r) and _devices(r) == 1]
    if not chosen:
        raise ValueError("no calibration record of a llama.cpp build without CUDA graphs to fit on")
    return _bisect(chosen, models, "llama_cpp_eras", "no_graph_layer_us")


MOE_KERNELS = accuracy.FIXTURES / "moe_kernels.yml"
# Bytes per expert weight of the formats the kernel benchmarks use (their checkpoints: bf16, FP8 e4m3).
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0}


def moe_kernel_points(fitted_only: bool = True) -> List[Dict[str, Any]]:
    """One entry per (shape, batch) of tests/unit/fixtures/performance/moe_kernels.yml: the GPU spec, format,
    experts touched, their bytes on the rank, and the measured seconds."""
    shapes = yaml.safe_load(MOE_KERNELS.read_text(encoding="utf-8"))["shapes"]
    points = []
    for shape in shapes:
        if fitted_only and not shape["fit"]:
            continue
        spec = gpu_spec(shape["gpu"])
        if spec is None:
            raise ValueError(f"moe_kernels.yml {shape['id']}: GPU {shape['gpu']!r} not in gpu_specs.json")
        per_expert = 3.0 * shape["N"] * shape["K"] * WEIGHT_BYTES[shape["format"]]
        for batch, micros in shape["kernel_us"].items():
            touched = shape["E"] * model.experts_touched_share(shape["E"], shape["topk"], float(batch))
            points.append(
                {
                    "id": f"{shape['id']}@{batch}",
                    "spec": spec,
                    "format": shape["format"],
                    "touched": touched,
                    "bytes": touched * per_expert,
                    "measured_s": float(micros) * 1e-6,
                }
            )
    return points


def fit_expert_tile_bytes() -> float:
    """``moe_routing.expert_tile_bytes``: per point, the bytes-equivalent per touched expert and expert GEMM
    that makes ``fused_moe_seconds`` equal the published kernel time; the median over the fitted points
    (narrow FP8 experts). Reads no speed record."""
    values = []
    efficiency = model.CONSTANTS["bandwidth_efficiency"]["vllm"]
    with constant("moe_routing", "expert_tile_bytes", 0.0):
        for point in moe_kernel_points():
            base = model.fused_moe_seconds(point["spec"], point["format"], point["touched"], point["bytes"])
            rate = point["spec"].memory_bandwidth_gbps * 1e9 * float(efficiency[point["format"]])
            values.append((point["measured_s"] - base) * rate / (2.0 * point["touched"]))
    return round(statistics.median(values), -3)


ALLREDUCE = accuracy.FIXTURES / "allreduce.yml"
# The largest message the all-reduce latency is fitted on: one decoded token at hidden size 8192 in bf16.
ALLREDUCE_FIT_MAX_BYTES = 16384


def allreduce_points(fitted_only: bool = True) -> List[Dict[str, Any]]:
    """One entry per (timing, message size) of tests/unit/fixtures/performance/allreduce.yml, with the part of
    the time the model adds besides the two-rank latency (ring hops beyond two ranks, the bytes over the link)."""
    timings = yaml.safe_load(ALLREDUCE.read_text(encoding="utf-8"))["timings"]
    points = []
    for timing in timings:
        link = timing["link"]
        facts = {"name": timing["gpu"], "memory_mib": 1, "pcie_gen_max": link["pcie_gen"]}
        facts["pcie_width_current"] = link["pcie_width"]
        bandwidth = gpus_from_facts([facts])[0].pcie_gbps * 1e9
        # NCCL's ring adds a hop per step beyond a two-rank all-reduce; a one-shot kernel has no ring.
        hop = float(model.CONSTANTS["allreduce_hop_us"]["pcie"]) * 1e-6 if timing["constant"] == "pcie_p2p" else 0.0
        for size, micros in timing["latency_us"].items():
            if fitted_only and (not timing["fit"] or int(size) > ALLREDUCE_FIT_MAX_BYTES):
                continue
            rest = model.allreduce_seconds(model.Link(0.0, bandwidth, "PCIe", hop), timing["ranks"], float(size))
            point = {"id": f"{timing['id']}@{size}", "constant": timing["constant"], "rest_s": rest}
            points.append({**point, "measured_s": float(micros) * 1e-6})
    return points


def fit_pcie_allreduce_us(constant: str = "pcie_p2p") -> float:
    """``allreduce_latency_us.<constant>`` (pcie_p2p: NCCL's two-rank small-message all-reduce over PCIe;
    pcie_p2p_custom: a one-shot kernel over PCIe P2P): the median over the fitted timings of (measured - hops
    beyond two ranks - bytes over the link). Reads no speed record."""
    values = [(p["measured_s"] - p["rest_s"]) * 1e6 for p in allreduce_points() if p["constant"] == constant]
    if not values:
        raise ValueError(f"allreduce.yml: no fitted timing of {constant!r}")
    return round(statistics.median(values), 1)


def main() -> int:
    records, _models = calibration_records()
    print(f"calibration records evaluable: {len(records)}")
    for engine, key in LAYER_OVERHEAD_KEY.items():
        fitted = fit_layer_overhead_us(engine=engine)
        now = model.CONSTANTS["layer_overhead_us"][key]
        print(f"layer_overhead_us.{key}: fitted {fitted:g}, performance.json {now:g}")
    eras = model.CONSTANTS["llama_cpp_eras"]
    no_graph = fit_no_graph_layer_us()
    print(f"llama_cpp_eras.no_graph_layer_us: fitted {no_graph:g}, performance.json {eras['no_graph_layer_us']:g}")
    tile = fit_expert_tile_bytes()
    now = model.CONSTANTS["moe_routing"]["expert_tile_bytes"]
    print(f"moe_routing.expert_tile_bytes: fitted {tile:g}, performance.json {now:g}")
    for point in moe_kernel_points(fitted_only=False):
        predicted = model.fused_moe_seconds(point["spec"], point["format"], point["touched"], point["bytes"])
        print(f"  {point['id']}: {1e6 * point['measured_s']:.1f} us measured, {1e6 * predicted:.1f} predicted")
    latency = model.CONSTANTS["allreduce_latency_us"]
    for key in ("pcie_p2p", "pcie_p2p_custom"):
        print(f"allreduce_latency_us.{key}: fitted {fit_pcie_allreduce_us(key):g}, performance.json {latency[key]:g}")
    for point in allreduce_points(fitted_only=False):
        predicted = point["rest_s"] * 1e6 + float(latency[point["constant"]])
        print(f"  {point['id']}: {1e6 * point['measured_s']:.1f} us measured, {predicted:.1f} predicted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
