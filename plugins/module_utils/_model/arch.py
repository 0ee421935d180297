# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Model architecture as the engines see it, read from a Hugging Face ``config.json`` mapping.

Public API (names are stable; other module_utils and plugins import them):

``ModelArchitecture.from_config(config) -> ModelArchitecture``
    ``config`` is the parsed config.json (any Mapping). When it nests the language model under
    ``text_config`` (Qwen3.5/3.6, Gemma 3, Mistral 3) the text tower is read from there and
    ``vision_config`` only marks the vision tower as present. Raises ``ValueError`` naming the
    missing or malformed key, or a size (heads, dimensions, layers, lengths) below 1, or a count (experts,
    MTP layers) below 0.

``ModelArchitecture`` (frozen dataclass, plain types only) fields:
    ``architecture`` (class name, e.g. ``Qwen3_5MoeForConditionalGeneration``; the first of
    ``architectures``, every class config.json lists, in order), ``model_type``,
    ``num_layers``, ``num_attention_heads``, ``num_kv_heads``, ``head_dim``, ``hidden_size``,
    ``intermediate_size``, ``layer_types`` (tuple, one of ``LAYER_FULL``, ``LAYER_LINEAR``,
    ``LAYER_SLIDING``, ``LAYER_MLA`` per decoder layer), ``sliding_window``,
    MLA: ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``,
    Gated-DeltaNet: ``linear_num_key_heads``, ``linear_num_value_heads``, ``linear_key_head_dim``,
    ``linear_value_head_dim``, ``linear_conv_kernel_dim``,
    MoE: ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``, ``num_shared_experts``,
    ``shared_expert_intermediate_size``,
    ``attn_output_gate``, ``q_lora_rank``, ``first_k_dense_replace`` (leading dense layers of MoE models),
    ``vision_depth``, ``vision_hidden_size``, ``vision_intermediate_size``, ``vision_patch_size``,
    ``vision_spatial_merge_size`` (0 when config.json does not say),
    ``vocab_size``, ``max_position_embeddings``, ``rope_type``, ``rope_factor``,
    ``rope_original_max_position_embeddings``, ``mamba_ssm_dtype``, ``dtype``,
    ``tie_word_embeddings``, ``mtp_layers``, ``has_vision``, ``quantization``
    (``QuantizationInfo`` or ``None``).

    Helpers: ``is_hybrid``, ``is_moe``, ``is_mla``, ``full_attention_layers``,
    ``linear_attention_layers``, ``sliding_window_layers``, ``mla_layers``, ``count_layers(kind)``,
    ``derived_max_model_len`` (what vLLM derives from max_position_embeddings and rope scaling),
    ``to_dict()`` (plain dict for plan output).

``QuantizationInfo`` (frozen dataclass): ``method`` (config ``quant_method``), ``scheme`` (one of
    ``QUANT_SCHEMES``), ``bits``, ``group_size``, ``unquantized_modules`` (tuple of module name
    patterns left in the model dtype), ``module_schemes`` (tuple of ``(pattern, scheme)`` pairs for
    mixed-precision checkpoints, e.g. ModelOpt FP8 attention + NVFP4 experts), ``kv_cache_dtype``
    (KV dtype the checkpoint ships scales for, e.g. ``fp8``, else ``None``), ``weight_block_size``,
    ``resolves_auto_kv_cache_dtype`` (what vLLM >= 0.14 makes of ``--kv-cache-dtype auto``: ModelOpt
    checkpoints with KV scales give ``fp8_e4m3``/``nvfp4``). ``QuantizationInfo.from_config(mapping)``
    parses ``quantization_config`` or a ModelOpt ``hf_quant_config.json``; ``ModelArchitecture.from_config``
    uses ``hf_quant_config`` only when config.json has no ``quantization_config``, as vLLM does.

