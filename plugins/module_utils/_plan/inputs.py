# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A host's inputs: the variables the plan reads, validated and coerced (each error names its variable).

Only the names listed here are read, so secrets such as ``vllm_api_key`` or an HF token never enter the plan.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_number
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain as _plain
from ansible_collections.inferops.llm.plugins.module_utils._core.safety import (
    SECRET_NAME_RE,
    looks_like_secret,
    redact,
    shown,
    unsafe_text_errors,
)
from ansible_collections.inferops.llm.plugins.module_utils._core.settings import Setting, setting_available
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import (
    ENGINE_VERSION_EXAMPLES,
    engine_version_error,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES as ENGINE_FACTS
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.settings import OLLAMA_SETTINGS
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.budget import parse_human_int
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.cli import (
    SECRET_FLAGS,
    ExtraArgsError,
    abbreviation_of,
    managed_flags,
    parse_extra_args,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import VLLM_SETTINGS
from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import is_commit, is_repo_id
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import CLUSTER_VARS
from ansible_collections.inferops.llm.plugins.module_utils._plan.performance import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_OBJECTIVE,
    DEFAULT_PROMPT_TOKENS,
    OBJECTIVES,
    Workload,
)

ENGINES = tuple(ENGINE_FACTS)  # the inferops_engine values: one record each in _engines/facts.py
SEVERITIES = ("error", "warning", "info")

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A host name or IPv4 address to listen on (no port: that is the engine's own *_port variable).
_HOST_NAME_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9-]{1,63})*")
# How each engine takes an IPv6 address: vLLM's --host goes to uvicorn's bind as it is ("::"); the
# ollama role writes OLLAMA_HOST=<ollama_host>:<port>, which Ollama splits with net.SplitHostPort
# (envconfig/config.go Host), so the address needs brackets there ("[::1]").
_LISTEN_IPV6_BRACKETS = {"vllm_host": False, "ollama_host": True}


# The addresses the vllm role serves without an API key (roles/vllm/vars/main.yml _vllm_loopback_hosts; a
# unit test holds the two equal): any other vllm_host needs vllm_api_key, or the role refuses it.
VLLM_LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


# The keys whose presence the plan checks, never their value. Set to nothing (``vllm_api_key: ""`` or no value)
# a key is no key, as for the roles (``vllm_api_key | length > 0``, ``ray_auth_token | length > 0``), so such
# a name does not count as defined.
KEY_VARIABLES = ("vllm_api_key", "ray_auth_token")


# A template that is one variable and nothing else ("{{ vault_vllm_api_key }}"): the only form key_left_empty
# follows, through the untemplated values, without rendering anything.
_BARE_REFERENCE_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_REFERENCE_HOPS = 8


def key_left_empty(raw: Any, untemplated: Optional[Mapping[str, Any]] = None) -> bool:
    """Whether a key's raw (untemplated) inventory value sets it to nothing: None or "". Nothing is rendered or
    decrypted: a vaulted value (not a str) counts as a key, and so does any template, except that with
    ``untemplated`` (the host's variables, untemplated: HostVars.raw_get) a template that is one variable and
    nothing else (``"{{ name }}"``) is followed to that variable's raw value, and so on: a chain that ends in
    None or "" is empty. A name the host does not define, a filter, a lookup or any other expression ends the
    chain as a key (the role decides; docs/checks.md vllm-api-key-required says what the plan cannot see)."""
    for _hop in range(_REFERENCE_HOPS):
        if raw is None or (isinstance(raw, str) and raw == ""):
            return True
        reference = _BARE_REFERENCE_RE.fullmatch(raw) if isinstance(raw, str) and untemplated is not None else None
        if reference is None or untemplated is None or reference.group(1) not in untemplated:
            return False
        raw = untemplated[reference.group(1)]
    return False


def defined_names(names: Iterable[str], raw: Mapping[str, Any], follow: bool = False) -> List[str]:
    """``names`` (the names a host defines) less the KEY_VARIABLES that ``raw`` (the untemplated values) leaves
    empty (key_left_empty). follow: ``raw`` is every variable of the host, untemplated (HostVars.raw_get), so a
    key set to ``"{{ name }}"`` is followed through it (never through a mapping that templates on access)."""
    untemplated = raw if follow else None
    return [str(name) for name in names if not (name in KEY_VARIABLES and key_left_empty(raw.get(name), untemplated))]


