# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The gateway's plan: routes to every engine of the inventory, sampling profiles as model names, checks.

Input is the engine hosts' plans (one per host, ``planner.build_plan``), where each listens (address, port,
and for Ollama the model names it serves), explicit backends from inventory and the profiles asked for. Output
is plain data: the routes (one per served model name, one backend per replica), the profiles (each a virtual
model name over the same backends with sampling parameters and chat-template arguments), findings with
registered ids, and LiteLLM's ``model_list`` and router settings that the gateway role writes.

Profiles shipped as data (Qwen3.5/3.6's four documented sampling profiles) and the request fields each engine
accepts are in gateway.json, each with its source.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._core.versions import VersionError, version_tuple
from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES

with open(os.path.join(os.path.dirname(__file__), "gateway.json"), encoding="utf-8") as _handle:
    GATEWAY_DATA: Dict[str, Any] = json.load(_handle)

BUILTIN_PROFILES: Dict[str, Dict[str, Any]] = {
    name: entry for name, entry in GATEWAY_DATA["profiles"].items() if not name.startswith("_")
}
# A model name a client sends: no spaces, quotes or control characters (it is also a YAML key and a URL part).
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")
_PROFILE_KEYS = {"name", "model", "builtin", "params", "chat_template_kwargs", "description"}
_BACKEND_KEYS = {"model", "engine", "engine_version", "api_base", "reasoning_parser", "host", "api_key_env"}


class GatewayInputError(ValueError):
    """Profiles or backends given in inventory that cannot be planned at all (each message names the variable)."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = list(errors)


def _accepted(engine: str, table: Optional[Mapping[str, Any]] = None) -> Mapping[str, str]:
    params = table if table is not None else GATEWAY_DATA["request_params"]
    return params.get(engine) or {}


def backends_from_plans(
    plans: Mapping[str, Mapping[str, Any]], endpoints: Mapping[str, Mapping[str, Any]]
) -> List[Dict[str, Any]]:
    """One backend per engine host and served model name, in host order.

    endpoints: per host ``{"address": str, "port": int, "models": [names]}`` (``models``: what Ollama serves,
    the names of ``ollama_models``; vLLM serves ``served_model_name`` or the model's repo). A host without an
    endpoint is left out.
    """
    backends: List[Dict[str, Any]] = []
    for host, plan in plans.items():
        endpoint = endpoints.get(host)
        if not endpoint or not plan:
            continue
        engine = str(plan.get("engine"))
        address = str(endpoint["address"])
        base = f"http://{'[' + address + ']' if ':' in address else address}:{int(endpoint['port'])}"
        config = (plan.get("service") or {}).get("config") or {}
        if engine == "vllm":
            served = config.get("served-model-name") or (plan.get("model") or {}).get("repo")
            names = [served] if isinstance(served, str) else list(served or [])
            parser = config.get("reasoning-parser")
        else:
            names = [str(name) for name in endpoint.get("models") or []]
            # Ollama splits <think> itself for the architectures it knows: no parser to set.
            parser = "ollama"
        for name in names:
            backends.append(
                {
                    "host": host,
                    "model": str(name),
                    "engine": engine,
                    "engine_version": str(plan.get("engine_version")),
                    "api_base": base + "/v1",
                    "reasoning_parser": parser or None,
                    "api_key_env": endpoint.get("api_key_env"),
                }
            )
    return backends


def _check_backends(given: Sequence[Any]) -> List[Dict[str, Any]]:
    errors: List[str] = []
    backends: List[Dict[str, Any]] = []
    for index, entry in enumerate(given):
        where = f"gateway_backends[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(f"{where} must be a mapping with model, engine, engine_version and api_base")
            continue
        unknown = sorted(set(entry) - _BACKEND_KEYS)
        missing = [key for key in ("model", "engine", "engine_version", "api_base") if not entry.get(key)]
        if unknown or missing:
            errors.append(
                f"{where}: "
                + "; ".join(
                    ([f"unknown keys {', '.join(unknown)}"] if unknown else [])
                    + ([f"missing {', '.join(missing)}"] if missing else [])
                )
            )
            continue
        if entry["engine"] not in ENGINES:
            errors.append(f"{where}.engine must be one of {', '.join(ENGINES)}, got {entry['engine']!r}")
            continue
        if not re.fullmatch(r"https?://[A-Za-z0-9.:\[\]_-]+(/[A-Za-z0-9._/-]*)?", str(entry["api_base"])):
            errors.append(f"{where}.api_base must be an http(s) URL such as http://10.0.0.5:8000/v1")
            continue
        backends.append(
            {
                "host": str(entry.get("host") or ""),
                "model": str(entry["model"]),
                "engine": str(entry["engine"]),
                "engine_version": str(entry["engine_version"]),
                "api_base": str(entry["api_base"]).rstrip("/"),
                "reasoning_parser": entry.get("reasoning_parser") or None,
                "api_key_env": entry.get("api_key_env"),
            }
        )
    if errors:
        raise GatewayInputError(errors)
    return backends


def _resolve_profiles(given: Sequence[Any]) -> List[Dict[str, Any]]:
    errors: List[str] = []
    profiles: List[Dict[str, Any]] = []
    for index, entry in enumerate(given):
        where = f"gateway_profiles[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(f"{where} must be a mapping with name, model and builtin or params")
            continue
        unknown = sorted(set(entry) - _PROFILE_KEYS)
        if unknown:
            errors.append(f"{where}: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(_PROFILE_KEYS))})")
            continue
        name, model = entry.get("name"), entry.get("model")
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            errors.append(f"{where}.name must be a model name such as qwen-thinking (letters, digits, ._:/@+-)")
            continue
        if not isinstance(model, str) or not model:
            errors.append(f"{where}.model must name the served model the profile applies to")
            continue
        builtin = entry.get("builtin")
        base: Mapping[str, Any] = {}
        if builtin is not None:
            if builtin not in BUILTIN_PROFILES:
                errors.append(f"{where}.builtin {builtin!r} is not shipped; one of {', '.join(BUILTIN_PROFILES)}")
                continue
            base = BUILTIN_PROFILES[builtin]
        params = entry.get("params") or {}
        kwargs = entry.get("chat_template_kwargs") or {}
        if not isinstance(params, Mapping) or not isinstance(kwargs, Mapping):
            errors.append(f"{where}: params and chat_template_kwargs must be mappings")
            continue
        if builtin is None and not params and not kwargs:
            errors.append(f"{where}: set builtin (one of {', '.join(BUILTIN_PROFILES)}) or params")
            continue
        bad = [key for key, value in params.items() if not isinstance(value, (int, float, str, list)) or value is True]
        if bad:
            errors.append(f"{where}.params: {', '.join(map(str, bad))} must be numbers, strings or lists")
            continue
        merged_kwargs = {**(base.get("chat_template_kwargs") or {}), **kwargs}
        thinking = merged_kwargs.get("enable_thinking")
        profiles.append(
            {
                "name": name,
                "model": model,
                "builtin": builtin,
                "description": str(entry.get("description") or base.get("description") or ""),
                "params": {**(base.get("params") or {}), **params},
                "chat_template_kwargs": merged_kwargs,
                "thinking": thinking if isinstance(thinking, bool) else None,
            }
        )
    names = [profile["name"] for profile in profiles]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        errors.append(f"gateway_profiles: names {', '.join(duplicates)} are given more than once")
    if errors:
        raise GatewayInputError(errors)
    return profiles


def _parameter_findings(
    profile: Mapping[str, Any], backend: Mapping[str, Any], table: Optional[Mapping[str, Any]]
) -> List[Dict[str, Any]]:
    engine, version = backend["engine"], backend["engine_version"]
    accepted = _accepted(engine, table)
    everywhere = set().union(*(set(_accepted(name, table)) for name in ENGINES))
    fields = list(profile["params"]) + (["chat_template_kwargs"] if profile["chat_template_kwargs"] else [])
    where = f"{ENGINES[engine].display_name} {version} on {backend['host'] or backend['api_base']}"
    findings = []
    for field in fields:
        if field not in everywhere:
            findings.append(
                finding_entry(
                    "gateway-profile-parameter",
                    "error",
                    f"profile {profile['name']}: {field} is a request field no engine accepts (a typo?); "
                    f"known: {', '.join(sorted(everywhere))}",
                    "gateway_profiles",
                )
            )
        elif field not in accepted:
            findings.append(
                finding_entry(
                    "gateway-profile-parameter",
                    "warning",
                    f"profile {profile['name']}: {where} ignores {field} on its OpenAI API, so the profile's value "
                    f"does not apply there; drop it from the profile or serve {profile['model']} with vLLM",
                    "gateway_profiles",
                )
            )
        else:
            try:
                too_old = version_tuple(version)[:3] < version_tuple(accepted[field])[:3]
            except VersionError:
                too_old = False
            if too_old:
                findings.append(
                    finding_entry(
                        "gateway-profile-parameter",
                        "error",
                        f"profile {profile['name']}: {where} predates {field} (added in {accepted[field]}); "
                        f"raise the engine version or drop {field}",
                        "gateway_profiles",
                        accepted[field],
                    )
                )
    return findings


def plan_gateway(
    backends: Sequence[Mapping[str, Any]],
    profiles: Sequence[Any] = (),
    extra_backends: Sequence[Any] = (),
    request_params: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Routes, profiles and checks of the gateway (raises GatewayInputError for malformed inventory entries).

    backends: from ``backends_from_plans``. extra_backends: ``gateway_backends`` from inventory (engines outside
    the inventory). profiles: ``gateway_profiles``. request_params: the accepted-fields table (gateway.json).
    """
    all_backends = [dict(backend) for backend in backends] + _check_backends(extra_backends)
    resolved = _resolve_profiles(profiles)
    routes: Dict[str, Dict[str, Any]] = {}
    for backend in all_backends:
        route = routes.setdefault(backend["model"], {"model": backend["model"], "backends": []})
        route["backends"].append({key: backend[key] for key in ("host", "engine", "engine_version", "api_base")})
    checks: List[Dict[str, Any]] = []
    for name in sorted(set(routes) & {profile["name"] for profile in resolved}):
        checks.append(
            finding_entry(
                "gateway-profile-invalid",
                "error",
                f"profile {name} has the name of a served model: rename the profile",
                "gateway_profiles",
            )
        )
    for profile in resolved:
        served = [backend for backend in all_backends if backend["model"] == profile["model"]]
        if not served:
            checks.append(
                finding_entry(
                    "gateway-profile-unserved",
                    "error",
                    f"profile {profile['name']} is for {profile['model']}, which no engine of the inventory serves "
                    f"(served: {', '.join(sorted(routes)) or 'none'})",
                    "gateway_profiles",
                    sorted(routes)[0] if routes else None,
                )
            )
            continue
        seen = set()
        for backend in served:
            for finding in _parameter_findings(profile, backend, request_params):
                if finding["message"] not in seen:
                    seen.add(finding["message"])
                    checks.append(finding)
            if profile["thinking"] and backend["engine"] == "vllm" and not backend["reasoning_parser"]:
                checks.append(
                    finding_entry(
                        "gateway-reasoning-parser",
                        "warning",
                        f"profile {profile['name']} turns thinking on, but vLLM on "
                        f"{backend['host'] or backend['api_base']} runs without --reasoning-parser: the "
                        "reasoning arrives inside the answer's content; set vllm_reasoning_parser",
                        "vllm_reasoning_parser",
                    )
                )
    return {
        "routes": list(routes.values()),
        "profiles": resolved,
        "checks": checks,
        "model_list": model_list(all_backends, resolved),
    }


def _litellm_params(backend: Mapping[str, Any]) -> Dict[str, Any]:
    # Both engines speak OpenAI's API under /v1; LiteLLM's openai/ provider passes the model name through.
    return {
        "model": f"openai/{backend['model']}",
        "api_base": backend["api_base"],
        "api_key": f"os.environ/{backend['api_key_env']}" if backend.get("api_key_env") else "none",
    }


def model_list(backends: Sequence[Mapping[str, Any]], profiles: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """LiteLLM's ``model_list``: each served model once per replica, each profile once per replica of its model.

    A profile's OpenAI fields are deployment defaults (a client's own value wins); the others (top_k, min_p,
    repetition_penalty, chat_template_kwargs) travel in ``extra_body``, which LiteLLM sends as they are.
    """
    openai_fields = set(GATEWAY_DATA["openai_params"])
    entries: List[Dict[str, Any]] = []
    for backend in backends:
        entries.append(
            {
                "model_name": backend["model"],
                "litellm_params": _litellm_params(backend),
                "model_info": {"id": f"{backend['model']}@{backend['host'] or backend['api_base']}"},
            }
        )
    for profile in profiles:
        for backend in backends:
            if backend["model"] != profile["model"]:
                continue
            params = _litellm_params(backend)
            extra: Dict[str, Any] = {}
            for key, value in profile["params"].items():
                (params if key in openai_fields else extra)[key] = value
            if profile["chat_template_kwargs"]:
                extra["chat_template_kwargs"] = dict(profile["chat_template_kwargs"])
            if extra:
                params["extra_body"] = extra
            entries.append(
                {
                    "model_name": profile["name"],
                    "litellm_params": params,
                    "model_info": {"id": f"{profile['name']}@{backend['host'] or backend['api_base']}"},
                }
            )
    return entries


def retry_policy(entries: Sequence[Mapping[str, Any]]) -> Dict[str, Dict[str, int]]:
    """LiteLLM's ``model_group_retry_policy``: no retry for a model name with one replica.

    The router retries a failed request on another replica of the same name at once; with one replica it
    retries that replica with a back-off (router ``_time_to_sleep_before_retry``, LiteLLM 1.109.1), which is
    what kept a client waiting 16 s for a 500 while the engine was down. ``DefaultRetries: 0`` covers the
    connection errors of an engine that is down (APIConnectionError has no retry-policy field of its own).
    """
    replicas: Dict[str, int] = {}
    for entry in entries:
        name = str(entry.get("model_name", ""))
        replicas[name] = replicas.get(name, 0) + 1
    return {name: {"DefaultRetries": 0} for name, count in sorted(replicas.items()) if count == 1 and name}


def render_gateway_table(gateway: Mapping[str, Any]) -> List[str]:
    """The routes and profiles as text lines (``make plan`` prints them under the hosts' table)."""
    lines = ["gateway routes (model name -> backends):"]
    for route in gateway.get("routes") or []:
        targets = ", ".join(f"{b['engine']} {b['engine_version']} {b['api_base']}" for b in route["backends"])
        lines.append(f"  {route['model']} -> {targets}")
    if not gateway.get("routes"):
        lines.append("  (none)")
    lines.append("gateway profiles (model name = model + sampling):")
    for profile in gateway.get("profiles") or []:
        settings = ", ".join(f"{key}={value}" for key, value in profile["params"].items())
        kwargs = ", ".join(f"{key}={json.dumps(value)}" for key, value in profile["chat_template_kwargs"].items())
        lines.append(
            f"  {profile['name']} -> {profile['model']}"
            + (f" [{profile['builtin']}]" if profile["builtin"] else "")
            + (f": {settings}" if settings else "")
            + (f"; chat_template_kwargs {kwargs}" if kwargs else "")
        )
    if not gateway.get("profiles"):
        lines.append("  (none)")
    for check in gateway.get("checks") or []:
        lines.append(f"  {check['severity']}: {check['id']}: {check['message']}")
    return lines


# What the gateway reads of an engine host besides its plan (never a secret's value: only whether
# vllm_api_key is set, so that the gateway role passes the key it reads from the vault).
ENDPOINT_VARIABLES = (
    "ansible_host",
    "gateway_backend_address",
    "vllm_host",
    "vllm_port",
    "ollama_host",
    "ollama_port",
    "ollama_models",
)
# The address each engine role binds when the inventory sets none (roles/vllm and roles/ollama defaults).
_DEFAULT_LISTEN = "127.0.0.1"


def is_loopback(address: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (bracketed as ollama_host writes it); a host name is not loopback."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _env_name(host: str) -> str:
    return "INFEROPS_BACKEND_KEY_" + re.sub(r"[^A-Z0-9]", "_", host.upper())


def fleet_endpoints(
    engine_hosts: Mapping[str, Mapping[str, Any]], gateway_host: str, keyed: Sequence[str] = ()
) -> Dict[str, Dict[str, Any]]:
    """Where each engine host listens, as the gateway host reaches it.

    engine_hosts: per host the values of ENDPOINT_VARIABLES that are set. keyed: the hosts that set
    vllm_api_key (its value stays out of the plan; the config names INFEROPS_BACKEND_KEY_<HOST>).
    The gateway reaches an engine on its own host through loopback, others through
    gateway_backend_address, ansible_host or the inventory name.
    """
    endpoints: Dict[str, Dict[str, Any]] = {}
    for host, variables in engine_hosts.items():
        if host == gateway_host:
            address = "127.0.0.1"
        else:
            address = str(variables.get("gateway_backend_address") or variables.get("ansible_host") or host)
        models = [
            str(entry.get("name") or entry.get("pull"))
            for entry in variables.get("ollama_models") or []
            if isinstance(entry, Mapping) and (entry.get("name") or entry.get("pull")) and not entry.get("profiles")
        ]
        for entry in variables.get("ollama_models") or []:
            if isinstance(entry, Mapping):
                models += [
                    str(p["name"]) for p in entry.get("profiles") or [] if isinstance(p, Mapping) and p.get("name")
                ]
        endpoints[host] = {
            "address": address,
            **{f.listen_variable: str(variables.get(f.listen_variable) or _DEFAULT_LISTEN) for f in ENGINES.values()},
            **{f.port_variable: int(variables.get(f.port_variable) or f.default_port) for f in ENGINES.values()},
            "models": models,
            "api_key_env": _env_name(host) if host in keyed else None,
        }
    return endpoints


def plan_fleet_gateway(
    plans: Mapping[str, Mapping[str, Any]],
    engine_hosts: Mapping[str, Mapping[str, Any]],
    gateway_host: str,
    gateway_variables: Mapping[str, Any],
    keyed: Sequence[str] = (),
) -> Dict[str, Any]:
    """The gateway of an inventory: every planned engine host (of a cluster, its head) as a backend, the profiles.

    gateway_variables: the gateway host's ``gateway_profiles`` and ``gateway_backends``. Raises
    GatewayInputError for malformed entries.
    """
    endpoints = fleet_endpoints(engine_hosts, gateway_host, keyed)
    for host, plan in plans.items():
        # A worker of a multi-host deployment serves no API: the cluster's head is its one endpoint.
        if host in endpoints and (plan.get("cluster") or {}).get("role") != "worker":
            endpoints[host]["port"] = endpoints[host][ENGINES[plan["engine"]].port_variable]
    usable = {host: endpoint for host, endpoint in endpoints.items() if "port" in endpoint}
    backends = backends_from_plans(plans, usable)
    gateway = plan_gateway(
        backends,
        gateway_variables.get("gateway_profiles") or [],
        gateway_variables.get("gateway_backends") or [],
    )
    for host, plan in plans.items():
        if host in usable and plan and plan.get("engine") == "ollama" and not usable[host]["models"]:
            gateway["checks"].append(
                finding_entry(
                    "gateway-ollama-unrouted",
                    "warning",
                    f"Ollama on {host} has no ollama_models: the gateway cannot know which model names it "
                    "serves and routes none of them; list them, e.g. ollama_models: [{pull: 'qwen3:8b'}]",
                    "ollama_models",
                    [{"pull": "qwen3:8b"}],
                )
            )
    # An engine bound to loopback on another host: its routes are planned but no request can reach it.
    routed = {backend["host"] for backend in backends}
    for host, endpoint in usable.items():
        facts = ENGINES.get(str(plans[host].get("engine")))
        variable = facts.listen_variable if facts else None
        if host == gateway_host or host not in routed or variable is None or not is_loopback(endpoint[variable]):
            continue
        gateway["checks"].append(
            finding_entry(
                "gateway-backend-loopback",
                "error",
                f"{facts.display_name} on {host} listens on {endpoint[variable]} ({variable}"
                f"{'' if variable in engine_hosts.get(host, {}) else ', the role default'}), which the gateway on "
                f"{gateway_host} cannot reach at {endpoint['address']}: set {variable}: 0.0.0.0 on {host} (or an "
                "address of it that the gateway reaches)"
                + (
                    f", with {facts.api_key_variable} in Ansible Vault"
                    if facts.api_key_variable
                    else f", behind a firewall ({facts.display_name} has no keys)"
                )
                + f", or leave {host} out of gateway_backend_hosts",
                variable,
                "0.0.0.0",
            )
        )
    gateway["host"] = gateway_host
    gateway["backend_keys"] = sorted({e["api_key_env"]: h for h, e in usable.items() if e["api_key_env"]}.items())
    return gateway


# What a client key, and the master key, may hold: printable ASCII without spaces, quotes or backslashes
# (the systemd environment file needs no escaping), at least 16 characters.
_KEY_RE = re.compile(r"[!#-&(-\[\]-~]{16,256}")
_KEY_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def key_errors(keys: Any, master_key: Any) -> List[str]:
    """Refusals for ``gateway_master_key`` and ``gateway_keys``; messages name keys by name, never by value."""
    errors: List[str] = []
    if not isinstance(master_key, str) or not master_key.startswith("sk-") or not _KEY_RE.fullmatch(master_key):
        errors.append(
            "gateway_master_key must be set (in Ansible Vault): sk- then printable ASCII without spaces, quotes or "
            "backslashes, 16 characters at least"
        )
    if not isinstance(keys, list):
        return [*errors, "gateway_keys must be a list of {name, key, models}"]
    seen_names: List[str] = []
    seen_keys: List[str] = []
    for index, entry in enumerate(keys):
        if not isinstance(entry, Mapping):
            errors.append(f"gateway_keys[{index}] must be a mapping with name, key and models")
            continue
        name = entry.get("name")
        label = f"gateway_keys[{index}]"
        if not isinstance(name, str) or not _KEY_NAME_RE.fullmatch(name):
            errors.append(f"{label}.name must be 1 to 64 letters, digits or ._-")
        else:
            label = f"gateway_keys {name}"
            if name in seen_names:
                errors.append(f"{label}: the name is given more than once")
            seen_names.append(name)
        unknown = sorted(set(entry) - {"name", "key", "models"})
        if unknown:
            errors.append(f"{label}: unknown keys {', '.join(map(str, unknown))}")
        key = entry.get("key")
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            errors.append(
                f"{label}: key must be 16 to 256 printable ASCII characters without spaces, quotes or backslashes"
            )
        elif key == master_key:
            errors.append(f"{label}: key is the master key; give each client its own")
        elif key in seen_keys:
            errors.append(f"{label}: key is also another entry's key")
        else:
            seen_keys.append(key)
        models = entry.get("models")
        if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
            errors.append(f'{label}: models must be a non-empty list of model names ("*" for all)')
    return errors


def key_table(keys: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The gateway's key table: each key's name, SHA-256 digest and model names; never a key."""
    return {
        "keys": [
            {
                "name": str(entry["name"]),
                "sha256": hashlib.sha256(str(entry["key"]).encode("utf-8")).hexdigest(),
                "models": [str(model) for model in entry["models"]],
            }
            for entry in keys
        ]
    }
