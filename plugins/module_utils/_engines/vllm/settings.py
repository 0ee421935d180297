# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""vLLM's settings: each declared once (name, `vllm serve` flag, type, range, last release that has it)."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import batch_defaults, vllm_version
from ansible_collections.inferops.llm.plugins.module_utils._plan.checks import (
    FAMILIES,
    REASONING_PARSERS,
    TOOL_PARSERS,
    _arch_dict,
    _cc,
    _first_available,
    _fmt,
    _prefix_caching,
    mamba_cache_mode,
    model_family,
    predicted_backend,
    suggested_batched_tokens,
)


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


# --------------------------------------------------------------------------- resolution


def choose_vllm_settings(
    *,
    version: str,
    model: Any,
    gpus: Sequence[Mapping[str, Any]],
    inventory: Mapping[str, Any],
    repo: str = "",
    budget: Optional[Callable[[Mapping[str, Any]], Mapping[str, Any]]] = None,
) -> Dict[str, Dict[str, Any]]:
    """Resolve the settings the inventory left unset so that every check passes.

    inventory: settings given by the user (snake_case `vllm serve` names, unset keys absent or None).
    budget: callable(settings) -> vllm_budget.vllm_memory_budget() result for those settings (the
    caller binds architecture, GPU and layout); it supplies the hybrid block size and the KV capacity.
    Returns ``{name: {"value", "source": "inventory|default|chosen", "reason"}}``.
    """
    vv = vllm_version(version)
    ver = vv.number
    arch = _arch_dict(model)
    hybrid = bool(arch.get("is_hybrid"))
    ccs = [c for c in (_cc(g) for g in gpus) if c is not None]
    cc = min(ccs) if ccs else None
    smallest = min(gpus, key=lambda g: int(g.get("memory_mib") or 0)) if gpus else {}
    defaults = batch_defaults(vv, int(smallest.get("memory_mib") or 0) << 20, str(smallest.get("name") or ""))
    default_batched, default_seqs = defaults["max_num_batched_tokens"], defaults["max_num_seqs"]
    out: Dict[str, Dict[str, Any]] = {}

    def given(name: str) -> bool:
        value = inventory.get(name)
        if value is None or value == "":
            return False
        out[name] = {"value": value, "source": "inventory", "reason": "set in the inventory"}
        return True

    def choose(name: str, value: Any, reason: str, source: str = "chosen") -> None:
        out[name] = {"value": value, "source": source, "reason": reason}

    family = FAMILIES.get(model_family(arch, repo) or "")
    if not given("tool_call_parser"):
        parser = _first_available(TOOL_PARSERS, family.tool, ver) if family else None
        if parser:
            choose("tool_call_parser", parser, f"{family.name} family: {family.note}")
        else:
            choose("tool_call_parser", None, "no tool-call format known for this model family", "default")
    if not given("enable_auto_tool_choice"):
        on = bool(out["tool_call_parser"]["value"])
        choose(
            "enable_auto_tool_choice",
            on,
            "tool calling on with the family's parser" if on else "off: no parser for this family",
            "chosen" if on else "default",
        )
    if not given("reasoning_parser"):
        parser = _first_available(REASONING_PARSERS, family.reasoning, ver) if family else None
        if parser:
            choose("reasoning_parser", parser, f"{family.name} family emits <think> blocks split by '{parser}'")
        else:
            choose("reasoning_parser", None, "the model family has no reasoning parser", "default")

    if not given("kv_cache_dtype"):
        if cc is not None and cc >= 89 and predicted_backend(ver, cc, "fp8", False):
            choose("kv_cache_dtype", "fp8", f"compute capability {cc / 10:.1f} has native FP8: half the KV memory")
        else:
            choose("kv_cache_dtype", "auto", "KV cache in the model dtype (no native FP8 on this GPU)", "default")
    kv = str(out["kv_cache_dtype"]["value"] or "auto")
    sinks = str(arch.get("architecture", "")).startswith("GptOss")
    if not given("attention_backend"):
        pick = predicted_backend(ver, cc, kv, sinks) if cc is not None else None
        choose(
            "attention_backend",
            None,
            f"left to vLLM, which selects {pick} on compute capability {cc / 10:.1f} with kv_cache_dtype {kv}"
            if pick
            else "left to vLLM",
            "default",
        )

    if not given("enable_prefix_caching"):
        on = _prefix_caching(vv, {}, hybrid)
        reason = (
            f"vLLM {_fmt(ver)} default for a hybrid model ({'on' if on else 'off'}; on from 0.26.0)"
            if hybrid
            else "vLLM default (on)"
        )
        choose("enable_prefix_caching", on, reason, "default")
    mode_settings = {"enable_prefix_caching": out["enable_prefix_caching"]["value"]}
    mode_settings["mamba_cache_mode"] = inventory.get("mamba_cache_mode")
    if hybrid:
        choose(
            "mamba_cache_mode",
            mamba_cache_mode(vv, mode_settings, hybrid),
            "align when prefix caching is on for a hybrid model, else none",
            "default",
        )
    if not given("max_model_len"):
        choose(
            "max_model_len",
            int(arch.get("derived_max_model_len") or arch.get("max_position_embeddings") or 0) or None,
            "the model's native context",
            "default",
        )

    resolved = {name: entry["value"] for name, entry in out.items()}
    resolved.update({k: v for k, v in inventory.items() if v not in (None, "")})
    figures = dict(budget(resolved)) if budget else {}
    block = figures.get("block_size")
    if not given("max_num_batched_tokens"):
        value, reason, source = default_batched, f"vLLM default for this GPU class ({default_batched})", "default"
        if (
            hybrid
            and block
            and int(block) > value
            and mamba_cache_mode(vv, resolved, hybrid) == "align"
            and vv.align_block_size_assert
        ):
            value = suggested_batched_tokens(int(block))
            reason = f"at least the hybrid block size {block} (vLLM {_fmt(ver)} asserts it in align mode)"
            source = "chosen"
        choose("max_num_batched_tokens", value, reason, source)
        resolved["max_num_batched_tokens"] = value
    if not given("max_num_seqs"):
        value, reason, source = default_seqs, f"vLLM default for this GPU class ({default_seqs})", "default"
        batched = int(resolved.get("max_num_batched_tokens") or default_batched)
        # The sampler warm-up and CUDA graphs grow with max_num_seqs, so the KV capacity depends on the
        # value being chosen: iterate to the fixed point (it settles in two or three rounds).
        for _round in range(6) if budget else ():
            figures = dict(budget(dict(resolved, max_num_seqs=value)))
            fit, why = default_seqs, reason
            concurrency = figures.get("max_concurrency")
            if concurrency is not None and fit > max(1, math.floor(float(concurrency))):
                fit = max(1, math.floor(float(concurrency)))
                why = f"the KV cache holds {float(concurrency):.2f} sequences at max_model_len"
            blocks = figures.get("num_blocks")
            groups = (figures.get("layout") or {}).get("groups") or []
            state = sum(g["blocks_per_request"] for g in groups if g["kind"] == "linear_attention")
            if hybrid and blocks and state and fit * state * 2 > int(blocks):
                fit = max(1, int(blocks) // (2 * state))
                why = f"each sequence pins {state} of {blocks} KV blocks for its recurrent state; half stay for tokens"
            fit = min(fit, batched)
            if fit == value:
                break
            value, reason, source = fit, why, "chosen" if fit != default_seqs else "default"
        choose("max_num_seqs", min(value, batched), reason, source)
    if not given("gpu_memory_utilization"):
        util = vv.default_gpu_memory_utilization
        choose("gpu_memory_utilization", util, f"vLLM {_fmt(ver)} default", "default")
    return out
