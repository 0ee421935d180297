# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.host_plan and inferops.llm.plan_input_errors filters (documented in their .yml files)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

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


def host_plan(
    variables: t.Any,
    hardware: t.Any = None,
    measured: t.Any = None,
    host: t.Any = None,
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
        )
    except PlanInputError as error:
        raise AnsibleFilterError("; ".join(error.errors)) from error
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


def plan_input_errors(variables: t.Any) -> list[str]:
    """Every problem with a host's plan inputs (empty when they are valid)."""
    return input_errors(_variables(variables, "plan_input_errors"))


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"host_plan": host_plan, "plan_input_errors": plan_input_errors}
