# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.apt_key_error filter (documented in apt_key_error.yml beside this file)."""

from __future__ import annotations

import typing as t

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core import openpgp


def apt_key_error(content: t.Any, fingerprints: t.Any, where: t.Any = "", variable: t.Any = "fingerprints") -> str:
    """'' when the key file holds only keys of the pinned fingerprints, else the refusal."""
    if isinstance(fingerprints, (str, bytes)):
        fingerprints = [fingerprints]
    if not isinstance(fingerprints, t.Sequence):
        raise AnsibleFilterError(f"apt_key_error: the fingerprints must be a list, not {type(fingerprints).__name__}")
    data = content if isinstance(content, (str, bytes)) else str(content or "")
    return openpgp.key_error(data, list(fingerprints), str(where), str(variable))


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"apt_key_error": apt_key_error}
