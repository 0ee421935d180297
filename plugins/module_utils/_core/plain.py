# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Plain copies of the containers Ansible hands to plugins (lazy, tagged or unsafe mappings and lists)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Dict, Optional


def plain(value: Any) -> Any:
    """A plain dict/list copy with string keys; strings, bytes and scalars are returned as they are.

    The input is never mutated or deep-copied: ansible-core's lazy templating containers resolve on access.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    return value


def as_dict(value: Any) -> Dict[str, Any]:
    """A mapping, or an object with ``to_dict()`` (a ModelArchitecture), as a dict (not a deep copy)."""
    return value.to_dict() if hasattr(value, "to_dict") else dict(value)


def as_bool(value: Any) -> Optional[bool]:
    """An inventory flag: None when unset or empty, true for 1/true/yes/on (any case), else its truth."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def as_number(value: Any, kind: str) -> Optional[float]:
    """An inventory number: ``kind`` "int" takes ints, integral floats and digit strings; any other kind
    ints, floats and numeric strings (as a float). None for booleans and anything else."""
    if isinstance(value, bool):
        return None
    if kind == "int":
        if isinstance(value, int):
            return value
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
