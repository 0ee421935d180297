# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Size of a model's weights, and where the figure came from.

Public API:

``COMPONENTS``: the parameter categories (``embed``, ``lm_head``, ``router``, ``experts``, ``attn_linear``,
    ``dense_or_shared_mlp``, ``linear_attn_linear``, ``small_other``, ``vision``, ``mtp``).
``estimate_params(arch) -> dict``: parameter counts by component computed from a ``ModelArchitecture``
    (standard layer formulas; exact for the catalogued Qwen/Llama/gpt-oss families, approximate for the
    small tensors and vision towers).
``scheme_bits_per_weight(scheme, group_size=None, method="") -> float``: storage bits per weight of a
    quantization scheme including its scales (``bf16`` = 16, ``awq_int4`` g128 = 4.156, ``nvfp4`` = 4.5, ...).
``quantization_from_name(name) -> QuantizationInfo | None``: the ``inferops_model.quantization`` override
    (``fp8``, ``fp8_block``, ``awq``, ``gptq``, ``gptq_int8``, ``int4``, ``int8``, ``nvfp4``, ``mxfp4``,
    ``bitsandbytes``; ``none``/``bf16`` = unquantized).
``component_bits(arch, quantization=None) -> dict``: bits per weight for every component, the modules the
    checkpoint leaves unquantized kept at the model dtype.
``WeightsEstimate`` (frozen dataclass): ``total_bytes`` (as loaded by vLLM, summed over GPUs), ``source``
    (``weights_bytes``, ``safetensors index <path>``, ``gguf file <path>``, ``parameter counts x bits per
    weight (...)``), ``components`` (bytes by component, scaled to ``total_bytes``), ``to_dict()``.
``estimate_weights(arch, params=None, weights_bytes=None, weights_file=None, quantization=None,
    include_mtp=False, include_vision=True) -> WeightsEstimate``: priority ``weights_bytes`` >
    ``weights_file`` (a ``model.safetensors.index.json`` -> ``metadata.total_size``, a ``.safetensors``
    or ``.gguf`` -> file size, a model directory -> its index or the sum of its ``*.safetensors``) >
    ``checkpoint`` (bytes of every tensor and their source, from the checkpoint's index or safetensors header
    found by ``_model/hub.py``) > parameter counts x bits per weight.
``quantization_conflict(name, checkpoint) -> str | None``: why an ``inferops_model.quantization`` contradicts
    the checkpoint's own quantization config.
``quantization_named_by(repo) -> str | None``: the ``inferops_model.quantization`` value a repository's name
    states (``-AWQ``, ``-GPTQ-Int8``, ``-FP8``, ``-NVFP4``, ...).
``weights_bytes_and_source(...) -> (int, str)``: the same, as a pair.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import (
    LAYER_LINEAR,
    ModelArchitecture,
    QuantizationInfo,
    dtype_bytes,
)

COMPONENTS = (
    "embed",
    "lm_head",
    "router",
    "experts",
    "attn_linear",
    "dense_or_shared_mlp",
    "linear_attn_linear",
    "small_other",
    "vision",
    "mtp",
)
# Decoder linear layers: what a quantization scheme applies to unless the checkpoint says otherwise.
_DECODER_LINEARS = ("experts", "attn_linear", "dense_or_shared_mlp", "linear_attn_linear")


