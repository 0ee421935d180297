# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What the collection knows about each Ollama release: the records of ``releases.json`` beside this file.

One record per release (``releases``), the meaning and source of each field in ``fields``; the first
release of each forced single-sequence architecture and of each architecture Ollama loads as version
ranges. A version without a record of its own behaves as the newest record before it; one before the
oldest record as the oldest (a ``.tgz`` release the plan does not budget).

Public API:

``RELEASES`` (dict): release text -> its record (plain dict, as in releases.json).
``release_record(version) -> dict``: the record that applies to a release tuple ``(0, 32, 9)``.
``MIN_SUPPORTED`` / ``VERIFIED_UP_TO``: the oldest planned release and the newest whose source was read.
``FORCED_SINGLE_PARALLEL`` (dict): GGUF architecture -> first release forcing parallel 1.
``first_release_with(architecture) -> tuple | None``: the first release that loads a recorded architecture.
``llama_cpp_of(version) -> dict``: the llama.cpp a release runs (date, commit, build where known).
``release_sha256(version) -> dict``: ``{"amd64": hex, "arm64": hex}`` of exactly that release ({} if none).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple

Release = Tuple[int, int, int]

RELEASES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "releases.json")
with open(RELEASES_FILE, encoding="utf-8") as _handle:
    RELEASE_DATA: Dict[str, Any] = json.load(_handle)


def _number(text: str) -> Release:
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


RELEASES: Dict[str, Dict[str, Any]] = RELEASE_DATA["releases"]
_ORDERED = sorted((_number(text), text) for text in RELEASES)
MIN_SUPPORTED: Release = min(number for number, text in _ORDERED if RELEASES[text]["planned"])
VERIFIED_UP_TO: Release = max(number for number, text in _ORDERED if RELEASES[text]["source_read"])
FORCED_SINGLE_PARALLEL: Dict[str, Release] = {
    name: _number(first) for name, first in RELEASE_DATA["forced_single_parallel"]["first"].items()
}


def release_record(version: Release) -> Dict[str, Any]:
    """The record of the newest release at or before ``version`` (the oldest record before all of them)."""
    found = RELEASES[_ORDERED[0][1]]
    for number, text in _ORDERED:
        if number <= tuple(version):
            found = RELEASES[text]
    return found


def llama_cpp_of(version: Optional[Release]) -> Dict[str, Any]:
    """The llama.cpp ``version`` runs (record field ``llama_cpp``: date, commit, build): that of the newest record at
    or before it that names one; {} for ``None``, so that the caller takes the newest build."""
    if version is None:
        return {}
    found: Dict[str, Any] = {}
    for number, text in _ORDERED:
        if number <= tuple(version) and RELEASES[text].get("llama_cpp"):
            found = RELEASES[text]["llama_cpp"]
    return found or dict(RELEASES[_ORDERED[0][1]].get("llama_cpp") or {})


def first_release_with(architecture: str) -> Optional[Release]:
    first = RELEASE_DATA["architectures"]["first"].get(architecture)
    return _number(first) if first else None


def release_sha256(version: str) -> Dict[str, str]:
    """sha256 of the release archives of exactly this version, by Go architecture."""
    return dict(RELEASES.get(str(version), {}).get("sha256", {}))


def nearest_release_with_sha256(version: str, arch: str) -> Optional[str]:
    """The planned release with a recorded sha256 for ``arch`` (Go architecture) nearest to ``version``: the
    first at or after it in the same minor series, else the newest before it there, else the newest overall."""
    candidates = [(n, t) for n, t in _ORDERED if RELEASES[t]["planned"] and RELEASES[t].get("sha256", {}).get(arch)]
    wanted = _number(str(version))
    series = [(n, t) for n, t in candidates if n[:2] == wanted[:2]]
    later = [t for n, t in series if n >= wanted]
    if later:
        return later[0]
    if series:
        return series[-1][1]
    return candidates[-1][1] if candidates else None