``dtype_bytes(name) -> int`` bytes per element of a torch/vLLM dtype name (``bfloat16``, ``float32``,
    ``fp8``...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

LAYER_FULL = "full_attention"
LAYER_LINEAR = "linear_attention"
LAYER_SLIDING = "sliding_attention"
LAYER_MLA = "mla"

# Layer-type spellings found in config.json files, mapped to the four kinds above.
_LAYER_ALIASES = {
    "full_attention": LAYER_FULL,
    "attention": LAYER_FULL,
    "global_attention": LAYER_FULL,
    "linear_attention": LAYER_LINEAR,
    "gated_deltanet": LAYER_LINEAR,
    "sliding_attention": LAYER_SLIDING,
    "sliding_window": LAYER_SLIDING,
    "local_attention": LAYER_SLIDING,
}

# Qwen3-Next / Qwen3.5 / Qwen3.6 gate their attention output even when config.json omits the key
# (vLLM Qwen3NextAttention: getattr(config, "attn_output_gate", True)).
_GATED_ATTENTION_MODEL_TYPES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "qwen3_5", "qwen3_5_moe")

QUANT_SCHEMES = (
    "awq_int4",
    "gptq_int4",
    "gptq_int8",
    "int4",  # compressed-tensors / auto-round W4A16 integer
    "int8",  # compressed-tensors W8A8 / W8A16 integer
    "fp8",  # per-tensor or per-channel FP8
    "fp8_block",  # block-scaled FP8 (128x128), DeepSeek-V3 and Qwen *-FP8
    "nvfp4",
    "mxfp4",
    "bnb_int4",
    "bnb_int8",
    "mixed",  # per-module schemes in module_schemes
)

_DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "int8": 1,
    "uint8": 1,
}


def dtype_bytes(name: str) -> int:
    """Bytes per element of a dtype name as config.json or vLLM spell it (``torch.`` prefix allowed)."""
    key = str(name).lower().replace("torch.", "")
    if key not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r}: expected one of {', '.join(sorted(_DTYPE_BYTES))}")
    return _DTYPE_BYTES[key]


# Sizes (heads, dimensions, layers, lengths) divide and multiply the budgets: zero or less is refused.
# Counts (experts, leading dense layers, MTP layers) and sizes whose 0 means "none" (sliding_window,
# intermediate_size of a model with only MoE layers) may be 0, never negative.
SIZE = 1
COUNT = 0