def vllm_key_findings(variables: Mapping[str, Any], defined: Iterable[str]) -> List[Dict[str, Any]]:
    """The errors the vllm role's preflight would raise after the driver and the download, for a vllm_host that
    is not loopback: without vllm_api_key, and without vllm_allow_remote (the key and the prompts travel in clear).
    ``defined``: the names the host defines, a key left empty excluded (defined_names; its value is never read)."""
    host = variables.get("vllm_host")
    if _is_unset(host) or str(host) in VLLM_LOOPBACK_HOSTS:
        return []
    found = []
    if "vllm_api_key" not in set(defined):
        found.append(
            finding_entry(
                "vllm-api-key-required",
                "error",
                f"vllm_host is {host}, which is not loopback: the vllm role refuses to serve it without a key, and an "
                "empty vllm_api_key is no key. Set vllm_api_key to a key (in Ansible Vault; printable ASCII without "
                "spaces, quotes or backslashes, e.g. the output of openssl rand -hex 32) so that the server requires "
                "it, or vllm_host: 127.0.0.1",
                "vllm_api_key",
            )
        )
    if str(variables.get("vllm_allow_remote", False)).lower() not in ("true", "yes", "1", "on"):
        found.append(
            finding_entry(
                "vllm-allow-remote-required",
                "error",
                f"vllm_host is {host}, which is not loopback, and vLLM speaks plain HTTP (vllm_api_key and the "
                "prompts cross the network in clear, docs/security.md): the vllm role refuses it "
                "unless vllm_allow_remote is true. Use vllm_host: 127.0.0.1 (a gateway on the host reaches it "
                "there), or admit only the gateway and Prometheus hosts with a firewall and set "
                "vllm_allow_remote: true",
                "vllm_allow_remote",
            )
        )
    return found


def listen_address_error(value: Any, variable: str) -> str:
    """Why value is not an address ``variable`` (vllm_host or ollama_host) can listen on; "" when it is."""
    brackets = _LISTEN_IPV6_BRACKETS[variable]
    if isinstance(value, str):
        if _HOST_NAME_RE.fullmatch(value):
            return ""
        inner = value[1:-1] if value.startswith("[") and value.endswith("]") else None
        candidate = inner if brackets else (value if inner is None else None)
        if candidate is not None:
            try:
                ipaddress.IPv6Address(candidate)
                return ""
            except ValueError:
                pass
    port = variable.replace("_host", "_port")
    ipv6 = "[::]" if brackets else "::"
    return (
        f"{variable} must be an address to listen on, without a port (that is {port}): 0.0.0.0, 127.0.0.1, "
        f"a host name, or an IPv6 address written {ipv6}; got {shown(value)}"
    )


