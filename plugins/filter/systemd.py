# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.systemd_environment filter (documented in systemd_environment.yml beside this file)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.systemd import (
    UnitValueError,
    environment_lines,
    restart_lines,
)


def systemd_environment(env: t.Any) -> list[str]:
    """Environment= values quoted for a systemd unit."""
    if env is None:
        return []
    if not isinstance(env, Mapping):
        raise AnsibleFilterError(f"systemd_environment expects a mapping, not a {type(env).__name__}")
    try:
        return environment_lines({str(k): v for k, v in env.items()})
    except UnitValueError as error:
        raise AnsibleFilterError(f"systemd_environment: {error}") from error


def systemd_restart(policy: t.Any, prefix: str, systemd_version: t.Any = 0) -> list[str]:
    """Restart=always with a bounded delay, RestartSteps= only where systemd has it (254 and later)."""
    if not isinstance(policy, Mapping):
        raise AnsibleFilterError(f"systemd_restart expects a mapping, not a {type(policy).__name__}")
    try:
        return restart_lines(str(prefix), policy, systemd_version)
    except UnitValueError as error:
        raise AnsibleFilterError(f"systemd_restart: {error}") from error


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"systemd_environment": systemd_environment, "systemd_restart": systemd_restart}
