# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What the ollama role writes, as plain functions (the ``inferops.llm.ollama_*`` filters wrap them).

``archive_name(version, arch) -> str``: the Linux release asset of an Ollama version
(``ollama-linux-amd64.tar.zst`` from 0.14.0, ``.tgz`` before; ``arch`` amd64/arm64 or x86_64/aarch64).

``ollama_environment(settings, options) -> dict``: the service environment. ``settings`` are the
plan's Ollama settings (``inferops_plan.settings``; a value may be given as ``{"value": v, ...}``),
``options`` the role's own variables without the ``ollama_`` prefix (``host``, ``models_dir``,
``keep_alive``, ``max_loaded_models``, ``sched_spread``, ``gpus``, ``gpu_overhead_bytes``,
``context_length``... which win over the plan). Unset values are left out so Ollama's own
default applies.

``modelfile_parameters(settings, options, profile) -> dict`` and ``ollama_modelfile(source,
parameters, system=None, template=None) -> str``: the Modelfile of an imported GGUF.

``model_drift(show, wanted_parameters, wanted_digest=None) -> list``: how the model Ollama reports
(``POST /api/show``) differs from what is wanted; empty when it matches.

``pull_state(models, tags) -> dict``: which pulled models of ``ollama_models`` to pull, given what Ollama holds
(``GET /api/tags``), and which pinned ones (``digest``) it holds under another digest.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ansible_collections.inferops.llm.plugins.module_utils._core.versions import VersionError, release_tuple
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import release_record

ARCH_ALIASES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

ParameterValue = Union[str, List[str]]


class OllamaRenderError(ValueError):
    """Bad role input; the message names the variable."""


def _version(version: str) -> tuple:
    try:
        return release_tuple(version, variable="ollama_version", example="'0.32.9'", tag_prefix=False)
    except VersionError as error:
        raise OllamaRenderError(f"ollama_version {version!r} must be an exact release such as '0.32.9'") from error


def archive_name(version: str, arch: str) -> str:
    go_arch = ARCH_ALIASES.get(str(arch))
    if go_arch is None:
        raise OllamaRenderError(f"ollama_arch {arch!r}: Ollama publishes Linux archives for amd64 and arm64 only")
    suffix = release_record(_version(version))["archive"]
    return f"ollama-linux-{go_arch}.{suffix}"


def _setting(settings: Mapping[str, Any], key: str) -> Any:
    value = settings.get(key)
    if isinstance(value, Mapping):
        return value.get("value")
    return value


def _pick(options: Mapping[str, Any], settings: Mapping[str, Any], key: str) -> Any:
    value = options.get(key)
    return _setting(settings, key) if value is None else value


def _bool_text(value: Any) -> str:
    if isinstance(value, str):
        value = value.strip().lower() in ("1", "true", "yes", "on")
    return "1" if value else "0"


def ollama_environment(settings: Mapping[str, Any], options: Mapping[str, Any]) -> Dict[str, str]:
    env: Dict[str, str] = {"OLLAMA_HOST": str(options.get("host") or "127.0.0.1:11434")}
    if options.get("models_dir"):
        env["OLLAMA_MODELS"] = str(options["models_dir"])
    for key, name in (
        ("context_length", "OLLAMA_CONTEXT_LENGTH"),
        ("num_parallel", "OLLAMA_NUM_PARALLEL"),
        ("kv_cache_type", "OLLAMA_KV_CACHE_TYPE"),
    ):
        value = _pick(options, settings, key)
        if value is not None and value != "":
            env[name] = str(value)
    flash_attention = _pick(options, settings, "flash_attention")
    if flash_attention is not None:
        env["OLLAMA_FLASH_ATTENTION"] = _bool_text(flash_attention)
    if options.get("keep_alive") not in (None, ""):
        env["OLLAMA_KEEP_ALIVE"] = str(options["keep_alive"])
    if options.get("max_loaded_models") is not None:
        env["OLLAMA_MAX_LOADED_MODELS"] = str(int(options["max_loaded_models"]))
    if options.get("sched_spread") is not None:
        env["OLLAMA_SCHED_SPREAD"] = _bool_text(options["sched_spread"])
    if options.get("gpu_overhead_bytes"):
        env["OLLAMA_GPU_OVERHEAD"] = str(int(options["gpu_overhead_bytes"]))
    gpus = options.get("gpus")
    if gpus is not None:
        if isinstance(gpus, str) or not isinstance(gpus, Sequence):
            raise OllamaRenderError(f"ollama_gpus must be a list of GPU indices or UUIDs, got {gpus!r}")
        # indices as nvidia-smi numbers them (CUDA's own default order is fastest first)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    for name, value in dict(options.get("extra_environment") or {}).items():
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", str(name)):
            raise OllamaRenderError(f"ollama_environment_extra: {name!r} is not an environment variable name")
        env[str(name)] = str(value)
    return env


#: Modelfile PARAMETER names Ollama accepts (api/types.go Options), with the type it parses.
PARAMETER_TYPES = {
    "num_ctx": int, "num_batch": int, "num_gpu": int, "main_gpu": int, "num_thread": int, "num_keep": int,
    "num_predict": int, "seed": int, "top_k": int, "repeat_last_n": int, "temperature": float, "top_p": float,
    "min_p": float, "typical_p": float, "repeat_penalty": float, "presence_penalty": float,
    "frequency_penalty": float, "stop": str, "use_mmap": bool,
}  # fmt: skip