# Names that carry credentials. Values under such names never enter a plan: they go through the
# engine roles' secret variables into a 0600 environment file.
_SECRET_NAME_RE = SECRET_NAME_RE
# Integers the plan reads are counts of tokens, sequences or bytes; beyond this one is a typo, not a host.
_INT_LIMIT = 2**31 - 1
_BYTES_LIMIT = 2**50  # 1 PiB
# A string setting (parser names, served_model_name, attention_backend, a generation_config path): one word.
_WORD_RE = re.compile(r"[A-Za-z0-9_./:+-]{1,256}")
_STR_EXAMPLES = {
    "served_model_name": "qwen3-8b",
    "tool_call_parser": "hermes",
    "reasoning_parser": "qwen3",
    "attention_backend": "FLASH_ATTN",
    "kv_cache_dtype": "fp8",
    "quantization": "fp8",
    "generation_config": "vllm",
}
# The variable that turns unknown vllm_/ollama_/inferops_ names from errors into warnings.
UNKNOWN_SWITCH = "inferops_unknown_variables"
UNKNOWN_MODES = ("error", "warn")
# The prefixes of the collection's public variables (one per role, plus inferops_): a host variable with one
# of them that the collection does not define is a typo (unknown-variable). roles/plan/vars/main.yml and
# plan_fleet select the names to check with VARIABLE_NAME_PATTERN.
VARIABLE_PREFIXES = (
    "inferops",
    "vllm",
    "ollama",
    "ray",
    "gateway",
    "node_metrics",
    "monitoring",
    "model_download",
    "nvidia_driver",
)
VARIABLE_NAME_PATTERN = "^(" + "|".join(VARIABLE_PREFIXES) + ")_"
_PREFIX_RE = re.compile(r"(?:" + "|".join(VARIABLE_PREFIXES) + r")_[A-Za-z0-9_]*")
_KNOWN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_variables.json")
with open(_KNOWN_FILE, encoding="utf-8") as _handle:
    KNOWN_VARIABLES = json.load(_handle)
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
        # A message never carries a credential or a raw line break, whoever wrote it.
        self.errors = [
            redact(str(error)).replace("\r", "\\r").replace("\n", "\\n").replace("\x00", "\\x00") for error in errors
        ]
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
    "vllm": (
        "vllm_gpus",
        "vllm_extra_args",
        "vllm_environment",
        STANDBY_VAR,
        "vllm_device",
        "vllm_cpu_kvcache_space",
        "vllm_host",  # the vllm role's listen address: checked here so that the role does not refuse it later
        "vllm_allow_remote",  # read with vllm_host: the vllm role refuses a non-loopback address without it
        # On a node of a Ray cluster, what the ray role and vLLM's workers need (_plan/refusals.py).
        "ray_allow_no_auth",
        "ray_extra_requirements",
        "ray_version",  # the cluster's Ray, and the vllm role's Ray beside vLLM on the head: one release
        "vllm_ray_version",
    ),
    # ollama_checksums / ollama_arch: whether the ollama role knows the release's sha256 (_plan/refusals.py).
    "ollama": (
        "ollama_gpus",
        "ollama_host",
        "ollama_port",
        "ollama_environment_extra",
        "ollama_checksums",
        "ollama_arch",
    ),
}
# The variable holding extra service environment, per engine (the engine roles' names).
ENVIRONMENT_VAR = {"vllm": "vllm_environment", "ollama": "ollama_environment_extra"}

ENGINE_SETTINGS = {"vllm": VLLM_SETTINGS, "ollama": OLLAMA_SETTINGS}


def input_names(engine: Optional[str] = None) -> List[str]:
    """Every variable name this module reads (for one engine, or for all)."""
    names = ["inferops_engine", "inferops_model", "vllm_version", "ollama_version", UNKNOWN_SWITCH, *CLUSTER_VARS]
    names += WORKLOAD_VARS
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
    workload: Workload = field(default_factory=Workload)  # inferops_objective / _context_tokens / _prompt_tokens
    warnings: List[str] = field(default_factory=list)  # unknown variable names under inferops_unknown_variables: warn
    # Set by _plan/model_source.py when the checkpoint's files were found (cache or Hub): the bytes of every
    # tensor with their source, and the report's model.commit / model.config_source.
    checkpoint_bytes: Optional[Tuple[int, str]] = None
    model_source: Optional[Dict[str, Any]] = None
    gguf_shape: Optional[Dict[str, Any]] = None  # the GGUF file's header as the Ollama budget reads it


@dataclass
class StandbyOllama:
    """The validated inferops_standby_ollama of a vLLM host."""

    version: str
    model: Dict[str, Any]
    settings: Dict[str, Any]  # Ollama setting name -> value, only those set
    gpus: Optional[List[int]] = None
    gguf_shape: Optional[Dict[str, Any]] = None  # its GGUF's header, when _plan/model_source.py read it


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


def _coerce(setting: Setting, var: str, value: Any, errors: List[str]) -> Any:
    kind = setting.kind
    if kind == "bool":
        result = _bool(value)
        if result is None:
            errors.append(f"{var} must be true or false, got {shown(value)}")
        return result
    if kind == "int_or_auto":
        if (isinstance(value, str) and value.strip().lower() == "auto") or value == -1:
            return "auto"
        kind = "int"
    if kind in ("int", "float"):
        number = as_number(value, kind)
        if number is None:
            errors.append(f"{var} must be {'an integer' if kind == 'int' else 'a number'}, got {shown(value)}")
            return None
        maximum = setting.maximum if setting.maximum is not None else _INT_LIMIT
        if (setting.minimum is not None and number < setting.minimum) or number > maximum:
            bound = f"at least {setting.minimum:g}" if number < (setting.minimum or 0) else f"at most {maximum:g}"
            if maximum == _INT_LIMIT:
                bound = f"from {setting.minimum or 0:g} to {_INT_LIMIT}"
            errors.append(f"{var} is out of range: it must be {bound}, got {shown(value)}")
            return None
        return number
    if kind == "bytes":
        try:
            number: Optional[int] = parse_human_int(value)
        except ValueError:
            number = None
        if number is None or (setting.minimum is not None and number < setting.minimum) or number > _BYTES_LIMIT:
            errors.append(
                f"{var} must be a byte count from {setting.minimum or 0:g} to 1 PiB such as 21474836480 or 20600M "
                f"(M = MiB), got {shown(value)}"
            )
            return None
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
    if not setting.choices and not _WORD_RE.fullmatch(text):
        errors.append(
            f"{var} must be one word of letters, digits and . _ / : + - "
            f"(such as {_STR_EXAMPLES.get(setting.name, 'auto')}), got {shown(text)}"
        )
        return None
    if setting.choices and text not in setting.choices:
        errors.append(f"{var} must be one of {', '.join(setting.choices)}, got {shown(text)}")
    return text


