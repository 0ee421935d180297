# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm engine_version_error, model_repo_error, listen_address_error, unit_value_errors and shown
filters (see their .yml files).

The engine roles' preflight checks, with the grammar and the rules the plan uses (_core/versions.py,
_core/safety.py), so that the plan and the roles accept the same values.
"""

from __future__ import annotations

import re
import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.safety import shown as _shown
from ansible_collections.inferops.llm.plugins.module_utils._core.safety import strings, unsafe_text_errors
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import (
    ENGINE_VERSION_PATTERNS,
)
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import (
    engine_version_error as _engine_version_error,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    listen_address_error as _listen_address_error,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import repo_error

# One word in a unit: no whitespace (it would split ExecStart= or ReadWritePaths=), no quotes or backslash.
_WORD_RE = re.compile(r"[^\s\"'\\]+")


def engine_version_error(version: t.Any, engine: t.Any, variable: t.Any = "") -> str:
    """Why a version is not an exact pin of the engine ("" when it is), naming the variable."""
    if engine not in ENGINE_VERSION_PATTERNS:
        raise AnsibleFilterError(f"engine_version_error: engine must be one of {', '.join(ENGINE_VERSION_PATTERNS)}")
    return _engine_version_error(str(engine), version, str(variable or ""))


def model_repo_error(repo: t.Any, variable: t.Any = "inferops_model.repo") -> str:
    """Why repo is not a Hugging Face model id ("" when it is), naming the variable, as the plan checks it."""
    return repo_error(repo, str(variable or "inferops_model.repo"))


def listen_address_error(value: t.Any, variable: t.Any) -> str:
    """Why value is not an address vllm_host or ollama_host can listen on ("" when it is), as the plan checks it."""
    if variable not in ("vllm_host", "ollama_host"):
        raise AnsibleFilterError("listen_address_error: variable must be vllm_host or ollama_host")
    return _listen_address_error(value, str(variable))


def unit_value_errors(values: t.Any, words: t.Any = (), escaped: t.Any = ()) -> list[str]:
    """Refusals for role options that a unit, environment file or serve.yaml would receive.

    values: option name -> value. Every string (nested too) is refused with CR, LF or NUL, and with "%"
    (a systemd specifier) unless the option is in ``escaped`` (an Environment= value, where % is doubled, or
    a secret in the EnvironmentFile, which expands none). Options in ``words`` must also be one word: no
    whitespace, quotes or backslash. Messages name the option and never repeat its value.
    """
    if not isinstance(values, Mapping):
        raise AnsibleFilterError("unit_value_errors expects a mapping of option names to values")
    if isinstance(words, (str, bytes)) or not isinstance(words, Sequence):
        raise AnsibleFilterError("unit_value_errors: words must be a list of option names")
    errors: list[str] = []
    for name, value in values.items():
        secret = name in escaped
        errors += unsafe_text_errors(str(name), value, secrets_allowed=True)
        for path, text in strings(str(name), value):
            if "%" in text and not secret:
                errors.append(
                    f"{path} contains %, which systemd expands as a specifier in a unit: choose a value without %"
                )
            if name in words and text and not _WORD_RE.fullmatch(text):
                errors.append(
                    f"{path} must be one word without spaces, quotes or backslashes (it is written into a unit "
                    "line that splits on spaces), such as /var/lib/vllm"
                )
    return list(dict.fromkeys(errors))


def shown(value: t.Any, variable: t.Any = None) -> str:
    """A rejected value as a role's refusal may quote it: the plan's rule (_core/safety.py shown)."""
    return _shown(value, None if variable is None else str(variable))


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {
            "engine_version_error": engine_version_error,
            "model_repo_error": model_repo_error,
            "listen_address_error": listen_address_error,
            "unit_value_errors": unit_value_errors,
            "shown": shown,
        }
