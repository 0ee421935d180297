"""A GGUF header reader for the Ollama budget's tests (the plan never reads GGUF files: it budgets from the
base model's architecture, ``budget.shape_from_architecture``). Kept here, beside the tests that check
the budget against a real GGUF header, so that no test-only code sits in the product."""

from __future__ import annotations

import math
import struct
from typing import Any, Dict, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    OllamaBudgetError,
)

#: ggml type id -> (elements per block, bytes per block), as gguf-py GGML_QUANT_SIZES.
GGML_TYPE_SIZES = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
    39: (32, 17),
}
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


class _GgufReader:
    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        data = self.handle.read(size)
        if len(data) != size:
            raise OllamaBudgetError("GGUF file ends inside its header; is the download complete?")
        return struct.unpack(fmt, data)[0]

    def string(self) -> str:
        length = self.unpack("<Q")
        return self.handle.read(length).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _GGUF_SCALARS:
            return self.unpack(_GGUF_SCALARS[kind])
        if kind == _GGUF_STRING:
            return self.string()
        if kind == _GGUF_ARRAY:
            item_kind, count = self.unpack("<I"), self.unpack("<Q")
            if item_kind == _GGUF_STRING:
                for _item in range(count):  # vocabularies: only their length matters here
                    self.handle.seek(self.unpack("<Q"), 1)
                return {"array_of": "string", "length": count}
            return [self.value(item_kind) for _item in range(count)]
        raise OllamaBudgetError(f"GGUF metadata value type {kind} is unknown")


def read_gguf(path: str) -> Dict[str, Any]:
    """Header of a GGUF file (v2/v3): ``{"version", "metadata": {key: value}, "tensors": [{"name",
    "shape", "type", "bytes"}]}``. String arrays (the vocabulary) become ``{"array_of", "length"}``."""
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise OllamaBudgetError(f"{path} is not a GGUF file (no GGUF magic)")
        reader = _GgufReader(handle)
        version = reader.unpack("<I")
        if version not in (2, 3):
            raise OllamaBudgetError(f"{path}: GGUF version {version} is not supported (2 or 3 are)")
        tensor_count, kv_count = reader.unpack("<Q"), reader.unpack("<Q")
        metadata = {}
        for _entry in range(kv_count):
            key = reader.string()
            metadata[key] = reader.value(reader.unpack("<I"))
        tensors = []
        for _tensor in range(tensor_count):
            name = reader.string()
            dims = [reader.unpack("<Q") for _dim in range(reader.unpack("<I"))]
            ggml_type = reader.unpack("<I")
            reader.unpack("<Q")  # offset in the data section
            block, block_bytes = GGML_TYPE_SIZES.get(ggml_type, (1, 0))
            elements = math.prod(dims) if dims else 1
            tensors.append({"name": name, "shape": dims, "type": ggml_type, "bytes": elements // block * block_bytes})
    return {"version": version, "metadata": metadata, "tensors": tensors}


def _meta_int(meta: Mapping[str, Any], key: str) -> int:
    value = meta.get(key)
    if isinstance(value, list):
        return max(int(v) for v in value) if value else 0
    return int(value or 0)


def shape_from_gguf(header: Mapping[str, Any]) -> Dict[str, Any]:
    """GgufShape from ``read_gguf()`` output: what llama.cpp reads from the same keys."""
    meta = header["metadata"]
    arch = str(meta.get("general.architecture") or "")
    if not arch:
        raise OllamaBudgetError("GGUF metadata has no general.architecture")

    def key(name: str) -> str:
        return f"{arch}.{name}"

    blocks = _meta_int(meta, key("block_count"))
    heads = _meta_int(meta, key("attention.head_count"))
    embd = _meta_int(meta, key("embedding_length"))
    heads_kv_raw = meta.get(key("attention.head_count_kv"), heads)
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = tokens["length"] if isinstance(tokens, Mapping) else _meta_int(meta, key("vocab_size"))
    interval = _meta_int(meta, key("full_attention_interval"))
    recurrent = [i for i in range(blocks) if (i + 1) % interval != 0] if interval else []
    window = _meta_int(meta, key("attention.sliding_window"))
    sliding: List[int] = []
    if window and arch.startswith("gemma3"):
        sliding = [i for i in range(blocks) if (i + 1) % 6 != 0]
    elif window and arch in ("gptoss", "gpt-oss"):
        sliding = [i for i in range(blocks) if i % 2 == 0]
    layer_bytes = [0] * blocks
    output_bytes = input_bytes = 0
    for tensor in header.get("tensors") or ():
        name = tensor["name"]
        if name.startswith("blk."):
            index = int(name.split(".")[1])
            if index < blocks:
                layer_bytes[index] += tensor["bytes"]
        elif name.startswith("token_embd"):
            input_bytes += tensor["bytes"]
        else:
            output_bytes += tensor["bytes"]
    return {
        "architecture": arch,
        "block_count": blocks,
        "embedding_length": embd,
        "head_count": heads,
        "head_count_kv": [int(h) for h in heads_kv_raw] if isinstance(heads_kv_raw, list) else int(heads_kv_raw),
        "key_length": _meta_int(meta, key("attention.key_length")) or (embd // heads if heads else 0),
        "value_length": _meta_int(meta, key("attention.value_length")) or (embd // heads if heads else 0),
        "vocab_size": vocab,
        "context_length": _meta_int(meta, key("context_length")),
        "feed_forward_length": _meta_int(meta, key("feed_forward_length")),
        "expert_count": _meta_int(meta, key("expert_count")),
        "expert_used_count": _meta_int(meta, key("expert_used_count")),
        "expert_feed_forward_length": _meta_int(meta, key("expert_feed_forward_length")),
        "expert_shared_feed_forward_length": _meta_int(meta, key("expert_shared_feed_forward_length")),
        "sliding_window": window,
        "sliding_window_layers": sliding,
        "recurrent_layers": recurrent,
        "ssm_conv_kernel": _meta_int(meta, key("ssm.conv_kernel")),
        "ssm_state_size": _meta_int(meta, key("ssm.state_size")),
        "ssm_group_count": _meta_int(meta, key("ssm.group_count")),
        "ssm_inner_size": _meta_int(meta, key("ssm.inner_size")),
        "layer_bytes": layer_bytes if any(layer_bytes) else None,
        "output_bytes": output_bytes,
        "input_bytes": input_bytes,
    }
