# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm uv_python_platform and uv_sync_argv filters (documented in .yml files)."""

from __future__ import annotations

import typing as t

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core import uv_lock


def uv_python_platform(machine: t.Any, glibc: t.Any) -> str:
    """uv's --python-platform for a Linux host of this machine and glibc version."""
    try:
        return uv_lock.python_platform(str(machine), str(glibc))
    except uv_lock.LockError as error:
        raise AnsibleFilterError(f"uv_python_platform: {error}") from None


def uv_sync_argv(
    lock: t.Any,
    uv: t.Any,
    python: t.Any,
    index_url: t.Any = "",
    find_links: t.Any = (),
    compile_bytecode: t.Any = False,
) -> list[str]:
    """The host's install from a lock: uv pip sync --require-hashes."""
    if isinstance(find_links, (str, bytes)) or not isinstance(find_links, t.Sequence):
        raise AnsibleFilterError(f"uv_sync_argv: find_links must be a list, not {type(find_links).__name__}")
    return uv_lock.sync_argv(
        str(uv),
        str(python),
        str(lock),
        str(index_url or ""),
        [str(item) for item in find_links],
        bool(compile_bytecode),
    )


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {"uv_python_platform": uv_python_platform, "uv_sync_argv": uv_sync_argv}
