# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Units: one definition of GiB and MiB for the whole collection."""

from __future__ import annotations

from typing import Optional

GIB = 1 << 30
MIB = 1 << 20


def gib(value: Optional[float]) -> Optional[float]:
    """Bytes -> GiB (2^30), rounded for the report; None stays None."""
    return None if value is None else round(value / GIB, 3)
