# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""systemd unit text: one quoting of ``Environment=`` values for every service unit of the collection."""

from __future__ import annotations

from typing import Any, List, Mapping


class UnitValueError(ValueError):
    """A value that a unit line cannot carry; the message names the variable."""


def environment_lines(env: Mapping[str, Any]) -> List[str]:
    """``"NAME=value"`` double-quoted for ``Environment=``: backslash and quote escaped, % doubled."""
    lines = []
    for name, value in env.items():
        text = f"{name}={value}".replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        if any(c in text for c in "\r\n\x00"):
            raise UnitValueError(f"environment variable {name} contains a line break (CR, LF) or a NUL byte")
        lines.append(f'"{text}"')
    return lines
