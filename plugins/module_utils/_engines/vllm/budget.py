# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""vLLM's startup memory budget and KV-cache capacity, as the pinned release computes and logs them.

The formulas and the release where each changed are in docs/memory-model.md; the calibration of the
non-KV overhead against real startup logs is in docs/accuracy.md. All figures are per GPU, as each rank
logs them ("Model loading took", "Available KV cache memory"). GiB = 2**30.

Why one file of about 750 lines: it is one computation in the order vLLM runs it (page sizes, hybrid
block alignment, weights per rank, overhead, KV blocks, capacity, the log lines), each step citing the
release that changed it; the settings that feed it are resolved elsewhere (settings.py).

Public API:

``settings``: the resolved values (``_engines/vllm/settings.py`` resolve_vllm_settings(...).values; the
    budget never picks a default and refuses a mapping without the names in BUDGET_SETTINGS): ``max_model_len``
    (int, or "auto" for vLLM's auto-fit), ``gpu_memory_utilization``, ``kv_cache_memory_bytes``,
    ``kv_cache_dtype``, ``max_num_seqs``, ``max_num_batched_tokens``, ``enable_prefix_caching``,
    ``mamba_cache_mode``, ``mamba_cache_dtype``, ``mamba_ssm_cache_dtype``, ``block_size``,
    ``num_speculative_tokens`` or ``speculative_config`` (``{method, num_speculative_tokens}``; drafts enlarge
    the GDN conv state, an MTP method also loads the MTP block and adds its layer to the KV cache),
    ``enforce_eager``, ``max_cudagraph_capture_size``, ``language_model_only``.
``kv_cache_layout(arch, version, settings, tensor_parallel_size=1, compute_capability=None,
    cuda_runtime=None, max_model_len=None) -> dict``: per-layer page sizes, hybrid block size, KV
    cache groups, bytes per block and blocks per request (no memory figures needed).
``weights_per_rank(arch, weights, tensor_parallel_size=1, pipeline_parallel_size=1) -> list[int]``:
    bytes each rank loads (``weights`` is a ``model_weights.WeightsEstimate``).
``overhead_estimate(arch, version, settings, tensor_parallel_size=1, pipeline_parallel_size=1,
    compute_capability=None) -> dict``:
    the modelled non-KV overhead per GPU: ``non_torch_bytes``, ``activation_peak_bytes`` (forward pass at
    max_num_batched_tokens or sampler warm-up over max_num_seqs x vocab, whichever is larger, plus the
    multimodal allowance), ``sampler`` (``native``, ``flashinfer`` or ``v2``), ``cudagraph_bytes``,
    ``charged_bytes`` (what the pinned release subtracts before sizing the KV cache).
``vllm_memory_budget(arch, vllm_version, gpu_total_bytes, tensor_parallel_size=1, pipeline_parallel_size=1,
    weights=None, settings=None, gpu_name="", compute_capability=None, cuda_runtime=None,
    measured_overhead_bytes=None) -> dict``: the full budget, a plain dict: ``vllm_version``,
    ``settings`` (value + source), ``gpu_total_bytes``/``_gib``, ``requested_bytes``/``_gib``
    (ceil(total x utilization)), ``weights_bytes``/``_gib`` (worst rank), ``weights_per_rank_bytes``,
    ``weights_source``, ``overhead_bytes``/``_gib`` (charged non-KV besides weights), ``overhead_source``
    ("model" or "measured"), ``overhead`` (model components), ``kv_cache_bytes``/``_gib`` (worst rank),
    ``kv_cache_source`` ("profiled" or "kv_cache_memory_bytes"), ``layout`` (kv_cache_layout), ``block_size``,
    ``num_blocks``, ``kv_cache_tokens``, ``max_concurrency``, ``max_model_len``, ``log_lines`` (exactly as the
    release prints them), ``vram_used_bytes``/``_gib`` (per GPU after startup, CUDA graphs included) and
    ``findings`` (list of ``{id, severity, message}`` with vLLM's own error texts where it would refuse to start).
    ``measured_overhead_bytes``: non-KV memory per GPU besides the weights from a previous start of the same
    configuration (``Desired ... R GiB`` - ``Model loading took`` - ``Available KV cache memory``); it replaces
    the modelled overhead. ``compute_capability`` (``"9.0"``) and ``cuda_runtime`` (``"13.0"``) decide the
    0.33 FlashInfer GDN prefill alignment; unknown counts as active (safe side). ``flashinfer_installed``
    (releases up to 0.11.0; None = unknown) picks the sampler warm-up; when unknown the result carries
    ``kv_cache_range_bytes`` (native and FlashInfer ends) and a ``vllm_overhead_uncertain`` finding. A
    Qwen3-VL-family vision tower that is profiled is charged one dummy image at ``image_max_pixels`` (the
    checkpoint's image processor ``size.longest_edge``; None: the family's published 16,777,216), with an info
    finding ``vllm_vision_profile_uncertain`` that names the estimated term (``overhead.vision_profile``).
``memory_budget(arch, version, gpu_total_bytes, loaded, settings, tensor_parallel_size=1, ...) -> dict``: the
    same budget of a VllmVersion and the WeightsEstimate the engine loads, resolved once by the planner.
``gdn_prefill_transient_bytes(arch, num_tokens, tensor_parallel_size=1) -> int``: memory of one Gated-DeltaNet
    layer's chunked prefill that vLLM's profile run never measures (``vllm_gdn_prefill_unprofiled``).
``derived_max_model_len(arch, version) -> int``: the longest max_model_len the release accepts (rope
    scaling rules changed for yarn in 0.30).
``cuda_total_bytes_from_nvidia_smi(memory_total_mib) -> int``: the total CUDA reports (what vLLM
    multiplies by gpu_memory_utilization) from nvidia-smi's memory.total, on the safe side.
``kv_capacity(version, layout, kv_cache_bytes) -> dict``: ``num_blocks``, ``kv_cache_tokens`` (the logged
    "GPU KV cache size") and ``max_concurrency`` for a budget and a ``kv_cache_layout``.
``sequences_at_length(layout, num_blocks, length) -> int``: how many requests of ``length`` tokens the blocks
    hold at once (a recurrent state's blocks are fixed whatever the length, a sliding window's capped).
``format_gib(version, bytes) -> str``: GiB as the release prints them in "Available KV cache memory".
``format_capacity_log(version, kv_cache_tokens, max_model_len, max_concurrency) -> list[str]``.
``parse_human_int(value) -> int``: vLLM's human_readable_int (``5g`` = 5e9, ``5G`` = 5 GiB).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB, MIB
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
    uses_model_runner_v2,
    vllm_version,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import (
    LAYER_FULL,
    LAYER_LINEAR,
    LAYER_MLA,
    LAYER_SLIDING,
    ModelArchitecture,
    dtype_bytes,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import WeightsEstimate, estimate_weights

# Kernel block alignment of the CUDA attention backends (FLASH_ATTN / FLASHINFER / TRITON: multiple of 16).
KERNEL_BLOCK_ALIGNMENT = 16
# FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (0.33 align mode with FlashInfer GDN prefill).
GDN_CHECKPOINT_ALIGNMENT = 64
# vLLM's default KV block for MLA backends (FlashMLA); other attention uses 16.
MLA_BLOCK_SIZE = 64

# ---- Calibrated overhead model (docs/accuracy.md). Values chosen at or above every logged figure. ----
# Non-torch memory per GPU (NCCL / custom all-reduce buffers, cuBLAS and attention workspaces) by TP size.
_NON_TORCH_GIB = {
    # weights + torch peak + non-torch profiler (< 0.27): 0.07-0.16 GiB at TP1, 0.55 at TP2 (logs)
    "profile": {1: 0.20, 2: 0.60, 4: 1.75, 8: 2.25},
    # consumed-memory profiler (>= 0.27) also counts workspaces created after the snapshot: 0.30-0.47 at TP1
    "consumed": {1: 0.50, 2: 0.80, 4: 1.90, 8: 2.40},
}
# Sampler warm-up over max_num_seqs rows of vocab logits. The V1 model runner's _dummy_sampler_run applies
# top-k and top-p: with the PyTorch-native sampler (fp32 logits, sort values and int64 indices,
# probabilities) 38.4-39.6 bytes per logit (calibration: five H100 logs of the llm-d set); with FlashInfer's
# top-k/top-p kernels 12.4 (A100 log of 0.10.1.1) to 17.7 (gpt-oss-120b H100 log) bytes per logit. The V2
# runner skips top-k/top-p (0.27.1 log).
_SAMPLER_BYTES_PER_LOGIT = {"native": 40.0, "flashinfer": 18.0, "v2": 10.0}
# Allowance for the multimodal encoder profile run when the vision tower is loaded.
_MULTIMODAL_ALLOWANCE = int(0.25 * GIB)
# Encoder profile of the Qwen3-VL processor family (Qwen3-VL, Qwen3.5 and Qwen3.6 towers), traced in the 0.20.0
# and 0.32.0 sources: profile_run (v1/worker/gpu_model_runner.py) encodes the items of ONE modality, the one with
# the most tokens per item (multimodal/encoder_budget.py get_modality_with_max_tokens); the image wins over the
# video (models/qwen3_vl.py get_max_video_tokens: the video processor's longest_edge / temporal_patch_size over 2
# frames, 12,288 tokens against the image's 16,384). models/qwen2_vl.py get_image_size_with_most_features takes
# max_pixels = the image processor's size["longest_edge"] and factorises max_pixels // (patch x merge)^2 merged
# tokens: 16,384 tokens, 65,536 patches for 16,777,216 pixels at patch 16, merge 2. The pixel limit is the
# checkpoint's preprocessor_config.json (or processor_config.json "image_processor"), read by the plan when it
# has the checkpoint's files; otherwise the value every published checkpoint of the family ships:
# Qwen/Qwen3.6-35B-A3B-FP8 and Qwen/Qwen3.5-2B-Base preprocessor_config.json
# {"size": {"longest_edge": 16777216, "shortest_edge": 65536}}, unsloth/Qwen3.6-27B-NVFP4 processor_config.json
# "image_processor" (its video_processor says 25,165,824). transformers' class default (28 x 28 x 1280 =
# 1,003,520) is not what vLLM profiles. Activations per patch: the vision block's MLP peak, i.e. the residual,
# the norm output, fc1's output and its activation in bf16 (2 x (2 x hidden + 2 x intermediate / tp) bytes; the
# attention peak of the block is lower, FLASH_ATTN varlen keeps no patch x patch matrix). Not charged: pixel
# values and deepstack features (about 0.1 GiB), allocator rounding: the term is an estimate, said so in the plan.
# Other vision towers keep the allowance.
_VISION_FAMILY_MAX_PIXELS = 16_777_216
_VISION_FAMILY_SOURCE = (
    "the Qwen3-VL/3.5/3.6 checkpoints' preprocessor_config.json size.longest_edge "
    "(Qwen/Qwen3.6-35B-A3B-FP8, Qwen/Qwen3.5-2B-Base)"
)
_VISION_PATCH = 16
_VISION_MERGE = 2
_VISION_RANGE_MODEL_TYPES = ("qwen3_vl", "qwen3_5")  # Qwen3.6 checkpoints say qwen3_5(_moe)
# CUDA-graph pool per decoder layer for a 512-size capture (0.5 GiB for 28 layers at TP1, 1.0-1.9 at TP>1).
_CUDAGRAPH_PER_LAYER_GIB = {1: 0.02, 2: 0.04}
# nvidia-smi memory.total minus what CUDA reports as total: 0 - 494 MiB on H100/RTX 4090/5090/3090.
_DRIVER_RESERVED_MIB = 512

_TURBOQUANT_BITS = {
    "turboquant_k8v4": (8, 4, False),
    "turboquant_4bit_nc": (4, 4, True),
    "turboquant_k3v4_nc": (3, 4, True),
    "turboquant_3bit_nc": (3, 3, True),
}
_HUMAN_INT_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)\s*")
_HUMAN_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 1 << 10, "M": MIB, "G": GIB, "T": 1 << 40}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def parse_human_int(value: Any) -> int:
    """vLLM's ``human_readable_int``: lowercase k/m/g/t are decimal, uppercase K/M/G/T binary."""
    if isinstance(value, bool):
        raise ValueError(f"expected a byte count, got {value!r}")
    if isinstance(value, int):
        return value
    match = _HUMAN_INT_RE.fullmatch(str(value))
    if not match:
        raise ValueError(f"expected a byte count such as 21474836480, 20G (GiB) or 20g (GB), got {value!r}")
    return int(float(match.group(1)) * _HUMAN_UNITS[match.group(2)])


def cuda_total_bytes_from_nvidia_smi(memory_total_mib: int) -> int:
    """Total GPU memory as CUDA reports it, from nvidia-smi's memory.total in MiB (safe side)."""
    return (int(memory_total_mib) - _DRIVER_RESERVED_MIB) * MIB


def _tp_bucket(table: Mapping, tp: int) -> float:
    for size in sorted(table):
        if tp <= size:
            return table[size]
    return table[max(table)]


def derived_max_model_len(arch: ModelArchitecture, version: VllmVersion) -> int:
    """Longest max_model_len the release accepts without VLLM_ALLOW_LONG_MAX_MODEL_LEN.

    config/model.py _get_and_verify_max_len: rope scaling multiplies max_position_embeddings by its factor,
    except su/longrope/llama3 and Gemma 3. Before 0.30 yarn multiplies original_max_position_embeddings;
    from 0.30 yarn leaves max_position_embeddings as it is (taken as already scaled).
    """
    if arch.rope_type == "yarn" and version.yarn_max_len_unscaled:
        return arch.max_position_embeddings
    return arch.derived_max_model_len


def _era(version: VllmVersion) -> str:
    return "consumed" if version.consumed_memory_profiler else "profile"


# ----------------------------------------------------------------------------------------------------
# Settings

# What the budget reads. The values come resolved (_engines/vllm/settings.py resolve_vllm_settings): the
# budget never picks a default.
BUDGET_SETTINGS = (
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "max_num_seqs",
    "max_num_batched_tokens",
    "kv_cache_dtype",
    "max_model_len",
    "enable_prefix_caching",
    "num_speculative_tokens",
    "speculative_method",
    "enforce_eager",
    "language_model_only",
    "max_cudagraph_capture_size",
    "block_size",
)


def _resolved(settings: Optional[Mapping]) -> Dict[str, Any]:
    values = dict(settings or {})
    missing = [name for name in BUDGET_SETTINGS if name not in values]
    if missing:
        raise ValueError(
            f"the memory budget takes resolved settings (settings.resolve_vllm_settings); missing: {', '.join(missing)}"
        )
    return values


# ----------------------------------------------------------------------------------------------------
# KV cache layout


def attention_bytes_per_token(arch: ModelArchitecture, kv_cache_dtype: str, tensor_parallel_size: int = 1) -> int:
    """Page bytes of one attention layer for one token on one rank (K and V, or the MLA latent)."""
    if arch.is_mla:
        if kv_cache_dtype == "fp8_ds_mla":
            return 656  # FlashMLA sparse layout: 512 fp8 latent + 4 fp32 scales + 64 bf16 rope
        elements = (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0)  # the latent, replicated on every rank
    else:
        heads = max(1, arch.num_kv_heads // tensor_parallel_size)  # KV heads replicate when TP > kv heads
        if kv_cache_dtype in _TURBOQUANT_BITS:
            key_bits, value_bits, compressed_key = _TURBOQUANT_BITS[kv_cache_dtype]
            hd = arch.head_dim
            key = _cdiv(hd * key_bits, 8) + 2 if compressed_key else hd
            value = _cdiv(hd * value_bits, 8) + 4
            slot = key + value
            return heads * (slot + slot % 2)  # TurboQuantConfig.slot_size_aligned: rounded to even
        if kv_cache_dtype in ("nvfp4", "nvfp4_4over6"):
            # E2M1 values plus one FP8 scale per 16 elements, for K and V
            return heads * 2 * (arch.head_dim // 2 + arch.head_dim // 16)
        if kv_cache_dtype in ("int8_per_token_head", "fp8_per_token_head"):
            return heads * 2 * (arch.head_dim + 4)  # one fp32 scale per token and head
        if kv_cache_dtype == "int4_per_token_head":
            return heads * 2 * (arch.head_dim // 2 + 4)
        elements = heads * 2 * arch.head_dim  # K and V
    # a plain dtype: the elements of one token times the bytes of one element
    return elements * _kv_element_bytes(arch, kv_cache_dtype)


def _kv_element_bytes(arch: ModelArchitecture, kv_cache_dtype: str) -> int:
    if kv_cache_dtype == "auto":
        return dtype_bytes(arch.dtype if arch.dtype != "float32" else "bfloat16")
    if kv_cache_dtype in ("float16", "bfloat16") or kv_cache_dtype.startswith("fp8"):
        return dtype_bytes(kv_cache_dtype if not kv_cache_dtype.startswith("fp8") else "fp8")
    raise ValueError(f"kv_cache_dtype {kv_cache_dtype!r}: its page size is not modelled by this collection")


def gdn_state_bytes(
    arch: ModelArchitecture,
    tensor_parallel_size: int = 1,
    num_speculative_tokens: int = 0,
    mamba_cache_dtype: str = "auto",
    mamba_ssm_cache_dtype: str = "auto",
) -> Dict[str, int]:
    """Gated-DeltaNet conv and SSM state of one layer on one rank (mamba_utils.gated_delta_net_state_shape)."""
    tp = tensor_parallel_size
    conv_dim = (
        arch.linear_key_head_dim * arch.linear_num_key_heads * 2
        + arch.linear_value_head_dim * arch.linear_num_value_heads
    )
    for what, amount in (("linear_num_value_heads", arch.linear_num_value_heads), ("conv dim", conv_dim)):
        if amount % tp:
            raise ValueError(f"{amount} is not divisible by {tp} ({what} of {arch.architecture} under TP={tp})")
    conv_dtype = arch.dtype if mamba_cache_dtype == "auto" else mamba_cache_dtype
    ssm_dtype = conv_dtype if mamba_ssm_cache_dtype == "auto" else mamba_ssm_cache_dtype
    conv = conv_dim // tp * (arch.linear_conv_kernel_dim - 1 + num_speculative_tokens) * dtype_bytes(conv_dtype)
    ssm = (
        arch.linear_num_value_heads
        // tp
        * arch.linear_value_head_dim
        * arch.linear_key_head_dim
        * dtype_bytes(ssm_dtype)
    )
    return {"conv_bytes": conv, "ssm_bytes": ssm, "page_bytes": conv + ssm}


def _gdn_prefill_checkpoint_active(
    arch: ModelArchitecture, compute_capability: Optional[str], cuda_runtime: Optional[str]
) -> bool:
    """0.33 _resolve_gdn_prefill_backend: FlashInfer GDN prefill on SM90 always; SM10x/SM12x need head_k_dim
    128 and CUDA runtime >= 13. Unknown hardware counts as active (larger block, one more block: safe side)."""
    if compute_capability is None:
        return True
    major = int(str(compute_capability).split(".", maxsplit=1)[0])
    if major == 9:
        return True
    if major in (10, 12):
        runtime_ok = cuda_runtime is None or int(str(cuda_runtime).split(".", maxsplit=1)[0]) >= 13
        return arch.linear_key_head_dim == 128 and runtime_ok
    return False


def _layer_specs(arch: ModelArchitecture, layers: Tuple[str, ...], mtp_layers: int) -> Dict[str, int]:
    """Number of layers per KV-cache spec (the MTP draft's attention layer joins the attention bucket)."""
    counts: Dict[str, int] = {}
    for kind in layers:
        counts[kind] = counts.get(kind, 0) + 1
    if mtp_layers:
        kind = LAYER_MLA if arch.is_mla else LAYER_FULL
        counts[kind] = counts.get(kind, 0) + mtp_layers
    return counts


def _group_size(version: VllmVersion, counts: Mapping[str, int]) -> int:
    """kv_cache_utils _get_kv_cache_groups_uniform_page_size: smallest bucket, or (>= 0.18) the largest when
    it is under 1.5 x the smallest."""
    smallest, largest = min(counts.values()), max(counts.values())
    return largest if version.group_size_threshold and largest < 1.5 * smallest else smallest


def kv_cache_layout(
    arch: ModelArchitecture,
    version: VllmVersion,
    settings: Mapping,
    tensor_parallel_size: int = 1,
    compute_capability: Optional[str] = None,
    cuda_runtime: Optional[str] = None,
    max_model_len: Optional[int] = None,
    layers: Optional[Tuple[str, ...]] = None,
    include_mtp: bool = True,
) -> Dict[str, Any]:
    """Block size, groups, bytes per block and blocks per request for resolved ``settings`` values.

    ``layers`` restricts the layout to one pipeline stage's layer kinds; ``include_mtp`` says whether the
    stage runs the MTP draft (the last one)."""
    kv_dtype = settings["kv_cache_dtype"]
    tp = tensor_parallel_size
    num_spec = int(settings.get("num_speculative_tokens") or 0)
    length = int(max_model_len if max_model_len is not None else settings["max_model_len"])
    mbt = int(settings["max_num_batched_tokens"])
    attn_1tok = attention_bytes_per_token(arch, kv_dtype, tp)
    requested_block = int(settings.get("block_size") or KERNEL_BLOCK_ALIGNMENT)
    layer_kinds = tuple(layers) if layers is not None else arch.layer_types
    mtp_method = "mtp" in str(settings.get("speculative_method") or "mtp")
    mtp = arch.mtp_layers if include_mtp and num_spec and mtp_method else 0
    counts = _layer_specs(arch, layer_kinds, mtp)
    mode = settings.get("mamba_cache_mode") if arch.is_hybrid else None
    checkpoint = bool(arch.is_hybrid and mode == "align" and version.gdn_prefill_checkpoint)
    checkpoint = checkpoint and _gdn_prefill_checkpoint_active(arch, compute_capability, cuda_runtime)
    gdn = None
    block_size = max(requested_block, MLA_BLOCK_SIZE if arch.is_mla else KERNEL_BLOCK_ALIGNMENT)
    if LAYER_LINEAR in counts:
        gdn = gdn_state_bytes(
            arch, tp, num_spec, settings.get("mamba_cache_dtype", "auto"), settings.get("mamba_ssm_cache_dtype", "auto")
        )
        # platforms/interface.py _align_hybrid_block_size (models/config.py in <= 0.19)
        kernel = max(KERNEL_BLOCK_ALIGNMENT, requested_block)
        if checkpoint:
            kernel = kernel * GDN_CHECKPOINT_ALIGNMENT // math.gcd(kernel, GDN_CHECKPOINT_ALIGNMENT)
        aligned = kernel * _cdiv(gdn["page_bytes"], kernel * attn_1tok)
        block_size = max(block_size, aligned)
    page = block_size * attn_1tok
    group_size = _group_size(version, counts)
    groups: List[Dict[str, Any]] = []
    blocks_per_request = 0
    for kind in (LAYER_FULL, LAYER_MLA, LAYER_SLIDING, LAYER_LINEAR):
        if kind not in counts:
            continue
        if kind == LAYER_LINEAR:
            if mode == "all":
                per_group = _cdiv(length, block_size) + num_spec
            else:
                per_group = (2 if mode == "align" else 1) + num_spec + (1 if checkpoint else 0)
        elif kind == LAYER_SLIDING:
            tokens = min(arch.sliding_window - 1 + mbt, length)
            per_group = _cdiv(tokens, block_size) + 1
        else:
            per_group = _cdiv(length, block_size)
        for _group in range(_cdiv(counts[kind], group_size)):
            groups.append({"kind": kind, "layers": group_size, "blocks_per_request": per_group})
            blocks_per_request += per_group
    padding_layers = sum(g["layers"] for g in groups) - sum(counts.values())
    return {
        "kv_cache_dtype": kv_dtype,
        "attention_bytes_per_token_per_layer": attn_1tok,
        "gdn_state": gdn,
        "gdn_prefill_checkpoint": checkpoint,
        "block_size": block_size,
        "page_bytes": page,
        "group_size": group_size,
        "groups": groups,
        "padding_layers": padding_layers,
        "bytes_per_block": group_size * page,
        "blocks_per_request": blocks_per_request,
        "max_model_len": length,
        "mamba_cache_mode": mode,
    }


# ----------------------------------------------------------------------------------------------------
# Weights and overhead


def pp_layer_bounds(num_layers: int, pp: int) -> List[Tuple[int, int]]:
    """distributed/utils.py get_pp_indices: even split, the remainder on the ranks before the last."""
    per = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        per[-i] += 1
    bounds, start = [], 0
    for count in per:
        bounds.append((start, start + count))
        start += count
    return bounds


def weights_per_rank(
    arch: ModelArchitecture,
    weights: WeightsEstimate,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
) -> List[int]:
    """Bytes each rank loads ("Model loading took"), ranks in TP-major order within each PP stage."""
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    comp = weights.components
    linear_layers = max(1, arch.linear_attention_layers)
    attention_layers = max(1, arch.num_layers - arch.linear_attention_layers)
    kv_share = 0.0
    if not arch.is_mla and arch.num_kv_heads < tp:
        # k/v projections replicate once TP exceeds the KV heads: each rank holds one KV head
        q_width = arch.num_attention_heads * arch.head_dim * (3 if arch.attn_output_gate else 2)
        kv_width = 2 * arch.num_kv_heads * arch.head_dim
        kv_share = kv_width / (q_width + kv_width)
    expert_scale = 1.0
    if weights.source.startswith("parameter counts") and arch.quantization and arch.quantization.scheme == "mxfp4":
        # Charged as an expert intermediate size padded to a multiple of 256 (2880 -> 3072): what the H100
        # logs of 0.11.0 show (gpt-oss-20b 13.47 GiB, gpt-oss-120b 64.38 GiB, records.jsonl). Mxfp4MoEMethod
        # .create_weights (quantization/mxfp4.py) is the same in 0.10.2 and 0.11.0 (Triton rounds to 64,
        # Marlin to 128 with hidden to 256, SM100 FlashInfer to 256), so no per-release difference.
        per_rank = (arch.intermediate_size or arch.moe_intermediate_size or 1) / tp
        expert_scale = _cdiv(int(per_rank), 256) * 256 / per_rank
    result = []
    for stage, (start, end) in enumerate(pp_layer_bounds(arch.num_layers, pp)):
        kinds = arch.layer_types[start:end]
        share = (end - start) / arch.num_layers
        attn_share = sum(1 for k in kinds if k != LAYER_LINEAR) / attention_layers
        gdn_share = sum(1 for k in kinds if k == LAYER_LINEAR) / linear_layers
        sharded = (
            comp["experts"] * expert_scale * share
            + comp["dense_or_shared_mlp"] * share
            + comp["linear_attn_linear"] * gdn_share
            + comp["attn_linear"] * attn_share * ((1 - kv_share) + kv_share * tp / max(1, arch.num_kv_heads))
        ) / tp
        replicated = comp["router"] * share + comp["small_other"] * share
        first, last = stage == 0, stage == pp - 1
        ends = 0.0
        if first:
            ends += (comp["embed"] + comp["vision"]) / tp
        if last:
            ends += (comp["lm_head"] + comp["mtp"]) / tp
            if arch.tie_word_embeddings and pp > 1:
                ends += comp["embed"] / tp  # the last stage needs its own copy of the tied head
        result.extend([int(sharded + replicated + ends)] * tp)
    return result


def _forward_bytes_per_token(arch: ModelArchitecture, tp: int) -> int:
    """Activation bytes per scheduled token at the forward-pass peak of one rank (bf16 activations)."""
    h = arch.hidden_size
    mlp = 3 * (arch.intermediate_size or 0) // tp
    if arch.is_moe:
        moe = arch.moe_intermediate_size or arch.intermediate_size or 0
        # fused_moe intermediate caches: top-k x (2 x intermediate + intermediate + hidden)
        mlp = max(mlp if arch.first_k_dense_replace else 0, arch.num_experts_per_tok * (3 * moe // tp + h))
        mlp += 3 * (arch.shared_expert_intermediate_size or 0) * arch.num_shared_experts // tp
    per_token = 2 * (4 * h + mlp)
    if arch.is_hybrid:
        # chunked Gated-DeltaNet prefill keeps about a dozen fp32 tensors of the value width
        per_token += 4 * 12 * arch.linear_num_value_heads // tp * arch.linear_value_head_dim
    return per_token


def _sampler(
    version: VllmVersion,
    arch: ModelArchitecture,
    compute_capability: Optional[str],
    flashinfer_installed: Optional[bool] = None,
) -> Tuple[str, Optional[str]]:
    """(sampler the profiling warm-up runs, the other one when the plan cannot tell which runs).

    "v2" (V2 model runner), "flashinfer" or "native" (V1 runner), from v1/sample/ops/topk_topp_sampler.py:
    * up to 0.11.0: FlashInfer whenever ``import flashinfer`` works (``VLLM_USE_FLASHINFER_SAMPLER`` unset
      means on). flashinfer is in vLLM's container image but only an extra of the 0.10-0.11.0 wheels
      (PR #21959), so the plan cannot tell (``flashinfer_installed`` None): the PyTorch-native warm-up (the
      larger, so the conservative headline: issue #27, a 0.11.0 container start of Qwen3-32B logged the native
      peak), with FlashInfer's as the uncertain alternative (the other end of the KV range);
    * 0.11.1 to 0.20: PyTorch-native; FlashInfer is opt-in (PR #26859);
    * from 0.21: FlashInfer by default on GPUs it supports (compute capability 8.0 - 12.1; unknown counts as
      supported; PR #40376).
    """
    quantized = arch.quantization is not None
    if uses_model_runner_v2(version, arch.architecture, arch.is_moe, arch.is_hybrid, quantized):
        return "v2", None
    if version.sampler == "flashinfer_on_supported_gpus":
        if compute_capability is None:
            return "flashinfer", None
        major, _dot, minor = str(compute_capability).partition(".")
        if (8, 0) <= (int(major), int(minor or 0)) <= (12, 1):
            return "flashinfer", None
        return "native", None
    if version.sampler == "native":
        return "native", None
    if flashinfer_installed is None:
        return "native", "flashinfer"
    return ("flashinfer" if flashinfer_installed else "native"), None


def vision_profiled(arch: ModelArchitecture, settings: Mapping) -> bool:
    """Whether the profile run encodes a dummy image/video: a vision tower that is loaded and not limited to 0."""
    if not arch.has_vision or settings.get("language_model_only"):
        return False
    limits = settings.get("limit_mm_per_prompt")
    disabled = isinstance(limits, Mapping) and all(limits.get(m, 1) in (0, "0") for m in ("image", "video"))
    return not disabled


def vision_profile(
    arch: ModelArchitecture, image_max_pixels: Optional[int] = None, tensor_parallel_size: int = 1
) -> Optional[Dict[str, Any]]:
    """The encoder profile run of a Qwen3-VL-family tower: one dummy image at the processor's pixel limit.

    The tower's MLP is split over the tensor-parallel ranks (qwen3_vl.py Qwen3_VisionMLP: ColumnParallelLinear
    fc1, RowParallelLinear fc2, unless mm_encoder_tp_mode is "data"): the intermediate activations per rank
    are intermediate / tp wide, the residual and the norm output are whole.

    image_max_pixels: the checkpoint's image processor ``size.longest_edge`` (None: the family's published
    value). Returns ``pixels``, ``patches``, ``bytes_per_patch``, ``bytes`` and ``pixels_source`` ("checkpoint"
    or the published source), or None for towers outside the traced family (they keep the allowance).
    """
    if not arch.vision_hidden_size or not arch.vision_intermediate_size:
        return None
    if not arch.model_type.startswith(_VISION_RANGE_MODEL_TYPES):
        return None
    pixels = int(image_max_pixels) if image_max_pixels else _VISION_FAMILY_MAX_PIXELS
    unit = (arch.vision_patch_size or _VISION_PATCH) * (arch.vision_spatial_merge_size or _VISION_MERGE)
    patches = pixels // (unit * unit) * (arch.vision_spatial_merge_size or _VISION_MERGE) ** 2
    per_patch = 2 * (2 * arch.vision_hidden_size + 2 * _cdiv(arch.vision_intermediate_size, tensor_parallel_size))
    return {
        "pixels": pixels,
        "pixels_source": "checkpoint" if image_max_pixels else _VISION_FAMILY_SOURCE,
        "patches": patches,
        "bytes_per_patch": per_patch,
        "bytes": patches * per_patch,
    }


def overhead_estimate(
    arch: ModelArchitecture,
    version: VllmVersion,
    settings: Mapping,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    compute_capability: Optional[str] = None,
    flashinfer_installed: Optional[bool] = None,
    image_max_pixels: Optional[int] = None,
    custom_all_reduce: Optional[bool] = None,
) -> Dict[str, Any]:
    """Modelled non-KV memory per GPU besides the weights (docs/accuracy.md).

    ``custom_all_reduce``: False when vLLM's custom all-reduce cannot run for the TP group (a group spanning
    nodes, or more than two PCIe-only GPUs: distributed/device_communicators/custom_all_reduce.py); the
    non-torch memory is then that of one GPU. None (unknown) or True charges the TP size's figure.

    ``image_max_pixels``: the checkpoint's image-processor pixel limit (``vision_profile``).

    ``flashinfer_installed`` (releases up to 0.11.0): whether the vLLM environment has the flashinfer package
    (vLLM's container image does); None when unknown: the sampler warm-up is then uncertain and the result
    also gives ``sampler_alternative`` and ``charged_bytes_alternative``.
    """
    era = _era(version)
    tp = tensor_parallel_size
    non_torch = int(_tp_bucket(_NON_TORCH_GIB[era], 1 if custom_all_reduce is False else tp) * GIB)
    forward = int(settings["max_num_batched_tokens"]) * _forward_bytes_per_token(arch, tp)
    kind, alternative = _sampler(version, arch, compute_capability, flashinfer_installed)
    # _dummy_run schedules min(max_num_batched_tokens, max_num_seqs) requests: one logits row each
    rows = min(int(settings["max_num_seqs"]), int(settings["max_num_batched_tokens"]))
    sampler = int(rows * arch.vocab_size * _SAMPLER_BYTES_PER_LOGIT[kind])
    profiled = vision_profiled(arch, settings)
    profile = vision_profile(arch, image_max_pixels, tp) if profiled else None
    multimodal = max(_MULTIMODAL_ALLOWANCE, profile["bytes"] if profile else 0) if profiled else 0
    peak = max(forward, sampler) + multimodal
    cudagraph = 0
    if not settings.get("enforce_eager"):
        layers = _cdiv(arch.num_layers, pipeline_parallel_size)
        capture = int(settings.get("max_cudagraph_capture_size") or 512)
        per_layer = _tp_bucket(_CUDAGRAPH_PER_LAYER_GIB, tp)
        cudagraph = int(layers * per_layer * max(0.25, min(1.0, capture / 512)) * GIB)
    charged = non_torch + peak + (cudagraph if version.cudagraph_memory_charged else 0)
    alternative_charged = None
    alternative_sampler = None
    if alternative is not None:
        alternative_sampler = int(rows * arch.vocab_size * _SAMPLER_BYTES_PER_LOGIT[alternative])
        alternative_charged = charged - peak + max(forward, alternative_sampler) + multimodal
        if alternative_charged > charged:
            # Conservative headline (issue #27): an uncertain term charges its larger end; the other end
            # stays in the KV range.
            kind, alternative = alternative, kind
            sampler, alternative_sampler = alternative_sampler, sampler
            peak = max(forward, sampler) + multimodal
            charged, alternative_charged = alternative_charged, charged
    return {
        "non_torch_bytes": non_torch,
        "forward_peak_bytes": forward,
        "sampler_peak_bytes": sampler,
        "sampler": kind,
        "sampler_alternative": alternative,
        "sampler_alternative_peak_bytes": alternative_sampler,
        "charged_bytes_alternative": alternative_charged,
        "multimodal_bytes": multimodal,
        "vision_profile": profile,
        "activation_peak_bytes": peak,
        "cudagraph_bytes": cudagraph,
        "cudagraph_charged": version.cudagraph_memory_charged,
        "charged_bytes": charged,
    }


# ----------------------------------------------------------------------------------------------------
# Budget


def format_gib(version: VllmVersion, value: int) -> str:
    """A byte count as the release prints GiB: ``%.2f`` before 0.14, ``str(round(x, 2))`` (format_gib) after."""
    return str(round(value / GIB, 2)) if version.kv_memory_log_rounded else f"{value / GIB:.2f}"


def format_capacity_log(version: VllmVersion, kv_cache_tokens: int, max_model_len: int, max_concurrency: float):
    tokens = f"GPU KV cache size: {kv_cache_tokens:,} tokens"
    concurrency = f"Maximum concurrency for {max_model_len:,} tokens per request: {max_concurrency:.2f}x"
    if version.capacity_log_single_line:
        return [f"{tokens}, {concurrency}"]
    return [tokens, concurrency]


def kv_capacity(version: VllmVersion, layout: Mapping, kv_cache_bytes: int) -> Dict[str, Any]:
    """Blocks, "GPU KV cache size" tokens and maximum concurrency for a KV budget and a kv_cache_layout."""
    num_blocks = max(0, int(kv_cache_bytes) // layout["bytes_per_block"])
    concurrency = num_blocks / layout["blocks_per_request"] if layout["blocks_per_request"] else 0.0
    if version.kv_tokens_from_concurrency:
        tokens = int(concurrency * layout["max_model_len"])
    else:
        tokens = num_blocks // len(layout["groups"]) * layout["block_size"]
    return {"num_blocks": num_blocks, "kv_cache_tokens": tokens, "max_concurrency": concurrency}


def sequences_at_length(layout: Mapping, num_blocks: int, length: int) -> int:
    """How many requests of ``length`` tokens (at most the layout's max_model_len) ``num_blocks`` hold at once:
    vLLM admits a request by the blocks it uses in every group. Attention groups need a block per
    ``block_size`` tokens, a sliding window's no more than at full length; a Gated-DeltaNet/Mamba state's
    blocks are the same whatever the length (mamba_cache_mode all: one per block of tokens, plus the drafts')."""
    size, full = int(layout["block_size"]), _cdiv(int(layout["max_model_len"]), int(layout["block_size"]))
    tokens = _cdiv(max(1, min(int(length), int(layout["max_model_len"]))), size)
    per_request = 0
    for group in layout["groups"]:
        blocks = int(group["blocks_per_request"])
        if group["kind"] == LAYER_LINEAR:
            per_request += blocks - full + tokens if layout.get("mamba_cache_mode") == "all" else blocks
        elif group["kind"] == LAYER_SLIDING:
            per_request += min(blocks, tokens + 1)
        else:
            per_request += min(blocks, tokens)
    return int(num_blocks) // per_request if per_request else 0


def _weights(arch: ModelArchitecture, weights: Optional[WeightsEstimate], values: Mapping) -> WeightsEstimate:
    if weights is not None:
        return weights
    return estimate_weights(
        arch,
        include_mtp=bool(values.get("num_speculative_tokens")) and "mtp" in str(values.get("speculative_method")),
        include_vision=not values.get("language_model_only"),
    )


def _validate_layout(arch: ModelArchitecture, tp: int, pp: int, gpu_total_bytes: int) -> None:
    for name, value in (("tensor_parallel_size", tp), ("pipeline_parallel_size", pp)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(gpu_total_bytes, bool) or not isinstance(gpu_total_bytes, int) or gpu_total_bytes <= 0:
        raise ValueError(f"gpu_total_bytes must be a positive integer (bytes per GPU), got {gpu_total_bytes!r}")
    if arch.num_attention_heads % tp:
        raise ValueError(
            f"Total number of attention heads ({arch.num_attention_heads}) must be divisible by tensor parallel "
            f"size ({tp})."
        )
    if pp > arch.num_layers:
        raise ValueError(f"pipeline_parallel_size {pp} exceeds the model's {arch.num_layers} layers")


def _version(value: Any) -> VllmVersion:
    return value if isinstance(value, VllmVersion) else vllm_version(value)


def _auto_fit_length(
    version: VllmVersion, arch: ModelArchitecture, values: Mapping, tp: int, num_blocks, limit: int, **hw
):
    """config/model.py _auto_fit_max_model_len: the longest length up to ``limit`` (the derived max_model_len)
    whose request fits (one block reserved)."""
    low, high, best = 1, limit, 0
    while low <= high:
        mid = (low + high) // 2
        layout = kv_cache_layout(arch, version, values, tp, max_model_len=mid, **hw)
        if layout["blocks_per_request"] <= num_blocks - 1:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def _stage_budgets(arch, version, values, tp, pp, per_rank, requested, overhead, pinned, hw):
    """(KV bytes, layout, kv_capacity) of every pipeline stage; vLLM keeps the smallest block count of all ranks."""
    stages = []
    for stage, (start, end) in enumerate(pp_layer_bounds(arch.num_layers, pp)):
        kv = int(pinned) if pinned is not None else requested - per_rank[stage * tp] - overhead
        layers = arch.layer_types[start:end]
        stage_layout = kv_cache_layout(arch, version, values, tp, layers=layers, include_mtp=stage == pp - 1, **hw)
        stages.append((kv, stage_layout, kv_capacity(version, stage_layout, kv)))
    return stages


def _kv_cache(arch, version, values, tp, pp, per_rank, requested, overhead, hw):
    """``(kv_bytes, layout, capacity, limit)`` of the stage with the fewest blocks (``capacity``: its
    kv_capacity); ``limit``: the derived max_model_len. An "auto" max_model_len in ``values`` is replaced by the
    longest that fits."""
    pinned = values["kv_cache_memory_bytes"]
    probe = dict(values)
    limit = derived_max_model_len(arch, version)
    if probe["max_model_len"] == "auto":
        probe["max_model_len"] = limit
    stages = _stage_budgets(arch, version, probe, tp, pp, per_rank, requested, overhead, pinned, hw)
    kv_bytes, layout, capacity = min(stages, key=lambda stage: (stage[2]["num_blocks"], stage[0]))
    if values["max_model_len"] == "auto":
        fitted = _auto_fit_length(version, arch, probe, tp, capacity["num_blocks"], limit, **hw)
        values["max_model_len"] = probe["max_model_len"] = fitted
        stages = _stage_budgets(arch, version, probe, tp, pp, per_rank, requested, overhead, pinned, hw)
        kv_bytes, layout, capacity = min(stages, key=lambda stage: (stage[2]["num_blocks"], stage[0]))
    return kv_bytes, layout, capacity, limit


def _max_model_len_findings(max_len: int, limit: int) -> List[Dict[str, str]]:
    findings: List[Dict[str, str]] = []
    if max_len > limit:
        message = (
            f"User-specified max_model_len ({max_len}) is greater than the derived max_model_len "
            f"(max_position_embeddings={limit} in model's config.json). To allow "
            "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
        )
        findings.append(_finding("error", "vllm_max_model_len_too_long", message))
    return findings


@dataclasses.dataclass(frozen=True)
class _Start:
    """One start as the budget predicts it, what the findings about it read. ``values``: the resolved settings;
    ``layout``: kv_cache_layout; ``kv_bytes``/``num_blocks``: the KV cache of the worst stage; ``requested``:
    total x gpu_memory_utilization; ``after_start``: in use on the worst GPU after startup; ``model_overhead``:
    overhead_estimate; ``overhead``: the non-KV bytes charged (modelled or measured)."""

    version: VllmVersion
    arch: ModelArchitecture
    values: Mapping[str, Any]
    tp: int
    layout: Mapping[str, Any]
    kv_bytes: int
    num_blocks: int
    requested: int
    gpu_total_bytes: int
    after_start: int
    model_overhead: Mapping[str, Any]
    overhead: int
    measured_overhead_bytes: Optional[int]

    @property
    def modelled(self) -> bool:
        """The KV cache follows the modelled overhead: not measured on the host, not pinned in bytes."""
        return self.measured_overhead_bytes is None and self.values["kv_cache_memory_bytes"] is None


def _start_findings(start: _Start) -> Tuple[List[Dict[str, str]], List[int]]:
    """The findings about the start (memory, the sampler's uncertain warm-up, vision profiling, prefill) and the
    range of the KV cache size ``[low, high]``."""
    findings: List[Dict[str, str]] = []
    memory = _memory_findings(start)
    kv_bytes, model_overhead = start.kv_bytes, start.model_overhead
    kv_range = [kv_bytes, kv_bytes]
    alternative = model_overhead["charged_bytes_alternative"]
    uncertain = None
    if alternative is not None and start.modelled:
        # The headline charges the uncertain term's larger end (conservative); the other end is the range's
        # top. Where only that end starts, the start depends on the term: a warning, not an error.
        alternative_kv = kv_bytes - (alternative - start.overhead)
        kv_range = sorted([kv_bytes, alternative_kv])
        blocks = kv_capacity(start.version, start.layout, alternative_kv)["num_blocks"]
        other = _memory_findings(dataclasses.replace(start, kv_bytes=alternative_kv, num_blocks=blocks))
        fails = _has_error(memory) and not _has_error(other)
        if fails:
            memory = other
        uncertain = _sampler_finding(
            start.version, start.arch, start.values, start.layout, model_overhead, kv_bytes, alternative_kv, fails
        )
    findings.extend(memory)
    if uncertain is not None:
        findings.append(uncertain)
    if model_overhead["vision_profile"] and start.modelled:
        findings.append(_vision_finding(model_overhead))
    findings.extend(_prefill_findings(start))
    return findings, kv_range


def _weights_report(per_rank, loaded, overhead, measured_overhead_bytes, model_overhead) -> Dict[str, Any]:
    """The weights and non-KV overhead part of the budget."""
    return {
        "weights_bytes": max(per_rank),
        "weights_gib": max(per_rank) / GIB,
        "weights_per_rank_bytes": per_rank,
        "weights_total_bytes": loaded.total_bytes,
        "weights_source": loaded.source,
        "overhead_bytes": overhead,
        "overhead_gib": overhead / GIB,
        "overhead_source": "model" if measured_overhead_bytes is None else "measured",
        "overhead": model_overhead,
    }


def _vram_after_start(version, per_rank, overhead, kv_bytes, model_overhead) -> int:
    """Memory in use on the worst GPU after startup, CUDA graphs included."""
    cudagraph = model_overhead["cudagraph_bytes"]
    after_start = max(per_rank) + overhead + max(kv_bytes, 0)
    if not version.cudagraph_memory_charged:
        after_start += cudagraph
    return after_start


def _kv_report(version, layout, kv_bytes, pinned, kv_range, num_blocks, capacity, max_len) -> Dict[str, Any]:
    """The KV cache part of the budget, with the log lines the release prints about it."""
    kv_source = "kv_cache_memory_bytes" if pinned is not None else "profiled"
    tokens, concurrency = capacity["kv_cache_tokens"], capacity["max_concurrency"]
    return {
        "kv_cache_bytes": kv_bytes,
        "kv_cache_gib": kv_bytes / GIB,
        "kv_cache_source": kv_source,
        "kv_cache_range_bytes": kv_range,
        "layout": layout,
        "block_size": layout["block_size"],
        "num_blocks": num_blocks,
        "kv_cache_tokens": tokens,
        "max_concurrency": concurrency,
        "max_model_len": max_len,
        "log_lines": [
            f"Available KV cache memory: {format_gib(version, kv_bytes)} GiB",
            *format_capacity_log(version, tokens, max_len, concurrency),
        ],
    }


def vllm_memory_budget(
    arch: ModelArchitecture,
    vllm_version: Any,
    gpu_total_bytes: int,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    weights: Optional[WeightsEstimate] = None,
    settings: Optional[Mapping] = None,
    **hardware: Any,
) -> Dict[str, Any]:
    """Full per-GPU budget of one layout, as the pinned vLLM release computes and logs it (a plain dict whose
    keys the module's docstring lists). ``vllm_version``: its text or its VllmVersion; ``weights``: None
    estimates them from the architecture and the settings; ``hardware``: memory_budget's keywords (gpu_name,
    compute_capability, cuda_runtime, measured_overhead_bytes, flashinfer_installed, image_max_pixels,
    custom_all_reduce). The planner, which holds the version and the weights, asks ``memory_budget``."""
    version = _version(vllm_version)
    _validate_layout(arch, tensor_parallel_size, pipeline_parallel_size, gpu_total_bytes)
    values = _resolved(settings)
    return memory_budget(
        arch,
        version,
        gpu_total_bytes,
        _weights(arch, weights, values),
        values,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        **hardware,
    )


def memory_budget(
    arch: ModelArchitecture,
    version: VllmVersion,
    gpu_total_bytes: int,
    loaded: WeightsEstimate,
    settings: Mapping[str, Any],
    *,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    gpu_name: str = "",
    compute_capability: Optional[str] = None,
    cuda_runtime: Optional[str] = None,
    measured_overhead_bytes: Optional[int] = None,
    flashinfer_installed: Optional[bool] = None,
    image_max_pixels: Optional[int] = None,
    custom_all_reduce: Optional[bool] = None,
) -> Dict[str, Any]:
    """vllm_memory_budget of the release ``version`` with the weights the engine loads (``loaded``): what the
    planner asks, the release and the weights resolved once per plan."""
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    _validate_layout(arch, tp, pp, gpu_total_bytes)
    values = _resolved(settings)
    hw = {"compute_capability": compute_capability, "cuda_runtime": cuda_runtime}
    per_rank = weights_per_rank(arch, loaded, tp, pp)
    model_overhead = overhead_estimate(
        arch, version, values, tp, pp, compute_capability, flashinfer_installed, image_max_pixels, custom_all_reduce
    )
    overhead = model_overhead["charged_bytes"] if measured_overhead_bytes is None else int(measured_overhead_bytes)
    requested = math.ceil(gpu_total_bytes * float(values["gpu_memory_utilization"]))
    pinned = values["kv_cache_memory_bytes"]
    kv_bytes, layout, capacity, limit = _kv_cache(arch, version, values, tp, pp, per_rank, requested, overhead, hw)
    num_blocks = capacity["num_blocks"]
    max_len = int(values["max_model_len"])
    findings = _max_model_len_findings(max_len, limit)
    after_start = _vram_after_start(version, per_rank, overhead, kv_bytes, model_overhead)
    start = _Start(
        version=version,
        arch=arch,
        values=values,
        tp=tp,
        layout=layout,
        kv_bytes=kv_bytes,
        num_blocks=num_blocks,
        requested=requested,
        gpu_total_bytes=gpu_total_bytes,
        after_start=after_start,
        model_overhead=model_overhead,
        overhead=overhead,
        measured_overhead_bytes=measured_overhead_bytes,
    )
    start_findings, kv_range = _start_findings(start)
    findings.extend(start_findings)
    return {
        "vllm_version": version.text,
        "settings": values,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "gpu_total_bytes": gpu_total_bytes,
        "gpu_total_gib": gpu_total_bytes / GIB,
        "requested_bytes": requested,
        "requested_gib": requested / GIB,
        **_weights_report(per_rank, loaded, overhead, measured_overhead_bytes, model_overhead),
        **_kv_report(version, layout, kv_bytes, pinned, kv_range, num_blocks, capacity, max_len),
        "vram_used_bytes": after_start,
        "vram_used_gib": after_start / GIB,
        "findings": findings,
    }


def _finding(severity: str, ident: str, message: str) -> Dict[str, str]:
    return {"id": ident, "severity": severity, "message": message}


def _has_error(findings: Sequence[Mapping[str, str]]) -> bool:
    return any(f["severity"] == "error" for f in findings)


def _sampler_finding(version, arch, values, layout, overhead, kv_bytes, alternative_kv, fails) -> Dict[str, str]:
    """The sampler warm-up of releases up to 0.11.0 depends on whether flashinfer is installed; ``fails``:
    the headline (larger warm-up) leaves too little KV cache to start, the other end does not."""
    rows = min(int(values["max_num_seqs"]), int(values["max_num_batched_tokens"]))
    names = {"native": "the PyTorch-native warm-up", "flashinfer": "FlashInfer's warm-up"}
    message = (
        f"uncertain overhead term: vLLM {version.text} warms up FlashInfer's top-k/top-p sampler only when the "
        "flashinfer package is installed and imports (the PyPI wheel has it only as the vllm[flashinfer] "
        "extra), which the plan cannot see; it budgets the larger warm-up, "
        f"{names[overhead['sampler']]}: {overhead['sampler_peak_bytes'] / GIB:.2f} GiB over {rows} x "
        f"{arch.vocab_size} logits, so that the KV cache is not promised larger than the engine gives. With "
        f"{names[overhead['sampler_alternative']]} ({overhead['sampler_alternative_peak_bytes'] / GIB:.2f} GiB) "
        f"the KV cache is {alternative_kv / GIB:.2f} GiB instead of {kv_bytes / GIB:.2f} GiB per GPU"
    )
    if fails:
        per_row = overhead["sampler_peak_bytes"] / max(1, rows)
        spare = overhead["sampler_peak_bytes"] + kv_bytes - layout["blocks_per_request"] * layout["bytes_per_block"]
        seqs = max(1, int(max(spare, 0) // per_row))
        message += (
            f"; {names[overhead['sampler']]} leaves too little to start: install flashinfer in the vLLM "
            f"environment (vllm[flashinfer]) or lower max_num_seqs (about {min(seqs, rows)} fits)"
        )
    return _finding("warning" if fails else "info", "vllm_overhead_uncertain", message + ".")


def _vision_finding(overhead: Mapping[str, Any]) -> Dict[str, str]:
    """The encoder profile is charged at the processor's pixel limit; its bytes per patch are an estimate."""
    profile = overhead["vision_profile"]
    if profile["pixels_source"] == "checkpoint":
        source = "the checkpoint's image processor"
    else:
        source = (
            f"the family's published value, {profile['pixels_source']}; inferops_model.config_file in the "
            "checkpoint's directory lets the plan read the checkpoint's own"
        )
    message = (
        f"estimated overhead term: the multimodal encoder profile (one dummy image of {profile['pixels']:,} pixels, "
        f"from {source}) is charged at {overhead['multimodal_bytes'] / GIB:.2f} GiB: {profile['patches']:,} patches "
        f"x {profile['bytes_per_patch']:,} bytes, the vision MLP's peak per rank in bf16 (pixel values, deepstack "
        "features and allocator rounding are not charged); vllm_language_model_only: true "
        "(or vllm_limit_mm_per_prompt: {image: 0, video: 0}) removes the term"
    )
    return _finding("info", "vllm_vision_profile_uncertain", message + ".")


# Gated-DeltaNet chunked prefill (fla/ops chunk_gated_delta_rule_fwd) per scheduled token of one rank, per
# value head: w, u, v_new and o in bf16 over the head width (4 x 2 B x V), the solved bf16 A matrix over
# the 64-token chunk (64 x 2 B) and the per-chunk state h (K x V x 2 B every 64 tokens); per key head the
# l2-normalised q and k copies (2 x 2 B x K); and the causal conv1d output over the conv dim (2 B each).
_GDN_CHUNK = 64


def gdn_prefill_transient_bytes(arch: ModelArchitecture, num_tokens: int, tensor_parallel_size: int = 1) -> int:
    """Transient memory of one Gated-DeltaNet layer's chunked prefill over ``num_tokens`` on one rank.

    vLLM's profile run does not execute it: the layer's ``_forward``/``_forward_core`` returns at
    ``if attn_metadata is None:  # V1 profile run`` (qwen3_next.py, and the Qwen3.5/3.6 GDN layers), so
    the memory profiler never charges it and it must fit in what the budget leaves outside the KV cache.
    """
    if not arch.is_hybrid or not arch.linear_num_value_heads:
        return 0
    tp = tensor_parallel_size
    heads = max(1, arch.linear_num_value_heads // tp)
    k, v = arch.linear_key_head_dim, arch.linear_value_head_dim
    key_heads = max(1, arch.linear_num_key_heads // tp)
    per_value_head = 4 * 2 * v + _GDN_CHUNK * 2 + _cdiv(k * v * 2, _GDN_CHUNK)
    conv_dim = (k * arch.linear_num_key_heads * 2 + v * arch.linear_num_value_heads) // tp
    return int(num_tokens) * (heads * per_value_head + key_heads * 2 * 2 * k + conv_dim * 2)


# CUDA context, cuBLAS/cuDNN handles and the allocator's fragmentation live outside the budget vLLM sizes
# (created before its memory snapshot): 0.3-0.5 GiB on the logs that show nvidia-smi beside vLLM's figures.
_OUTSIDE_BUDGET = int(0.5 * GIB)


def _prefill_findings(start: _Start) -> List[Dict[str, str]]:
    """A long prefill whose unprofiled Gated-DeltaNet transient exceeds the memory left outside the budget."""
    tokens = int(start.values["max_num_batched_tokens"])
    transient = gdn_prefill_transient_bytes(start.arch, tokens, start.tp)
    if not transient:
        return []
    graphs = 0 if start.version.cudagraph_memory_charged else start.model_overhead["cudagraph_bytes"]
    headroom = start.gpu_total_bytes - start.requested - graphs - _OUTSIDE_BUDGET
    if transient <= headroom:
        return []
    per_token = transient / tokens
    fitting = max(0, int(max(headroom, 0) // per_token)) // 256 * 256
    message = (
        f"a prefill chunk of max_num_batched_tokens ({tokens}) makes each Gated-DeltaNet layer allocate about "
        f"{transient / GIB:.2f} GiB that vLLM's profile run does not measure (the layer returns early when "
        f"profiling), and only {max(headroom, 0) / GIB:.2f} GiB per GPU is left outside gpu_memory_utilization: "
        "the first long prompt can run out of memory after a clean start. Lower max_num_batched_tokens "
        f"(about {max(fitting, 256)} fits) or gpu_memory_utilization"
    )
    return [_finding("warning", "vllm_gdn_prefill_unprofiled", message + ".")]


def _memory_findings(start: _Start) -> List[Dict[str, str]]:
    """Startup failures and risks the budget predicts, with vLLM's own message where it has one."""
    version, arch, values, layout = start.version, start.arch, start.values, start.layout
    kv_bytes, num_blocks = start.kv_bytes, start.num_blocks
    gpu_total, after_start = start.gpu_total_bytes, start.after_start
    found = []
    max_len, kv_gib = int(values["max_model_len"]), kv_bytes / GIB
    if kv_bytes <= 0:
        message = (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            f"initializing the engine (predicted KV budget {kv_gib:.2f} GiB per GPU)."
        )
        found.append(_finding("error", "vllm_no_kv_cache_memory", message))
    elif num_blocks - 1 < layout["blocks_per_request"]:
        needed = layout["blocks_per_request"] * layout["bytes_per_block"] / GIB
        message = (
            f"To serve at least one request with the model's max seq len ({max_len}), ({needed:.2f} GiB KV "
            f"cache is needed, which is larger than the available KV cache memory ({kv_gib:.2f} GiB). Try "
            "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
        )
        found.append(_finding("error", "vllm_kv_cache_too_small", message))
    align = arch.is_hybrid and values.get("mamba_cache_mode") == "align"
    if align and version.align_block_size_assert and layout["block_size"] > int(values["max_num_batched_tokens"]):
        message = (
            f"In Mamba cache align mode, block_size ({layout['block_size']}) must be <= "
            f"max_num_batched_tokens ({values['max_num_batched_tokens']})."
        )
        found.append(_finding("error", "vllm_align_block_size", message))
    graphs = version.mamba_blocks_cudagraph_error and not values.get("enforce_eager")
    if arch.is_hybrid and graphs and 0 < num_blocks < int(values["max_num_seqs"]):
        message = (
            f"max_num_seqs ({values['max_num_seqs']}) exceeds available Mamba cache blocks ({num_blocks}). Each "
            "decode sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
            f"max_num_seqs to at most {num_blocks} or increase gpu_memory_utilization."
        )
        found.append(_finding("error", "vllm_mamba_blocks_below_max_num_seqs", message))
    left = (gpu_total - after_start) / GIB
    if left < 0:
        message = f"predicted use after startup {after_start / GIB:.2f} GiB exceeds the GPU's {gpu_total / GIB:.2f} GiB"
        found.append(_finding("error", "vllm_exceeds_gpu_memory", message))
    elif not version.cudagraph_memory_charged and left < 0.3:
        message = (
            f"only {left:.2f} GiB left after CUDA-graph capture (captured after the KV cache in this release): "
            "lower gpu_memory_utilization if startup runs out of memory"
        )
        found.append(_finding("warning", "vllm_cudagraph_headroom", message))
    if values["kv_cache_memory_bytes"] is not None:
        message = (
            f"kv_cache_memory_bytes pins the KV cache at {kv_gib:.2f} GiB; vLLM still requires "
            f"{start.requested / GIB:.2f} GiB free at startup (gpu_memory_utilization x total)."
        )
        found.append(_finding("info", "vllm_kv_cache_memory_bytes", message))
    return found
