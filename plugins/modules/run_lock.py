#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lock
short_description: One run of the collection's playbooks at a time on a host
version_added: 0.2.0
description:
  - Takes or releases the host's run lock, a file created atomically (written aside, then hard-linked into
    place) that names its holder - the controller, the user, the C(ansible-playbook) process id, when the run
    started and a run id.
  - With O(state=present), a lock held by another run is waited for, up to O(timeout) seconds; then the module
    fails with a message naming the holder. A lock held by the same O(holder.run_id) is taken again (a later
    play of the same run).
  - A stale lock - older than O(stale_after) seconds, or whose holder ran on this very host (a local
    connection) with a process that no longer exists - is replaced, and the result says so.
  - With O(state=absent), the lock is removed only when O(holder.run_id) holds it.
author:
  - inferops.llm maintainers (@inferops)
options:
  path:
    description: The lock file.
    type: path
    default: /var/lib/inferops/run.lock
  state:
    description: C(present) takes the lock, C(absent) releases it.
    type: str
    choices: [present, absent]
    default: present
  holder:
    description: Who takes the lock.
    type: dict
    required: true
    suboptions:
      run_id:
        description: Identifier of this run (the same for every host and play of one run).
        type: str
        required: true
      controller:
        description: Host name of the controller.
        type: str
        required: true
      user:
        description: User running the playbook.
        type: str
        default: ""
      pid:
        description: Process id of C(ansible-playbook) on the controller.
        type: int
        default: 0
      started:
        description: When the run started, seconds since the epoch.
        type: float
        required: true
      playbook:
        description: The playbook, for the message.
        type: str
        default: ""
  timeout:
    description: Seconds to wait for a lock held by another run.
    type: float
    default: 600
  interval:
    description: Seconds between two looks at a held lock.
    type: float
    default: 5
  stale_after:
    description: Seconds after which a lock is taken over whoever holds it (a run that died without releasing it).
    type: float
    default: 86400
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: In check mode the lock is waited for and reported, never written or removed.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation
      indicates no change.
    support: full
"""

EXAMPLES = r"""
---
- name: Take this host's run lock
  inferops.llm.run_lock:
    holder:
      run_id: "{{ site_run['run_id'] }}"
      controller: "{{ site_run['controller'] }}"
      pid: "{{ site_run['pid'] }}"
      started: "{{ site_run['started'] }}"
    timeout: 600
"""

RETURN = r"""
---
acquired:
  description: Whether this run holds the lock now (state present), or released it (state absent).
  type: bool
  returned: always
waited:
  description: Seconds spent waiting for another run's lock.
  type: float
  returned: always
holder:
  description: The lock's holder as the file named it when the module ended (empty when there is none).
  type: dict
  returned: always
replaced:
  description: Why a stale lock was replaced, or an empty string.
  type: str
  returned: always
