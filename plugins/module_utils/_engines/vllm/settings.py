# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""vLLM's settings: each declared once (name, `vllm serve` flag, type, range, last release that has it)."""

from __future__ import annotations

from typing import Any, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _vllm(name: str, kind: str, **kwargs: Any) -> Setting:
    return Setting(name, kind, flag=_flag(name), **kwargs)


# Flags verified in the `vllm serve` parsers of 0.19.1 and 0.33.0 (engine/arg_utils.py,
# entrypoints/*/cli_args.py); `until` marks flags that the later release no longer has.
VLLM_SETTINGS: Tuple[Setting, ...] = (
    _vllm("max_model_len", "int_or_auto", minimum=1),
    _vllm("max_num_seqs", "int", minimum=1),
    _vllm("max_num_batched_tokens", "int", minimum=1),
    _vllm("gpu_memory_utilization", "float", minimum=0.01, maximum=1.0),
    _vllm("kv_cache_memory_bytes", "bytes", minimum=1),
    _vllm("kv_cache_dtype", "str"),
    _vllm("block_size", "int", minimum=1),
    _vllm("enable_prefix_caching", "bool", negatable=True),
    _vllm("enable_chunked_prefill", "bool", negatable=True),
    _vllm("mamba_cache_mode", "str", choices=("align", "none", "all")),
    _vllm("mamba_block_size", "int", minimum=1),
    _vllm("mamba_cache_dtype", "str", choices=("auto", "float32", "float16", "bfloat16")),
    _vllm("mamba_ssm_cache_dtype", "str", choices=("auto", "float32", "float16", "bfloat16")),
    _vllm("attention_backend", "str"),
    _vllm("tensor_parallel_size", "int", minimum=1),
    _vllm("pipeline_parallel_size", "int", minimum=1),
    _vllm("data_parallel_size", "int", minimum=1),
    _vllm("enable_expert_parallel", "bool"),
    _vllm("disable_custom_all_reduce", "bool"),
    _vllm("distributed_executor_backend", "str", choices=("mp", "ray", "uni", "external_launcher")),
    _vllm("max_cudagraph_capture_size", "int", minimum=1),
    _vllm("enforce_eager", "bool"),
    _vllm("dtype", "str", choices=("auto", "half", "float16", "bfloat16", "float", "float32")),
    _vllm("quantization", "str"),
    _vllm("trust_remote_code", "bool"),
    _vllm("calculate_kv_scales", "bool", until="0.33.0"),
    _vllm("served_model_name", "str"),
    _vllm("tool_call_parser", "str"),
    _vllm("enable_auto_tool_choice", "bool"),
    _vllm("reasoning_parser", "str"),
    _vllm("default_chat_template_kwargs", "map"),
    _vllm("generation_config", "str"),
    _vllm("hf_overrides", "map"),
    _vllm("limit_mm_per_prompt", "map"),
    _vllm("language_model_only", "bool"),
    _vllm("speculative_config", "map"),
)
