# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""VRAM budget of a GGUF model served by a pinned Ollama version.

Public API (plain dicts in, plain dicts out; no Ansible imports):

``ollama_budget(resolution, model, gpus, *, weights_bytes, projector_bytes=0) -> dict``

* ``model``: a ``GgufShape`` mapping (see ``GGUF_SHAPE_KEYS``), built by ``shape_from_architecture()``
  (or ``_model/gguf.py shape_from_gguf`` from the GGUF header itself, when the plan reads it) from the collection's
  ``ModelArchitecture`` (module_utils/model_arch.py) for a catalogued base model;
  ``architecture_from_shape()`` goes the other way, for a GGUF whose header the plan read.
* ``gpus``: sequence of ``{"index": int, "memory_total_bytes": int}`` (optionally
  ``"compute_capability": "8.6"``), in CUDA_VISIBLE_DEVICES order.
* ``weights_bytes``: the GGUF file size (all of it is counted on the GPUs that hold layers: the
  token embedding that llama.cpp keeps on the host is small and counting it errs on the safe side),
  ``projector_bytes``: an mmproj file offloaded beside it.
* ``resolution``: an ``OllamaSettings`` resolved by ``_engines/ollama/settings.py`` (``resolve_ollama_settings``)
  for these GPUs: the values (the budget never picks a default; only num_gpu and num_batch, which Ollama
  itself sizes from memory, may be None), the release tuple ``(0, 32, 9)`` parsed once and its era, and each
  GPU's memory.

Returns ``{"engine_version", "era", "settings", "setting_sources", "memory", "per_gpu", "layers",
"checks", "ollama_predicted_bytes"}`` where ``memory`` holds bytes and GiB (2^30) figures:
``weights_bytes``, ``kv_cache_bytes`` (attention KV), ``recurrent_state_bytes``, ``compute_bytes``,
``reserve_bytes``, ``vram_used_bytes``/``vram_used_gib`` (sum over the GPUs used),
``gpu_total_gib``, ``kv_cache_tokens`` (context_length x num_parallel) and ``max_concurrency``
(num_parallel); ``per_gpu`` is a list of ``{"index", "layers", "weights_bytes", "kv_cache_bytes",
"recurrent_state_bytes", "compute_bytes", "reserve_bytes", "used_bytes", "used_gib", "total_gib",
"free_gib"}``; ``checks`` is a list of ``{"id", "severity", "message"}``. Invalid input raises
``OllamaBudgetError`` naming the inventory variable.

``coresidency_checks(ollama_result, vllm_reserved_bytes, gpu_total_bytes) -> list``: the
``ollama-coresidency`` warning per GPU where vLLM's reservation plus the Ollama model
exceed the card (Ollama on standby beside vLLM, seed deployment 1).

What each Ollama version does (traced to ollama/ollama; see docs/ollama.md):

* < 0.9.7: unsupported here (OLLAMA_NUM_PARALLEL defaulted to 4 or 1 by free memory).
* 0.9.7 .. 0.12.10 (era "estimate"): llm/memory.go packs layers from the top down with its own
  estimate; a quantized OLLAMA_KV_CACHE_TYPE without flash attention falls back to f16.
* 0.12.11 .. 0.2x (era "runner_layout"): the runner measures and commits the layout; same KV rule.
* >= 0.30.0 (era "llama_server"): upstream llama-server with ``-c num_ctx*num_parallel -np
  num_parallel --cache-type-k/v T --flash-attn on|off|auto`` and ``-ngl num_gpu`` only when set;
  otherwise llama.cpp ``--fit`` keeps 1024 MiB free per GPU. A quantized V cache without flash
  attention makes llama.cpp refuse to start.
* Forced single sequence ("model architecture does not currently support parallel requests",
  server/sched.go): mllama (0.7.0+), qwen3vl/qwen3vlmoe (0.12.7+), qwen3next/lfm2/lfm2moe
  (0.15.5+), qwen35/qwen35moe/nemotron_h/nemotron_h_moe (0.17.1+), nemotron_h_omni (0.30.0+).
