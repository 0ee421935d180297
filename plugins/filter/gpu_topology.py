# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.gpu_topology filter (documented in gpu_topology.yml)."""

from __future__ import annotations

import typing as t

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology


def gpu_topology(text: t.Any) -> dict[str, t.Any]:
    """Parse declared `nvidia-smi topo -m` output into the structure gpu_facts returns."""
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise AnsibleFilterError(
            "gpu_topology expects the text printed by `nvidia-smi topo -m` (for example the inventory "
            f"variable inferops_gpu_topology_text, as a YAML block scalar), not a {type(text).__name__}"
        )
    try:
        return parse_topology(str(text))
    except ValueError as error:
        raise AnsibleFilterError(
            f"gpu_topology: {error}. Paste the complete output of `nvidia-smi topo -m` into "
            "inferops_gpu_topology_text as a YAML block scalar (`|2` keeps the header's leading spaces)."
        ) from error


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"gpu_topology": gpu_topology}
