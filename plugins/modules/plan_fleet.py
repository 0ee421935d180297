#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)
"""Documentation of the inferops.llm.plan_fleet action (the code is plugins/action/plan_fleet.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan_fleet
short_description: Plan every host of a play in one task on the controller
version_added: 0.1.0
description:
  - Computes the plan of every host in O(hosts) (see docs/plan.md) in one task, writes
    C(<dest>/<host>.json), C(<dest>/<host>.md) and C(<dest>/<host>.svg) (memory per GPU and the layout on
    the topology, linked from the Markdown report), and returns the plans, the table and the errors.
  - Reads, per host, only the variables the plan knows (secrets such as C(vllm_api_key) are never read),
    the declared hardware (C(inferops_gpus), C(inferops_gpu_topology_text), C(inferops_gpu_driver)) or the
    facts M(inferops.llm.gpu_facts) gathered, C(inferops_host_memory_mib) or the gathered memory, and the
    vLLM role's local fact of the last start.
  - The hosts that share C(inferops_cluster) are planned together as one multi-host deployment.
  - Runs on the controller only; no host is contacted. Used by C(playbooks/plan.yml) with C(run_once).
author:
  - inferops.llm maintainers (@inferops)
options:
  hosts:
    description: The inventory names of the hosts to plan, usually C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  dest:
    description: Directory on the controller for the reports, created when missing.
    type: path
    required: true
  write_reports:
    description: Write the JSON and Markdown reports and the SVG picture.
    type: bool
    default: true
  mode:
    description: Permissions of the report files, as an octal string.
    type: raw
    default: "0644"
  show:
    description:
      - Print RV(console) (the table, the gateway's routes and profiles, then every error and warning once,
        grouped by host) on the controller's display, whatever the stdout callback.
    type: bool
    default: true
  gateway:
    description:
      - Inventory name of the gateway host (role M(inferops.llm.gateway)); empty for none.
      - Its C(gateway_profiles) and C(gateway_backends) and every planned engine host (as the gateway reaches
        it, see docs/gateway.md) give the gateway's plan, written to C(<dest>/gateway.json) and appended to the
        table. The gateway host is planned as an engine only when it sets C(inferops_model).
    type: str
    default: ""
  gateway_profiles:
    description: The gateway's profiles; when unset, C(gateway_profiles) of the O(gateway) host.
    type: list
    elements: raw
  gateway_backends:
    description: Engines outside the inventory; when unset, C(gateway_backends) of the O(gateway) host.
    type: list
    elements: raw
  hf_token:
    description:
      - A Hugging Face read token for gated or private repositories (vault it), used only for the requests
        that read a checkpoint's config.json, quantization and processor configs and safetensors index or
        header; never written to a plan, a log or the output. Without it the controller's C(HF_TOKEN)
        environment variable is used, if set.
      - The checkpoint's files are read from the controller's Hugging Face cache (C(HF_HUB_CACHE) or
        C(HF_HOME)), else from the Hub or the mirror C(HF_ENDPOINT) names through C(huggingface_hub) when it
        is installed (unless C(HF_HUB_OFFLINE=1)), once per repo and revision, and cached there (docs/plan.md).
    type: str
extends_documentation_fragment:
  - inferops.llm.attributes
  - inferops.llm.attributes.controller_reports
seealso:
  - module: inferops.llm.plan_report
  - plugin: inferops.llm.host_plan
    plugin_type: filter
"""

EXAMPLES = r"""
---
- name: Plan every host of the play
  inferops.llm.plan_fleet:
    hosts: "{{ ansible_play_hosts_all }}"
    dest: plans
  run_once: true
  register: fleet
"""

RETURN = r"""
plans:
  description: The plan of every host whose inputs are valid, by host name (keys in docs/plan.md).
  returned: always
  type: dict
  sample: {gpu01: {host: gpu01, engine: vllm}}
input_errors:
  description: Per host whose inputs cannot be planned, the messages (each names its variable).
  returned: always
  type: dict
  sample: {gpu02: ["inferops_engine is required and must be one of vllm, ollama, got 'tgi'"]}
check_errors:
  description: Per host whose plan has error-severity checks, C(<id>) and message of each.
  returned: always
  type: dict
  sample: {gpu03: ["memory-fit: vllm_max_model_len: ..."]}
table:
  description: The Markdown table of all plans, one string per line, then the gateway's lines (RV(gateway_table)).
  returned: always
  type: list
  elements: str
console:
  description:
    - What O(show) prints, one string per line. RV(table) and a legend; the gateway's routes and profiles
      (RV(gateway_table)); then, under C(findings), every error and warning once, grouped by host (for a host
      that cannot be planned, each of its input errors). Each message names its variable and a value that passes.
  returned: always
  type: list
  elements: str
gateway:
  description: The gateway's routes, profiles, checks and LiteLLM model list (docs/gateway.md); null without O(gateway).
  returned: always
  type: dict
  sample: {routes: [{model: Qwen/Qwen3.6-27B, backends: [{host: gpu01, engine: vllm}]}], profiles: [], checks: []}
gateway_table:
  description: The gateway's routes, profiles and checks as text lines (also at the end of RV(table)).
  returned: always
  type: list
  elements: str
written:
  description: The report paths whose content changed in this run.
  returned: always
  type: list
  elements: str
"""