* Default context (OLLAMA_CONTEXT_LENGTH unset): 4096 before 0.15.5; from 0.15.5 by total VRAM:
  >= 47 GiB -> 262144, >= 23 GiB -> 32768, else 4096; clamped to the GGUF context_length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.units import GIB, MIB
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import VersionError, release_tuple
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import (
    FORCED_SINGLE_PARALLEL,
    first_release_with,
    release_record,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import (
    LAYER_FULL,
    LAYER_LINEAR,
    LAYER_SLIDING,
    ModelArchitecture,
)

#: The per-release facts (eras, default context, first releases) are the release records (releases.json).
QWEN35_SUPPORT = first_release_with("qwen35")
#: Architectures whose GGUF Ollama enables flash attention for by default (fs/ggml FlashAttention()).
FLASH_ATTENTION_DEFAULT_ARCHS = frozenset(
    {
        "gemma3",
        "gemma3n",
        "gemma4",
        "gptoss",
        "gpt-oss",
        "qwen3",
        "qwen3moe",
        "qwen35",
        "qwen35moe",
        "qwen3next",
        "qwen3vl",
        "qwen3vlmoe",
        "mistral3",
        "lfm2",
        "lfm2moe",
        "nemotron_h",
        "nemotron_h_moe",
        "olmo3",
        "glm4moelite",
        "bert",
    }
)
#: Bytes per KV element as llama.cpp allocates them (ggml block sizes: q8_0 34/32, q4_0 18/32).
KV_BYTES_PER_ELEMENT = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
#: CUDA context and cuBLAS workspace per GPU: Ollama's own per-GPU minimum (llm/memory.go).
CUDA_MINIMUM_BYTES = 457 * MIB
#: llama.cpp --fit default margin (LLAMA_ARG_FIT_TARGET), kept free on each GPU when -ngl is unset.
FIT_TARGET_BYTES = 1024 * MIB
KV_CELL_PADDING = 256
DEFAULT_UBATCH = 512

GGUF_SHAPE_KEYS = (
    "architecture",  # GGUF general.architecture, e.g. "qwen35moe"
    "block_count",
    "embedding_length",
    "head_count",
    "head_count_kv",  # int, or a per-layer list where 0 marks a recurrent layer
    "key_length",
    "value_length",
    "vocab_size",
    "context_length",  # trained context (num_ctx is clamped to it)
    "feed_forward_length",
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
    "expert_shared_feed_forward_length",
    "sliding_window",  # 0 when none
    "sliding_window_layers",  # list of layer indices using the window
    "recurrent_layers",  # list of layer indices without attention KV (GDN/Mamba)
    "ssm_conv_kernel",
    "ssm_state_size",
    "ssm_group_count",
    "ssm_inner_size",
    "ssm_time_step_rank",  # Gated-DeltaNet value heads (0 in header records read before it was kept)
    "layer_bytes",  # optional: per-layer tensor bytes from the GGUF tensor table
    "output_bytes",  # optional: output.weight (or tied token_embd) + output_norm bytes
    "input_bytes",  # optional: token_embd bytes (kept on the host by llama.cpp)
)


# What the budget reads, resolved (num_gpu and num_batch may be None: Ollama sizes them from memory).
RESOLVED_SETTINGS = (
    "context_length",
    "num_parallel",
    "kv_cache_type",
    "flash_attention",
    "num_gpu",
    "num_batch",
    "gpu_overhead_bytes",
    "sched_spread",
)


class OllamaBudgetError(ValueError):
    """Input that no Ollama version accepts; the message names the variable and the fix."""


@dataclass
class OllamaSettings:
    """Every Ollama setting as ``settings.resolve_ollama_settings`` resolved it, what the budget takes.

    values: what Ollama runs with; sources: inventory, default or what Ollama derived (in words); checks: what
    the derivations mean for the user (``{id, severity, message}``); version and era: the release, parsed once
    by the resolver, and its era; totals: each GPU's memory in bytes, in the order of the GPUs it was given.
    """

    values: Dict[str, Any] = field(default_factory=dict)
    sources: Dict[str, str] = field(default_factory=dict)
    checks: List[Dict[str, str]] = field(default_factory=list)
    version: Tuple[int, int, int] = (0, 0, 0)
    era: str = ""
    totals: List[int] = field(default_factory=list)


def parse_version(version: str) -> Tuple[int, int, int]:
    """'0.32.9', 'v0.30.0-rc2' -> (0, 32, 9); raises OllamaBudgetError naming ollama_version."""
    try:
        major, minor, patch = release_tuple(version, variable="ollama_version", example="'0.32.9'", suffix="-")
    except VersionError as error:
        raise OllamaBudgetError(f"{error} (X.Y.Z)") from error
    return major, minor, patch


def era_of(version: Tuple[int, int, int]) -> str:
    return str(release_record(version)["era"])


def forced_single_parallel(architecture: str, version: Tuple[int, int, int]) -> bool:
    since = FORCED_SINGLE_PARALLEL.get(architecture)
    return since is not None and version >= since


def default_context_length(version: Tuple[int, int, int], total_vram_bytes: int, gpu_overhead_bytes: int) -> int:
    if not release_record(version)["tiered_default_context"]:
        return 4096
    usable = total_vram_bytes - gpu_overhead_bytes
    if usable >= 47 * GIB:
        return 262144
    if usable >= 23 * GIB:
        return 32768
    return 4096


def flash_attention_supported(gpus: Sequence[Mapping[str, Any]]) -> bool:
    """ml.FlashAttentionSupported for CUDA: compute capability >= 6.0, except 7.2 (Jetson Xavier)."""
    for gpu in gpus:
        cc = str(gpu.get("compute_capability") or "")
        if not cc:
            continue
        major, _dot, minor = cc.partition(".")
        value = (int(major), int(minor or 0))
        if value < (6, 0) or value == (7, 2):
            return False
    return True


# --------------------------------------------------------------------------------------- shapes


def _per_layer_kv_heads(shape: Mapping[str, Any]) -> List[int]:
    blocks = int(shape["block_count"])
    heads_kv = shape.get("head_count_kv")
    if isinstance(heads_kv, Sequence) and not isinstance(heads_kv, str):
        per_layer = [int(h) for h in heads_kv]
        if len(per_layer) != blocks:
            raise OllamaBudgetError(f"inferops_model: head_count_kv has {len(per_layer)} entries for {blocks} layers")
    else:
        per_layer = [int(heads_kv or 0)] * blocks
    for index in shape.get("recurrent_layers") or ():
        per_layer[int(index)] = 0
    return per_layer


def recurrent_state_bytes_per_sequence(shape: Mapping[str, Any]) -> int:
    """F32 conv + SSM state of all recurrent layers for one sequence (llama.cpp n_embd_r + n_embd_s)."""
    recurrent = sum(1 for h in _per_layer_kv_heads(shape) if h == 0)
    if not recurrent:
        return 0
    conv = int(shape.get("ssm_conv_kernel") or 0)
    state = int(shape.get("ssm_state_size") or 0)
    inner = int(shape.get("ssm_inner_size") or 0)
    groups = int(shape.get("ssm_group_count") or 0)
    n_embd_r = (conv - 1) * (inner + 2 * groups * state) if conv > 0 else 0
    n_embd_s = state * inner
    return recurrent * (n_embd_r + n_embd_s) * 4


def _pad(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def kv_cells(shape: Mapping[str, Any], layer: int, total_context: int, num_parallel: int, ubatch: int) -> int:
    """Cells llama.cpp allocates for one attention layer (SWA layers: window per sequence + ubatch)."""
    window = int(shape.get("sliding_window") or 0)
    if window and layer in {int(i) for i in shape.get("sliding_window_layers") or ()}:
        return min(total_context, _pad(window * num_parallel + ubatch, KV_CELL_PADDING))
    return total_context


def kv_bytes_per_layer(
    shape: Mapping[str, Any], total_context: int, num_parallel: int, ubatch: int, kv_cache_type: str
) -> List[int]:
    per_element = KV_BYTES_PER_ELEMENT[kv_cache_type]
    key_length = int(shape.get("key_length") or 0)
    value_length = int(shape.get("value_length") or 0)
    out = []
    for layer, heads_kv in enumerate(_per_layer_kv_heads(shape)):
        if heads_kv == 0:
            out.append(0)
            continue
        cells = kv_cells(shape, layer, total_context, num_parallel, ubatch)
        out.append(math.ceil(cells * (key_length + value_length) * heads_kv * per_element))
    return out


def compute_buffer_bytes(shape: Mapping[str, Any], ubatch: int, total_context: int, flash_attention: bool) -> int:
    """Estimate of llama.cpp's compute buffer per GPU for one ubatch (errs high, see docs/ollama.md).

    The graph allocator reuses memory between stages, so the buffer is the larger of the output
    stage (logits for every token of the ubatch, f32) and one layer's working set (hidden states,
    FFN or routed-expert activations, GDN projections, and the f32 attention score matrix when
    flash attention is off).
    """
    embd = int(shape.get("embedding_length") or 0)
    heads = int(shape.get("head_count") or 0)
    head_dim = int(shape.get("value_length") or 0) or (embd // max(heads, 1))
    if int(shape.get("expert_count") or 0):
        ffn = int(shape.get("expert_used_count") or 0) * int(shape.get("expert_feed_forward_length") or 0)
        ffn += int(shape.get("expert_shared_feed_forward_length") or 0) + int(shape.get("expert_count") or 0)
    else:
        ffn = int(shape.get("feed_forward_length") or 0)
    attention = heads * head_dim * 3 if flash_attention else heads * (head_dim + total_context)
    gdn = 6 * int(shape.get("ssm_inner_size") or 0)
    layer_stage = 4 * ubatch * (4 * embd + 3 * ffn + attention + gdn)
    output_stage = 4 * ubatch * (embd + int(shape.get("vocab_size") or 0))
    return max(layer_stage, output_stage)


# ------------------------------------------------------------------------------- GGUF and shapes

#: Hugging Face model_type -> GGUF general.architecture written by convert_hf_to_gguf.py.
GGUF_ARCH_BY_MODEL_TYPE = {
    "qwen3_5_moe": "qwen35moe",
    "qwen3_5_moe_text": "qwen35moe",
    "qwen3_5": "qwen35",
    "qwen3_5_text": "qwen35",
    "qwen3_next": "qwen3next",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3moe",
    "qwen2": "qwen2",
    "llama": "llama",
    "mistral": "llama",
    "mistral3": "mistral3",
    "gemma3": "gemma3",
    "gemma3_text": "gemma3",
    "gpt_oss": "gptoss",
    "deepseek_v3": "deepseek2",
}


def shape_from_architecture(arch: Any) -> Dict[str, Any]:
    """GgufShape from the collection's ``ModelArchitecture`` (model_arch.py) of the base model,
    for a GGUF whose header is not on the controller."""
    types = list(arch.layer_types)
    value_heads = arch.linear_num_value_heads or 0
    key_heads = arch.linear_num_key_heads or 0
    return {
        "architecture": GGUF_ARCH_BY_MODEL_TYPE.get(arch.model_type, arch.model_type),
        "block_count": arch.num_layers,
        "embedding_length": arch.hidden_size,
        "head_count": arch.num_attention_heads,
        "head_count_kv": arch.num_kv_heads,
        "key_length": arch.head_dim,
        "value_length": arch.head_dim,
        "vocab_size": arch.vocab_size,
        "context_length": arch.max_position_embeddings,
        "feed_forward_length": arch.intermediate_size or 0,
        "expert_count": arch.num_experts,
        "expert_used_count": arch.num_experts_per_tok,
        "expert_feed_forward_length": arch.moe_intermediate_size or 0,
        "expert_shared_feed_forward_length": arch.shared_expert_intermediate_size or 0,
        "sliding_window": arch.sliding_window or 0,
        "sliding_window_layers": [i for i, t in enumerate(types) if t == LAYER_SLIDING],
        "recurrent_layers": [i for i, t in enumerate(types) if t == LAYER_LINEAR],
        # llama.cpp's GGUF names for the Gated-DeltaNet dimensions (convert_hf_to_gguf.py)
        "ssm_conv_kernel": arch.linear_conv_kernel_dim or 0,
        "ssm_state_size": arch.linear_key_head_dim or 0,
        "ssm_group_count": key_heads,
        "ssm_inner_size": value_heads * (arch.linear_value_head_dim or 0),
        "ssm_time_step_rank": value_heads,
    }


def architecture_from_shape(shape: Mapping[str, Any]) -> ModelArchitecture:
    """The collection's ``ModelArchitecture`` of a GGUF file from its header's shape (``shape_from_gguf``):
    what the report, the checks and the speed model read when the plan has the file's own header. The
    architecture is the header's ``general.architecture`` (llama.cpp's name, e.g. ``qwen3moe``); the
    model_type is the Hugging Face one it was converted from, where GGUF_ARCH_BY_MODEL_TYPE names it. The
    inverse of shape_from_architecture (convert_hf_to_gguf.py writes the Gated-DeltaNet dimensions as
    ssm.conv_kernel, ssm.state_size = key head dim, ssm.group_count = key heads, ssm.time_step_rank = value
    heads, ssm.inner_size = value heads x value head dim)."""
    name = str(shape.get("architecture") or "")
    blocks = int(shape.get("block_count") or 0)
    heads = int(shape.get("head_count") or 0)
    kv_heads = shape.get("head_count_kv")
    if isinstance(kv_heads, Sequence) and not isinstance(kv_heads, str):
        kv_heads = max((int(h) for h in kv_heads), default=0)  # per layer: 0 on the recurrent ones
    sliding, recurrent = set(shape.get("sliding_window_layers") or ()), set(shape.get("recurrent_layers") or ())
    config: Dict[str, Any] = {
        "architectures": [name],
        "model_type": next((t for t, arch in GGUF_ARCH_BY_MODEL_TYPE.items() if arch == name.replace("-", "")), name),
        "num_hidden_layers": blocks,
        "num_attention_heads": heads,
        "num_key_value_heads": int(kv_heads or heads),
        "head_dim": int(shape.get("key_length") or 0) or None,
        "hidden_size": int(shape.get("embedding_length") or 0),
        "vocab_size": int(shape.get("vocab_size") or 0),
        "max_position_embeddings": int(shape.get("context_length") or 0),
        "intermediate_size": int(shape.get("feed_forward_length") or 0) or None,
        "num_experts": int(shape.get("expert_count") or 0),
        "num_experts_per_tok": int(shape.get("expert_used_count") or 0),
        "moe_intermediate_size": int(shape.get("expert_feed_forward_length") or 0) or None,
        "shared_expert_intermediate_size": int(shape.get("expert_shared_feed_forward_length") or 0) or None,
        "sliding_window": int(shape.get("sliding_window") or 0) or None,
        "layer_types": [
            LAYER_LINEAR if i in recurrent else LAYER_SLIDING if i in sliding else LAYER_FULL for i in range(blocks)
        ],
    }
    state = int(shape.get("ssm_state_size") or 0)
    # A header record kept before ssm_time_step_rank was read: value head dim = key head dim (128 in every
    # Qwen3-Next / Qwen3.5 config), so the value heads are the inner size over it.
    value_heads = int(shape.get("ssm_time_step_rank") or 0) or (
        int(shape.get("ssm_inner_size") or 0) // state if state else 0
    )
    if recurrent:
        config.update(
            mamba_ssm_dtype="float32",  # llama.cpp keeps the recurrent state in f32
            linear_conv_kernel_dim=int(shape.get("ssm_conv_kernel") or 0),
            linear_key_head_dim=state,
            linear_num_key_heads=int(shape.get("ssm_group_count") or 0),
            linear_num_value_heads=value_heads or None,
            linear_value_head_dim=int(shape.get("ssm_inner_size") or 0) // value_heads if value_heads else None,
        )
    try:
        return ModelArchitecture.from_config(config)
    except ValueError as error:  # a header without a size the plan needs (read as a config.json)
        raise OllamaBudgetError(
            f"inferops_model.file: the GGUF header ({name}) does not describe a model: {error}"
        ) from error


def predict_server_vram(shape: Mapping[str, Any], weights_bytes: int, total_context: int) -> int:
    """Ollama's own pre-load prediction (llm PredictServerVRAM, 0.30+): file size plus an f16 KV
    guess over all layers, used to pick the batch size and to decide evictions."""
    heads_kv = shape.get("head_count_kv")
    if isinstance(heads_kv, Sequence) and not isinstance(heads_kv, str):
        heads_kv = min(int(h) for h in heads_kv) if heads_kv else 0
    heads_kv = int(heads_kv or 0) or 1
    heads = int(shape.get("head_count") or 0)
    head_dim = int(shape.get("embedding_length") or 0) // heads if heads else 0
    return weights_bytes + 2 * int(shape["block_count"]) * heads_kv * head_dim * total_context * 2


def automatic_batch(
    era: str, total_context: int, predicted: int, available: int, flash_attention: bool, smallest_gpu: int
) -> int:
    """num_batch Ollama picks when the Modelfile sets none (server/sched.go, 0.30+; 512 before)."""
    if era != "llama_server":
        return DEFAULT_UBATCH
    if not flash_attention:
        return 256 if total_context > 4096 and smallest_gpu <= 8 * GIB else DEFAULT_UBATCH
    batch = 2048 if total_context > 32768 else 1024 if total_context > 4096 else DEFAULT_UBATCH
    while batch > DEFAULT_UBATCH:
        threshold = available * 80 // 100
        headroom = available * (60 if batch >= 2048 else 75) // 100
        surcharge = 2 * GIB if batch >= 2048 else 768 * MIB
        if predicted <= threshold and predicted <= headroom and surcharge <= threshold - predicted:
            break
        batch = 1024 if batch > 1024 else DEFAULT_UBATCH
    return batch


def gpu_total(gpu: Mapping[str, Any]) -> int:
    if gpu.get("memory_total_bytes") is not None:
        return int(gpu["memory_total_bytes"])
    if gpu.get("memory_total_mib") is not None:
        return int(gpu["memory_total_mib"]) * MIB
    raise OllamaBudgetError(f"GPU {gpu.get('index')}: memory_total_bytes (or memory_total_mib) is missing")


def _layer_weights(shape: Mapping[str, Any], weights_bytes: int) -> Tuple[List[int], int]:
    """Bytes per repeating layer and of the output layer; an even split when the tensor table is
    unknown. Bytes the table assigns to no layer (token_embd) count with the output: safe side."""
    blocks = int(shape["block_count"])
    layer_bytes = shape.get("layer_bytes")
    if layer_bytes and len(layer_bytes) == blocks:
        per_layer = [int(b) for b in layer_bytes]
        return per_layer, max(0, weights_bytes - sum(per_layer))
    share = weights_bytes // (blocks + 1)
    return [share] * blocks, weights_bytes - share * blocks


def _repeating_on_gpu(blocks: int, offloaded: int) -> range:
    """llama.cpp offloads the top layers first; the output layer goes last (offloaded > blocks)."""
    return range(blocks - min(offloaded, blocks), blocks)


def _split(
    gpus: Sequence[Mapping[str, Any]],
    layers: Sequence[Tuple[int, int, int]],
    output_bytes: int,
    compute: int,
    reserve: int,
    offloaded: int,
) -> List[Dict[str, Any]]:
    """Layer split in proportion to GPU memory (llama.cpp default tensor split), output on the last GPU."""
    blocks = len(layers)
    totals = [gpu_total(g) for g in gpus]
    on_gpu = list(_repeating_on_gpu(blocks, offloaded))
    per_gpu, start, cumulative = [], 0, 0
    for n, gpu in enumerate(gpus):
        cumulative += totals[n]
        end = len(on_gpu) if n == len(gpus) - 1 else round(len(on_gpu) * cumulative / sum(totals))
        mine = on_gpu[start:end]
        start = end
        holds_output = n == len(gpus) - 1 and offloaded > blocks
        weights = sum(layers[i][0] for i in mine) + (output_bytes if holds_output else 0)
        kv = sum(layers[i][1] for i in mine)
        recurrent = sum(layers[i][2] for i in mine)
        gpu_compute = compute if offloaded else 0
        used = weights + kv + recurrent + gpu_compute + reserve
        per_gpu.append(
            {
                "index": gpu.get("index", n),
                "layers": len(mine) + (1 if holds_output else 0),
                "weights_bytes": weights,
                "kv_cache_bytes": kv,
                "recurrent_state_bytes": recurrent,
                "compute_bytes": gpu_compute,
                "reserve_bytes": reserve,
                "used_bytes": used,
                "total_bytes": totals[n],
                "used_gib": round(used / GIB, 3),
                "total_gib": round(totals[n] / GIB, 3),
                "free_gib": round((totals[n] - used) / GIB, 3),
            }
        )
    return per_gpu


def add_check(checks: List[Dict[str, str]], check_id: str, severity: str, message: str) -> None:
    checks.append({"id": check_id, "severity": severity, "message": message})


def _layer_costs(
    shape: Mapping[str, Any],
    weights_bytes: int,
    projector_bytes: int,
    cells: int,
    num_parallel: int,
    num_batch: int,
    kv_cache_type: str,
) -> Tuple[List[Tuple[int, int, int]], int]:
    """Per decoder layer (weights, KV cache, recurrent state) bytes, and the output layer's bytes (with the
    projector's)."""
    blocks = int(shape["block_count"])
    kv_layers = kv_bytes_per_layer(shape, cells, num_parallel, num_batch, kv_cache_type)
    heads_kv = _per_layer_kv_heads(shape)
    recurrent_layers = heads_kv.count(0)
    rs_per_layer = (
        recurrent_state_bytes_per_sequence(shape) // recurrent_layers * num_parallel if recurrent_layers else 0
    )
    layer_weights, output_bytes = _layer_weights(shape, weights_bytes)
    output_bytes += int(projector_bytes)
    layers = [(layer_weights[i], kv_layers[i], rs_per_layer if heads_kv[i] == 0 else 0) for i in range(blocks)]
    return layers, output_bytes


def _checked_inputs(
    gpu_list: List[Dict[str, Any]], shape: Mapping[str, Any], weights_bytes: Any, settings: Mapping[str, Any]
) -> int:
    """The weights' size, after refusing inputs the budget cannot use (no GPU, no layer count, no size, settings
    that were not resolved)."""
    if not gpu_list:
        raise OllamaBudgetError("gpus: no GPU given; declare the host's GPUs in inventory or gather gpu_facts first")
    if not shape.get("block_count"):
        raise OllamaBudgetError("inferops_model: the architecture has no layer count (block_count)")
    weights_bytes = int(weights_bytes or 0)
    if weights_bytes <= 0:
        raise OllamaBudgetError("inferops_model.weights_bytes: the GGUF file size is unknown; set weights_bytes")
    missing = [name for name in RESOLVED_SETTINGS if name not in settings]
    if missing:
        raise OllamaBudgetError(
            "the Ollama budget takes resolved settings (settings.resolve_ollama_settings); "
            f"missing: {', '.join(missing)}"
        )
    return weights_bytes


def _offload(
    era: str,
    gpu_list: List[Dict[str, Any]],
    layers: List[Tuple[int, int, int]],
    output_bytes: int,
    compute: int,
    reserve: int,
    num_gpu: Any,
) -> Tuple[int, List[Dict[str, Any]]]:
    """How many layers go to the GPUs, and each GPU's share. num_gpu is passed as -ngl and obeyed; otherwise the
    engine fits layers, keeping a margin free (llama.cpp --fit: 1024 MiB; the older estimate: one spare layer)."""
    blocks = len(layers)
    offloaded = blocks + 1
    if num_gpu is not None:
        offloaded = max(0, min(int(num_gpu), blocks + 1))
    margin = FIT_TARGET_BYTES if era == "llama_server" else sum(layers[0]) if era == "estimate" else 0
    while True:
        per_gpu = _split(gpu_list, layers, output_bytes, compute, reserve, offloaded)
        fitted = all(g["used_bytes"] + margin <= g["total_bytes"] for g in per_gpu)
        if num_gpu is not None or offloaded == 0 or fitted:
            return offloaded, per_gpu
        offloaded -= 1


def _add_offload_checks(
    checks: List[Dict[str, str]], per_gpu: List[Dict[str, Any]], offloaded: int, blocks: int
) -> None:
    for gpu in per_gpu:
        if gpu["used_bytes"] > gpu["total_bytes"]:
            add_check(
                checks,
                "ollama-vram-exceeded",
                "error",
                f"GPU {gpu['index']}: {gpu['used_bytes'] / GIB:.2f} GiB needed, {gpu['total_bytes'] / GIB:.2f} GiB "
                f"present with num_gpu {offloaded}; lower ollama_context_length or ollama_num_gpu, or pick a "
                "smaller quantization",
            )
    if offloaded < blocks + 1:
        add_check(
            checks,
            "ollama-partial-offload",
            "warning",
            f"{offloaded} of {blocks + 1} layers are on the GPUs; the rest run on the CPU, much slower",
        )


def _memory_summary(
    per_gpu: List[Dict[str, Any]], weights_bytes: int, reserve: int, total_context: int, num_parallel: int
) -> Dict[str, Any]:
    """The budget's memory totals over the GPUs used."""
    used = sum(g["used_bytes"] for g in per_gpu)
    kv_total = sum(g["kv_cache_bytes"] for g in per_gpu)
    rs_total = sum(g["recurrent_state_bytes"] for g in per_gpu)
    memory = {
        "weights_bytes": weights_bytes,
        "weights_on_gpu_bytes": sum(g["weights_bytes"] for g in per_gpu),
        "kv_cache_bytes": kv_total,
        "recurrent_state_bytes": rs_total,
        "compute_bytes": sum(g["compute_bytes"] for g in per_gpu),
        "reserve_bytes": reserve * len(per_gpu),
        "vram_used_bytes": used,
        "gpu_total_gib": round(sum(g["total_bytes"] for g in per_gpu) / GIB, 3),
        "weights_gib": round(sum(g["weights_bytes"] for g in per_gpu) / GIB, 3),
        "kv_cache_gib": round((kv_total + rs_total) / GIB, 3),
        "overhead_gib": round(sum(g["compute_bytes"] + g["reserve_bytes"] for g in per_gpu) / GIB, 3),
        "vram_used_gib": round(used / GIB, 3),
        "kv_cache_tokens": total_context,
        "max_concurrency": num_parallel,
    }
    return memory


def ollama_budget(
    resolution: OllamaSettings,
    model: Mapping[str, Any],
    gpus: Sequence[Mapping[str, Any]],
    *,
    weights_bytes: int,
    projector_bytes: int = 0,
) -> Dict[str, Any]:
    """The memory the pinned Ollama version will use; see the module docstring for the contract.

    resolution: the settings of these GPUs as resolved (``_engines/ollama/settings.py`` resolve_ollama_settings):
    its values (context_length, num_parallel, kv_cache_type, flash_attention, gpu_overhead_bytes, sched_spread,
    and num_gpu / num_batch, None when Ollama sizes them from memory, as this budget does), the release and its
    era, and the GPUs' memory.
    """
    version, era, totals = resolution.version, resolution.era, list(resolution.totals)
    settings = resolution.values
    shape = dict(model)
    gpu_list = [dict(g) for g in gpus]
    checks: List[Dict[str, str]] = []
    sources: Dict[str, str] = {}
    weights_bytes = _checked_inputs(gpu_list, shape, weights_bytes, settings)
    context_length = int(settings["context_length"])
    num_parallel = int(settings["num_parallel"])
    kv_cache_type = str(settings["kv_cache_type"])
    flash_attention = bool(settings["flash_attention"])
    gpu_overhead_bytes = int(settings.get("gpu_overhead_bytes") or 0)
    sched_spread = bool(settings.get("sched_spread"))
    num_gpu = settings.get("num_gpu")
    num_batch = settings.get("num_batch")
    reserve = CUDA_MINIMUM_BYTES + int(gpu_overhead_bytes)

    total_context = context_length * num_parallel
    predicted = predict_server_vram(shape, weights_bytes, total_context)
    if num_batch is None:
        available = sum(totals) - reserve * len(totals)
        num_batch = automatic_batch(era, total_context, predicted, available, flash_attention, min(totals))
        sources["num_batch"] = "default"
    else:
        num_batch, sources["num_batch"] = int(num_batch), "inventory"

    blocks = int(shape["block_count"])
    cells = _pad(total_context, KV_CELL_PADDING)
    layers, output_bytes = _layer_costs(
        shape, weights_bytes, projector_bytes, cells, num_parallel, num_batch, kv_cache_type
    )
    compute = compute_buffer_bytes(shape, num_batch, cells, flash_attention)

    # Which GPUs: without OLLAMA_SCHED_SPREAD Ollama prefers the fewest GPUs that hold everything.
    whole = sum(sum(layer) for layer in layers) + output_bytes + compute + reserve
    if not sched_spread and len(gpu_list) > 1:
        largest = max(range(len(gpu_list)), key=lambda n: totals[n])
        if whole + FIT_TARGET_BYTES <= totals[largest]:
            gpu_list = [gpu_list[largest]]

    offloaded, per_gpu = _offload(era, gpu_list, layers, output_bytes, compute, reserve, num_gpu)
    sources["num_gpu"] = "default" if num_gpu is None else "inventory"

    _add_offload_checks(checks, per_gpu, offloaded, blocks)

    memory = _memory_summary(per_gpu, weights_bytes, reserve, total_context, num_parallel)
    return {
        "engine_version": ".".join(str(p) for p in version),
        "era": era,
        "settings": {
            "context_length": context_length,
            "num_parallel": num_parallel,
            "kv_cache_type": kv_cache_type,
            "flash_attention": flash_attention,
            "num_gpu": offloaded if num_gpu is None else int(num_gpu),
            "num_batch": num_batch,
        },
        "setting_sources": sources,  # num_gpu and num_batch: what Ollama sizes from memory (or the inventory)
        "memory": memory,
        "per_gpu": per_gpu,
        "layers": {"total": blocks + 1, "offloaded": offloaded},
        "ollama_predicted_bytes": predicted,
        "checks": checks,
    }


def coresidency_checks(
    ollama: Mapping[str, Any],
    vllm_reserved_bytes: Mapping[int, int],
    gpu_total_bytes: Mapping[int, int],
    gpus_variable: str = "ollama_gpus",
) -> List[Dict[str, str]]:
    """Whether an Ollama model (an ``ollama_budget()`` result) and vLLM fit the same GPUs at once.

    ``vllm_reserved_bytes``: per GPU index, what vLLM holds (gpu_memory_utilization x total, or
    its measured usage); ``gpu_total_bytes``: per GPU index, its memory. One warning per GPU where
    the sum exceeds the card: Ollama would fail to load (or evict nothing it can), while vLLM runs.
    ``gpus_variable``: the inventory variable that gives Ollama its GPUs, named in the message.
    """
    checks: List[Dict[str, str]] = []
    for gpu in ollama.get("per_gpu") or ():
        index = int(gpu["index"])
        if index not in vllm_reserved_bytes:
            continue
        total = int(gpu_total_bytes.get(index, gpu.get("total_bytes", 0)))
        vllm = int(vllm_reserved_bytes[index])
        needed = int(gpu["used_bytes"])
        if vllm + needed > total:
            add_check(
                checks,
                "ollama-coresidency",
                "warning",
                f"GPU {index}: vLLM holds {vllm / GIB:.2f} GiB and the Ollama model needs {needed / GIB:.2f} GiB of "
                f"{total / GIB:.2f} GiB, so both cannot be resident at once; give Ollama other GPUs ({gpus_variable}), "
                f"lower vllm_gpu_memory_utilization to {max(0.0, (total - needed) / total):.2f} or less, or stop one "
                "engine before using the other",
            )
    return checks