# Weight formats of vLLM's --quantization that a GGUF file cannot have (vllm/model_executor/layers/quantization).
_VLLM_WEIGHT_FORMATS = (
    "awq", "awq_marlin", "gptq", "gptq_marlin", "marlin", "fp8", "fbgemm_fp8", "bitsandbytes", "compressed-tensors",
    "modelopt", "modelopt_fp4", "nvfp4", "mxfp4", "experts_int8", "torchao", "quark", "hqq", "bitblas",
    "gptq_bitblas", "awq_bitblas", "moe_wna16", "auto-round", "inc",
)  # fmt: skip
# A ref name as git check-ref-format accepts it, narrowed to the characters Hugging Face branches and tags use
# (letters, digits, . _ / + -): no $, (, ), backquote, space or other shell or unit syntax.
_REF_CHARS_RE = re.compile(r"[A-Za-z0-9._/+-]+")


def revision_error(revision: str) -> str:
    """Why a revision is neither a 40-hex commit nor a valid git ref name ("" when it is one of them)."""
    if is_commit(revision):
        return ""
    if looks_like_secret(revision):
        return "looks like a secret (value not shown)"
    if not _REF_CHARS_RE.fullmatch(revision):
        return f"{shown(revision)} holds characters a git ref name may not (only letters, digits and . _ / + -)"
    parts = revision.split("/")
    if (
        revision.startswith("/")
        or revision.endswith(("/", "."))
        or "//" in revision
        or ".." in revision
        or any(part.startswith(".") or part.endswith(".lock") for part in parts)
        or len(revision) > 255
    ):
        return (
            f"{shown(revision)} is not a valid git ref name (git check-ref-format: no '..', no leading '.', no '.lock')"
        )
    return ""


def repo_error(repo: Any, var: str = "inferops_model.repo") -> str:
    """Why repo is not a Hugging Face model id ("" when it is), naming the variable: the one check of the
    plan and the model_download role (filter inferops.llm.model_repo_error)."""
    if not is_repo_id(repo) or looks_like_secret(repo):
        return f"{var} must be a Hugging Face repository id such as Qwen/Qwen3-8B, got {shown(repo)}"
    return ""


