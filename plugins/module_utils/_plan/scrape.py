# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Prometheus scrape targets of the inference hosts of an inventory (file_sd target groups).

Private to the collection. Input: per inventory host, the few facts the monitoring role reads from its
variables (engine, address, ports, whether an API key is set, whether dcgm-exporter is installed);
never the key itself. Output: file_sd target groups
(https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config) per job, each
target labelled with its inventory host (``host``) so that rules join an engine's series with the
host's node exporter series (``on(host)``).

A vLLM host with an API key gets a job of its own, since a scrape job has one credentials file; its
``job`` label is still ``vllm`` (relabelled), so rules and dashboards see one job. So does a node exporter
with a basic auth password (``node_keyed``, ``job`` label ``node``).

Where node exporter listens (``node_exporter_listen``) is decided here for both roles: the node_metrics
role binds it, the monitoring role scrapes it there and refuses, as the node_metrics role does, a node
exporter beyond loopback without ``node_metrics_basic_auth_password``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES
from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import is_loopback

# Where a node exporter whose only Prometheus is its own host's listens when the inventory names no address.
NODE_EXPORTER_LOCAL_LISTEN = "127.0.0.1"

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


class ScrapeError(ValueError):
    """An inventory host whose scrape targets cannot be made."""


def job_suffix(host: str) -> str:
    """A host name as a job name and file name part (letters, digits and _ only)."""
    return _UNSAFE.sub("_", host)


def _port(value: Any, what: str, host: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError) as error:
        raise ScrapeError(f"{host}: {what} {value!r} is not a port number") from error
    if not 0 < port < 65536:
        raise ScrapeError(f"{host}: {what} {port} is not a port number")
    return port