def _int_or_none(value: Any, key: str, minimum: Optional[int] = None) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise ValueError(f"config.json key {key!r} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"config.json key {key!r} must be {minimum} or more, got {value!r}")
    return int(value)


def _first(mapping: Mapping, *keys: str) -> Any:
    for key in keys:
        if mapping.get(key) is not None:
            return mapping[key]
    return None


def _required_int(mapping: Mapping, where: str, *keys: str) -> int:
    """A size that must be there, 1 or more."""
    value = _first(mapping, *keys)
    if value is None:
        names = " / ".join(repr(k) for k in keys)
        raise ValueError(
            f"config.json{where} is missing {names}: cannot describe the model without it "
            "(pass the real config.json as inferops_model.config or config_file)"
        )
    return _int_or_none(value, keys[0], SIZE)  # type: ignore[return-value]


@dataclass(frozen=True)
class QuantizationInfo:
    """Weight quantization of a checkpoint, normalised from ``quantization_config``."""

    method: str
    scheme: str
    bits: Optional[int] = None
    group_size: Optional[int] = None
    unquantized_modules: Tuple[str, ...] = ()
    module_schemes: Tuple[Tuple[str, str], ...] = ()
    kv_cache_dtype: Optional[str] = None
    weight_block_size: Optional[Tuple[int, int]] = None

    @property
    def resolves_auto_kv_cache_dtype(self) -> Optional[str]:
        """What vLLM (>= 0.14) turns ``--kv-cache-dtype auto`` into for this checkpoint: ModelOpt checkpoints
        with KV scales give ``fp8_e4m3`` or ``nvfp4`` (utils/torch_utils.py resolve_kv_cache_dtype_string)."""
        if not self.method.startswith("modelopt") or self.kv_cache_dtype is None:
            return None
        return "fp8_e4m3" if self.kv_cache_dtype == "fp8" else self.kv_cache_dtype

    @classmethod
    def from_config(cls, quant: Mapping) -> QuantizationInfo:
        """Parse a ``quantization_config`` mapping, or ModelOpt's hf_quant_config.json (``quantization`` key)."""
        if not isinstance(quant, Mapping):
            raise ValueError(f"config.json key 'quantization_config' must be a mapping, got {quant!r}")
        quant = dict(quant)
        if isinstance(quant.get("quantization"), Mapping) and not quant.get("quant_method"):
            # hf_quant_config.json of ModelOpt <= 0.29: {"producer": {...}, "quantization": {...}}
            quant = {**quant["quantization"], "quant_method": "modelopt"}
        method = str(quant.get("quant_method") or quant.get("quant_algo") or "").lower().replace("-", "_")
        if not method:
            raise ValueError("config.json quantization_config has no 'quant_method'")
        unquantized = tuple(
            str(m)
            for key in ("modules_to_not_convert", "ignore", "exclude_modules", "ignored_layers")
            for m in (quant.get(key) or ())
        )
        parser = _QUANT_PARSERS.get(method)
        if parser is None:
            # Unknown methods still carry bits when the config says so; the weights estimate
            # then falls back to bits + group scales.
            bits = _int_or_none(_first(quant, "bits", "w_bit", "num_bits"), "bits")
            return cls(
                method=method,
                scheme=f"int{bits}" if bits in (4, 8) else "mixed",
                bits=bits,
                unquantized_modules=unquantized,
            )
        return parser(cls, method, quant, unquantized)


def _parse_awq(cls, method, quant, unquantized):
    bits = _int_or_none(_first(quant, "bits", "w_bit"), "bits") or 4
    group = _int_or_none(_first(quant, "group_size", "q_group_size"), "group_size") or 128
    return cls(
        method=method,
        scheme="awq_int4" if bits == 4 else f"int{bits}",
        bits=bits,
        group_size=group,
        unquantized_modules=unquantized,
    )


def _parse_gptq(cls, method, quant, unquantized):
    bits = _int_or_none(quant.get("bits"), "bits") or 4
    group = _int_or_none(quant.get("group_size"), "group_size")
    return cls(
        method=method,
        scheme=f"gptq_int{bits}" if bits in (4, 8) else f"int{bits}",
        bits=bits,
        group_size=group if group and group > 0 else None,
        unquantized_modules=unquantized,
    )


def _parse_autoround(cls, method, quant, unquantized):
    bits = _int_or_none(quant.get("bits"), "bits") or 4
    group = _int_or_none(quant.get("group_size"), "group_size") or 128
    return cls(method=method, scheme=f"int{bits}", bits=bits, group_size=group, unquantized_modules=unquantized)


def _parse_fp8(cls, method, quant, unquantized):
    block = quant.get("weight_block_size")
    if block:
        return cls(
            method=method,
            scheme="fp8_block",
            bits=8,
            weight_block_size=(int(block[0]), int(block[1])),
            unquantized_modules=unquantized,
        )
    return cls(method=method, scheme="fp8", bits=8, unquantized_modules=unquantized)


def _parse_mxfp4(cls, method, quant, unquantized):
    return cls(method=method, scheme="mxfp4", bits=4, group_size=32, unquantized_modules=unquantized)


def _parse_bnb(cls, method, quant, unquantized):
    bits = 8 if quant.get("load_in_8bit") else 4
    return cls(
        method=method,
        scheme=f"bnb_int{bits}",
        bits=bits,
        group_size=64 if bits == 4 else None,
        unquantized_modules=unquantized + tuple(quant.get("llm_int8_skip_modules") or ()),
    )


def _ct_group_scheme(weights: Mapping) -> Tuple[str, int, Optional[int]]:
    bits = _int_or_none(weights.get("num_bits"), "num_bits") or 8
    kind = str(weights.get("type") or "int").lower()
    group = _int_or_none(weights.get("group_size"), "group_size")
    if kind == "float":
        if bits == 4:
            return ("mxfp4" if group == 32 else "nvfp4"), bits, group or 16
        block = weights.get("block_structure")
        return ("fp8_block" if block else "fp8"), bits, None
    return (f"int{bits}"), bits, group


def _kv_scheme_dtype(kv: Any, modelopt: bool = False) -> Optional[str]:
    """KV dtype a checkpoint ships scales for. For ModelOpt it follows vLLM's
    utils/torch_utils.py get_kv_cache_quant_algo_string, which needs ``dynamic: false`` for FP8."""
    if isinstance(kv, Mapping):
        if str(kv.get("type", "")).lower() != "float":
            return None
        if kv.get("num_bits") == 8:
            static = kv.get("dynamic") is False if modelopt else kv.get("dynamic") is not True
            return "fp8" if static else None
        return "nvfp4" if kv.get("num_bits") == 4 else None
    if isinstance(kv, str) and kv.lower() in ("fp8", "nvfp4"):
        return kv.lower()
    return None


def _parse_compressed_tensors(cls, method, quant, unquantized):
    groups = quant.get("config_groups") or {}
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("config.json quantization_config (compressed-tensors) has no 'config_groups'")
    schemes = []
    for name, group in groups.items():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping):
            raise ValueError(f"config.json quantization_config.config_groups.{name} has no 'weights'")
        scheme, bits, group_size = _ct_group_scheme(weights)
        for target in group.get("targets") or ("Linear",):
            schemes.append((str(target), scheme, bits, group_size))
    kv = _kv_scheme_dtype(quant.get("kv_cache_scheme"))
    distinct = {s[1] for s in schemes}
    if len(distinct) == 1:
        _target, scheme, bits, group_size = schemes[0]
        return cls(
            method=method,
            scheme=scheme,
            bits=bits,
            group_size=group_size,
            unquantized_modules=unquantized,
            kv_cache_dtype=kv,
        )
    return cls(
        method=method,
        scheme="mixed",
        unquantized_modules=unquantized,
        module_schemes=tuple((t, s) for t, s, _bits, _group in schemes),
        kv_cache_dtype=kv,
    )