def _relative_path_error(path: str) -> str:
    """Why a path is not a plain relative path inside a directory ("" when it is)."""
    if path.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", path):
        return "must be relative to the repository, not an absolute path"
    parts = re.split(r"[/\\]", path)
    if ".." in parts or "." in parts or "" in parts:
        return "must not contain '..', '.' or empty path components"
    if not re.fullmatch(r"[A-Za-z0-9._+/ -]+", path) or path.strip() != path:
        return f"{shown(path)} holds characters a model file name may not (letters, digits, . _ + - / only)"
    return ""


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
        errors.append(_unknown_keys_message(var, unknown, _MODEL_KEYS))
    problem = repo_error(model.get("repo"), f"{var}.repo")
    if problem:
        errors.append(problem)
    revision = model.get("revision")
    if not isinstance(revision, str) or not revision.strip():
        errors.append(f"{var}.revision is required: the commit sha to pin (a branch or tag is accepted with a warning)")
    else:
        problem = revision_error(revision)
        if problem:
            errors.append(
                f"{var}.revision {problem}: pin the 40-hex commit sha (such as "
                "0123456789abcdef0123456789abcdef01234567) or name a branch or tag such as main or v1.0"
            )
    for key in ("base_model", "file", "config_file", "quantization"):
        if key in model and not (isinstance(model[key], str) and model[key].strip()):
            errors.append(f"{var}.{key} must be a non-empty string, got {shown(model[key])}")
    if isinstance(model.get("file"), str) and model["file"].strip():
        problem = _relative_path_error(model["file"])
        if problem:
            errors.append(
                f"{var}.file {problem}: name a file inside the repository, relative to its root, such as "
                "Qwen3-8B-Q4_K_M.gguf or gguf/model-Q4_K_M.gguf"
            )
    if isinstance(model.get("quantization"), str) and model["quantization"].strip():
        if not _WORD_RE.fullmatch(model["quantization"]):
            errors.append(
                f"{var}.quantization must be one word such as fp8, awq or gguf, got {shown(model['quantization'])}"
            )
        elif (
            isinstance(model.get("file"), str)
            and model["file"].lower().endswith(".gguf")
            and model["quantization"].lower() in _VLLM_WEIGHT_FORMATS
        ):
            errors.append(
                f"{var}.quantization {model['quantization']!r} is a weight format of safetensors checkpoints, but "
                f"{var}.file is a GGUF file: drop {var}.quantization (or set it to gguf), or point {var}.file at "
                "the checkpoint that has that format"
            )
    if "config" in model and not isinstance(model["config"], dict):
        errors.append(f"{var}.config must be the config.json content as a mapping")
    if "weights_bytes" in model:
        weights = as_number(model["weights_bytes"], "int")
        if weights is None or weights <= 0:
            errors.append(f"{var}.weights_bytes must be a positive integer, got {shown(model['weights_bytes'])}")
        elif weights > _BYTES_LIMIT:
            errors.append(
                f"{var}.weights_bytes is out of range (more than 1 PiB): give the size in bytes, such as 16384000000"
            )
        else:
            model["weights_bytes"] = int(weights)
    return model


def _validate_environment(var: str, value: Any, errors: List[str]) -> Dict[str, str]:
    if _is_unset(value):
        return {}
    if not isinstance(value, Mapping):
        errors.append(
            f"{var} must be a mapping of environment variable names to values, such as {{VLLM_LOGGING_LEVEL: INFO}}"
        )
        return {}
    environment = {}
    for name, item in value.items():
        name = str(name)
        if not _ENV_NAME_RE.fullmatch(name):
            errors.append(
                f"{var} has an invalid environment variable name {shown(name)}: use letters, digits and _ "
                "(such as VLLM_LOGGING_LEVEL)"
            )
        elif _SECRET_NAME_RE.search(name):
            errors.append(
                f"{var}.{name} names a credential; plans and unit files must not hold one: give tokens and API keys "
                "through the engine role's secret variables (vaulted), which go to a mode 0600 environment file"
            )
        elif name == "CUDA_VISIBLE_DEVICES":
            errors.append(
                f"{var}.CUDA_VISIBLE_DEVICES is set by the plan's layout; choose GPUs with the engine's _gpus"
            )
        elif isinstance(item, (Mapping, list, tuple)):
            errors.append(f"{var}.{name} must be a string, number or boolean, not a {type(item).__name__}")
        elif not looks_like_secret(str(item)):
            environment[name] = "" if item is None else str(item).lower() if isinstance(item, bool) else str(item)
    return environment


def _moved_value(target: str, option: Any) -> str:
    """What a managed flag in vllm_extra_args becomes: its variable with the flag's value when the variable takes
    that value (checked as the variable itself is: _coerce), else the variable and why the value does not pass."""
    if len(option.values) != 1 or not target.startswith(("vllm_", "inferops_")) or " " in target:
        return target
    value = option.values[0]
    setting = next((s for s in VLLM_SETTINGS if f"vllm_{s.name}" == target), None)
    refused: List[str] = []
    if setting is not None:
        _coerce(setting, target, value, refused)
    if refused:
        return f"{target} ({shown(value)} does not pass: {refused[0][len(target) + 1 :]})"
    return f"{target}: {value}"