def estimate_params(arch: ModelArchitecture) -> Dict[str, int]:
    """Parameter counts by component, from the architecture alone."""
    h = arch.hidden_size
    counts = dict.fromkeys(COMPONENTS, 0)
    counts["embed"] = arch.vocab_size * h
    counts["lm_head"] = 0 if arch.tie_word_embeddings else arch.vocab_size * h
    attention_layer = _attention_params(arch)
    gdn_layer, gdn_small = _gdn_params(arch)
    dense_mlp = 3 * h * (arch.intermediate_size or 0)
    for index, kind in enumerate(arch.layer_types):
        if kind == LAYER_LINEAR:
            counts["linear_attn_linear"] += gdn_layer
            counts["small_other"] += gdn_small
        else:
            counts["attn_linear"] += attention_layer
            counts["small_other"] += 2 * arch.head_dim  # q/k norms (absent in some families: small)
        counts["small_other"] += 2 * h  # input and post-attention norms
        if arch.is_moe and index >= arch.first_k_dense_replace:
            experts, shared, router = _moe_params(arch)
            counts["experts"] += experts
            counts["dense_or_shared_mlp"] += shared
            counts["router"] += router
        else:
            counts["dense_or_shared_mlp"] += dense_mlp
    counts["small_other"] += h  # final norm
    if arch.mtp_layers:
        experts, shared, router = _moe_params(arch) if arch.is_moe else (0, dense_mlp, 0)
        per_mtp = attention_layer + experts + shared + router + 2 * h * h + 4 * h
        counts["mtp"] = arch.mtp_layers * per_mtp
    if arch.has_vision and arch.vision_depth:
        vh, vi = arch.vision_hidden_size, arch.vision_intermediate_size or 4 * arch.vision_hidden_size
        # ViT blocks (qkv + proj + 2-matrix MLP) and a 2x2 patch-merger MLP into the text hidden size
        counts["vision"] = arch.vision_depth * (4 * vh * vh + 2 * vh * vi) + 4 * vh * (4 * vh + h)
    return counts


def _attention_params(arch: ModelArchitecture) -> int:
    h = arch.hidden_size
    if arch.is_mla:
        rope, nope = arch.qk_rope_head_dim or 0, arch.qk_nope_head_dim or 0
        v_dim = arch.v_head_dim or nope
        q_head = arch.num_attention_heads * (nope + rope)
        q = (h * arch.q_lora_rank + arch.q_lora_rank * q_head) if arch.q_lora_rank else h * q_head
        kv_a = h * (arch.kv_lora_rank + rope)
        kv_b = arch.kv_lora_rank * arch.num_attention_heads * (nope + v_dim)
        return q + kv_a + kv_b + arch.num_attention_heads * v_dim * h
    q_width = arch.num_attention_heads * arch.head_dim
    q = h * q_width * (2 if arch.attn_output_gate else 1)
    kv = 2 * h * arch.num_kv_heads * arch.head_dim
    return q + kv + q_width * h


def _gdn_params(arch: ModelArchitecture) -> Tuple[int, int]:
    """(linear projections, small tensors) of one Gated-DeltaNet layer."""
    if not arch.is_hybrid:
        return 0, 0
    h = arch.hidden_size
    key_width = arch.linear_num_key_heads * arch.linear_key_head_dim
    value_width = arch.linear_num_value_heads * arch.linear_value_head_dim
    linears = h * (2 * key_width + 2 * value_width) + value_width * h  # in_proj_qkvz + out_proj
    conv_dim = 2 * key_width + value_width
    small = (
        h * 2 * arch.linear_num_value_heads  # in_proj_ba
        + conv_dim * arch.linear_conv_kernel_dim
        + 2 * arch.linear_num_value_heads  # A_log, dt_bias
        + arch.linear_value_head_dim  # gated norm
    )
    return linears, small


def _moe_params(arch: ModelArchitecture) -> Tuple[int, int, int]:
    """(routed experts, shared experts, router) of one MoE layer."""
    h = arch.hidden_size
    moe = arch.moe_intermediate_size or arch.intermediate_size or 0
    experts = arch.num_experts * 3 * h * moe
    shared_width = arch.shared_expert_intermediate_size or moe
    shared = arch.num_shared_experts * 3 * h * shared_width
    router = h * arch.num_experts + (h if arch.shared_expert_intermediate_size else 0)
    return experts, shared, router


