# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A GGUF file's header: its metadata and tensor table, and the shape the Ollama budget reads from them.

``parse_gguf(data, name)`` reads the header from the first bytes of a file (``GgufTruncated`` when they end
inside it: read more, as ``_model/hub.py`` does with HTTP range requests); ``read_gguf(path)`` reads a file on
disk; ``shape_from_gguf(header)`` gives the ``GgufShape`` of ``_engines/ollama/budget.py`` (what llama.cpp
reads from the same keys). Plain Python, no Ansible imports.
"""

from __future__ import annotations

import math
import os
import struct
from typing import Any, Dict, List, Mapping, Optional

# A header past this is not one (vocabularies of 256k tokens take a few MiB).
MAX_HEADER_BYTES = 64 * 1024 * 1024
_FIRST_READ = 1024 * 1024
_MAX_STRING = 16 * 1024 * 1024
_MAX_ITEMS = 10_000_000

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


class GgufError(ValueError):
    """Not a GGUF header this module can read; the message names the file."""


class GgufTruncated(GgufError):
    """The bytes end inside the header: read more of the file (or the file itself is cut short)."""


class _GgufReader:
    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.name = name
        self.pos = 0

    def take(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise GgufTruncated(f"{self.name}: the GGUF header is cut short (it ends after {len(self.data)} bytes)")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        length = self.unpack("<Q")
        if length > _MAX_STRING:
            raise GgufError(f"{self.name}: a GGUF string of {length} bytes is not a header's")
        return self.take(length).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _GGUF_SCALARS:
            return self.unpack(_GGUF_SCALARS[kind])
        if kind == _GGUF_STRING:
            return self.string()
        if kind == _GGUF_ARRAY:
            item_kind, count = self.unpack("<I"), self.unpack("<Q")
            if item_kind == _GGUF_STRING:
                for _item in range(count):  # vocabularies: only their length matters here
                    self.take(self.unpack("<Q"))
                return {"array_of": "string", "length": count}
            return [self.value(item_kind) for _item in range(count)]
        raise GgufError(f"{self.name}: GGUF metadata value type {kind} is unknown")


def parse_gguf(data: bytes, name: str) -> Dict[str, Any]:
    """Header of a GGUF file (v2/v3) from its first bytes: ``{"version", "metadata": {key: value}, "tensors":
    [{"name", "shape", "type", "bytes"}], "header_bytes"}``. String arrays (the vocabulary) become
    ``{"array_of", "length"}``. Raises GgufTruncated when ``data`` ends inside the header."""
    if len(data) >= 4 and data[:4] != b"GGUF":
        raise GgufError(f"{name} is not a GGUF file (no GGUF magic)")
    reader = _GgufReader(data, name)
    reader.take(4)
    version = reader.unpack("<I")
    if version not in (2, 3):
        raise GgufError(f"{name}: GGUF version {version} is not supported (2 or 3 are)")
    tensor_count, kv_count = reader.unpack("<Q"), reader.unpack("<Q")
    if tensor_count > _MAX_ITEMS or kv_count > _MAX_ITEMS:
        raise GgufError(f"{name}: {tensor_count} tensors and {kv_count} metadata entries are not a GGUF header's")
    metadata = {}
    for _entry in range(kv_count):
        key = reader.string()
        metadata[key] = reader.value(reader.unpack("<I"))
    tensors = []
    for _tensor in range(tensor_count):
        tensor_name = reader.string()
        dims = [reader.unpack("<Q") for _dim in range(reader.unpack("<I"))]
        ggml_type = reader.unpack("<I")
        reader.unpack("<Q")  # offset in the data section
        block, block_bytes = GGML_TYPE_SIZES.get(ggml_type, (1, 0))
        elements = math.prod(dims) if dims else 1
        tensors.append(
            {"name": tensor_name, "shape": dims, "type": ggml_type, "bytes": elements // block * block_bytes}
        )
    return {"version": version, "metadata": metadata, "tensors": tensors, "header_bytes": reader.pos}


def read_gguf(path: str, name: Optional[str] = None) -> Dict[str, Any]:
    """``parse_gguf`` of a file on disk, reading only as much of it as the header needs."""
    size = os.path.getsize(path)
    length = min(size, _FIRST_READ)
    with open(path, "rb") as handle:
        while True:
            handle.seek(0)
            data = handle.read(length)
            try:
                return parse_gguf(data, name or path)
            except GgufTruncated:
                if length >= size or length >= MAX_HEADER_BYTES:
                    raise
                length = min(size, length * 4, MAX_HEADER_BYTES)


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
        raise GgufError("GGUF metadata has no general.architecture")

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
        "ssm_time_step_rank": _meta_int(meta, key("ssm.time_step_rank")),
        "layer_bytes": layer_bytes if any(layer_bytes) else None,
        "output_bytes": output_bytes,
        "input_bytes": input_bytes,
    }