def _validate_extra_args(var: str, value: Any, managed: Mapping[str, str], errors: List[str]) -> List[str]:
    """vllm_extra_args as canonical long options; refuses flags the plan manages, whatever their spelling."""
    if _is_unset(value):
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        errors.append(f'{var} must be a list of arguments, e.g. ["--disable-log-requests"]')
        return []
    args = [str(arg) for arg in value]
    try:
        options = parse_extra_args(args)
    except ExtraArgsError as error:
        errors.append(f'{var} {error} (e.g. ["--disable-log-requests", "--max-log-len", "100"])')
        return []
    seen: Dict[str, str] = {}
    canonical: List[str] = []
    for option in options:
        flag, written = option.flag, option.written
        spelled = flag if written == flag else f"{flag} (written {written})"
        if flag in SECRET_FLAGS or any(looks_like_secret(v) for v in option.values):
            errors.append(
                f"{var} holds a credential ({spelled}; value not shown): an argv shows in process lists and "
                f"in the plan; set {managed.get(flag, 'vllm_api_key (vaulted)')} instead"
            )
        elif flag in managed:
            errors.append(
                f"{var} sets {spelled}, which the plan manages: set {_moved_value(managed[flag], option)} instead"
            )
        elif abbreviation_of(flag, managed):
            full = abbreviation_of(flag, managed)
            errors.append(
                f"{var} sets {spelled}, which vLLM may read as an abbreviation of {full}, a flag the plan "
                f"manages: set {managed[full]} instead"
            )
        elif flag in seen:
            errors.append(f"{var} sets {flag} twice ({seen[flag]} and {written}): keep one")
        seen.setdefault(flag, written)
        canonical += option.argv()
    return canonical


def _validate_version(engine: str, var: str, value: Any, errors: List[str]) -> str:
    version = str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    problem = engine_version_error(engine, version if version else value, var)
    if problem:
        errors.append(problem.replace(" must be ", " is required and must be ", 1) if not version else problem)
    return version


def _is_release(engine: str, version: str) -> bool:
    return not engine_version_error(engine, version)


def _validate_gpus(var: str, value: Any, errors: List[str]) -> Optional[List[int]]:
    if _is_unset(value):
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        errors.append(f"{var} must be a non-empty list of GPU indices, e.g. [0, 1]")
        return None
    numbers = [as_number(g, "int") for g in value]
    if any(n is None or not 0 <= n < 1024 for n in numbers):
        errors.append(
            f"{var} must list GPU indices (integers from 0, as nvidia-smi numbers them) such as [0, 1], "
            f"got {shown(list(value))}"
        )
        return None
    duplicates = sorted({int(n) for n in numbers if numbers.count(n) > 1})
    if duplicates:
        errors.append(
            f"{var} lists GPU {', '.join(map(str, duplicates))} more than once: list each GPU once, such as "
            f"{sorted(set(int(n) for n in numbers))}"
        )
        return None
    return [int(n) for n in numbers]


