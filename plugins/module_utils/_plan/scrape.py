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
``job`` label is still ``vllm`` (relabelled), so rules and dashboards see one job.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._engines.facts import ENGINES

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


def scrape_targets(hosts: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """file_sd groups per job: ``node``, ``dcgm``, ``vllm`` (hosts without a key), ``vllm_keyed`` (one each),
    and ``files``: name and groups of each job's file_sd file.

    hosts: inventory host -> {engine, address, model, vllm_port, api_key (bool: one is set),
    node_exporter (bool), node_exporter_port, dcgm_exporter (bool), dcgm_exporter_port}.
    """
    jobs: Dict[str, Any] = {"node": [], "dcgm": [], "vllm": [], "vllm_keyed": []}
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
            port = _port(spec.get("node_exporter_port", 9100), "node exporter port", host)
            jobs["node"].append({"targets": [_target(address, port)], "labels": dict(labels)})
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
        {"name": keyed["job"], "groups": keyed["groups"]} for keyed in jobs["vllm_keyed"]
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