def _parameter_text(name: str, value: Any) -> str:
    kind = PARAMETER_TYPES.get(name)
    if kind is None:
        raise OllamaRenderError(f"Modelfile parameter {name!r} is not one Ollama accepts")
    if kind is bool:
        return "true" if value in (True, "true", "True", 1, "1") else "false"
    if kind is float:
        return repr(float(value)).removesuffix(".0") if float(value).is_integer() else repr(float(value))
    if kind is int:
        return str(int(value))
    return str(value)


def modelfile_parameters(
    settings: Mapping[str, Any], options: Mapping[str, Any], profile: Optional[Mapping[str, Any]] = None
) -> Dict[str, ParameterValue]:
    """num_ctx / num_gpu / num_batch from the plan (role variables win), then the profile's parameters."""
    parameters: Dict[str, ParameterValue] = {}
    for key, name in (("context_length", "num_ctx"), ("num_gpu", "num_gpu"), ("num_batch", "num_batch")):
        value = _pick(options, settings, key)
        if value is not None:
            parameters[name] = _parameter_text(name, value)
    for name, value in dict((profile or {}).get("parameters") or {}).items():
        if isinstance(value, (list, tuple)):
            parameters[name] = [_parameter_text(name, v) for v in value]
        else:
            parameters[name] = _parameter_text(name, value)
    return parameters


def _quote_block(text: str) -> str:
    if '"""' in text:
        raise OllamaRenderError('a Modelfile SYSTEM or TEMPLATE text must not contain """')
    return f'"""{text}"""'


def ollama_modelfile(
    source: str, parameters: Mapping[str, Any], system: Optional[str] = None, template: Optional[str] = None
) -> str:
    lines = [f"FROM {source}"]
    for name in sorted(parameters):
        values = parameters[name]
        for value in values if isinstance(values, list) else [values]:
            if PARAMETER_TYPES.get(name) is str:
                value = '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
            lines.append(f"PARAMETER {name} {value}")
    if template:
        lines.append(f"TEMPLATE {_quote_block(template)}")
    if system:
        lines.append(f"SYSTEM {_quote_block(system)}")
    return "\n".join(lines) + "\n"


def parse_show_parameters(text: str) -> Dict[str, ParameterValue]:
    """The ``parameters`` text of /api/show ("name   value" per line, repeated for stop)."""
    parsed: Dict[str, ParameterValue] = {}
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        name, _space, value = line.strip().partition(" ")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        if name in parsed:
            previous = parsed[name]
            parsed[name] = (previous if isinstance(previous, list) else [previous]) + [value]
        else:
            parsed[name] = value
    return parsed


def _normal(name: str, value: ParameterValue) -> List[str]:
    """Comparable form: a sorted list of canonical texts (stop words repeat, the rest are single)."""
    values = value if isinstance(value, list) else [value]
    out = []
    for item in values:
        try:
            out.append(_parameter_text(name, item))
        except (OllamaRenderError, ValueError):
            out.append(str(item))
    return sorted(out)


def model_drift(
    show: Optional[Mapping[str, Any]], wanted_parameters: Mapping[str, Any], wanted_digest: Optional[str] = None
) -> List[str]:
    if not show:
        return ["model is not present"]
    drift = []
    reported = parse_show_parameters(str(show.get("parameters") or ""))
    for name, value in wanted_parameters.items():
        if name not in reported:
            drift.append(f"parameter {name} missing (wanted {value})")
        elif _normal(name, reported[name]) != _normal(name, value):
            drift.append(f"parameter {name} is {reported[name]} (wanted {value})")
    for name in reported:
        # Ollama adds stop words from the chat template it detects in the GGUF: not ours to judge.
        if name not in wanted_parameters and name != "stop":
            drift.append(f"parameter {name} is set but not wanted")
    if wanted_digest:
        digest = wanted_digest.removeprefix("sha256:")
        if f"sha256-{digest}" not in str(show.get("modelfile") or ""):
            drift.append(f"weights are not the wanted GGUF (sha256 {digest[:12]})")
    return drift


def _tag(name: str) -> str:
    """A model name as /api/tags lists it: Ollama adds ``:latest`` to a name without a tag."""
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def pull_state(models: Sequence[Any], tags: Mapping[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """``pull``: the entries of ``ollama_models`` with ``pull`` that Ollama lacks, or holds under another digest
    than their ``digest`` pin; ``mismatch``: the pinned ones it holds under another digest (after a pull: the
    registry's tag is not the pinned model). Each item: ``index``, ``pull``, ``wanted`` (the pin's hex, or None)
    and ``found`` (the digest Ollama reports, or None)."""
    held = {}
    for model in (tags or {}).get("models") or []:
        if isinstance(model, Mapping):
            held[_tag(str(model.get("name") or model.get("model") or ""))] = str(model.get("digest") or "")
    state: Dict[str, List[Dict[str, Any]]] = {"pull": [], "mismatch": []}
    for index, entry in enumerate(models or []):
        if not isinstance(entry, Mapping) or "pull" not in entry:
            continue
        name = str(entry["pull"])
        wanted = str(entry["digest"]).removeprefix("sha256:") if entry.get("digest") else None
        found = held.get(_tag(name))
        item = {"index": index, "pull": name, "wanted": wanted, "found": found}
        if found is None:
            state["pull"].append(item)
        elif wanted and found.removeprefix("sha256:") != wanted:
            state["pull"].append(item)
            state["mismatch"].append(item)
    return state
