#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)
"""Documentation of the inferops.llm.plan_report action (the code is plugins/action/plan_report.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan_report
short_description: Write a host's plan as JSON and Markdown on the controller
version_added: 0.1.0
description:
  - Writes C(<dest>/<host>.json) (the plan as computed by the P(inferops.llm.host_plan#filter)
    filter) and C(<dest>/<host>.md) (the same plan rendered by P(inferops.llm.plan_markdown#filter))
    on the Ansible controller.
  - Runs on the controller only; the managed host is never contacted. Files are replaced atomically
    and only when their content changes.
  - Used by the M(inferops.llm.plan) role; its reports are what C(make plan) leaves in C(plans/).
author:
  - inferops.llm maintainers (@inferops)
options:
  plan:
    description: The plan (the C(inferops_plan) fact); its C(host) key names the files.
    type: dict
    required: true
  dest:
    description:
      - Directory on the controller, created when missing. A relative path is taken from the
        directory C(ansible-playbook) runs in.
    type: path
    required: true
  mode:
    description: Permissions of the report files, as an octal string.
    type: raw
    default: "0644"
extends_documentation_fragment:
  - inferops.llm.attributes
  - inferops.llm.attributes.controller_reports
seealso:
  - plugin: inferops.llm.host_plan
    plugin_type: filter
  - plugin: inferops.llm.plan_markdown
    plugin_type: filter
"""

EXAMPLES = r"""
---
- name: Write the reports of this host's plan
  inferops.llm.plan_report:
    plan: "{{ inferops_plan }}"
    dest: plans
"""

RETURN = r"""
files:
  description: The two report paths (absolute).
  returned: always
  type: list
  elements: str
  sample: [/srv/ansible/plans/gpu01.json, /srv/ansible/plans/gpu01.md]
written:
  description: The report paths whose content changed in this run.
  returned: always
  type: list
  elements: str
  sample: [/srv/ansible/plans/gpu01.json]
"""
