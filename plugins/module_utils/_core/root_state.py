# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""State that root reads back (rollback copies, links to kept environments): where it may live, and how an
old copy is taken over.

A privileged task that restores a file or follows a link trusts every directory on the way to it: whoever
may write one of them may swap what lies below. ``path_problems`` walks a path from ``/`` (each component as
written, and the resolved path too when a component is a link) and names every existing component that is
not owned by ``owner`` (root) or that its group or others may write. ``adopt`` takes the files of a snapshot
kept in an older, possibly service-writable place into the new one, reading them through a directory handle
that a service account cannot change, and only what root wrote there: anything else is left behind.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, List, Optional, Sequence, Tuple

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def _components(path: str) -> List[str]:
    """``/a/b/c`` -> ``['/', '/a', '/a/b', '/a/b/c']``."""
    parts = [part for part in os.path.normpath(path).split("/") if part]
    return ["/"] + ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


def entry_problem(path: str, info: os.stat_result, owner: int = 0) -> Optional[str]:
    """Why a directory entry on the way to root's state is not safe, or None."""
    kind = "link" if stat.S_ISLNK(info.st_mode) else "directory" if stat.S_ISDIR(info.st_mode) else "file"
    if info.st_uid != owner:
        return f"{path}: {kind} owned by uid {info.st_uid}, not {owner}"
    # A link's own permission bits mean nothing; its owner and its target count.
    if kind != "link" and info.st_mode & _WRITABLE_BY_OTHERS:
        return f"{path}: {kind} mode {stat.S_IMODE(info.st_mode):04o} lets its group or others write it"
    return None


def path_problems(path: str, owner: int = 0, start: str = "/") -> List[str]:
    """Every existing component of ``path`` (from ``start``) that a user other than ``owner`` could change.

    Components that do not exist yet are not problems: root creates them. A link on the way is checked
    itself (its owner) and its resolved path is walked as well.
    """
    if not os.path.isabs(path):
        return [f"{path}: not an absolute path"]
    problems: List[str] = []
    start = os.path.normpath(start)
    seen_link = False
    for component in _components(path):
        if start != "/" and not (component == start or component.startswith(start + "/")):
            continue
        try:
            info = os.lstat(component)
        except FileNotFoundError:
            break
        problem = entry_problem(component, info, owner)
        if problem:
            problems.append(problem)
        seen_link = seen_link or stat.S_ISLNK(info.st_mode)
    if seen_link and not problems:
        resolved = os.path.realpath(path)
        problems.extend(f"{problem} (the resolved path of {path})" for problem in path_problems(resolved, owner, start))
    return problems


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def adopt(
    legacy: str, names: Sequence[str], link_name: str, link_root: str, owner: int = 0, start: str = "/"
) -> Tuple[Dict[str, bytes], Optional[str], List[str]]:
    """Read what may be taken over from an old snapshot directory.

    Returns the contents of the files of ``names`` that root wrote (regular, owned by ``owner``, one link,
    not readable or writable by group or others), the target of ``link_name`` when it points at a directory
    under ``link_root``, and why everything else was left behind. The directory itself must be owned by
    ``owner`` with mode 0700 (no other user could have put anything in it): else nothing is taken.
    ``start`` as in ``path_problems``, for the link's target.
    """
    left: List[str] = []
    try:
        handle = _open_dir(legacy)
    except FileNotFoundError:
        return {}, None, []
    except OSError as error:  # a link (ELOOP) or not a directory
        return {}, None, [f"{legacy}: not a plain directory ({error.strerror})"]
    files: Dict[str, bytes] = {}
    target: Optional[str] = None
    try:
        info = os.fstat(handle)
        if info.st_uid != owner or stat.S_IMODE(info.st_mode) & 0o077:
            return {}, None, [f"{legacy}: owned by uid {info.st_uid} with mode {stat.S_IMODE(info.st_mode):04o}"]
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=handle)
            except FileNotFoundError:
                continue
            except OSError as error:
                left.append(f"{name}: {error.strerror}")
                continue
            with os.fdopen(fd, "rb") as stream:
                entry = os.fstat(stream.fileno())
                if not stat.S_ISREG(entry.st_mode) or entry.st_uid != owner or entry.st_nlink != 1:
                    left.append(f"{name}: not a regular file of uid {owner} with one link")
                elif stat.S_IMODE(entry.st_mode) & 0o077:
                    left.append(f"{name}: mode {stat.S_IMODE(entry.st_mode):04o}")
                else:
                    files[name] = stream.read()
        try:
            link = os.readlink(link_name, dir_fd=handle)
        except FileNotFoundError:
            link = None
        except OSError as error:
            left.append(f"{link_name}: {error.strerror}")
            link = None
        if link is not None:
            root = os.path.normpath(link_root)
            resolved = os.path.realpath(link)
            if not resolved.startswith(root + "/") or not os.path.isdir(resolved):
                left.append(f"{link_name}: points at {link!r}, not at an environment under {root}")
            elif path_problems(resolved, owner, start):
                left.append(f"{link_name}: {'; '.join(path_problems(resolved, owner, start))}")
            else:
                target = resolved
    finally:
        os.close(handle)
    return files, target, left
