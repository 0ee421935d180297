# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""driver-version: the installed NVIDIA driver against the GPUs and the engine's CUDA."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import finding_entry as _finding
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import (
    engine_cuda,
)
from ansible_collections.inferops.llm.plugins.module_utils._hardware.nvidia_drivers import (
    driver_shortfall,
    minimum_driver_for,
)


def check_driver(
    driver: Optional[Mapping[str, Any]], gpus: Sequence[Mapping[str, Any]], vllm_version: Any = None
) -> List[Dict[str, Any]]:
    """driver-version: the installed driver against the minimum for the GPUs and the engine's CUDA.

    driver: ``{"version": "580.95.05", "cuda": "12.9" or None}``; without ``cuda`` the CUDA of vLLM's
    default PyPI wheel for ``vllm_version`` (its text or VllmVersion) is used. The table is nvidia_drivers
    (one table for the nvidia_driver role and this check).
    """
    if not driver or not driver.get("version"):
        return []
    cuda, source = engine_cuda(vllm_version, driver.get("cuda"))
    need = minimum_driver_for(gpus=gpus, cuda_version=cuda, cuda_source=source)
    minimum = need["minimum_driver"]
    branch = driver_shortfall(driver["version"], minimum) if minimum else None
    if branch is None:
        return []
    return [
        _finding(
            "driver-version",
            "error",
            f"driver {driver['version']} is older than {minimum}: {'; '.join(need['reasons'])}",
            "nvidia_driver_branch",
            branch,
        )
    ]
