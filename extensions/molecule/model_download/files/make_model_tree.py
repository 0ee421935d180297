"""Write a tiny model repository at several commits: <root>/<commit>/<files>.

config.json differs between commits A and B while model.safetensors (a valid safetensors file: 8-byte
header length, JSON header, F32 data) is identical, so the two revisions share that blob. B also has a
small GGUF-named file for the single-file path; C has weights of its own (corrupted after its manifest
is written); D has a larger file for the resume test.
"""

import json
import os
import random
import struct
import sys

root, commit_a, commit_b, commit_c, commit_d = sys.argv[1:6]


def safetensors(values):
    data = struct.pack(f"<{len(values)}f", *values)
    header = {
        "w": {"dtype": "F32", "shape": [len(values)], "data_offsets": [0, len(data)]},
        "__metadata__": {"format": "pt"},
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def write(commit, name, content):
    path = os.path.join(root, commit, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)


weights = safetensors([float(i) for i in range(64)])
other_weights = safetensors([float(i) for i in range(64, 128)])
for commit, layers, tensors in (
    (commit_a, 2, weights),
    (commit_b, 3, weights),
    (commit_c, 2, other_weights),
    (commit_d, 2, weights),
):
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": layers}
    write(commit, "config.json", (json.dumps(config, indent=2) + "\n").encode())
    write(commit, "model.safetensors", tensors)
write(commit_b, "tiny-Q8_0.gguf", b"GGUF" + bytes(range(256)) * 4)
write(commit_d, "big.safetensors", random.Random(7).randbytes(512 * 1024))