_MODELOPT_ALGOS = {
    "FP8": "fp8",
    "NVFP4": "nvfp4",
    "W4A16_NVFP4": "nvfp4",
    "W4A8_NVFP4_FP8": "nvfp4",
    "FP8_PB_WO": "fp8_block",
    "MXFP8": "fp8",
    "INT4_AWQ": "awq_int4",
    "W4A8_AWQ": "awq_int4",
}


def _modelopt_scheme(algo: Any) -> str:
    scheme = _MODELOPT_ALGOS.get(str(algo).upper())
    if scheme is None:
        raise ValueError(f"unknown ModelOpt quant_algo {algo!r} in quantization_config")
    return scheme


def _parse_modelopt(cls, method, quant, unquantized):
    kv = _kv_scheme_dtype(quant.get("kv_cache_scheme") or quant.get("kv_cache_quant_algo"), modelopt=True)
    algo = str(quant.get("quant_algo") or "").upper()
    if algo and algo != "MIXED_PRECISION":
        scheme = _modelopt_scheme(algo)
        group = _int_or_none(quant.get("group_size"), "group_size") or (16 if scheme == "nvfp4" else None)
        return cls(
            method=method,
            scheme=scheme,
            bits=4 if scheme == "nvfp4" else 8,
            group_size=group,
            unquantized_modules=unquantized,
            kv_cache_dtype=kv,
        )
    layers = quant.get("quantized_layers") or {}
    if not isinstance(layers, Mapping) or not layers:
        raise ValueError("config.json quantization_config (modelopt MIXED_PRECISION) has no 'quantized_layers'")
    module_schemes = tuple((str(name), _modelopt_scheme(spec.get("quant_algo"))) for name, spec in layers.items())
    return cls(
        method=method, scheme="mixed", unquantized_modules=unquantized, module_schemes=module_schemes, kv_cache_dtype=kv
    )