def _validate_standby_ollama(value: Any, errors: List[str]) -> Optional[StandbyOllama]:
    if _is_unset(value):
        return None
    if not isinstance(value, Mapping):
        errors.append(
            f"{STANDBY_VAR} must be a mapping with version (an exact Ollama pin such as "
            f"{ENGINE_VERSION_EXAMPLES['ollama']}) and model "
            "(repo, revision, file, weights_bytes, base_model, as in inferops_model)"
        )
        return None
    standby = _plain(value)
    unknown = sorted(set(standby) - set(_STANDBY_KEYS))
    if unknown:
        errors.append(_unknown_keys_message(STANDBY_VAR, unknown, _STANDBY_KEYS))
    version = _validate_version("ollama", f"{STANDBY_VAR}.version", standby.get("version"), errors)
    model = _validate_model(standby.get("model"), errors, f"{STANDBY_VAR}.model")
    if model and "weights_bytes" not in model and not str(model.get("file", "")).lower().endswith(".gguf"):
        # with a GGUF file, the plan reads its size from the controller's cache or the Hub (model_source.py)
        errors.append(
            f"{STANDBY_VAR}.model.weights_bytes is required: the size in bytes of the GGUF file "
            f"({model.get('file') or STANDBY_VAR + '.model.file'}), or set {STANDBY_VAR}.model.file to the .gguf "
            "file, whose size the plan reads from the controller's Hugging Face cache or the Hub"
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
    number = as_number(space, "int")
    if device != "cpu":
        errors.append(
            "vllm_cpu_kvcache_space sizes the KV cache of vLLM's CPU build: set it only with vllm_device: cpu"
        )
    elif number is None or not 1 <= number <= 4096:
        errors.append(f"vllm_cpu_kvcache_space must be a whole number of GiB from 1 to 4096, such as 4, got {space!r}")
        return device, None
    return device, None if number is None else int(number)


# What the performance model predicts for and the layout is chosen by (docs/plan.md#speed).
WORKLOAD_VARS = (
    "inferops_objective",
    "inferops_context_tokens",
    "inferops_prompt_tokens",
    "inferops_host_memory_bandwidth_gbps",
)


def _validate_workload(variables: Mapping[str, Any], errors: List[str]) -> Workload:
    objective = variables.get("inferops_objective")
    if _is_unset(objective):
        objective = DEFAULT_OBJECTIVE
    elif objective not in OBJECTIVES:
        errors.append(
            f"inferops_objective must be latency (the fastest single answer) or throughput (the most tokens/s "
            f"over all concurrent requests), got {objective!r}"
        )
        objective = DEFAULT_OBJECTIVE
    sizes = {}
    for var, default in (
        ("inferops_context_tokens", DEFAULT_CONTEXT_TOKENS),
        ("inferops_prompt_tokens", DEFAULT_PROMPT_TOKENS),
    ):
        value = variables.get(var)
        number = default if _is_unset(value) else as_number(value, "int")
        if number is None or not 1 <= number <= 16_777_216:
            errors.append(
                f"{var} must be a whole number of tokens from 1 to 16777216, such as {default}, got {value!r}"
            )
            number = default
        sizes[var] = int(number)
    bandwidth = variables.get("inferops_host_memory_bandwidth_gbps")
    host = None if _is_unset(bandwidth) else as_number(bandwidth, "float")
    if not _is_unset(bandwidth) and (host is None or not 1 <= host <= 10_000):
        errors.append(
            "inferops_host_memory_bandwidth_gbps must be the host's memory bandwidth in GB/s, such as 76.8 "
            f"(dual-channel DDR5-4800), got {bandwidth!r}"
        )
        host = None
    return Workload(str(objective), sizes["inferops_context_tokens"], sizes["inferops_prompt_tokens"], host)


def known_names() -> List[str]:
    """Every name with a prefix of VARIABLE_PREFIXES the collection defines (planning inputs, role options, facts)."""
    names = set(input_names())
    for role_names in KNOWN_VARIABLES["role_options"].values():
        names.update(role_names)
    names.update(KNOWN_VARIABLES["set_by_collection"])
    return sorted(names)


def _unknown_keys_message(var: str, unknown: Sequence[str], allowed: Sequence[str]) -> str:
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hints.append(f"{shown(key)} (did you mean {close[0]}?)" if close else shown(key))
    return f"{var} has unknown keys {', '.join(hints)}; allowed: {', '.join(allowed)}"


def unknown_variables(defined: Iterable[str]) -> List[Tuple[str, Optional[str]]]:
    """(name, closest known name or None) for each defined vllm_/ollama_/inferops_ name the collection lacks."""
    known = known_names()
    result = []
    for name in sorted(set(defined)):
        if _PREFIX_RE.fullmatch(name) and name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            result.append((name, close[0] if close else None))
    return result


def _unknown_messages(defined: Iterable[str], warn: bool) -> List[str]:
    messages = []
    for name, close in unknown_variables(defined):
        hint = f"did you mean {close}? " if close else ""
        switch = "" if warn else f" (or set {UNKNOWN_SWITCH}: warn to plan with only a warning)"
        messages.append(f"{name} is not a variable of inferops.llm and is ignored: {hint}rename or remove it{switch}")
    return messages


def _unsafe_inputs(variables: Mapping[str, Any], names: Iterable[str]) -> List[str]:
    """CR/LF/NUL and token-shaped strings in every planning input (config.json content excepted)."""
    errors: List[str] = []
    for name in names:
        if name not in variables:
            continue
        value = _plain(variables[name])
        if name in ("inferops_model", STANDBY_VAR) and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "config"}
            if isinstance(value.get("model"), dict):
                value["model"] = {k: v for k, v in value["model"].items() if k != "config"}
        errors += unsafe_text_errors(name, value)
    return errors


