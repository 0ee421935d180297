# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""One engine setting as the inventory gives it (``<engine>_<name>``): the shape both engines' registries share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.versions import version_tuple


@dataclass(frozen=True)
class Setting:
    """One engine setting read from ``<engine>_<name>``.

    kind: int, float, bool, str, map, list, int_or_auto (vLLM max_model_len: "auto" = -1),
    bytes (vLLM human-readable byte count). flag: the `vllm serve` flag (None for Ollama settings,
    whose environment ollama_render writes). until: first version that no longer has the flag.
    negatable: vLLM BooleanOptionalAction (``--no-<flag>`` turns it off).
    """

    name: str
    kind: str
    flag: Optional[str] = None
    until: Optional[str] = None
    negatable: bool = False
    choices: Tuple[str, ...] = ()
    minimum: Optional[float] = None
    maximum: Optional[float] = None


def setting_available(setting: Setting, version: str) -> bool:
    """Whether the pinned engine version has the setting's flag."""
    return not (setting.until and version_tuple(version) >= version_tuple(setting.until))
