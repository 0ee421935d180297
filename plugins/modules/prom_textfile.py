#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: prom_textfile
short_description: Write a Prometheus textfile for node exporter's textfile collector atomically
version_added: 0.1.0
description:
  - Writes O(content) to O(path) through a temporary file in the same directory whose name does not end
    in C(.prom) (the textfile collector reads only C(*.prom) files, so it never sees a half-written file),
    flushed to disk and then renamed over O(path).
  - Checks the text first - every sample line belongs to a family announced by C(# HELP) and C(# TYPE)
    lines - and fails on text the collector would reject.
  - Changes nothing when O(path) already holds O(content).
author:
  - inferops.llm maintainers (@inferops)
options:
  path:
    description: The C(.prom) file, in the collector's directory.
    type: path
    required: true
  content:
    description: The metrics, in the Prometheus text exposition format.
    type: str
    required: true
  mode:
    description: Permissions of the file, in octal.
    type: raw
    default: "0644"
extends_documentation_fragment:
  - inferops.llm.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
seealso:
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
---
- name: Export the plan's figures
  inferops.llm.prom_textfile:
    path: /var/lib/prometheus/node-exporter/inferops_plan.prom
    content: "{{ inferops_plan | inferops.llm.plan_metrics }}"
"""

RETURN = r"""
---
samples:
  description: Number of sample lines in the file.
  type: int
  returned: success
"""

import os
import re
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.llm.plugins.module_utils._core.files import write_if_changed

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$")
_META = re.compile(r"^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$")


def check_text(content: str) -> tuple[int, list[str]]:
    """Number of samples and the problems of a textfile."""
    announced: dict[str, set[str]] = {}
    problems: list[str] = []
    samples = 0
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        meta = _META.match(line)
        if meta:
            announced.setdefault(meta.group(2), set()).add(meta.group(1))
            continue
        if line.startswith("#"):
            continue
        sample = _SAMPLE.match(line)
        if not sample:
            problems.append(f"line {number}: not a sample line: {line[:120]!r}")
        elif announced.get(sample.group(1)) != {"HELP", "TYPE"}:
            problems.append(f"line {number}: {sample.group(1)} has no HELP and TYPE lines before it")
        else:
            samples += 1
    if content and not content.endswith("\n"):
        problems.append("the text does not end with a line break")
    return samples, problems


def run(module: AnsibleModule) -> dict[str, Any]:
    path = module.params["path"]
    content = module.params["content"]
    samples, problems = check_text(content)
    if problems:
        module.fail_json(msg="; ".join(problems))
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg=f"{directory} is not a directory")
    try:
        mode = int(str(module.params["mode"]), 8)
    except ValueError:
        module.fail_json(msg=f"mode must be octal such as '0644', got {module.params['mode']!r}")
    if module.check_mode:
        try:
            with open(path, encoding="utf-8") as current:
                same = current.read() == content and (os.stat(path).st_mode & 0o7777) == mode
        except FileNotFoundError:
            same = False
        return {"changed": not same, "samples": samples}
    # Not *.prom: the collector skips the temporary file while it is written.
    return {"changed": write_if_changed(path, content, mode, prefix=".", suffix=".tmp"), "samples": samples}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "content": {"type": "str", "required": True},
            "mode": {"type": "raw", "default": "0644"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
