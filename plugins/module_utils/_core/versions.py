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

from ansible_collections.inferops.llm.plugins.module_utils._core.safety import shown


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
        raise VersionError(
            f"{variable} {shown(text, variable)} is not an exact release: pin one such as {example}{hint}"
        )
    return tuple(int(number) for number in numbers)


def version_tuple(version: str) -> Tuple[int, ...]:
    """A dotted release (``0.33.0``, ``0.33.0+cu130``) as a tuple, for comparisons of versions already validated."""
    return release_tuple(version, parts=range(1, 5), suffix="+")


# The pins the plan and the engine roles accept (one grammar; the roles call engine_version_error through the
# inferops.llm.engine_version_error filter). vLLM: X.Y.Z or X.Y.Z.W, optionally with a PEP 440 local label
# (``0.33.0+cu130``: the build of that release for CUDA 13.0 from vLLM's own wheel index; the plan budgets it
# as 0.33.0). Pre-releases, nightlies, ranges and a leading ``v`` are refused: they cannot be budgeted and
# pip would not install them as written. Ollama: X.Y.Z, the numbers of a GitHub release tag without its ``v``.
ENGINE_VERSION_PATTERNS = {
    "vllm": r"[0-9]+\.[0-9]+\.[0-9]+(?:\.[0-9]+)?(?:\+[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)?",
    "ollama": r"[0-9]+\.[0-9]+\.[0-9]+",
}
# A pin an input error names must plan: the Ollama one has a recorded sha256 for amd64 and arm64 (the ollama
# role refuses a release without one; tests/unit/.../test_suggestions.py checks both).
ENGINE_VERSION_EXAMPLES = {"vllm": "0.33.0 (or 0.33.0+cu130)", "ollama": "0.32.9"}


def engine_version_error(engine: str, text: object, variable: str = "") -> str:
    """Why ``text`` is not an exact pin of ``engine`` ("" when it is); the message names the variable."""
    variable = variable or f"{engine}_version"
    if isinstance(text, str) and re.fullmatch(ENGINE_VERSION_PATTERNS[engine], text):
        return ""
    return (
        f"{variable} must be an exact {engine} release such as {ENGINE_VERSION_EXAMPLES[engine]}, "
        f"got {shown(text, variable)}"
    )


def version_text(version: Sequence[int]) -> str:
    """(0, 33, 0) -> "0.33.0"."""
    return ".".join(str(part) for part in version)
