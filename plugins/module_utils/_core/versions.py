# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Version numbers: the one parser the collection uses for engine releases (x.y.z[.w])."""

from __future__ import annotations

from typing import Tuple


def version_tuple(version: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
