# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's plan: what the pinned engine will do with this model on these GPUs.

Orchestration only. The maths lives elsewhere and is called from here:
``model_arch`` / ``model_catalogue`` (architecture, weights), ``vllm_budget`` and
``ollama_budget`` (memory), ``layout`` (TP/PP/DP and GPU order), ``checks`` (findings and the
values chosen for unset settings). This module validates the host's inputs, assembles those
results into the plan dict of docs/plan.md and renders the service's argv and environment.

Inputs are the host's variables (a mapping of name -> value; only the names listed here are read,
so secrets such as ``vllm_api_key`` or an HF token never enter the plan).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.budget import (
    coresidency_checks,
    ollama_budget,
    shape_from_architecture,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.render import ollama_environment
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import (
    cuda_total_bytes_from_nvidia_smi,
    parse_human_int,
    vllm_memory_budget,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import describe_model
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    estimate_weights,
    quantization_from_name,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.checks import (
    check_ollama,
    check_vllm,
    choose_vllm_settings,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import select_layout

GIB = float(1 << 30)
MIB = 1 << 20
ENGINES = ("vllm", "ollama")
SEVERITIES = ("error", "warning", "info")

# vLLM publishes versions like 0.26.0 and, rarely, 0.10.1.1; Ollama 0.30.0.
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:\.\d+)?$")
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names that carry credentials. Values under such names never enter a plan: they go through the
# engine roles' secret variables into a 0600 environment file.
_SECRET_NAME_RE = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL", re.IGNORECASE)
# Values that look like credentials wherever they appear (Hugging Face, OpenAI-style keys).
_SECRET_VALUE_RE = re.compile(r"\bhf_[A-Za-z0-9]{20,}|\bsk-[A-Za-z0-9_-]{20,}")
_SECRET_FLAGS = ("--api-key", "--hf-token")
# allow_patterns / ignore_patterns are read by the model_download role, not by the plan.
_MODEL_KEYS = (
    "repo",
    "revision",
    "config",
    "config_file",
    "base_model",
    "file",
    "weights_bytes",
    "quantization",
    "allow_patterns",
    "ignore_patterns",
)


class PlanInputError(ValueError):
    """The host's inputs cannot be planned. ``errors`` lists every problem, each naming its variable."""

    def __init__(self, errors: Sequence[str]):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


@dataclass(frozen=True)
class Setting:
    """One engine setting read from ``<engine>_<name>``.

    kind: int, float, bool, str, map, list, int_or_auto (vLLM max_model_len: "auto" = -1),
    bytes (vLLM human-readable byte count). flag: the `vllm serve` flag (None for Ollama settings,
    whose environment ollama_render writes). until: first version that no longer has the flag.
    negatable: vLLM BooleanOptionalAction (``--no-<flag>`` turns it off).
    """

    name: str
    kind: str
    flag: Optional[str] = None
    until: Optional[str] = None
    negatable: bool = False
    choices: Tuple[str, ...] = ()
    minimum: Optional[float] = None
    maximum: Optional[float] = None


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

# An Ollama kept on standby beside vLLM on the same host (docs/plan.md): its model and settings, so
# that the plan can tell whether both engines fit the GPUs at once.
STANDBY_VAR = "inferops_standby_ollama"
_STANDBY_SETTINGS = tuple(
    s for s in OLLAMA_SETTINGS if s.name in ("context_length", "num_parallel", "kv_cache_type", "flash_attention")
)
_STANDBY_KEYS = ("version", "model", "gpus", *(s.name for s in _STANDBY_SETTINGS))

# Inputs beside the engine settings: layout requests and pass-through values.
_EXTRA_VARS = {
    "vllm": ("vllm_gpus", "vllm_extra_args", "vllm_environment", STANDBY_VAR),
    "ollama": ("ollama_gpus", "ollama_host", "ollama_port", "ollama_environment_extra"),
}
# The variable holding extra service environment, per engine (the engine roles' names).
ENVIRONMENT_VAR = {"vllm": "vllm_environment", "ollama": "ollama_environment_extra"}

ENGINE_SETTINGS = {"vllm": VLLM_SETTINGS, "ollama": OLLAMA_SETTINGS}


def version_tuple(version: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def setting_available(setting: Setting, version: str) -> bool:
    """Whether the pinned engine version has the setting's flag."""
    return not (setting.until and version_tuple(version) >= version_tuple(setting.until))


def input_names(engine: Optional[str] = None) -> List[str]:
    """Every variable name this module reads (for one engine, or for all)."""
    names = ["inferops_engine", "inferops_model", "vllm_version", "ollama_version"]
    for name in ENGINES if engine is None else (engine,):
        names += [f"{name}_{s.name}" for s in ENGINE_SETTINGS[name]]
        names += list(_EXTRA_VARS[name])
    return names


# ------------------------------------------------------------------------------------ validation


@dataclass
class HostInputs:
    """The validated inputs of one host."""

    engine: str
    engine_version: str
    model: Dict[str, Any]
    settings: Dict[str, Any]  # setting name -> value, only those set in inventory
    gpus: Optional[List[int]] = None
    extra_args: List[str] = field(default_factory=list)
    environment: Dict[str, str] = field(default_factory=dict)
    listen: Optional[str] = None  # OLLAMA_HOST from ollama_host/ollama_port (vLLM's belong to the vllm role)
    standby_ollama: Optional[StandbyOllama] = None  # vLLM hosts only


@dataclass
class StandbyOllama:
    """The validated inferops_standby_ollama of a vLLM host."""

    version: str
    model: Dict[str, Any]
    settings: Dict[str, Any]  # Ollama setting name -> value, only those set
    gpus: Optional[List[int]] = None


def _is_unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _bool(value: Any) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "off", "0"):
        return False
    return None


def _number(value: Any, kind: str) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if kind == "int":
        if isinstance(value, int):
            return value
        if isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _coerce(setting: Setting, var: str, value: Any, errors: List[str]) -> Any:
    kind = setting.kind
    if kind == "bool":
        result = _bool(value)
        if result is None:
            errors.append(f"{var} must be true or false, got {value!r}")
        return result
    if kind == "int_or_auto":
        if (isinstance(value, str) and value.strip().lower() == "auto") or value == -1:
            return "auto"
        kind = "int"
    if kind in ("int", "float"):
        number = _number(value, kind)
        if number is None:
            errors.append(f"{var} must be {'an integer' if kind == 'int' else 'a number'}, got {value!r}")
            return None
        if setting.minimum is not None and number < setting.minimum:
            errors.append(f"{var} must be at least {setting.minimum:g}, got {value!r}")
        if setting.maximum is not None and number > setting.maximum:
            errors.append(f"{var} must be at most {setting.maximum:g}, got {value!r}")
        return number
    if kind == "bytes":
        try:
            number: Optional[int] = parse_human_int(value)
        except ValueError:
            number = None
        if number is None or (setting.minimum is not None and number < setting.minimum):
            errors.append(f"{var} must be a byte count such as 21474836480 or 20600M (M = MiB), got {value!r}")
        return number
    if kind == "map":
        if not isinstance(value, Mapping):
            errors.append(f"{var} must be a mapping, got {type(value).__name__}")
            return None
        return _plain(value)
    if kind == "list":
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            errors.append(f"{var} must be a list, got {type(value).__name__}")
            return None
        return _plain(value)
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        errors.append(f"{var} must be a string, got {type(value).__name__}")
        return None
    text = str(value).strip()
    if setting.choices and text not in setting.choices:
        errors.append(f"{var} must be one of {', '.join(setting.choices)}, got {text!r}")
    return text


def _plain(value: Any) -> Any:
    """Plain dict/list copy of a mapping or sequence (ansible-core passes lazy containers)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or (isinstance(value, Sequence) and not isinstance(value, (str, bytes))):
        return [_plain(v) for v in value]
    return value


def _validate_model(value: Any, errors: List[str], var: str = "inferops_model") -> Dict[str, Any]:
    if not isinstance(value, Mapping):
        errors.append(
            f"{var} is required: a mapping with repo (Hugging Face id such as Qwen/Qwen3-8B) and "
            "revision (a commit sha, branch or tag)"
        )
        return {}
    model = _plain(value)
    unknown = sorted(set(model) - set(_MODEL_KEYS))
    if unknown:
        errors.append(f"{var} has unknown keys {', '.join(unknown)}; allowed: {', '.join(_MODEL_KEYS)}")
    repo = model.get("repo")
    if not isinstance(repo, str) or not _REPO_RE.match(repo):
        errors.append(f"{var}.repo must be a Hugging Face repository id such as Qwen/Qwen3-8B, got {repo!r}")
    revision = model.get("revision")
    if not isinstance(revision, str) or not revision.strip():
        errors.append(f"{var}.revision is required: the commit sha to pin (a branch or tag is accepted with a warning)")
    for key in ("base_model", "file", "config_file", "quantization"):
        if key in model and not (isinstance(model[key], str) and model[key].strip()):
            errors.append(f"{var}.{key} must be a non-empty string, got {model[key]!r}")
    if "config" in model and not isinstance(model["config"], dict):
        errors.append(f"{var}.config must be the config.json content as a mapping")
    if "weights_bytes" in model:
        weights = _number(model["weights_bytes"], "int")
        if weights is None or weights <= 0:
            errors.append(f"{var}.weights_bytes must be a positive integer, got {model['weights_bytes']!r}")
        else:
            model["weights_bytes"] = int(weights)
    return model


def _validate_environment(var: str, value: Any, errors: List[str]) -> Dict[str, str]:
    if _is_unset(value):
        return {}
    if not isinstance(value, Mapping):
        errors.append(f"{var} must be a mapping of environment variable names to values")
        return {}
    environment = {}
    for name, item in value.items():
        name = str(name)
        if not _ENV_NAME_RE.match(name):
            errors.append(f"{var} has an invalid environment variable name {name!r}")
        elif _SECRET_NAME_RE.search(name) or _SECRET_VALUE_RE.search(str(item)):
            errors.append(
                f"{var}.{name} holds a credential; plans and unit files must not: give tokens and API keys "
                "through the engine role's secret variables (vaulted), which go to a mode 0600 environment file"
            )
        elif name == "CUDA_VISIBLE_DEVICES":
            errors.append(
                f"{var}.CUDA_VISIBLE_DEVICES is set by the plan's layout; choose GPUs with the engine's _gpus"
            )
        else:
            environment[name] = "" if item is None else str(item).lower() if isinstance(item, bool) else str(item)
    return environment


def _validate_extra_args(var: str, value: Any, managed: Mapping[str, str], errors: List[str]) -> List[str]:
    if _is_unset(value):
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        errors.append(f'{var} must be a list of arguments, e.g. ["--disable-log-requests"]')
        return []
    args = [str(arg) for arg in value]
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in _SECRET_FLAGS or _SECRET_VALUE_RE.search(arg):
            errors.append(
                f"{var} holds a credential ({flag if flag.startswith('--') else 'a token'}); it would show in "
                "process lists: use the vllm role's vllm_api_key / the model download token instead"
            )
        elif flag in managed:
            errors.append(f"{var} sets {flag}, which the plan manages: use {managed[flag]} instead")
    return args


def _validate_version(var: str, value: Any, example: str, errors: List[str]) -> str:
    version = str(value).strip() if isinstance(value, (str, int, float)) else ""
    if not _VERSION_RE.match(version):
        errors.append(f"{var} is required and must be an exact pin like {example}, got {version or None!r}")
    return version


def _validate_gpus(var: str, value: Any, errors: List[str]) -> Optional[List[int]]:
    if _is_unset(value):
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        errors.append(f"{var} must be a non-empty list of GPU indices, e.g. [0, 1]")
        return None
    numbers = [_number(g, "int") for g in value]
    if any(n is None or n < 0 for n in numbers):
        errors.append(f"{var} must list GPU indices (integers >= 0), got {list(value)!r}")
        return None
    return [int(n) for n in numbers]


def _validate_standby_ollama(value: Any, errors: List[str]) -> Optional[StandbyOllama]:
    if _is_unset(value):
        return None
    if not isinstance(value, Mapping):
        errors.append(
            f"{STANDBY_VAR} must be a mapping with version (an exact Ollama pin such as 0.30.0) and model "
            "(repo, revision, file, weights_bytes, base_model, as in inferops_model)"
        )
        return None
    standby = _plain(value)
    unknown = sorted(set(standby) - set(_STANDBY_KEYS))
    if unknown:
        errors.append(f"{STANDBY_VAR} has unknown keys {', '.join(unknown)}; allowed: {', '.join(_STANDBY_KEYS)}")
    version = _validate_version(f"{STANDBY_VAR}.version", standby.get("version"), "0.30.0", errors)
    model = _validate_model(standby.get("model"), errors, f"{STANDBY_VAR}.model")
    if model and "weights_bytes" not in model:
        errors.append(
            f"{STANDBY_VAR}.model.weights_bytes is required: the size in bytes of the GGUF file "
            f"({model.get('file') or STANDBY_VAR + '.model.file'}) as listed on its Hugging Face page"
        )
    settings: Dict[str, Any] = {}
    for setting in _STANDBY_SETTINGS:
        if not _is_unset(standby.get(setting.name)):
            coerced = _coerce(setting, f"{STANDBY_VAR}.{setting.name}", standby[setting.name], errors)
            if coerced is not None:
                settings[setting.name] = coerced
    gpus = _validate_gpus(f"{STANDBY_VAR}.gpus", standby.get("gpus"), errors)
    return StandbyOllama(version=version, model=model, settings=settings, gpus=gpus)


def validate_inputs(variables: Mapping[str, Any]) -> HostInputs:
    """Check a host's variables; raise PlanInputError listing every problem (each names its variable)."""
    errors: List[str] = []
    engine = variables.get("inferops_engine")
    if engine not in ENGINES:
        raise PlanInputError([f"inferops_engine is required and must be one of {', '.join(ENGINES)}, got {engine!r}"])
    version = _validate_version(
        f"{engine}_version", variables.get(f"{engine}_version"), "0.33.0" if engine == "vllm" else "0.30.0", errors
    )
    model = _validate_model(variables.get("inferops_model"), errors)

    settings: Dict[str, Any] = {}
    for setting in ENGINE_SETTINGS[engine]:
        var = f"{engine}_{setting.name}"
        value = variables.get(var)
        if _is_unset(value):
            continue
        coerced = _coerce(setting, var, value, errors)
        if coerced is None:
            continue
        if _VERSION_RE.match(version) and not setting_available(setting, version):
            errors.append(
                f"{var}: {setting.flag} exists only up to {setting.until} (excluded); {engine} {version} does not "
                "accept it"
            )
            continue
        settings[setting.name] = coerced

    gpu_list = _validate_gpus(f"{engine}_gpus", variables.get(f"{engine}_gpus"), errors)
    managed = {s.flag: f"{engine}_{s.name}" for s in ENGINE_SETTINGS[engine] if s.flag and s.flag.startswith("--")}
    managed.update({"--model": "inferops_model.repo", "--revision": "inferops_model.revision"})
    extra_args = _validate_extra_args(f"{engine}_extra_args", variables.get(f"{engine}_extra_args"), managed, errors)
    environment = _validate_environment(ENVIRONMENT_VAR[engine], variables.get(ENVIRONMENT_VAR[engine]), errors)
    for name, value in settings.items():
        if isinstance(value, (dict, list, str)) and _SECRET_VALUE_RE.search(json.dumps(value)):
            errors.append(f"{engine}_{name} holds a credential; give it through the engine role's secret variables")
    listen = None
    if engine == "ollama":
        address, port = variables.get("ollama_host"), variables.get("ollama_port")
        if not _is_unset(address) and not isinstance(address, str):
            errors.append(f"ollama_host must be an address such as 127.0.0.1, got {address!r}")
        number = None if _is_unset(port) else _number(port, "int")
        if not _is_unset(port) and (number is None or not 0 < number < 65536):
            errors.append(f"ollama_port must be a TCP port such as 11434, got {port!r}")
        elif not (_is_unset(address) and _is_unset(port)):
            # Ollama's own defaults fill what the inventory leaves out (envconfig/config.go).
            listen = f"{'127.0.0.1' if _is_unset(address) else address}:{11434 if number is None else int(number)}"
        if not _is_unset(variables.get(STANDBY_VAR)):
            errors.append(
                f"{STANDBY_VAR} describes an Ollama kept beside vLLM; on an Ollama host use inferops_model and the "
                "ollama_* variables instead"
            )
    standby_ollama = _validate_standby_ollama(variables.get(STANDBY_VAR), errors) if engine == "vllm" else None
    if errors:
        raise PlanInputError(errors)
    return HostInputs(
        engine=engine,
        engine_version=version,
        model=model,
        settings=settings,
        gpus=gpu_list,
        extra_args=extra_args,
        environment=environment,
        listen=listen,
        standby_ollama=standby_ollama,
    )


def input_errors(variables: Mapping[str, Any]) -> List[str]:
    """Every problem with a host's inputs, as messages naming the variable and the fix."""
    try:
        validate_inputs(variables)
    except PlanInputError as exc:
        return exc.errors
    return []


# ------------------------------------------------------------------------------------ rendering


def resolved(value: Any, source: str, reason: Optional[str] = None) -> Dict[str, Any]:
    """One entry of the plan's ``settings``: value, source (inventory|default|chosen), reason."""
    entry: Dict[str, Any] = {"value": value, "source": source}
    if reason:
        entry["reason"] = reason
    return entry


def _cli_value(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def vllm_command(
    repo: str,
    revision: str,
    settings: Mapping[str, Mapping[str, Any]],
    extra_args: Sequence[str],
    auto_max_model_len: bool = False,
) -> List[str]:
    """`vllm serve` argv for resolved settings.

    Settings that are unset (None) or at the pinned release's own default (source "default") are left
    out: the release applies them itself, and an explicit flag could pin a value vLLM derives later
    (such as the hybrid block size).

    auto_max_model_len: the inventory asked for vLLM's auto-fit (-1); the setting's value is then the
    length the plan predicts, and the argv keeps -1 so that vLLM fits it itself.
    """
    argv = ["vllm", "serve", repo, "--revision", revision]
    for setting in VLLM_SETTINGS:
        entry = settings.get(setting.name)
        if entry is None or entry.get("value") is None or entry.get("source") == "default":
            continue
        value = entry["value"]
        if setting.name == "max_model_len" and auto_max_model_len:
            value = "auto"
        if setting.kind == "bool":
            if value:
                argv.append(setting.flag)
            elif setting.negatable:
                argv.append("--no-" + setting.flag[2:])
            continue
        if setting.kind == "int_or_auto" and value == "auto":
            value = -1
        argv += [setting.flag, _cli_value(value)]
    return argv + list(extra_args)


def gib(value: Optional[float]) -> Optional[float]:
    """Bytes -> GiB (2^30), rounded for the report; None stays None."""
    return None if value is None else round(value / GIB, 3)


def revision_check(model: Mapping[str, Any]) -> Optional[Dict[str, str]]:
    """A warning when the revision is a branch or tag: the download is then not reproducible."""
    revision = str(model.get("revision", ""))
    if _COMMIT_RE.match(revision):
        return None
    return {
        "id": "model-revision",
        "severity": "warning",
        "message": (
            f"inferops_model.revision {revision!r} is a branch or tag, not a commit: a later download may get "
            "different weights. Pin the 40-character commit sha of the revision you tested."
        ),
    }


# ------------------------------------------------------------------------------------ assembly


@dataclass
class Hardware:
    """The host's GPUs as gathered by gpu_facts or declared in inventory."""

    gpus: List[Dict[str, Any]]
    topology: Optional[Dict[str, Any]]
    driver: Dict[str, Any]


def _hardware(hardware: Mapping[str, Any]) -> Hardware:
    gpus = hardware.get("gpus")
    if isinstance(gpus, (str, bytes)) or not isinstance(gpus, Sequence) or not gpus:
        raise PlanInputError(
            [
                "no GPUs to plan for: declare inferops_gpus (and inferops_gpu_topology_text for more than one GPU) "
                "or let the plan role gather them with inferops.llm.gpu_facts on a host with NVIDIA GPUs"
            ]
        )
    gpu_list = [_plain(gpu) for gpu in gpus]
    driver = hardware.get("driver")
    driver_loaded = not isinstance(driver, Mapping) or driver.get("driver_loaded") is not False
    for position, gpu in enumerate(gpu_list):
        if not isinstance(gpu, dict) or _number(gpu.get("memory_mib"), "int") is None:
            if not driver_loaded:
                raise PlanInputError(
                    [
                        "the GPUs' memory is unknown until the NVIDIA driver is loaded: install the driver first "
                        "(site.yml --tags driver, inferops_manage_driver: true) or declare inferops_gpus in inventory"
                    ]
                )
            raise PlanInputError([f"inferops_gpus[{position}] needs index, name and memory_mib (as gpu_facts returns)"])
        gpu.setdefault("index", position)
    topology = hardware.get("topology")
    topology = _plain(topology) if isinstance(topology, Mapping) and topology.get("matrix") else None
    if topology is None and len(gpu_list) > 1:
        raise PlanInputError(
            [
                "inferops_gpu_topology_text is required when inferops_gpus lists more than one GPU: paste the "
                "output of `nvidia-smi topo -m` (the layout depends on how the GPUs are linked)"
            ]
        )
    if topology is not None and len(topology["matrix"]) != len(gpu_list):
        raise PlanInputError(
            [
                f"inferops_gpu_topology_text shows {len(topology['matrix'])} GPUs but inferops_gpus lists "
                f"{len(gpu_list)}: declare both from the same host"
            ]
        )
    return Hardware(gpus=gpu_list, topology=topology, driver=_plain(driver) if isinstance(driver, Mapping) else {})


def _load_config(model: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """config.json given inline or as a file on the controller (None: use the catalogue)."""
    if isinstance(model.get("config"), dict):
        return model["config"]
    path = model.get("config_file")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise PlanInputError([f"inferops_model.config_file {path!r} cannot be read as config.json: {exc}"]) from exc
    if not isinstance(config, dict):
        raise PlanInputError([f"inferops_model.config_file {path!r} does not hold a JSON object"])
    return config


def _driver(driver: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The installed driver as checks.check_driver reads it (None when unknown or not loaded)."""
    if not driver.get("driver_version"):
        return None
    return {"version": str(driver["driver_version"]), "cuda": None}


def _finding(check_id: str, severity: str, message: str) -> Dict[str, str]:
    return {"id": check_id, "severity": severity if severity in SEVERITIES else "warning", "message": message}


def plan_findings(
    findings: Sequence[Mapping[str, Any]], default_id: str = "tensor-parallel-divisibility"
) -> List[Dict[str, str]]:
    """Findings as the plan lists them: id, severity, and a message naming the variable and a passing value."""
    result = []
    for finding in findings:
        message = str(finding.get("message", ""))
        variable = finding.get("variable")
        if variable and str(variable) not in message:
            message = f"{variable}: {message}"
        suggested = finding.get("suggested")
        if variable and suggested not in (None, "", []) and str(suggested) not in message:
            message += f" (a value that passes: {variable}: {json.dumps(suggested)})"
        severity = finding.get("severity") or "error"
        result.append(_finding(str(finding.get("id") or default_id), str(severity), message))
    return result


def build_plan(
    variables: Mapping[str, Any],
    hardware: Mapping[str, Any],
    measured: Optional[Mapping[str, Any]] = None,
    host: Optional[str] = None,
) -> Dict[str, Any]:
    """The plan dict of one host (keys documented in docs/plan.md).

    variables: the host's variables (see input_names()); hardware: ``{"gpus": [...], "topology": {...},
    "driver": {...}}`` as gpu_facts returns them or as declared in inventory (topology parsed);
    measured: the vLLM role's local fact from a previous start (ansible_local.inferops_vllm), if any.
    Raises PlanInputError (each message names its variable) for inputs that cannot be planned.
    """
    inputs = validate_inputs(variables)
    gear = _hardware(hardware)
    plan = _ollama_plan(inputs, gear) if inputs.engine == "ollama" else _vllm_plan(inputs, gear, measured)
    revision = revision_check(inputs.model)
    if revision:
        plan["checks"].insert(0, revision)
    plan["host"] = host
    unique: List[Dict[str, str]] = []
    for finding in plan["checks"]:
        if finding not in unique:
            unique.append(finding)
    plan["checks"] = unique
    order = (
        "host",
        "engine",
        "engine_version",
        "model",
        "layout",
        "memory",
        "settings",
        "checks",
        "command",
        "environment",
        "standby_ollama",  # only on vLLM hosts with inferops_standby_ollama
    )
    return {key: plan[key] for key in order if key in plan}


def _model_section(
    inputs: HostInputs, architecture: str, weights_bytes: int, weights_source: str, quantization: Optional[str]
) -> Dict[str, Any]:
    return {
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        "architecture": architecture,
        "weights_bytes": int(weights_bytes),
        "weights_source": weights_source,
        "quantization": quantization,
    }


def _layout_section(layout: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "tensor_parallel_size": int(layout["tensor_parallel_size"]),
        "pipeline_parallel_size": int(layout["pipeline_parallel_size"]),
        "data_parallel_size": int(layout["data_parallel_size"]),
        "gpus": [int(i) for i in layout["gpus"]],
        "reason": str(layout["reason"]),
    }


def _environment(
    layout_env: Mapping[str, Any], engine_env: Mapping[str, str], user_env: Mapping[str, str]
) -> Dict[str, str]:
    environment = {str(k): str(v) for k, v in layout_env.items()}
    environment.update(engine_env)
    environment.update(user_env)
    return environment


def _ollama_model_budget(
    version: str,
    model: Mapping[str, Any],
    requested: Mapping[str, Any],
    gpus: Optional[List[int]],
    gpus_var: str,
    gear: Hardware,
) -> Tuple[ModelArchitecture, Dict[str, Any], Dict[str, Any]]:
    """(architecture, ollama_budget result, layout) of a GGUF model served by Ollama on the allowed GPUs.

    model: an inferops_model mapping; requested: Ollama settings set in inventory; gpus: the GPUs Ollama
    may use (None: all), from the variable gpus_var. Shared by Ollama hosts and the Ollama kept on
    standby beside vLLM.
    """
    known = sorted(int(g["index"]) for g in gear.gpus)
    missing = [i for i in gpus or () if i not in known]
    if missing:
        raise PlanInputError(
            [
                f"{gpus_var} lists GPU {', '.join(map(str, missing))}, which the host does not have; "
                f"use indices among {known}"
            ]
        )
    architecture, _entry, _arch_source = describe_model(model, _load_config(model))
    weights_bytes = model.get("weights_bytes")
    if not weights_bytes:
        raise PlanInputError(
            [
                "inferops_model.weights_bytes is required for Ollama: the size in bytes of the GGUF file "
                f"({model.get('file') or 'inferops_model.file'}) as listed on its Hugging Face page"
            ]
        )
    layout = select_layout(gear.gpus, architecture, topology=gear.topology, engine="ollama", requested={"gpus": gpus})
    by_index = {int(g["index"]): g for g in gear.gpus}
    budget_gpus = [
        {
            "index": i,
            "memory_total_bytes": int(by_index[i]["memory_mib"]) * MIB,
            "compute_capability": by_index[i].get("compute_capability"),
        }
        for i in layout["gpus"]
    ]
    budget = ollama_budget(
        version,
        shape_from_architecture(architecture),
        budget_gpus,
        weights_bytes=int(weights_bytes),
        context_length=requested.get("context_length"),
        num_parallel=requested.get("num_parallel"),
        kv_cache_type=requested.get("kv_cache_type"),
        flash_attention=requested.get("flash_attention"),
        num_gpu=requested.get("num_gpu"),
        num_batch=requested.get("num_batch"),
        gpu_overhead_bytes=int(requested.get("gpu_overhead_bytes") or 0),
        sched_spread=bool(requested.get("sched_spread")),
    )
    return architecture, budget, layout


def _ollama_plan(inputs: HostInputs, gear: Hardware) -> Dict[str, Any]:
    requested = inputs.settings
    architecture, budget, layout = _ollama_model_budget(
        inputs.engine_version, inputs.model, requested, inputs.gpus, "ollama_gpus", gear
    )
    by_index = {int(g["index"]): g for g in gear.gpus}
    settings: Dict[str, Any] = {}
    for setting in OLLAMA_SETTINGS:
        if setting.name in budget["settings"]:
            source = budget["setting_sources"].get(setting.name, "default")
            if source in ("inventory", "default", "chosen"):
                reason = f"Ollama {inputs.engine_version} default" if source == "default" else None
                settings[setting.name] = resolved(budget["settings"][setting.name], source, reason)
            else:
                settings[setting.name] = resolved(budget["settings"][setting.name], "default", source)
        elif setting.name in requested:
            settings[setting.name] = resolved(requested[setting.name], "inventory")
    memory = budget["memory"]
    per_gpu = [
        {
            "index": gpu["index"],
            "total_gib": gpu["total_gib"],
            "used_gib": gpu["used_gib"],
            "free_gib": gpu["free_gib"],
            "layers": gpu["layers"],
            "weights_gib": gib(gpu["weights_bytes"]),
            "kv_cache_gib": gib(gpu["kv_cache_bytes"] + gpu["recurrent_state_bytes"]),
            "overhead_gib": gib(gpu["compute_bytes"] + gpu["reserve_bytes"]),
        }
        for gpu in budget["per_gpu"]
    ]
    used_gpus = [int(gpu["index"]) for gpu in budget["per_gpu"]]
    layout = dict(layout, gpus=used_gpus)
    if used_gpus != [int(i) for i in layout["env"].get("CUDA_VISIBLE_DEVICES", "").split(",") if i]:
        layout["env"] = dict(layout["env"], CUDA_VISIBLE_DEVICES=",".join(str(i) for i in used_gpus))
        layout["reason"] = f"the model fits GPU {','.join(str(i) for i in used_gpus)}; Ollama uses the fewest GPUs"
    quantization = inputs.model.get("quantization") or _gguf_type(inputs.model.get("file"))
    return {
        "engine": "ollama",
        "engine_version": inputs.engine_version,
        "model": _model_section(
            inputs, architecture.architecture, int(inputs.model["weights_bytes"]), "inventory", quantization
        ),
        "layout": _layout_section(layout),
        "memory": {
            "gpu_total_gib": memory["gpu_total_gib"],
            "weights_gib": memory["weights_gib"],
            "overhead_gib": memory["overhead_gib"],
            "kv_cache_gib": memory["kv_cache_gib"],
            "kv_cache_tokens": int(memory["kv_cache_tokens"]),
            "max_concurrency": float(memory["max_concurrency"]),
            "block_size": None,
            "vram_used_gib": memory["vram_used_gib"],
            "per_gpu": per_gpu,
        },
        "settings": settings,
        "checks": plan_findings(budget["checks"])
        + plan_findings(layout.get("problems") or [])
        + plan_findings(
            check_ollama(
                model=architecture,
                settings={name: entry["value"] for name, entry in settings.items()},
                model_format="gguf" if str(inputs.model.get("file", "")).endswith(".gguf") else "safetensors",
                budget={"fits": not any(c["id"] == "ollama_partial_offload" for c in budget["checks"])},
                gpus=[by_index[i] for i in used_gpus],
                driver=_driver(gear.driver),
            )
        ),
        "command": ["ollama", "serve"],
        "environment": _environment(
            layout["env"],
            ollama_environment(
                settings,
                {
                    "host": inputs.listen,
                    "gpus": used_gpus,
                    "sched_spread": requested.get("sched_spread"),
                    "gpu_overhead_bytes": requested.get("gpu_overhead_bytes"),
                    "extra_environment": inputs.environment,
                },
            ),
            {},
        ),
    }


_GGUF_TYPE_RE = re.compile(r"(UD-)?(I?Q\d_[A-Z0-9_]+|Q\d_\d|BF16|F16|F32|MXFP4(?:_MOE)?)", re.IGNORECASE)


def _gguf_type(file_name: Optional[str]) -> Optional[str]:
    """The quantization a GGUF file name announces (Unsloth UD-Q3_K_XL, Q4_K_M, ...)."""
    match = _GGUF_TYPE_RE.search(str(file_name or ""))
    return match.group(0).upper() if match else None


# Budget findings restate some checks with vLLM's own error text; they are listed under the check's id
# and only when the check itself did not already report that topic.
_BUDGET_FINDING_IDS = {
    "vllm_max_model_len_too_long": "context-length",
    "vllm_no_kv_cache_memory": "memory-fit",
    "vllm_kv_cache_too_small": "memory-fit",
    "vllm_exceeds_gpu_memory": "memory-fit",
    "vllm_cudagraph_headroom": "memory-fit",
    "vllm_kv_cache_memory_bytes": "memory-fit",
    "vllm_align_block_size": "mamba-block-size",
    "vllm_mamba_blocks_below_max_num_seqs": "max-num-seqs",
}
# Settings that change vLLM's non-KV overhead (activation peak, sampler warm-up, CUDA graphs): a
# measurement taken with other values says nothing about this plan.
_OVERHEAD_SETTINGS = ("max_num_batched_tokens", "max_num_seqs", "enforce_eager", "max_cudagraph_capture_size")


def _merge(base: Any, override: Any) -> Any:
    """config.json updated like vLLM's --hf-overrides: nested mappings merged, other values replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base.get(key), value)
        return merged
    return override


def _architecture(inputs: HostInputs) -> Tuple[ModelArchitecture, ModelArchitecture, Any]:
    """(architecture as the checkpoint states it, as vLLM sees it after --hf-overrides, catalogue entry)."""
    config = _load_config(inputs.model)
    architecture, entry, _source = describe_model(inputs.model, config)
    overrides = inputs.settings.get("hf_overrides")
    if not overrides:
        return architecture, architecture, entry
    base = config if config is not None else entry.config
    return architecture, ModelArchitecture.from_config(_merge(base, overrides)), entry


def _measured_overhead(
    measured: Optional[Mapping[str, Any]], context: Mapping[str, Any]
) -> Tuple[Optional[int], Optional[Dict[str, str]]]:
    """The overhead per GPU (bytes) measured at the last vLLM start, when it was the same configuration.

    measured: the vLLM role's local fact ansible_local.inferops_vllm (``version``, ``model`` {repo,
    revision}, ``layout``, ``settings``, ``overhead_gib``, ...). context: this plan's version, repo,
    revision, layout sizes and inventory settings.
    """
    if not measured or measured.get("overhead_gib") is None:
        return None, None
    model = measured.get("model") or {}
    layout = measured.get("layout") or {}
    then = {
        "vllm_version": measured.get("version"),
        "repo": model.get("repo"),
        "revision": model.get("revision"),
        "tensor_parallel_size": layout.get("tensor_parallel_size"),
        "pipeline_parallel_size": layout.get("pipeline_parallel_size"),
    }
    then.update({name: (measured.get("settings") or {}).get(name) for name in _OVERHEAD_SETTINGS})
    different = [name for name, value in then.items() if value is not None and context.get(name) not in (None, value)]
    if different:
        note = _finding(
            "memory-fit",
            "info",
            f"the overhead measured at the last vLLM start is not used: {', '.join(different)} changed since",
        )
        return None, note
    return int(float(measured["overhead_gib"]) * GIB), None


def _vllm_plan(inputs: HostInputs, gear: Hardware, measured: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    version = inputs.engine_version
    architecture, served, entry = _architecture(inputs)
    requested = dict(inputs.settings)
    weights = estimate_weights(
        served,
        params=entry.params if entry is not None and _load_config(inputs.model) is None else None,
        weights_bytes=inputs.model.get("weights_bytes"),
        quantization=quantization_from_name(inputs.model["quantization"]) if "quantization" in inputs.model else None,
        include_mtp=bool((requested.get("speculative_config") or {}).get("method") == "mtp"),
        include_vision=not requested.get("language_model_only"),
    )
    by_index = {int(g["index"]): g for g in gear.gpus}
    allowed = inputs.gpus or list(by_index)
    smallest = min((by_index[i] for i in allowed if i in by_index), key=lambda g: int(g["memory_mib"]))
    gpu_total = cuda_total_bytes_from_nvidia_smi(int(smallest["memory_mib"]))
    context = {
        "vllm_version": version,
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        **{name: requested.get(name) for name in _OVERHEAD_SETTINGS},
    }

    def budget(settings: Mapping[str, Any], tp: int, pp: int) -> Dict[str, Any]:
        overhead, _note = _measured_overhead(
            measured, dict(context, tensor_parallel_size=tp, pipeline_parallel_size=pp)
        )
        return vllm_memory_budget(
            served,
            version,
            gpu_total,
            tensor_parallel_size=tp,
            pipeline_parallel_size=pp,
            weights=weights,
            settings=settings,
            gpu_name=str(smallest.get("name") or ""),
            compute_capability=smallest.get("compute_capability"),
            measured_overhead_bytes=overhead,
        )

    resolved_by_layout: Dict[Tuple[int, int], Tuple[Dict[str, Any], Dict[str, Any]]] = {}

    def resolve(tp: int, pp: int) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """(settings chosen by checks.py, budget with them) for one layout: unset settings depend on it."""
        if (tp, pp) not in resolved_by_layout:
            chosen = choose_vllm_settings(
                version=version,
                model=architecture,
                gpus=[by_index[i] for i in allowed if i in by_index],
                inventory=requested,
                repo=inputs.model["repo"],
                budget=lambda settings: budget(settings, tp, pp),
            )
            values = {name: entry["value"] for name, entry in chosen.items()}
            values.update({k: v for k, v in requested.items() if k not in values})
            resolved_by_layout[(tp, pp)] = chosen, budget(values, tp, pp)
        return resolved_by_layout[(tp, pp)]

    def memory_fit(tp: int, pp: int) -> bool:
        try:
            figures = resolve(tp, pp)[1]
        except ValueError:
            return False  # the split itself is invalid for this model
        return bool(_figures(figures)["fits"])

    layout = select_layout(
        gear.gpus,
        architecture,
        topology=gear.topology,
        memory_fit=memory_fit,
        engine="vllm",
        requested={
            "tensor_parallel_size": requested.get("tensor_parallel_size"),
            "pipeline_parallel_size": requested.get("pipeline_parallel_size"),
            "data_parallel_size": requested.get("data_parallel_size"),
            "enable_expert_parallel": requested.get("enable_expert_parallel"),
            "gpus": inputs.gpus,
        },
    )
    tp, pp = int(layout["tensor_parallel_size"]), int(layout["pipeline_parallel_size"])
    used = [by_index[i] for i in layout["gpus"] if i in by_index]
    chosen, figures = resolve(tp, pp)
    settings = _vllm_settings(inputs, layout, chosen, figures)
    resolved_values = {name: entry["value"] for name, entry in settings.items()}
    environment = _environment(layout["env"], {}, inputs.environment)
    findings = plan_findings(
        check_vllm(
            version=version,
            model=architecture,
            settings=resolved_values,
            gpus=used,
            repo=inputs.model["repo"],
            model_format="gguf" if str(inputs.model.get("file", "")).endswith(".gguf") else "safetensors",
            layout=layout,
            budget=figures,
            env=environment,
            driver=_driver(gear.driver),
        )
    )
    reported = {f["id"] for f in findings}
    for finding in figures["findings"]:
        check_id = _BUDGET_FINDING_IDS.get(finding["id"], finding["id"])
        if check_id not in reported:
            findings.append(_finding(check_id, finding["severity"], finding["message"]))
    _overhead, note = _measured_overhead(measured, dict(context, tensor_parallel_size=tp, pipeline_parallel_size=pp))
    if note:
        findings.append(note)
    quantization = inputs.model.get("quantization") or (
        architecture.quantization.scheme if architecture.quantization is not None else None
    )
    standby = None
    if inputs.standby_ollama is not None:
        standby, coresidency = _standby_ollama(
            inputs.standby_ollama, gear, _vllm_reserved_bytes(settings, figures, used)
        )
        findings += coresidency
    plan = {
        "engine": "vllm",
        "engine_version": version,
        "model": _model_section(inputs, architecture.architecture, weights.total_bytes, weights.source, quantization),
        "layout": _layout_section(layout),
        "memory": _vllm_memory(figures, used),
        "settings": settings,
        "checks": findings,
        "command": vllm_command(
            inputs.model["repo"],
            inputs.model["revision"],
            settings,
            [flag for flag in layout.get("flags") or [] if flag not in _SETTING_FLAGS] + inputs.extra_args,
            auto_max_model_len=requested.get("max_model_len") == "auto",
        ),
        "environment": environment,
    }
    if standby is not None:
        plan["standby_ollama"] = standby
    return plan


def _vllm_reserved_bytes(
    settings: Mapping[str, Mapping[str, Any]], figures: Mapping[str, Any], used: Sequence[Mapping[str, Any]]
) -> Dict[int, int]:
    """What vLLM holds on each of its GPUs: gpu_memory_utilization x the GPU's total (as CUDA reports it),
    or its predicted use when vllm_kv_cache_memory_bytes fixes the KV cache size."""
    if (settings.get("kv_cache_memory_bytes") or {}).get("value"):
        # A fixed KV cache size replaces the utilization: vLLM then holds only what it needs.
        return {int(gpu["index"]): int(figures["vram_used_bytes"]) for gpu in used}
    utilization = float(settings["gpu_memory_utilization"]["value"])
    return {
        int(gpu["index"]): math.ceil(utilization * cuda_total_bytes_from_nvidia_smi(int(gpu["memory_mib"])))
        for gpu in used
    }


def _standby_ollama(
    standby: StandbyOllama, gear: Hardware, vllm_reserved_bytes: Mapping[int, int]
) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(the plan's standby_ollama summary, ollama-coresidency findings) of an Ollama kept beside vLLM."""
    try:
        budget = _ollama_model_budget(
            standby.version, standby.model, standby.settings, standby.gpus, f"{STANDBY_VAR}.gpus", gear
        )[1]
    except ValueError as exc:
        # The shared code names an Ollama host's variables; here they live under inferops_standby_ollama.
        message = str(exc).replace("inferops_model", f"{STANDBY_VAR}.model")
        raise PlanInputError([message.replace("ollama_version", f"{STANDBY_VAR}.version")]) from exc
    totals = {int(g["index"]): cuda_total_bytes_from_nvidia_smi(int(g["memory_mib"])) for g in gear.gpus}
    findings = [
        _finding("ollama-coresidency", check["severity"], check["message"])
        for check in coresidency_checks(budget, vllm_reserved_bytes, totals, gpus_variable=f"{STANDBY_VAR}.gpus")
    ]
    summary = {
        "engine_version": standby.version,
        "model": {key: standby.model.get(key) for key in ("repo", "revision", "file")},
        "gpus": [int(gpu["index"]) for gpu in budget["per_gpu"]],
        "vram_used_gib": budget["memory"]["vram_used_gib"],
    }
    return summary, findings


def _figures(budget: Mapping[str, Any]) -> Dict[str, Any]:
    """The budget figures checks.py reads."""
    layout = budget["layout"]
    request = layout["blocks_per_request"] * layout["bytes_per_block"]
    return {
        "block_size": budget["block_size"],
        "num_gpu_blocks": budget["num_blocks"],
        "max_concurrency": budget["max_concurrency"],
        "kv_cache_bytes": budget["kv_cache_bytes"],
        "request_kv_bytes": request,
        "fits": budget["kv_cache_bytes"] >= request + layout["bytes_per_block"],
    }


_SETTING_FLAGS = {setting.flag for setting in VLLM_SETTINGS}
_SOURCE_REASON = {"derived": "derived by vLLM from the settings above"}


def _vllm_settings(
    inputs: HostInputs, layout: Mapping[str, Any], chosen: Mapping[str, Mapping[str, Any]], figures: Mapping[str, Any]
) -> Dict[str, Dict[str, Any]]:
    """Every resolved setting, in the order of VLLM_SETTINGS: inventory, chosen (checks.py) or default."""
    budget_settings = figures["settings"]
    layout_source = layout.get("source") or {}
    result: Dict[str, Dict[str, Any]] = {}
    for setting in VLLM_SETTINGS:
        name = setting.name
        if name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
            source = layout_source.get(name, "chosen")
            reason = None if source == "inventory" else layout["reason"]
            result[name] = resolved(int(layout[name]), source, reason)
        elif name == "max_model_len" and inputs.settings.get(name) == "auto":
            result[name] = resolved(
                int(figures["max_model_len"]),
                "inventory",
                "auto (-1): the longest length whose request fits the KV cache",
            )
        elif name in inputs.settings:
            result[name] = resolved(inputs.settings[name], "inventory")
        elif setting.flag in (layout.get("flags") or []):
            result[name] = resolved(True, "chosen", layout["reason"])
        elif name in chosen:
            entry = chosen[name]
            result[name] = resolved(entry["value"], entry["source"], entry.get("reason"))
        elif name in budget_settings and budget_settings[name]["value"] is not None:
            entry = budget_settings[name]
            source = entry["source"] if entry["source"] in ("inventory", "default", "chosen") else "default"
            reason = _SOURCE_REASON.get(entry["source"], f"vLLM {inputs.engine_version} default")
            if name == "block_size" and figures["block_size"] != entry["value"]:
                reason += (
                    f"; vLLM raises the attention block to {figures['block_size']} tokens so that one page holds "
                    "a sequence's Mamba/GDN state (memory.block_size)"
                )
            result[name] = resolved(entry["value"], source, reason)
    return result


def _vllm_memory(figures: Mapping[str, Any], used: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The plan's memory section from the budget (per GPU, as each rank logs it)."""
    per_rank = figures["weights_per_rank_bytes"]
    per_gpu = []
    for position, gpu in enumerate(used):
        rank_weights = per_rank[position % len(per_rank)] if per_rank else figures["weights_bytes"]
        per_gpu.append(
            {
                "index": int(gpu["index"]),
                "name": gpu.get("name"),
                "total_gib": gib(cuda_total_bytes_from_nvidia_smi(int(gpu["memory_mib"]))),
                "weights_gib": gib(rank_weights),
                "overhead_gib": gib(figures["overhead_bytes"]),
                "kv_cache_gib": gib(figures["kv_cache_bytes"]),
            }
        )
    return {
        "gpu_total_gib": gib(figures["gpu_total_bytes"]),
        "weights_gib": gib(figures["weights_bytes"]),
        "overhead_gib": gib(figures["overhead_bytes"]),
        "kv_cache_gib": gib(figures["kv_cache_bytes"]),
        "kv_cache_tokens": int(figures["kv_cache_tokens"]),
        "max_concurrency": round(float(figures["max_concurrency"]), 2),
        "block_size": int(figures["block_size"]),
        "vram_used_gib": gib(figures["vram_used_bytes"]),
        "per_gpu": per_gpu,
    }
