# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Action of inferops.llm.plan_report: write a host's plan reports on the controller (docs in modules/plan_report.py).

It runs entirely in the controller's worker process: no module is sent anywhere, so a plan of hundreds
of hosts does not pay a Python start per report file.
"""

from __future__ import annotations

import json
import os
import typing as t

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.inferops.llm.plugins.module_utils._core.files import write_if_changed
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain as _plain
from ansible_collections.inferops.llm.plugins.module_utils._plan.report import render_markdown

ARGUMENT_SPEC = {
    "plan": {"type": "dict", "required": True},
    "dest": {"type": "path", "required": True},
    "mode": {"type": "raw", "default": "0644"},
}


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