def scheme_bits_per_weight(scheme: Optional[str], group_size: Optional[int] = None, method: str = "") -> float:
    """Stored bits per weight of a scheme, scales and zero points included (reference quantization.md)."""
    if scheme is None or scheme in ("bf16", "bfloat16", "float16", "fp16"):
        return 16.0
    group = group_size if group_size and group_size > 0 else None
    if scheme == "awq_int4":
        return 4.0 + 20.0 / (group or 128)  # fp16 scale + packed 4-bit zero per group
    if scheme == "gptq_int4":
        return 4.0 + (20.0 / group if group else 0.0) + 0.005  # + g_idx
    if scheme == "gptq_int8":
        return 8.0 + (24.0 / group if group else 0.0)
    if scheme == "int4":
        zero = 4.0 if method.replace("-", "_") in ("auto_round", "autoround") else 0.0
        return 4.0 + (16.0 + zero) / (group or 128)
    if scheme == "int8":
        return 8.0 + (16.0 / group if group else 0.0)
    if scheme == "fp8":
        return 8.0
    if scheme == "fp8_block":
        return 8.0 + 32.0 / (128 * 128)
    if scheme == "nvfp4":
        return 4.5  # E2M1 + FP8 scale per 16 (+ one fp32 global scale per tensor)
    if scheme == "mxfp4":
        return 4.25  # E2M1 + E8M0 scale per 32
    if scheme == "bnb_int4":
        return 4.5  # NF4 with an fp32 absmax per 64 (double quantisation makes it smaller)
    if scheme == "bnb_int8":
        return 8.0
    raise ValueError(f"unknown quantization scheme {scheme!r}")


_OVERRIDES = {
    "fp8": ("fp8", "fp8", 8, None),
    "fp8_block": ("fp8", "fp8_block", 8, None),
    "awq": ("awq", "awq_int4", 4, 128),
    "awq_int4": ("awq", "awq_int4", 4, 128),
    "gptq": ("gptq", "gptq_int4", 4, 128),
    "gptq_int4": ("gptq", "gptq_int4", 4, 128),
    "gptq_int8": ("gptq", "gptq_int8", 8, 128),
    "int4": ("compressed-tensors", "int4", 4, 128),
    "w4a16": ("compressed-tensors", "int4", 4, 128),
    "int8": ("compressed-tensors", "int8", 8, None),
    "w8a8": ("compressed-tensors", "int8", 8, None),
    "nvfp4": ("modelopt", "nvfp4", 4, 16),
    "mxfp4": ("mxfp4", "mxfp4", 4, 32),
    "bitsandbytes": ("bitsandbytes", "bnb_int4", 4, 64),
    "bnb": ("bitsandbytes", "bnb_int4", 4, 64),
}


def quantization_from_name(name: Optional[str]) -> Optional[QuantizationInfo]:
    """QuantizationInfo for an ``inferops_model.quantization`` override; ``None`` for unquantized."""
    if name is None:
        return None
    key = str(name).strip().lower().replace("-", "_")
    if key in ("", "none", "bf16", "bfloat16", "fp16", "float16", "auto"):
        return None
    if key not in _OVERRIDES:
        raise ValueError(
            f"inferops_model.quantization {name!r} is not known; use one of: {', '.join(sorted(_OVERRIDES))}, or none"
        )
    method, scheme, bits, group = _OVERRIDES[key]
    return QuantizationInfo(method=method, scheme=scheme, bits=bits, group_size=group)


def quantization_named_by(repo: str) -> Optional[str]:
    """The ``inferops_model.quantization`` value a repository's name states (``Org/Model-AWQ`` -> ``awq``,
    ``Org/Model-GPTQ-Int8`` -> ``gptq_int8``), from the words of its name; None when it names none."""
    words = [w for w in re.split(r"[-_.]+", str(repo).rsplit("/", 1)[-1].lower()) if w]
    pairs = [f"{a}_{b}" for a, b in zip(words, words[1:]) if f"{a}_{b}" in _OVERRIDES]
    singles = [w for w in words if w in _OVERRIDES]
    return (pairs or singles or [None])[0]


# Schemes one inventory name stands for: fp8 covers per-tensor and block FP8; the generic int4/int8 names
# cover every integer scheme of that width (compressed-tensors, AutoRound, GPTQ, AWQ).
_SCHEME_FAMILY = {"fp8_block": "fp8", "awq_int4": "int4", "gptq_int4": "int4", "gptq_int8": "int8", "bnb_int8": "int8"}
# Names that state one scheme of a quantizer with several (block vs per-tensor FP8, 4- vs 8-bit GPTQ): the
# checkpoint's scheme must be that one; the quantizer's own name (gptq, awq, bitsandbytes) agrees with any.
_SCHEME_NAMES = frozenset({"fp8_block", "gptq_int4", "gptq_int8"})