def _target(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address and not address.startswith("[") else f"{address}:{port}"


def node_exporter_listen(
    host: str, listen: str, address: str, monitoring_hosts: Sequence[str], port: Any = 9100
) -> Dict[str, Any]:
    """Where node exporter listens: ``node_metrics_listen_address`` when set; else loopback when the host's
    own Prometheus is the only one that scrapes it (``monitoring_hosts`` is just ``host``) or none does
    (``monitoring_hosts`` is empty); else ``address``, the address the monitoring hosts scrape it at.

    Returns ``address`` (to listen on), ``socket`` (``--web.listen-address``), ``loopback`` (whether only
    the host itself reaches it) and ``target`` (the address its scraper connects to).
    """
    port = _port(port, "node_metrics_port", host)
    scrape_at = str(address or host)
    if listen:
        bind = str(listen)
    elif list(monitoring_hosts or []) in ([], [host]):
        bind = NODE_EXPORTER_LOCAL_LISTEN
    else:
        bind = scrape_at
    loopback = is_loopback(bind)
    # Loopback: only this host's own Prometheus reaches it, at that address.
    target = bind if loopback else scrape_at
    return {"address": bind, "socket": _target(bind, port), "loopback": loopback, "target": _target(target, port)}


def node_exporter_auth_error(host: str, listen: Mapping[str, Any], password_set: bool) -> str:
    """Why node exporter on ``host`` cannot listen where ``node_exporter_listen`` put it ('' when it can)."""
    if listen["loopback"] or password_set:
        return ""
    return (
        f"{host}: node exporter would listen on {listen['address']}, which is not loopback, and "
        "node_metrics_basic_auth_password is empty: set it (a vaulted random value, e.g. `openssl rand -hex 24 | "
        "ansible-vault encrypt_string --stdin-name node_metrics_basic_auth_password`), or set "
        "node_metrics_listen_address: 127.0.0.1 where the host's own Prometheus is the only one that scrapes it"
    )


def scrape_targets(hosts: Mapping[str, Mapping[str, Any]], scraper: str = "") -> Dict[str, Any]:
    """file_sd groups per job: ``node``, ``dcgm``, ``vllm`` (hosts without a key), ``vllm_keyed`` (one each),
    and ``files``: name and groups of each job's file_sd file.

    hosts: inventory host -> {engine, address, model, vllm_port, api_key (bool: one is set),
    node_exporter (bool), node_exporter_port, node_exporter_listen (node_metrics_listen_address),
    node_exporter_user, node_exporter_password (bool: one is set), monitoring_hosts (the hosts whose
    Prometheus scrapes it), dcgm_exporter (bool), dcgm_exporter_port}. scraper: the inventory host whose
    Prometheus these targets are for (the monitoring role's host); a node exporter of another host on
    loopback is refused there, since it cannot reach it.
    """
    jobs: Dict[str, Any] = {"node": [], "node_keyed": [], "dcgm": [], "vllm": [], "vllm_keyed": []}
    for host in sorted(hosts):
        spec = hosts[host] or {}
        engine = spec.get("engine")
        facts = ENGINES.get(engine) if isinstance(engine, str) else None
        if facts is None:
            continue
        address = str(spec.get("address") or host)
        labels = {"host": host, "engine": str(engine)}
        if spec.get("model"):
            labels["model"] = str(spec["model"])
        if spec.get("node_exporter", True):
            listen = node_exporter_listen(
                host, str(spec.get("node_exporter_listen") or ""), address, spec.get("monitoring_hosts") or [],
                spec.get("node_exporter_port", 9100),
            )  # fmt: skip
            error = node_exporter_auth_error(host, listen, bool(spec.get("node_exporter_password")))
            if not error and scraper and listen["loopback"] and scraper != host:
                error = (
                    f"{host}: node exporter listens on {listen['address']} (loopback), which {scraper} cannot "
                    f"reach: add {scraper} to {host}'s node_metrics_monitoring_hosts (default: the group "
                    "monitoring), or set its node_metrics_listen_address to an address that host reaches "
                    "(with node_metrics_basic_auth_password)"
                )
            if error:
                raise ScrapeError(error)
            group = {"targets": [listen["target"]], "labels": dict(labels)}
            if spec.get("node_exporter_password"):
                user = str(spec.get("node_exporter_user") or "prometheus")
                job = "node_" + job_suffix(host)
                jobs["node_keyed"].append({"host": host, "job": job, "user": user, "groups": [group]})
            else:
                jobs["node"].append(group)
        if spec.get("dcgm_exporter"):
            port = _port(spec.get("dcgm_exporter_port", 9400), "dcgm-exporter port", host)
            jobs["dcgm"].append({"targets": [_target(address, port)], "labels": dict(labels)})
        if facts.prometheus_metrics:
            port = _port(spec.get(facts.port_variable, facts.default_port), facts.port_variable, host)
            group = {"targets": [_target(address, port)], "labels": dict(labels)}
            if spec.get("api_key"):
                jobs["vllm_keyed"].append({"host": host, "job": "vllm_" + job_suffix(host), "groups": [group]})
            else:
                jobs["vllm"].append(group)
    # One file_sd file per job: what the monitoring role writes.
    jobs["files"] = [{"name": name, "groups": jobs[name]} for name in ("node", "dcgm", "vllm")] + [
        {"name": keyed["job"], "groups": keyed["groups"]} for keyed in jobs["node_keyed"] + jobs["vllm_keyed"]
    ]
    return jobs


def metric_names_in(expr: str) -> List[str]:
    """Metric names a PromQL expression reads (identifiers not followed by '(' nor inside braces or
    after 'by'/'on'/... keyword lists), for checking a dashboard or rule against the names scraped."""
    names: List[str] = []
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values and strings
    text = re.sub(r"\{[^}]*\}", "", text)  # matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    keywords = {
        "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
        "offset", "inf", "nan", "e",
    }  # fmt: skip
    for match in re.finditer(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(?!\s*\()", text):
        name = match.group(1)
        if name.lower() in keywords or name in names:
            continue
        names.append(name)
    return names
