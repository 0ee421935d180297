# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The plan's ``service`` section: the one contract between the plan and both engine roles.

The vllm and ollama roles render their service from this section plus host-local options (paths, user,
listen address, secrets); they neither re-parse the argv nor recompute settings. Versioned by
``schema``: a role refuses a section whose schema it does not know. ``errors`` lists the plan's
error-severity checks: a role refuses to (re)start an engine when it is not empty.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.render import ServeConfigError, serve_options

SERVICE_SCHEMA = 1


def service_section(plan: Mapping[str, Any]) -> Dict[str, Any]:
    """``{schema, engine, engine_version, device, config, environment, argv, errors, start_timeout_s}`` of a plan.

    config: for vLLM the `vllm serve --config` mapping (``model`` and every option, without host and
    port); for Ollama the resolved settings (the server itself reads only the environment).
    environment: the service's environment (no secrets: those go to the roles' 0600 files).
    argv: the command for display. errors: ``"<check id>: <message>"`` per error-severity check.
    start_timeout_s (vLLM only): TimeoutStartSec and the /health wait (the plan's ``start``).
    """
    errors: List[str] = [f"{c['id']}: {c['message']}" for c in plan.get("checks") or [] if c["severity"] == "error"]
    argv = [str(arg) for arg in plan.get("command") or []]
    if ENGINES[plan["engine"]].config_from_command:
        try:
            config = serve_options(argv)
        except ServeConfigError as exc:
            config = {}
            errors.append(f"service: {exc}")
    else:
        config = {name: entry["value"] for name, entry in (plan.get("settings") or {}).items()}
    section = {
        "schema": SERVICE_SCHEMA,
        "engine": plan["engine"],
        "engine_version": plan["engine_version"],
        "device": plan.get("device") or "cuda",
        "config": config,
        "environment": {str(k): str(v) for k, v in (plan.get("environment") or {}).items()},
        "argv": argv,
        "errors": errors,
    }
    cluster = plan.get("cluster") or {}
    if cluster.get("backend") == "ray" and cluster.get("role") == "head" and cluster.get("head_address"):
        # vLLM's Ray executor joins the running cluster (ray.init("auto") reads RAY_ADDRESS) instead of
        # looking for a local session under /tmp, which the hardened unit's PrivateTmp hides.
        section["environment"]["RAY_ADDRESS"] = f"{cluster['head_address']}:{cluster['ports']['ray']}"
    if plan.get("start"):
        section["start_timeout_s"] = int(plan["start"]["timeout_s"])
    return section