def quantization_conflict(name: Optional[str], checkpoint: Optional[QuantizationInfo]) -> Optional[str]:
    """Why ``inferops_model.quantization`` (``name``) contradicts the checkpoint's own quantization config
    (None for an unquantized checkpoint); None when they agree."""
    if name is None:
        return None
    wanted = quantization_from_name(name)
    if wanted is None and checkpoint is None:
        return None
    if wanted is None or checkpoint is None:
        has = (
            "no quantization_config (unquantized)"
            if checkpoint is None
            else f"{checkpoint.method} ({checkpoint.scheme})"
        )
        return f"inferops_model.quantization is {name!r} but the checkpoint has {has}"
    method = checkpoint.method.replace("-", "_")
    key = str(name).strip().lower().replace("-", "_")
    generic = key in ("int4", "int8", "w4a16", "w8a8", "fp8")
    # A generic name states a width, not a quantizer: int4 against a compressed-tensors int8 checkpoint is refused.
    quantizer_only = not generic and key not in _SCHEME_NAMES
    if (quantizer_only and wanted.method.replace("-", "_") == method) or wanted.scheme == checkpoint.scheme:
        return None
    if generic and _SCHEME_FAMILY.get(checkpoint.scheme, checkpoint.scheme) == _SCHEME_FAMILY.get(
        wanted.scheme, wanted.scheme
    ):
        return None
    if wanted.scheme == "nvfp4" and checkpoint.scheme == "nvfp4":
        return None
    return f"inferops_model.quantization is {name!r} but the checkpoint has {checkpoint.method} ({checkpoint.scheme})"


def _classify(module: str) -> Optional[str]:
    """Component of a module name or pattern from a quantization config."""
    name = module.lower()
    if name.startswith("re:"):
        name = name[3:]
    if "mtp" in name:
        return "mtp"
    if "visual" in name or "vision" in name or "vit" in name.split("."):
        return "vision"
    if "lm_head" in name:
        return "lm_head"
    if "embed" in name:
        return "embed"
    if "linear_attn" in name:
        return "linear_attn_linear"
    if "shared_expert_gate" in name or "router" in name or re.search(r"mlp\.gate(\$|$|\W)", name):
        return "router"
    if "experts" in name and "shared_expert" not in name:
        return "experts"
    if "attn" in name:
        return "attn_linear"
    if "mlp" in name or "shared_expert" in name or re.search(r"(gate|up|down)_proj", name):
        return "dense_or_shared_mlp"
    return None


def _matches_linear(pattern: str) -> bool:
    """Whether a compressed-tensors target names every Linear layer (``Linear``, ``re:.*``)."""
    return pattern in ("Linear", "re:.*", "*") or fnmatch.fnmatch("Linear", pattern)


def _scheme_components(pattern: str) -> Tuple[str, ...]:
    """The components a module scheme's target pattern covers: every decoder linear for a catch-all pattern."""
    if _matches_linear(pattern):
        return _DECODER_LINEARS
    component = _classify(pattern)
    return () if component is None else (component,)


def component_bits(arch: ModelArchitecture, quantization: Optional[QuantizationInfo] = None) -> Dict[str, float]:
    """Bits per weight of every component under the checkpoint's (or the override's) quantization."""
    model_bits = 8.0 * dtype_bytes(arch.dtype if arch.dtype != "float32" else "bfloat16")
    bits = dict.fromkeys(COMPONENTS, model_bits)
    quant = quantization if quantization is not None else arch.quantization
    if quant is None:
        return bits
    # (components, scheme, group size) per quantized target: each module scheme's, else the checkpoint's on
    # every decoder linear; one bit width per target
    if quant.module_schemes:
        targets = [(_scheme_components(pattern), scheme, None) for pattern, scheme in quant.module_schemes]
    else:
        targets = [(_DECODER_LINEARS, quant.scheme, quant.group_size)]
    for components, scheme, group_size in targets:
        if components:
            bits.update(dict.fromkeys(components, scheme_bits_per_weight(scheme, group_size, quant.method)))
    for pattern in quant.unquantized_modules:
        component = _classify(pattern)
        if component is not None:
            bits[component] = model_bits
    return bits


