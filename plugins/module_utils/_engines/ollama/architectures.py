# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Which GGUF architectures each recorded Ollama release loads: ``architectures.json`` beside this file.

Read by tests/bin/ollama-architectures from each release's tag of ollama/ollama: up to the 0.2x releases the
names of the vendored llama.cpp (``LLM_ARCH_NAMES`` of llama/llama.cpp/src/llama-arch.cpp) and of Ollama's Go
engine (``model.Register``); from 0.30, where every GGUF is served by upstream llama-server, only the llama.cpp
tag it is built from (``llama_cpp``), whose names are not read (``architectures`` null: not checked). A version
without a record of its own takes the newest recorded release before it, as the release records do.

Public API:

``ARCHITECTURE_DATA`` (dict): the file's content.
``support(architecture, version) -> OllamaArchitectureSupport``: ``listed``; ``later`` (a later release read
    lists it: ``passing`` is the first); ``removed`` (only earlier releases read list it: ``passing`` is the
    last); ``unknown`` (no release read lists it: a name the plan cannot judge); ``unread`` (the release that
    applies was not read: the llama-server era, or a release without a tag in the snapshot read; ``passing``
    is then the newest release read, not after ``version``, that lists the name, if any: no release read
    dropped a name).
``NEWEST_READ`` (str): the newest release whose names were read (what the plan verifies up to).
``llama_cpp_tag(release) -> str | None``: the llama.cpp tag a llama-server era release is built from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

ARCHITECTURES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "architectures.json")
with open(ARCHITECTURES_FILE, encoding="utf-8") as _handle:
    ARCHITECTURE_DATA: Dict[str, Any] = json.load(_handle)


def _number(text: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


_RECORDED: List[Tuple[Tuple[int, ...], str]] = sorted(
    (_number(text), text) for text in list(ARCHITECTURE_DATA["releases"]) + list(ARCHITECTURE_DATA["not_tagged"])
)


@dataclass(frozen=True)
class OllamaArchitectureSupport:
    architecture: str
    status: str
    release: Optional[str]
    passing: Optional[str] = None


def _names(release: str) -> Optional[List[str]]:
    entry = ARCHITECTURE_DATA["releases"].get(release)
    return None if entry is None else entry.get("architectures")


_READ: List[Tuple[Tuple[int, ...], str]] = [(number, text) for number, text in _RECORDED if _names(text) is not None]
NEWEST_READ: str = _READ[-1][1]


def llama_cpp_tag(release: str) -> Optional[str]:
    """The llama.cpp tag (``bNNNN``) that a llama-server era release serves GGUFs with, else None."""
    return ARCHITECTURE_DATA["releases"].get(release, {}).get("llama_cpp")


def support(architecture: str, version: Tuple[int, ...]) -> OllamaArchitectureSupport:
    """What the recorded release that applies to ``version`` (a release tuple) says of ``architecture``."""
    applying = [text for number, text in _RECORDED if number <= tuple(version)]
    release = applying[-1] if applying else _RECORDED[0][1]
    names = _names(release)
    read = [(number, text) for number, text in _RECORDED if _names(text) is not None]
    if names is None:
        listing = [text for number, text in read if number <= tuple(version) and architecture in (_names(text) or ())]
        return OllamaArchitectureSupport(architecture, "unread", release, listing[-1] if listing else None)
    if architecture in names:
        return OllamaArchitectureSupport(architecture, "listed", release)
    pinned = _number(release)
    later = [text for number, text in read if number > pinned and architecture in (_names(text) or ())]
    if later:
        return OllamaArchitectureSupport(architecture, "later", release, later[0])
    earlier = [text for number, text in read if number < pinned and architecture in (_names(text) or ())]
    if earlier:
        return OllamaArchitectureSupport(architecture, "removed", release, earlier[-1])
    return OllamaArchitectureSupport(architecture, "unknown", release)
