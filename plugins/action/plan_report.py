# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Action of inferops.llm.plan_report: write a host's plan reports on the controller (docs in modules/plan_report.py).

It runs entirely in the controller's worker process: no module is sent anywhere, so a plan of hundreds
of hosts does not pay a Python start per report file.
"""

from __future__ import annotations

import json
import os
import tempfile
import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown

ARGUMENT_SPEC = {
    "plan": {"type": "dict", "required": True},
    "dest": {"type": "path", "required": True},
    "mode": {"type": "raw", "default": "0644"},
}


def _plain(value: t.Any) -> t.Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_plain(v) for v in value]
    return value


def write_if_changed(path: str, content: str, mode: int) -> bool:
    """Write atomically when the content differs; True when the file changed."""
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == content:
                if (os.stat(path).st_mode & 0o7777) == mode:
                    return False
                os.chmod(path, mode)
                return True
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".plan-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return True


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp: t.Any = None, task_vars: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        result = super().run(tmp, task_vars)
        _spec, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        plan = _plain(args["plan"])
        host = str(plan.get("host") or (task_vars or {}).get("inventory_hostname") or "")
        if not host or "/" in host or host.startswith("."):
            raise AnsibleActionFail(f"plan_report: the plan names no usable host ({host!r}); pass inferops_plan")
        try:
            mode = int(str(args["mode"]), 8)
        except ValueError as error:
            raise AnsibleActionFail(f"plan_report: mode must be octal such as '0644', got {args['mode']!r}") from error
        dest = os.path.realpath(args["dest"])
        os.makedirs(dest, exist_ok=True)
        files = {
            os.path.join(dest, f"{host}.json"): json.dumps(plan, indent=2) + "\n",
            os.path.join(dest, f"{host}.md"): render_markdown(plan),
        }
        changed = [path for path, content in files.items() if write_if_changed(path, content, mode)]
        result.update(changed=bool(changed), files=list(files), written=changed)
        return result
