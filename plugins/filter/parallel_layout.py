# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.parallel_layout filter (documented in parallel_layout.yml)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain as _plain
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import LayoutError, select_layout


def _memory_fit(memory: t.Any) -> t.Any:
    if memory is None or isinstance(memory, bool):
        return memory
    if isinstance(memory, (int, float)):
        return memory
    if isinstance(memory, Mapping):
        needs = {}
        for key, value in memory.items():
            tp, _sep, pp = str(key).lower().partition("x")
            needs[(int(tp), int(pp or 1))] = float(value)
        return needs
    raise AnsibleFilterError(
        "parallel_layout: memory must be the total bytes the model needs (weights + KV + overhead), or a "
        f"mapping 'TPxPP' -> bytes per GPU, not a {type(memory).__name__}"
    )


def parallel_layout(
    gpus: t.Any,
    model: t.Any,
    topology: t.Any = None,
    memory: t.Any = None,
    gpu_memory_utilization: float = 0.9,
    engine: str = "vllm",
    requested: t.Any = None,
    replicas: bool = False,
    multi_node: t.Any = None,
) -> dict[str, t.Any]:
    """Tensor/pipeline/data parallel layout and GPU order for one host."""
    if not isinstance(gpus, Sequence) or isinstance(gpus, (str, bytes)):
        raise AnsibleFilterError("parallel_layout expects the GPU list (gpu_facts or inferops_gpus) as input")
    if not isinstance(model, Mapping):
        raise AnsibleFilterError(
            "parallel_layout: model must be a config.json mapping or an architecture (ModelArchitecture.to_dict())"
        )
    for name, value in (("topology", topology), ("requested", requested), ("multi_node", multi_node)):
        if value is not None and not isinstance(value, Mapping):
            raise AnsibleFilterError(f"parallel_layout: {name} must be a mapping, got {type(value).__name__}")
    dims = _plain(model)
    try:
        if "architectures" in dims or "text_config" in dims:
            dims = ModelArchitecture.from_config(dims)
        return select_layout(
            _plain(gpus),
            dims,
            topology=_plain(topology),
            memory_fit=_memory_fit(memory),
            gpu_memory_utilization=float(gpu_memory_utilization),
            engine=str(engine),
            requested=_plain(requested),
            replicas=bool(replicas),
            multi_node=_plain(multi_node),
        )
    except (LayoutError, ValueError) as error:
        raise AnsibleFilterError(f"parallel_layout: {error}") from error


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"parallel_layout": parallel_layout}