def _validate_settings(engine: str, version: str, variables: Mapping[str, Any], errors: List[str]) -> Dict[str, Any]:
    """The engine's settings the host sets (``<engine>_<name>``), coerced; those its release lacks refused."""
    settings: Dict[str, Any] = {}
    release = _is_release(engine, version)  # a release the collection knows: its settings' ranges apply
    for setting in ENGINE_SETTINGS[engine]:
        var = f"{engine}_{setting.name}"
        value = variables.get(var)
        if _is_unset(value):
            continue
        coerced = _coerce(setting, var, value, errors)
        if coerced is None:
            continue
        if release and not setting_available(setting, version):
            errors.append(
                f"{var}: {setting.flag} exists only up to {setting.until} (excluded); {engine} {version} does not "
                "accept it: remove it"
            )
            continue
        settings[setting.name] = coerced
    return settings


def _validate_ollama_listen(variables: Mapping[str, Any], errors: List[str]) -> Optional[str]:
    """host:port Ollama listens on when ollama_host or ollama_port is set (None: Ollama's own default)."""
    address, port = variables.get("ollama_host"), variables.get("ollama_port")
    address_error = "" if _is_unset(address) else listen_address_error(address, "ollama_host")
    if address_error:
        errors.append(address_error)
    number = None if _is_unset(port) else as_number(port, "int")
    if not _is_unset(port) and (number is None or not 0 < number < 65536):
        errors.append(f"ollama_port must be a TCP port such as 11434, got {shown(port)}")
    elif not (_is_unset(address) and _is_unset(port)):
        # Ollama's own defaults fill what the inventory leaves out (envconfig/config.go).
        return f"{'127.0.0.1' if _is_unset(address) else address}:{11434 if number is None else int(number)}"
    return None


def validate_inputs(variables: Mapping[str, Any], defined: Optional[Iterable[str]] = None) -> HostInputs:
    """Check a host's variables; raise PlanInputError listing every problem (each names its variable).

    defined: every name the host defines (names only: their values are never read), to find unknown
    vllm_/ollama_/inferops_ variables; by default the keys of ``variables``.
    """
    errors: List[str] = []
    warnings: List[str] = []
    engine = variables.get("inferops_engine")
    if engine not in ENGINES:
        raise PlanInputError(
            [f"inferops_engine is required and must be one of {', '.join(ENGINES)}, got {shown(engine)}"]
        )
    errors += _unsafe_inputs(variables, input_names())
    mode = variables.get(UNKNOWN_SWITCH)
    mode = "error" if _is_unset(mode) else mode
    if mode not in UNKNOWN_MODES:
        errors.append(f"{UNKNOWN_SWITCH} must be one of {', '.join(UNKNOWN_MODES)}, got {shown(mode)}")
    unknown = _unknown_messages(list(variables) if defined is None else defined, mode == "warn")
    (warnings if mode == "warn" else errors).extend(unknown)
    version = _validate_version(engine, f"{engine}_version", variables.get(f"{engine}_version"), errors)
    model = _validate_model(variables.get("inferops_model"), errors)

    settings = _validate_settings(engine, version, variables, errors)
    gpu_list = _validate_gpus(f"{engine}_gpus", variables.get(f"{engine}_gpus"), errors)
    extra_args = (
        _validate_extra_args("vllm_extra_args", variables.get("vllm_extra_args"), managed_flags(), errors)
        if engine == "vllm"
        else []
    )
    environment = _validate_environment(ENVIRONMENT_VAR[engine], variables.get(ENVIRONMENT_VAR[engine]), errors)
    listen = None
    if engine == "ollama":
        listen = _validate_ollama_listen(variables, errors)
        if not _is_unset(variables.get(STANDBY_VAR)):
            errors.append(
                f"{STANDBY_VAR} describes an Ollama kept beside vLLM; on an Ollama host use inferops_model and the "
                "ollama_* variables instead"
            )
    if engine == "vllm" and not _is_unset(variables.get("vllm_host")):
        address_error = listen_address_error(variables.get("vllm_host"), "vllm_host")
        if address_error:
            errors.append(address_error)
    standby_ollama = _validate_standby_ollama(variables.get(STANDBY_VAR), errors) if engine == "vllm" else None
    device, kv_space = _validate_device(variables, engine, errors)
    workload = _validate_workload(variables, errors)
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
        workload=workload,
        warnings=warnings,
    )


def input_errors(variables: Mapping[str, Any], defined: Optional[Iterable[str]] = None) -> List[str]:
    """Every problem with a host's inputs, as messages naming the variable and the fix."""
    try:
        validate_inputs(variables, defined)
    except PlanInputError as exc:
        return exc.errors
    return []
