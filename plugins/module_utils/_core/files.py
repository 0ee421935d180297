# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Atomic file writes, shared by the controller-side reports and the host-side metrics file; a file's sha256."""

from __future__ import annotations

import hashlib
import os
import tempfile

_CHUNK = 1 << 20


def file_sha256(path: str) -> str:
    """The sha256 of a file, read in chunks (wheels of hundreds of MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_if_changed(path: str, content: str, mode: int, prefix: str = ".", suffix: str = ".tmp") -> bool:
    """Write ``content`` to ``path`` atomically when it differs; fix the mode when only that differs.

    The temporary file lies in the same directory (``prefix``/``suffix`` keep collectors such as node
    exporter's textfile collector, which reads ``*.prom``, from reading it half written), is flushed to
    disk, gets ``mode`` and replaces ``path`` in one rename. Returns True when the file changed.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == content:
                if (os.stat(path).st_mode & 0o7777) == mode:
                    return False
                os.chmod(path, mode)
                return True
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return True
