# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Version numbers: the one parser the collection uses for engine releases and NVIDIA driver versions.

``release_tuple`` reads ``[v]X.Y.Z[.W][<suffix>]`` into a tuple of ints, with full matches only (a trailing
newline is not a version). What each caller accepts differs only in its arguments: vLLM pins three or four
numbers and may carry a PEP 440 local label (``0.33.0+cu130``: the CUDA build of the same release); Ollama
pins three and its tags may carry a pre-release label (``v0.30.0-rc2``); NVIDIA drivers have one to three
numbers and Debian adds a package revision (``580.95.05-1``).
"""

from __future__ import annotations

import re
from typing import Sequence, Tuple


class VersionError(ValueError):
    """A version string that is not an exact release; the message names the variable and an example."""


def release_tuple(
    text: object,
    *,
    variable: str = "version",
    example: str = "1.2.3",
    parts: Sequence[int] = (3,),
    suffix: str = "",
    hint: str = "",
    tag_prefix: bool = True,
) -> Tuple[int, ...]:
    """The numbers of an exact release.

    parts: how many dotted numbers are accepted (e.g. ``(3, 4)``). suffix: a character that starts a label
    to ignore (``"+"`` local version, ``"-"`` pre-release or package revision), or ``""`` for none.
    tag_prefix: accept a leading ``v`` (git tags); a pin written into a download URL must not have one.
    """
    raw = str(text)
    raw = raw[1:] if tag_prefix and raw.startswith("v") else raw
    if suffix and suffix in raw:
        raw, _sep, label = raw.partition(suffix)
        if not re.fullmatch(r"[A-Za-z0-9.~_+-]+", label):
            raw = ""
    numbers = raw.split(".") if re.fullmatch(r"\d+(\.\d+)*", raw) else []
    if len(numbers) not in tuple(parts):
        raise VersionError(f"{variable} {text!r} is not an exact release: pin one such as {example}{hint}")
    return tuple(int(number) for number in numbers)


def version_tuple(version: str) -> Tuple[int, ...]:
    """A plain dotted release (``0.33.0``) as a tuple, for comparisons of versions already validated."""
    return release_tuple(version, parts=range(1, 5))