_QUANT_PARSERS = {
    "awq": _parse_awq,
    "awq_marlin": _parse_awq,
    "gptq": _parse_gptq,
    "gptq_marlin": _parse_gptq,
    "auto_round": _parse_autoround,
    "autoround": _parse_autoround,
    "fp8": _parse_fp8,
    "fbgemm_fp8": _parse_fp8,
    "mxfp4": _parse_mxfp4,
    "bitsandbytes": _parse_bnb,
    "compressed_tensors": _parse_compressed_tensors,
    "modelopt": _parse_modelopt,
    "modelopt_fp4": _parse_modelopt,
}


def _layer_types(text: Mapping, num_layers: int, is_mla: bool) -> Tuple[Tuple[str, ...], Optional[int]]:
    sliding_window = _int_or_none(text.get("sliding_window"), "sliding_window", COUNT)
    if text.get("use_sliding_window") is False:
        sliding_window = None
    raw = text.get("layer_types")
    if raw is not None:
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or len(raw) < num_layers:
            raise ValueError(
                f"config.json key 'layer_types' must list one type per layer ({num_layers} layers), got {raw!r}"
            )
        kinds = []
        for entry in list(raw)[:num_layers]:
            kind = _LAYER_ALIASES.get(str(entry))
            if kind is None:
                raise ValueError(f"config.json key 'layer_types' has unknown layer type {entry!r}")
            kinds.append(kind)
        if LAYER_SLIDING in kinds and not sliding_window:
            raise ValueError("config.json lists sliding_attention layers but has no 'sliding_window'")
        return tuple(LAYER_MLA if is_mla and k == LAYER_FULL else k for k in kinds), sliding_window
    if is_mla:
        return (LAYER_MLA,) * num_layers, None
    interval = _int_or_none(text.get("full_attention_interval"), "full_attention_interval", COUNT)
    if interval:  # Qwen3-Next: every interval-th layer is full attention, the rest Gated DeltaNet
        return tuple(LAYER_FULL if (i + 1) % interval == 0 else LAYER_LINEAR for i in range(num_layers)), None
    pattern = _int_or_none(text.get("sliding_window_pattern"), "sliding_window_pattern", COUNT)
    if sliding_window and pattern:  # Gemma 3: pattern-1 local layers, then one global
        return tuple(LAYER_FULL if (i + 1) % pattern == 0 else LAYER_SLIDING for i in range(num_layers)), sliding_window
    if sliding_window and text.get("model_type") == "gemma2":
        # Gemma 2 configs predate layer_types: transformers' Gemma2Config (>= 4.53, which vLLM reads) makes the
        # even layers local ("sliding_attention" if (i + 1) % 2) and the odd ones global.
        return tuple(LAYER_SLIDING if (i + 1) % 2 else LAYER_FULL for i in range(num_layers)), sliding_window
    if sliding_window and text.get("use_sliding_window"):
        return (LAYER_SLIDING,) * num_layers, sliding_window
    # Mistral-style configs carry sliding_window without using it in vLLM's full-attention path
    return (LAYER_FULL,) * num_layers, None


def _rope(text: Mapping) -> Tuple[Optional[str], Optional[float], Optional[int]]:
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    if not isinstance(rope, Mapping):
        return None, None, None
    rope_type = rope.get("rope_type") or rope.get("type")
    factor = rope.get("factor")
    original = _int_or_none(rope.get("original_max_position_embeddings"), "original_max_position_embeddings", SIZE)
    return (str(rope_type) if rope_type else None), (float(factor) if factor is not None else None), original


def _config_parts(config: Any) -> Tuple[Dict[str, Any], Dict[str, Any], str, Sequence[Any], str]:
    """``(top, text, where, architectures, model_type)`` of a config.json: ``text`` is its ``text_config`` when
    present (``where`` then names it in messages), else the config itself."""
    if not isinstance(config, Mapping):
        raise ValueError(f"config.json must be a mapping (JSON object), got {type(config).__name__}")
    top = dict(config)
    text_raw = top.get("text_config")
    where = ""
    if text_raw is not None:
        if not isinstance(text_raw, Mapping):
            raise ValueError("config.json key 'text_config' must be a mapping")
        text = dict(text_raw)
        where = " (text_config)"
    else:
        text = top
    archs = top.get("architectures") or text.get("architectures") or ()
    if isinstance(archs, str) or not isinstance(archs, Sequence):
        raise ValueError("config.json key 'architectures' must be a list of class names")
    model_type = str(top.get("model_type") or text.get("model_type") or "")
    if not archs and not model_type:
        raise ValueError("config.json has neither 'architectures' nor 'model_type'")
    return top, text, where, archs, model_type


