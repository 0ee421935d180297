# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.systemd_environment filter (documented in systemd_environment.yml beside this file)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.systemd import UnitValueError, environment_lines


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


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"systemd_environment": systemd_environment}
