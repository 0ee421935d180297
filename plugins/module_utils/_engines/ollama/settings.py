# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Ollama's settings (the ollama_* variables); ollama_render writes them as the server's environment."""

from __future__ import annotations

from typing import Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting

# Ollama settings (the ollama_* variables). Its environment is rendered by ollama_render.
OLLAMA_SETTINGS: Tuple[Setting, ...] = (
    Setting("context_length", "int", minimum=1),
    Setting("num_parallel", "int", minimum=1),
    Setting("kv_cache_type", "str", choices=("f16", "q8_0", "q4_0")),
    Setting("flash_attention", "bool"),
    Setting("num_gpu", "int", minimum=0),
    Setting("num_batch", "int", minimum=1),
    Setting("gpu_overhead_bytes", "bytes", minimum=0),
    Setting("sched_spread", "bool"),
)