@dataclass(frozen=True)
class WeightsEstimate:
    total_bytes: int
    source: str
    components: Dict[str, int] = field(hash=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        return {"total_bytes": self.total_bytes, "source": self.source, "components": dict(self.components)}


def _file_total(path: str) -> Tuple[int, str]:
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        if os.path.isfile(index):
            return _file_total(index)
        shards = sorted(name for name in os.listdir(path) if name.endswith(".safetensors"))
        if shards:
            total = sum(os.path.getsize(os.path.join(path, name)) for name in shards)
            return total, f"safetensors files in {os.path.basename(path.rstrip('/'))} (sizes)"
        raise ValueError(f"{path!r} holds neither model.safetensors.index.json nor *.safetensors files")
    if not os.path.isfile(path):
        raise ValueError(f"inferops_model weights file {path!r} does not exist on the controller")
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as handle:
            index = json.load(handle)
        total = index.get("metadata", {}).get("total_size") if isinstance(index, Mapping) else None
        if not isinstance(total, int) or total <= 0:
            raise ValueError(f"{path!r} has no metadata.total_size: is it a model.safetensors.index.json?")
        return total, f"safetensors index {os.path.basename(path)} metadata.total_size"
    kind = "gguf file" if path.endswith(".gguf") else "file"
    return os.path.getsize(path), f"{kind} {os.path.basename(path)} size"


def estimate_weights(
    arch: ModelArchitecture,
    params: Optional[Mapping] = None,
    weights_bytes: Optional[int] = None,
    weights_file: Optional[str] = None,
    quantization: Optional[QuantizationInfo] = None,
    include_mtp: bool = False,
    include_vision: bool = True,
    checkpoint: Optional[Tuple[int, str]] = None,
) -> WeightsEstimate:
    """Weights as vLLM loads them, summed over all GPUs, with the source of the figure.

    ``params`` are catalogue parameter counts by component (else computed from ``arch``). The MTP block
    is loaded only for MTP speculative decoding; the vision tower is skipped with --language-model-only.
    A given total (``weights_bytes`` or a file) is taken as the checkpoint size: the components are
    scaled to it so that the per-GPU split still follows the model's structure.
    """
    counts = dict(params) if params is not None else estimate_params(arch)
    bits = component_bits(arch, quantization)
    components = {name: int(counts.get(name, 0) * bits[name] / 8) for name in COMPONENTS}
    quant = quantization if quantization is not None else arch.quantization
    label = quant.scheme if quant is not None else arch.dtype
    source = f"parameter counts x bits per weight ({label}, {'catalogue' if params is not None else 'config.json'})"
    given_total = None
    if weights_bytes is not None:
        if isinstance(weights_bytes, bool) or not isinstance(weights_bytes, int) or weights_bytes <= 0:
            raise ValueError(f"inferops_model.weights_bytes must be a positive integer, got {weights_bytes!r}")
        given_total, source = weights_bytes, "weights_bytes"
    elif weights_file:
        given_total, source = _file_total(weights_file)
    elif checkpoint is not None:
        given_total, source = checkpoint  # every tensor of the checkpoint, found by _model/hub.py
    if given_total is not None:
        # weights_bytes is "as loaded" and a GGUF file holds only the text model (the vision tower is a
        # separate mmproj file, the MTP block is dropped); a safetensors checkpoint holds everything.
        as_loaded = weights_bytes is not None or source.startswith("gguf")
        if source.startswith("gguf"):
            components["vision"] = 0
        in_total = [n for n in COMPONENTS if not as_loaded or include_mtp or n != "mtp"]
        estimated = sum(components[n] for n in in_total) or 1
        scale = given_total / estimated
        components = {n: int(components[n] * scale) if n in in_total else 0 for n in COMPONENTS}
        # Each component was rounded down: the bytes lost go to the largest, so the parts sum to the total.
        largest = max(in_total, key=lambda n: components[n])
        components[largest] += given_total - sum(components[n] for n in in_total)
    if not include_mtp:
        components["mtp"] = 0
    if not include_vision:
        components["vision"] = 0
    return WeightsEstimate(total_bytes=sum(components.values()), source=source, components=components)


def weights_bytes_and_source(arch: ModelArchitecture, **kwargs: Any) -> Tuple[int, str]:
    estimate = estimate_weights(arch, **kwargs)
    return estimate.total_bytes, estimate.source
