# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The fits of the performance model's constants read only the calibration records (tests/accuracy/fit.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[5]
fit = load_script(ROOT / "tests" / "accuracy" / "fit.py", "performance_fit")
RECORDS, PAIRS, MODELS = fit.accuracy.load()


def _loader(change):
    """A loader of the real fixture whose records pass through ``change(record, part)`` first."""

    def load():
        records = [copy.deepcopy(r) for r in RECORDS]
        for record in records:
            change(record, MODELS["_split"][record["source"]])
        return records, PAIRS, MODELS

    return load


def _scale_decode(part_to_change, factor):
    def change(record, part):
        measured = record.get("measured") or {}
        if part == part_to_change and measured.get("decode_tokens_per_s"):
            measured["decode_tokens_per_s"] = measured["decode_tokens_per_s"] * factor

    return change


def test_calibration_records_hold_no_validation_source():
    records, models = fit.calibration_records()
    assert records
    assert {models["_split"][r["source"]] for r in records} == {"calibration"}


def test_a_fit_does_not_move_when_the_validation_records_change():
    fitted = fit.fit_layer_overhead_us()
    assert fit.fit_layer_overhead_us(_loader(_scale_decode("validation", 10.0))) == fitted
    assert fit.fit_layer_overhead_us(_loader(_scale_decode("validation", 0.1))) == fitted


def test_a_fit_follows_the_calibration_records():
    fitted = fit.fit_layer_overhead_us()
    assert fit.fit_layer_overhead_us(_loader(_scale_decode("calibration", 0.8))) > fitted


@pytest.mark.parametrize("engine", sorted(fit.LAYER_OVERHEAD_KEY))
def test_the_fitted_value_is_the_one_in_performance_json(engine):
    now = fit.model.CONSTANTS["layer_overhead_us"][fit.LAYER_OVERHEAD_KEY[engine]]
    assert abs(fit.fit_layer_overhead_us(engine=engine) - now) <= 0.5


def test_the_expert_tile_cost_is_fitted_on_kernel_benchmarks_only():
    """moe_routing.expert_tile_bytes comes from the published fused-MoE kernel times (moe_kernels.yml), never
    from a speed record: it equals the fit, and the fit reads no record (a loader is not even passed)."""
    assert fit.fit_expert_tile_bytes() == fit.model.CONSTANTS["moe_routing"]["expert_tile_bytes"]
    points = fit.moe_kernel_points()
    assert points and {p["format"] for p in points} == {"fp8"}


def test_the_fused_moe_model_meets_every_published_kernel_time():
    """With the fitted tile cost, every kernel benchmark (the fitted narrow FP8 shapes and the wide bf16
    checks) is predicted within 10%."""
    for point in fit.moe_kernel_points(fitted_only=False):
        predicted = fit.model.fused_moe_seconds(point["spec"], point["format"], point["touched"], point["bytes"])
        assert abs(predicted / point["measured_s"] - 1.0) <= 0.10, point["id"]


@pytest.mark.parametrize("constant", ["pcie_p2p", "pcie_p2p_custom"])
def test_the_pcie_allreduce_latencies_are_derived_from_published_timings(constant):
    """allreduce_latency_us.pcie_p2p and pcie_p2p_custom come from the published all-reduce timings of
    allreduce.yml (inside a CUDA graph), never from a speed record: each equals its derivation."""
    assert fit.fit_pcie_allreduce_us(constant) == fit.model.CONSTANTS["allreduce_latency_us"][constant]


def test_nccl_without_p2p_costs_what_it_costs_with_p2p():
    """allreduce.yml's A/B (club-3090 PR #928): with vLLM's custom kernel off, decode does not move when P2P
    is taken away, so the model prices NCCL's small all-reduce the same either way."""
    latency = fit.model.CONSTANTS["allreduce_latency_us"]
    assert latency["pcie_no_p2p"] == latency["pcie_p2p"]


def test_the_published_custom_vs_nccl_gap_is_met_within_a_fifth():
    """The 2x RTX 5090 A/B of allreduce.yml (a check, not fitted): NCCL through host memory minus vLLM's
    custom kernel over P2P, per all-reduce, as measured and as the model has it."""
    ab = {entry["id"]: entry for entry in fit.yaml.safe_load(fit.ALLREDUCE.read_text(encoding="utf-8"))["ab"]}
    latency = fit.model.CONSTANTS["allreduce_latency_us"]
    measured = ab["5090x2-custom-p2p-vs-nccl-host-memory"]["gap_us"]
    assert abs((latency["pcie_no_p2p"] - latency["pcie_p2p_custom"]) / measured - 1.0) <= 0.2


def test_the_no_graph_layer_cost_is_fitted_on_calibration_builds_before_cuda_graphs():
    """llama_cpp_eras.no_graph_layer_us equals its fit on the calibration records of builds before CUDA graphs,
    and that fit moves with those records, not with the validation ones (issue #27)."""
    fitted = fit.fit_no_graph_layer_us()
    assert abs(fitted - fit.model.CONSTANTS["llama_cpp_eras"]["no_graph_layer_us"]) <= 0.5
    assert fit.fit_no_graph_layer_us(_loader(_scale_decode("validation", 10.0))) == fitted
    assert fit.fit_no_graph_layer_us(_loader(_scale_decode("calibration", 0.8))) > fitted
