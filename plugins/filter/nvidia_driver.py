# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.nvidia_driver_* filters (documented in nvidia_driver_*.yml beside this file)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import engine_cuda
from ansible_collections.inferops.llm.plugins.module_utils._hardware import nvidia_drivers


def _gpus(value: t.Any) -> list[dict[str, t.Any]]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise AnsibleFilterError(f"the GPU list must be a list of inferops_gpus entries, not a {type(value).__name__}")
    gpus = []
    for entry in value:
        if not isinstance(entry, Mapping):
            raise AnsibleFilterError(f"each GPU must be a mapping, not a {type(entry).__name__}")
        gpus.append(dict(entry))
    return gpus


def nvidia_driver_plan(
    gpus: t.Any,
    distribution: t.Any,
    release: t.Any,
    architecture: t.Any,
    source: t.Any = "nvidia",
    branch: t.Any = "",
    version: t.Any = "",
    flavour: t.Any = "auto",
    cuda_version: t.Any = "",
    vllm_version: t.Any = "",
    ubuntu_server: t.Any = True,
) -> dict[str, t.Any]:
    """Branch, flavour, packages and minimum driver for a host; input errors in ``errors``."""
    try:
        # The engine's CUDA comes from the engine's release facts; the driver table knows only CUDA.
        cuda, cuda_from = engine_cuda(
            "" if vllm_version is None else str(vllm_version), "" if cuda_version is None else str(cuda_version)
        )
        return nvidia_drivers.driver_plan(
            _gpus(gpus),
            str(distribution),
            str(release),
            str(architecture),
            str(source),
            branch="" if branch is None else str(branch),
            version="" if version is None else str(version),
            flavour=str(flavour),
            cuda_version=cuda or "",
            cuda_source=cuda_from,
            ubuntu_server=bool(ubuntu_server),
        )
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


def nvidia_driver_apt_version(madison: t.Any, version: t.Any) -> str | None:
    """Archive version of a driver version (upstream, full or branch) in ``apt-cache madison`` output."""
    return nvidia_drivers.apt_version_for(str(madison or ""), str(version))


def nvidia_driver_versioned_packages(dpkg_query: t.Any, version: t.Any) -> list[str]:
    """Installed packages at the driver's upstream version."""
    return nvidia_drivers.driver_versioned_packages(str(dpkg_query or ""), str(version))


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {
            "nvidia_driver_plan": nvidia_driver_plan,
            "nvidia_driver_apt_version": nvidia_driver_apt_version,
            "nvidia_driver_versioned_packages": nvidia_driver_versioned_packages,
        }