"""

import contextlib
import json
import os
import socket
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ansible.module_utils.basic import AnsibleModule


def describe(holder: Mapping[str, Any], now: float) -> str:
    """The holder as a message names it."""
    started = float(holder.get("started") or 0)
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)) if started else "an unknown time"
    who = f"{holder.get('user')}@" if holder.get("user") else ""
    what = f" ({holder.get('playbook')})" if holder.get("playbook") else ""
    return (
        f"run {holder.get('run_id', '?')}{what} of {who}{holder.get('controller', '?')}, ansible-playbook pid "
        f"{holder.get('pid', '?')}, started {since} ({now - started:.0f} s ago)"
    )


def assess(
    held: Optional[Mapping[str, Any]],
    me: Mapping[str, Any],
    now: float,
    stale_after: float,
    this_host: str,
    pid_alive: Callable[[int], bool],
) -> Tuple[str, str]:
    """("free" | "mine" | "stale" | "held", why) for the lock file's content ``held`` (None: no file)."""
    if held is None:
        return "free", ""
    if held.get("run_id") == me["run_id"]:
        return "mine", ""
    age = now - float(held.get("started") or 0)
    if age > stale_after:
        return "stale", f"older than stale_after ({age:.0f} s > {stale_after:g} s)"
    pid = int(held.get("pid") or 0)
    if held.get("controller") == this_host and pid > 0 and not pid_alive(pid):
        return "stale", f"its ansible-playbook (pid {pid}) ran on this host and has exited"
    return "held", ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holder(path: str) -> Optional[Dict[str, Any]]:
    """The lock file's holder; None without a file. An unreadable file counts as held since its mtime."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        holder = json.loads(text)
        if isinstance(holder, dict):
            return holder
    except ValueError:
        pass
    try:
        started = os.stat(path).st_mtime
    except FileNotFoundError:
        return None
    return {"run_id": "unreadable", "controller": "?", "started": started}


def create(path: str, holder: Mapping[str, Any]) -> bool:
    """Create the lock with its whole content at once; False when it exists already."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o755, exist_ok=True)
    aside = f"{path}.{os.getpid()}.tmp"
    with open(aside, "w", encoding="utf-8") as handle:
        json.dump(dict(holder), handle)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(aside, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(aside)


def acquire(module: AnsibleModule, params: Mapping[str, Any], me: Dict[str, Any]) -> Dict[str, Any]:
    path = params["path"]
    begun = time.monotonic()
    this_host = socket.gethostname()
    replaced = ""
    while True:
        now = time.time()
        held = read_holder(path)
        verdict, why = assess(held, me, now, params["stale_after"], this_host, _pid_alive)
        waited = round(time.monotonic() - begun, 1)
        if verdict == "mine":
            return {"changed": False, "acquired": True, "waited": waited, "holder": held, "replaced": replaced}
        if verdict == "stale" and held is not None:
            replaced = f"replaced the stale lock of {describe(held, now)}: {why}"
            if not module.check_mode:
                with contextlib.suppress(FileNotFoundError):
                    os.rename(path, path + ".stale")
            else:
                held, verdict = None, "free"
        if verdict in ("free", "stale"):
            if module.check_mode:
                return {"changed": True, "acquired": True, "waited": waited, "holder": me, "replaced": replaced}
            if create(path, me):
                return {"changed": True, "acquired": True, "waited": waited, "holder": me, "replaced": replaced}
            continue  # another run created it meanwhile: look again
        if time.monotonic() - begun >= params["timeout"]:
            module.fail_json(
                msg=(
                    f"{path} is held by {describe(held or {}, now)}; waited {waited:g} s (timeout "
                    f"{params['timeout']:g} s). Let that run finish, or, if it is gone, remove {path} on this host "
                    f"(a lock older than {params['stale_after']:g} s is replaced by itself)."
                ),
                acquired=False,
                waited=waited,
                holder=held or {},
                replaced=replaced,
            )
        time.sleep(max(0.0, min(params["interval"], params["timeout"] - (time.monotonic() - begun))))


def release(module: AnsibleModule, params: Mapping[str, Any], me: Mapping[str, Any]) -> Dict[str, Any]:
    path = params["path"]
    held = read_holder(path)
    if held is None or held.get("run_id") != me["run_id"]:
        return {"changed": False, "acquired": False, "waited": 0.0, "holder": held or {}, "replaced": ""}
    if not module.check_mode:
        os.unlink(path)
    return {"changed": True, "acquired": True, "waited": 0.0, "holder": {}, "replaced": ""}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "default": "/var/lib/inferops/run.lock"},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "holder": {
                "type": "dict",
                "required": True,
                "options": {
                    "run_id": {"type": "str", "required": True},
                    "controller": {"type": "str", "required": True},
                    "user": {"type": "str", "default": ""},
                    "pid": {"type": "int", "default": 0},
                    "started": {"type": "float", "required": True},
                    "playbook": {"type": "str", "default": ""},
                },
            },
            "timeout": {"type": "float", "default": 600},
            "interval": {"type": "float", "default": 5},
            "stale_after": {"type": "float", "default": 86400},
        },
        supports_check_mode=True,
    )
    params = module.params
    me = dict(params["holder"])
    if params["state"] == "present":
        module.exit_json(**acquire(module, params, me))
    module.exit_json(**release(module, params, me))


if __name__ == "__main__":
    main()