_LINEAR_KEYS = (
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)


def _require_linear_keys(text: Mapping, where: str, layer_types: Sequence[str]) -> None:
    if LAYER_LINEAR in layer_types:
        for key in _LINEAR_KEYS:
            if text.get(key) is None:
                raise ValueError(f"config.json{where} has linear_attention layers but no {key!r}")


# The sizes every config.json states: ModelArchitecture's field -> its config.json keys (the first one set counts;
# a missing one is refused naming them all).
_REQUIRED_SIZES: Dict[str, Tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),  # ChatGLM: padded_vocab_size (vLLM's ChatGLMConfig)
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"),
}

# The integers ModelArchitecture takes as config.json states them: field -> (its keys, the first one set counts and
# an error names the first key; the least value allowed, SIZE or COUNT; the value when none is set). In the order
# they are read, so that of two bad values the same one is named.
_IntField = Tuple[Tuple[str, ...], int, Optional[int]]
_TEXT_INTS: Dict[str, _IntField] = {
    "intermediate_size": (("intermediate_size",), COUNT, None),
    "q_lora_rank": (("q_lora_rank",), SIZE, None),
    "qk_rope_head_dim": (("qk_rope_head_dim",), SIZE, None),
    "qk_nope_head_dim": (("qk_nope_head_dim",), SIZE, None),
    "v_head_dim": (("v_head_dim",), SIZE, None),
    **{key: ((key,), SIZE, None) for key in _LINEAR_KEYS},  # Gated DeltaNet (linear attention)
    # mixture of experts (counts 0 for a dense model; num_shared_experts is completed by _text_ints)
    "shared_expert_intermediate_size": (("shared_expert_intermediate_size",), COUNT, None),
    "num_shared_experts": (("n_shared_experts",), COUNT, None),
    "num_experts": (("num_experts", "num_local_experts", "n_routed_experts"), COUNT, 0),
    "num_experts_per_tok": (("num_experts_per_tok", "experts_per_token"), COUNT, 0),
    "moe_intermediate_size": (("moe_intermediate_size",), COUNT, None),
    "first_k_dense_replace": (("first_k_dense_replace",), COUNT, 0),
    "mtp_layers": (("mtp_num_hidden_layers", "num_nextn_predict_layers"), COUNT, 0),
}
# The vision encoder's, from ``vision_config`` (zero without one).
_VISION_INTS: Dict[str, _IntField] = {
    "vision_depth": (("depth", "num_hidden_layers"), COUNT, 0),
    "vision_hidden_size": (("hidden_size",), COUNT, 0),
    "vision_intermediate_size": (("intermediate_size",), COUNT, 0),
    "vision_patch_size": (("patch_size",), COUNT, 0),
    "vision_spatial_merge_size": (("spatial_merge_size",), COUNT, 0),
}


def _read_ints(mapping: Mapping, fields: Mapping[str, _IntField], prefix: str = "") -> Dict[str, Optional[int]]:
    """The integer fields of one table read from ``mapping`` (errors name ``prefix`` + the first key)."""
    values = {}
    for field, (keys, minimum, default) in fields.items():
        value = _int_or_none(_first(mapping, *keys), prefix + keys[0], minimum)
        values[field] = default if value is None else value
    return values


def _required_sizes(top: Mapping, text: Mapping, where: str) -> Dict[str, int]:
    """The sizes of _REQUIRED_SIZES (a vocabulary size absent from the text config is read at the top level)."""
    homes = dict.fromkeys(_REQUIRED_SIZES, (text, where))
    if not any(key in text for key in _REQUIRED_SIZES["vocab_size"]):
        homes["vocab_size"] = (top, "")
    return {field: _required_int(*homes[field], *keys) for field, keys in _REQUIRED_SIZES.items()}


