# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Write a tiny Qwen2-architecture checkpoint that vLLM really loads and serves: python3 tiny_qwen2.py DIR.

Standard library only (it runs with the instance's python3, no torch or transformers): the weights are
random (seeded, so the files and their checksums are the same on every run) and bfloat16, written in
the safetensors format by hand (8-byte header length, JSON header, little-endian data). The tokenizer is
a byte-level BPE (tokenizers' JSON format) whose vocabulary is the 256 bytes plus the Qwen chat and
tool-call and reasoning markers; its chat template renders tools and tool calls the way Qwen2.5's does (the
<tool_call> markers vLLM's hermes tool parser looks for). The text it generates is noise, which is all
the tests need: the whole chain (mirror, model_download, plan, vllm role, systemd, vLLM) serves it.

Size: hidden 256, 4 attention heads of 64 (vLLM's CPU attention rejects head_dim 16), 2 key/value
heads, 2 layers, intermediate 512, vocabulary 512, tied embeddings: 1,313,024 parameters, 2.6 MB.
"""

from __future__ import annotations

import array
import json
import os
import random
import struct
import sys

HIDDEN = 256
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
LAYERS = 2
INTERMEDIATE = 512
VOCAB = 512
MAX_POSITIONS = 1024
SEED = 13

# Special tokens after the 256 byte tokens, in id order.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Added tokens that are text for the parsers, not control tokens: hermes splits tool calls on
# <tool_call>; the reasoning parser the plan chooses for the Qwen2 family (deepseek_r1, for QwQ and the
# R1 distills) refuses to start without <think> and </think> in the vocabulary.
MARKERS = ["<tool_call>", "</tool_call>", "<think>", "</think>"]

CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n\\nYou may call one or more functions. Function signatures:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each call return a JSON object within <tool_call></tool_call> tags:\\n' }}
{{- '<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}
{%- for call in message.tool_calls or [] %}
{%- set function = call.function if call.function is defined else call %}
{{- '\\n<tool_call>\\n{"name": "' + function.name + '", "arguments": ' }}
{{- (function.arguments if function.arguments is string else function.arguments | tojson) + '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""


def byte_alphabet():
    """GPT-2's byte-level alphabet: byte -> printable character (what ByteLevel pre-tokenizes into)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def tokenizer_json():
    vocab = {char: index for index, char in enumerate(byte_alphabet())}
    added = []
    for offset, token in enumerate(SPECIAL + MARKERS):
        added.append(
            {
                "id": 256 + offset,
                "content": token,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": token in SPECIAL,
            }
        )
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": None,
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }


def token_id(token):
    return 256 + (SPECIAL + MARKERS).index(token)


def tensor_shapes():
    """Name -> shape of Qwen2ForCausalLM's parameters (tied embeddings: no lm_head)."""
    shapes = {"model.embed_tokens.weight": [VOCAB, HIDDEN]}
    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}."
        shapes.update(
            {
                prefix + "input_layernorm.weight": [HIDDEN],
                prefix + "self_attn.q_proj.weight": [HEADS * HEAD_DIM, HIDDEN],
                prefix + "self_attn.q_proj.bias": [HEADS * HEAD_DIM],
                prefix + "self_attn.k_proj.weight": [KV_HEADS * HEAD_DIM, HIDDEN],
                prefix + "self_attn.k_proj.bias": [KV_HEADS * HEAD_DIM],
                prefix + "self_attn.v_proj.weight": [KV_HEADS * HEAD_DIM, HIDDEN],
                prefix + "self_attn.v_proj.bias": [KV_HEADS * HEAD_DIM],
                prefix + "self_attn.o_proj.weight": [HIDDEN, HEADS * HEAD_DIM],
                prefix + "post_attention_layernorm.weight": [HIDDEN],
                prefix + "mlp.gate_proj.weight": [INTERMEDIATE, HIDDEN],
                prefix + "mlp.up_proj.weight": [INTERMEDIATE, HIDDEN],
                prefix + "mlp.down_proj.weight": [HIDDEN, INTERMEDIATE],
            }
        )
    shapes["model.norm.weight"] = [HIDDEN]
    return shapes


def bfloat16(values):
    """bfloat16 bytes of floats: the upper half of each little-endian float32 (truncation)."""
    raw = array.array("f", values)
    if sys.byteorder != "little":
        raw.byteswap()
    data = raw.tobytes()
    return b"".join(data[i + 2 : i + 4] for i in range(0, len(data), 4))


def safetensors(rng):
    header, chunks, offset = {}, [], 0
    for name, shape in tensor_shapes().items():
        count = 1
        for size in shape:
            count *= size
        if name.endswith("norm.weight"):
            values = [1.0] * count
        elif name.endswith(".bias"):
            values = [0.0] * count
        else:
            values = [rng.gauss(0.0, 0.02) for _ in range(count)]
        data = bfloat16(values)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(chunks)


def files():
    """File name -> bytes of the checkpoint."""
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "num_hidden_layers": LAYERS,
        "vocab_size": VOCAB,
        "max_position_embeddings": MAX_POSITIONS,
        "max_window_layers": LAYERS,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "initializer_range": 0.02,
        "attention_dropout": 0.0,
        "use_sliding_window": False,
        "sliding_window": None,
        "use_cache": True,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "bos_token_id": token_id("<|endoftext|>"),
        "eos_token_id": token_id("<|im_end|>"),
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": MAX_POSITIONS,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    generation_config = {
        "bos_token_id": token_id("<|endoftext|>"),
        "eos_token_id": [token_id("<|im_end|>"), token_id("<|endoftext|>")],
        "pad_token_id": token_id("<|endoftext|>"),
    }

    def as_json(value):
        return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()

    return {
        "config.json": as_json(config),
        "generation_config.json": as_json(generation_config),
        "tokenizer.json": as_json(tokenizer_json()),
        "tokenizer_config.json": as_json(tokenizer_config),
        "model.safetensors": safetensors(random.Random(SEED)),
    }


def main():
    target = sys.argv[1]
    os.makedirs(target, exist_ok=True)
    for name, content in files().items():
        with open(os.path.join(target, name), "wb") as handle:
            handle.write(content)


if __name__ == "__main__":
    main()
