# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.host_plan, plan_input_errors and plan_input_names filters (documented in their .yml files)."""

from __future__ import annotations

import os
import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._model.hub import ModelResolver
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError, input_errors, input_names
from ansible_collections.inferops.llm.plugins.module_utils._plan.planner import build_plan


def _variables(variables: t.Any, filter_name: str) -> dict[str, t.Any]:
    if not isinstance(variables, Mapping):
        raise AnsibleFilterError(
            f"{filter_name} expects the host's variables as a mapping (name -> value), not a {type(variables).__name__}"
        )
    # Read only the names the plan uses: other variables (vault secrets among them) stay untouched.
    return {name: variables[name] for name in input_names() if name in variables}


def _optional_mapping(value: t.Any, name: str) -> dict[str, t.Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise AnsibleFilterError(f"host_plan: {name} must be a mapping, not a {type(value).__name__}")
    return dict(value)


def _defined(defined: t.Any) -> list[str] | None:
    if defined is None:
        return None
    if isinstance(defined, (str, bytes)) or not isinstance(defined, Sequence):
        raise AnsibleFilterError(f"defined must be a list of variable names, not a {type(defined).__name__}")
    return [str(name) for name in defined]


_RESOLVER: list[ModelResolver] = []


def _models() -> ModelResolver:
    """One resolver per controller process: the checkpoints' files from the controller's Hugging Face cache or
    Hub (HF_HUB_CACHE / HF_HOME, HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN), as plan_fleet reads them."""
    if not _RESOLVER:
        _RESOLVER.append(ModelResolver.from_environment(os.environ))
    return _RESOLVER[0]


def host_plan(
    variables: t.Any,
    hardware: t.Any = None,
    measured: t.Any = None,
    host: t.Any = None,
    defined: t.Any = None,
) -> dict[str, t.Any]:
    """The plan of one host (see docs/plan.md for its keys)."""
    plain = _variables(variables, "host_plan")
    hardware_map = _optional_mapping(hardware, "hardware") or {}
    try:
        return build_plan(
            plain,
            hardware_map,
            measured=_optional_mapping(measured, "measured"),
            host=None if host is None else str(host),
            defined=_defined(defined),
            models=_models(),
        )
    except PlanInputError as error:
        raise AnsibleFilterError("; ".join(error.errors)) from error
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


def plan_input_errors(variables: t.Any, defined: t.Any = None) -> list[str]:
    """Every problem with a host's plan inputs (empty when they are valid)."""
    return input_errors(_variables(variables, "plan_input_errors"), _defined(defined))


def plan_input_names(defined: t.Any) -> list[str]:
    """The planning inputs among the names a host defines: the only variables the plan templates."""
    names = set(_defined(defined) or [])
    return [name for name in input_names() if name in names]


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"host_plan": host_plan, "plan_input_errors": plan_input_errors, "plan_input_names": plan_input_names}
