# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's inputs: the variables the plan reads, validated and coerced (each error names its variable).

Only the names listed here are read, so secrets such as ``vllm_api_key`` or an HF token never enter the plan.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting, setting_available
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import VersionError, release_tuple
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.settings import OLLAMA_SETTINGS
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import parse_human_int
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import VLLM_SETTINGS
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import CLUSTER_VARS

ENGINES = ("vllm", "ollama")
SEVERITIES = ("error", "warning", "info")

# vLLM publishes versions like 0.26.0 and, rarely, 0.10.1.1; Ollama 0.30.0.
_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_COMMIT_RE = re.compile(r"[0-9a-f]{40}")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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


# An Ollama kept on standby beside vLLM on the same host (docs/plan.md): its model and settings, so
# that the plan can tell whether both engines fit the GPUs at once.
STANDBY_VAR = "inferops_standby_ollama"
_STANDBY_SETTINGS = tuple(
    s for s in OLLAMA_SETTINGS if s.name in ("context_length", "num_parallel", "kv_cache_type", "flash_attention")
)
_STANDBY_KEYS = ("version", "model", "gpus", *(s.name for s in _STANDBY_SETTINGS))

# Inputs beside the engine settings: layout requests and pass-through values.
_EXTRA_VARS = {
    "vllm": ("vllm_gpus", "vllm_extra_args", "vllm_environment", STANDBY_VAR, "vllm_device", "vllm_cpu_kvcache_space"),
    "ollama": ("ollama_gpus", "ollama_host", "ollama_port", "ollama_environment_extra"),
}
# The variable holding extra service environment, per engine (the engine roles' names).
ENVIRONMENT_VAR = {"vllm": "vllm_environment", "ollama": "ollama_environment_extra"}

ENGINE_SETTINGS = {"vllm": VLLM_SETTINGS, "ollama": OLLAMA_SETTINGS}


def input_names(engine: Optional[str] = None) -> List[str]:
    """Every variable name this module reads (for one engine, or for all)."""
    names = ["inferops_engine", "inferops_model", "vllm_version", "ollama_version", *CLUSTER_VARS]
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
    device: str = "cuda"  # vllm_device: cuda (NVIDIA GPUs) or cpu (vLLM's CPU build, vllm-cpu)
    cpu_kvcache_space_gib: Optional[int] = None  # vllm_cpu_kvcache_space: VLLM_CPU_KVCACHE_SPACE on a CPU host


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
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
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
    if not isinstance(repo, str) or not _REPO_RE.fullmatch(repo):
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
        if not _ENV_NAME_RE.fullmatch(name):
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


def _is_release(version: str) -> bool:
    try:
        release_tuple(version, parts=(3, 4), tag_prefix=False)
    except VersionError:
        return False
    return True


def _validate_version(var: str, value: Any, example: str, errors: List[str]) -> str:
    version = str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    if not _is_release(version):
        shown = "a credential-like value" if _SECRET_VALUE_RE.search(version) else repr(version or None)
        errors.append(f"{var} is required and must be an exact pin like {example}, got {shown}")
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


VLLM_DEVICES = ("cuda", "cpu")


def _validate_device(variables: Mapping[str, Any], engine: str, errors: List[str]) -> Tuple[str, Optional[int]]:
    """(vllm_device, vllm_cpu_kvcache_space in GiB) of a vLLM host; CPU hosts run the vllm-cpu build."""
    device = variables.get("vllm_device")
    space = variables.get("vllm_cpu_kvcache_space")
    if engine != "vllm":
        return "cuda", None
    if _is_unset(device):
        device = "cuda"
    if device not in VLLM_DEVICES:
        errors.append(f"vllm_device must be one of {', '.join(VLLM_DEVICES)}, got {device!r}")
        return "cuda", None
    if _is_unset(space):
        return device, None
    number = _number(space, "int")
    if device != "cpu":
        errors.append(
            "vllm_cpu_kvcache_space sizes the KV cache of vLLM's CPU build: set it only with vllm_device: cpu"
        )
    elif number is None or not 1 <= number <= 4096:
        errors.append(f"vllm_cpu_kvcache_space must be a whole number of GiB from 1 to 4096, such as 4, got {space!r}")
        return device, None
    return device, None if number is None else int(number)


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
        if _is_release(version) and not setting_available(setting, version):
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
    device, kv_space = _validate_device(variables, engine, errors)
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
        device=device,
        cpu_kvcache_space_gib=kv_space,
    )


def input_errors(variables: Mapping[str, Any]) -> List[str]:
    """Every problem with a host's inputs, as messages naming the variable and the fix."""
    try:
        validate_inputs(variables)
    except PlanInputError as exc:
        return exc.errors
    return []
