# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Render vLLM's service: the `vllm serve` argv of resolved settings, and its `--config` YAML mapping.

vLLM's FlexibleArgumentParser.load_config_file (vllm/utils/argparse_utils.py) turns each key into
`--key`: a scalar becomes `--key str(value)`, a list repeated values, a mapping a JSON string and
`true` a bare flag. A `false` is dropped without a word when the file is read by `vllm serve`'s
top-level parser (vllm#51401; still so in 0.33.0), so an argv `--no-enable-prefix-caching` is kept
as the key `no-enable-prefix-caching: true`, which the parser expands back to that flag.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import VLLM_SETTINGS

# Keys the vllm role sets itself (listen address) or keeps out of files that are not secret.
ROLE_KEYS = {"host": "vllm_host", "port": "vllm_port"}
SECRET_KEYS = {"api-key": "vllm_api_key"}

_LONG_OPTION_RE = re.compile(r"--[A-Za-z][A-Za-z0-9_.-]*")
_SHORT_OPTION_RE = re.compile(r"^-[A-Za-z]")


class ServeConfigError(ValueError):
    """The argv cannot be written as a config file; the message names what to change."""


def _value(text: str) -> Any:
    """A flag value as YAML shows it best without changing what vLLM receives.

    Integers, floats and JSON objects round-trip through str() / json.dumps() unchanged; JSON
    true/false/null and lists are kept as text because they would change meaning in YAML.
    """
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if isinstance(parsed, bool) or parsed is None or isinstance(parsed, list):
        return text
    if isinstance(parsed, (int, float)) and str(parsed) != text:
        return text
    return parsed


def serve_options(command: Sequence[str]) -> Dict[str, Any]:
    """The host-independent part of the config mapping: ``model`` and every option of the argv.

    The plan's ``service.config``; the vllm role adds only host-local keys (host, port, a local model path).
    """
    argv = [str(arg) for arg in command]
    if len(argv) < 3 or not argv[0].endswith("vllm") or argv[1] != "serve" or argv[2].startswith("-"):
        raise ServeConfigError(f"the plan's command must start with 'vllm serve MODEL', got {argv[:3]!r}")
    config: Dict[str, Any] = {"model": argv[2]}
    options: Dict[str, Any] = {}
    key: Optional[str] = None
    values: List[str] = []

    def flush() -> None:
        if key is None:
            return
        if not values:
            options[key] = True
        elif len(values) == 1:
            options[key] = _value(values[0])
        else:
            options[key] = [_value(v) for v in values]

    for arg in argv[3:]:
        if arg.startswith("--"):
            flush()
            name, has_value, inline = arg[2:].partition("=")
            if not _LONG_OPTION_RE.fullmatch("--" + name):
                raise ServeConfigError(f"cannot read the option {arg!r} of the plan's command")
            name = name.replace("_", "-")
            if name in ROLE_KEYS:
                raise ServeConfigError(f"the plan's command sets --{name}: set {ROLE_KEYS[name]} instead")
            if name in SECRET_KEYS:
                raise ServeConfigError(
                    f"the plan's command sets --{name}, a secret: set {SECRET_KEYS[name]} (kept in a mode 0600 file)"
                )
            if name == "config":
                raise ServeConfigError("the plan's command sets --config: the vllm role writes that file itself")
            if name in options:
                raise ServeConfigError(f"the plan's command sets --{name} twice")
            key, values = name, ([inline] if has_value else [])
        elif _SHORT_OPTION_RE.match(arg):
            raise ServeConfigError(f"use the long form of {arg!r} in vllm_extra_args (e.g. --tensor-parallel-size)")
        elif key is None:
            raise ServeConfigError(f"unexpected argument {arg!r} after the model in the plan's command")
        else:
            values.append(arg)
    flush()
    config.update(options)
    return config


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