def _text_ints(text: Mapping) -> Dict[str, Optional[int]]:
    """The integers of _TEXT_INTS; a model with a shared expert's size but no count has one shared expert."""
    values = _read_ints(text, _TEXT_INTS)
    if values["num_shared_experts"] is None:
        values["num_shared_experts"] = 1 if values["shared_expert_intermediate_size"] else 0
    return values


def _vision_fields(top: Mapping) -> Dict[str, Any]:
    """The vision encoder fields of ModelArchitecture, from ``vision_config`` (zero without one)."""
    vision = top.get("vision_config")
    vision = dict(vision) if isinstance(vision, Mapping) else {}
    return {"has_vision": bool(vision), **_read_ints(vision, _VISION_INTS, "vision_config.")}


@dataclass(frozen=True)
class ModelArchitecture:
    """Everything the memory budgets need to know about a model, as plain values."""

    architecture: str
    model_type: str
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    vocab_size: int
    max_position_embeddings: int
    layer_types: Tuple[str, ...]
    intermediate_size: Optional[int] = None
    sliding_window: Optional[int] = None
    attn_output_gate: bool = False
    kv_lora_rank: Optional[int] = None
    q_lora_rank: Optional[int] = None
    qk_rope_head_dim: Optional[int] = None
    qk_nope_head_dim: Optional[int] = None
    v_head_dim: Optional[int] = None
    linear_num_key_heads: Optional[int] = None
    linear_num_value_heads: Optional[int] = None
    linear_key_head_dim: Optional[int] = None
    linear_value_head_dim: Optional[int] = None
    linear_conv_kernel_dim: Optional[int] = None
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: Optional[int] = None
    num_shared_experts: int = 0
    shared_expert_intermediate_size: Optional[int] = None
    first_k_dense_replace: int = 0
    rope_type: Optional[str] = None
    rope_factor: Optional[float] = None
    rope_original_max_position_embeddings: Optional[int] = None
    mamba_ssm_dtype: Optional[str] = None
    dtype: str = "bfloat16"
    tie_word_embeddings: bool = False
    mtp_layers: int = 0
    has_vision: bool = False
    vision_depth: int = 0
    vision_hidden_size: int = 0
    vision_intermediate_size: int = 0
    vision_patch_size: int = 0
    vision_spatial_merge_size: int = 0
    quantization: Optional[QuantizationInfo] = None
    # Every class of config.json's ``architectures``, in order (``architecture`` is the first): vLLM serves
    # the first one its registry lists (checks/architecture.py).
    architectures: Tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: Mapping, hf_quant_config: Optional[Mapping] = None) -> ModelArchitecture:
        """Build from a parsed config.json (``text_config`` is used when present)."""
        top, text, where, archs, model_type = _config_parts(config)
        sizes = _required_sizes(top, text, where)
        num_layers, heads, hidden = sizes["num_layers"], sizes["num_attention_heads"], sizes["hidden_size"]
        # vLLM's get_total_num_kv_heads: ChatGLM names its KV heads multi_query_group_num
        kv_heads = _int_or_none(
            _first(text, "num_key_value_heads", "num_kv_heads", "multi_query_group_num"), "num_key_value_heads", SIZE
        )
        kv_heads = kv_heads or heads
        kv_lora_rank = _int_or_none(text.get("kv_lora_rank"), "kv_lora_rank", SIZE)
        is_mla = kv_lora_rank is not None
        if is_mla:  # MLA query/key head: nope + rope parts (the cached latent is kv_lora_rank + rope)
            head_dim = sum(_required_int(text, where, key) for key in ("qk_nope_head_dim", "qk_rope_head_dim"))
        else:
            head_dim = _int_or_none(text.get("head_dim"), "head_dim", SIZE) or hidden // heads
        layer_types, sliding_window = _layer_types(text, num_layers, is_mla)
        _require_linear_keys(text, where, layer_types)
        rope_type, rope_factor, rope_original = _rope(text)
        dtype = str(_first(text, "dtype", "torch_dtype") or _first(top, "dtype", "torch_dtype") or "bfloat16")
        quant_raw = top.get("quantization_config") or text.get("quantization_config")
        if quant_raw is None:
            # ModelOpt <= 0.29 keeps it in hf_quant_config.json, read only when config.json has none
            # (vLLM transformers_utils/config.py)
            quant_raw = hf_quant_config
        quantization = QuantizationInfo.from_config(quant_raw) if quant_raw is not None else None
        tie = top.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
        return cls(
            architecture=str(archs[0]) if archs else "",
            model_type=model_type,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            layer_types=layer_types,
            sliding_window=sliding_window,
            attn_output_gate=bool(text.get("attn_output_gate", model_type in _GATED_ATTENTION_MODEL_TYPES)),
            kv_lora_rank=kv_lora_rank,
            rope_type=rope_type,
            rope_factor=rope_factor,
            rope_original_max_position_embeddings=rope_original,
            mamba_ssm_dtype=str(text["mamba_ssm_dtype"]) if text.get("mamba_ssm_dtype") else None,
            dtype=dtype.replace("torch.", ""),
            tie_word_embeddings=bool(tie),
            **sizes,
            **_text_ints(text),
            **_vision_fields(top),
            quantization=quantization,
            architectures=tuple(str(name) for name in archs),
        )

    def count_layers(self, kind: str) -> int:
        """Number of decoder layers of one kind (``LAYER_FULL``, ``LAYER_LINEAR``, ...)."""
        return sum(1 for k in self.layer_types if k == kind)

    @property
    def full_attention_layers(self) -> int:
        return self.count_layers(LAYER_FULL)

    @property
    def linear_attention_layers(self) -> int:
        return self.count_layers(LAYER_LINEAR)

    @property
    def sliding_window_layers(self) -> int:
        return self.count_layers(LAYER_SLIDING)

    @property
    def mla_layers(self) -> int:
        return self.count_layers(LAYER_MLA)

    @property
    def is_hybrid(self) -> bool:
        """True when some layers keep a recurrent (Gated-DeltaNet / Mamba) state instead of KV."""
        return LAYER_LINEAR in self.layer_types

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def derived_max_model_len(self) -> int:
        """Longest max_model_len vLLM (< 0.30) accepts without VLLM_ALLOW_LONG_MAX_MODEL_LEN.

        vLLM config/model.py ``_get_and_verify_max_len``: rope scaling multiplies the limit by its
        factor except for su/longrope/llama3 (and Gemma 3); yarn multiplies
        original_max_position_embeddings. vllm_budget.derived_max_model_len applies 0.30's yarn change.
        """
        limit = self.max_position_embeddings
        if (
            self.rope_type
            and self.rope_type not in ("su", "longrope", "llama3", "default", "mrope")
            and "gemma3" not in self.model_type
        ):
            if self.rope_type == "yarn" and self.rope_original_max_position_embeddings:
                limit = self.rope_original_max_position_embeddings
            limit = int(limit * (self.rope_factor or 1.0))
        return limit

    def to_dict(self) -> Dict[str, Any]:
        """Plain dict (JSON-serialisable) with the helper figures added."""
        data = asdict(self)
        data["layer_types"] = list(self.layer_types)
        data["architectures"] = list(self.architectures)
        data["full_attention_layers"] = self.full_attention_layers
        data["linear_attention_layers"] = self.linear_attention_layers
        data["sliding_window_layers"] = self.sliding_window_layers
        data["mla_layers"] = self.mla_layers
        data["is_hybrid"] = self.is_hybrid
        data["is_moe"] = self.is_moe
        data["derived_max_model_len"] = self.derived_max_model_len
        if self.quantization is not None:
            quant = data["quantization"]
            quant["unquantized_modules"] = list(self.quantization.unquantized_modules)
            quant["module_schemes"] = [list(p) for p in self.quantization.module_schemes]
            if self.quantization.weight_block_size is not None:
                quant["weight_block_size"] = list(self.quantization.weight_block_size)
        return data
