# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Which model architectures each vLLM release knows: ``architectures.json`` beside this file.

The data is vLLM's own model registry (``_VLLM_MODELS`` of ``vllm/model_executor/models/registry.py``),
read from each release's wheel by tests/bin/vllm-architectures: per architecture (a config.json
``architectures`` class name) the spans of releases that list it. A pinned version that was not read
(a patch such as 0.33.5) takes the newest release read before it, as the release records do.

Public API:

``READ_RELEASES`` (tuple of str): the releases whose registry was read, oldest first.
``support(architecture, number) -> ArchitectureSupport``: whether the registry of that release (``number``: its
    tuple, releases.parse_vllm_version) lists the architecture; if not, whether a later release adds it
    (``later``, with the first), an earlier one had it (``removed``, with the last), or no release read lists
    it (``unknown``).
``registry_size(release) -> int``: how many architectures the registry of a read release lists.
``served_class(verdicts, number) -> (name, base) | None``: the class of config.json's ``architectures`` (their
    ``support`` verdicts, in order) that the registry of that release serves, as vLLM picks it
    (``conversions.json``: a class it does not list may be served converted from one it lists, ``base``;
    ``base`` is None for a listed class).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import parse_vllm_version

ARCHITECTURES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "architectures.json")
with open(ARCHITECTURES_FILE, encoding="utf-8") as _handle:
    ARCHITECTURE_DATA: Dict[str, Any] = json.load(_handle)

with open(os.path.join(os.path.dirname(ARCHITECTURES_FILE), "conversions.json"), encoding="utf-8") as _handle:
    CONVERSION_RULES: List[Dict[str, Any]] = sorted(
        json.load(_handle)["rules"], key=lambda rule: parse_vllm_version(rule["from"])
    )

READ_RELEASES: Tuple[str, ...] = tuple(sorted(ARCHITECTURE_DATA["releases_read"], key=parse_vllm_version))
_NUMBERS = [parse_vllm_version(text) for text in READ_RELEASES]
_CONVERSION_STARTS = [(parse_vllm_version(rule["from"]), rule) for rule in CONVERSION_RULES]


@dataclass(frozen=True)
class ArchitectureSupport:
    """The verdict of one release's registry on one architecture.

    status: ``listed`` (the registry lists it), ``later`` (a later release read lists it: ``passing`` is the
    first), ``removed`` (only earlier releases list it: ``passing`` is the last), ``unknown`` (no release
    read lists it) or ``unread`` (the version is older than every release read). release: the release read
    that applies to the version. kind: the registry table (text-generation, multimodal, embedding,
    transformers-backend, ...) of the newest release that lists it.
    """

    architecture: str
    status: str
    release: Optional[str]
    passing: Optional[str] = None
    kind: Optional[str] = None
    vllm_says_until: Optional[str] = None


def _applying(number: Tuple[int, ...]) -> Optional[int]:
    """Index in READ_RELEASES of the newest release read at or before ``number``."""
    found = None
    for index, read in enumerate(_NUMBERS):
        if read <= number:
            found = index
    return found


def _present(spans: List[List[Optional[str]]], index: int) -> bool:
    for first, last in spans:
        start = READ_RELEASES.index(first)
        end = len(READ_RELEASES) - 1 if last is None else READ_RELEASES.index(last)
        if start <= index <= end:
            return True
    return False


def support(architecture: str, number: Tuple[int, ...]) -> ArchitectureSupport:
    """What the registry of the release ``number`` (releases.parse_vllm_version) says of ``architecture``."""
    index = _applying(number)
    if index is None:
        return ArchitectureSupport(architecture, "unread", None)
    release = READ_RELEASES[index]
    entry = ARCHITECTURE_DATA["architectures"].get(architecture)
    if entry is None:
        return ArchitectureSupport(architecture, "unknown", release)
    spans = entry["releases"]
    extra = {"kind": entry.get("kind"), "vllm_says_until": entry.get("vllm_previously_supported_until")}
    if _present(spans, index):
        return ArchitectureSupport(architecture, "listed", release, release, **extra)
    later = [first for first, _end in spans if READ_RELEASES.index(first) > index]
    if later:
        return ArchitectureSupport(architecture, "later", release, later[0], **extra)
    last = [end for _first, end in spans if end is not None and READ_RELEASES.index(end) < index]
    return ArchitectureSupport(architecture, "removed", release, last[-1], **extra)


def registry_size(release: str) -> int:
    return int(ARCHITECTURE_DATA["releases_read"][release]["architectures"])


def _conversion_rule(number: Tuple[int, ...]) -> Optional[Dict[str, Any]]:
    applying = [rule for start, rule in _CONVERSION_STARTS if start <= number]
    return applying[-1] if applying else None


def _converted_base(architecture: str, number: Tuple[int, ...], rule: Mapping[str, Any]) -> Optional[str]:
    """The listed class that the registry converts ``architecture`` (not listed) from, else None."""
    suffix = next((s for s in rule["match"] if architecture.endswith(s)), None)
    if suffix is None or suffix in rule.get("not_judged", ()):
        return None
    for replacement in rule["bases"]:
        base = architecture.replace(suffix, replacement)
        if base != architecture and support(base, number).status == "listed":
            return base
    return None


def served_class(
    verdicts: Sequence[ArchitectureSupport], number: Tuple[int, ...]
) -> Optional[Tuple[str, Optional[str]]]:
    """``(class, base)``: the class of config.json's architectures that the vLLM release ``number`` serves, with
    the listed class it converts it from (None when the class is listed itself); None when it serves none of
    them. ``verdicts``: ``support(name, number)`` of each class, in config.json's order, as the caller has them."""
    architectures = [verdict.architecture for verdict in verdicts]
    listed = [verdict.architecture for verdict in verdicts if verdict.status == "listed"]
    rule = _conversion_rule(number)
    if rule is None:
        return (listed[0], None) if listed else None
    converted = {name: _converted_base(name, number, rule) for name in architectures if name not in listed}
    if rule["in_order"]:
        for name in architectures:
            if name in listed or converted.get(name):
                return name, converted.get(name)
        return None
    if listed:
        return listed[0], None
    name = next((n for n in architectures if converted.get(n)), None)
    return (name, converted[name]) if name else None
