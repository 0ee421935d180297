# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm observability filters: plan_metrics, converge_metrics, scrape_targets, node_exporter_listen,
promql_metric_names, alertmanager_config, alertmanager_config_errors (each documented in <name>.yml beside
this file)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain as _plain
from ansible_collections.inferops.llm.plugins.module_utils._plan import alerting, metrics, scrape


def plan_metrics(plan: t.Any, measured: t.Any = None) -> str:
    """Node exporter textfile of a host's plan and its last measured vLLM start."""
    if not isinstance(plan, Mapping):
        raise AnsibleFilterError(f"plan_metrics: the plan must be a mapping, not a {type(plan).__name__}")
    if measured is not None and not isinstance(measured, Mapping):
        measured = None
    try:
        return metrics.plan_metrics_text(_plain(plan), _plain(measured))
    except metrics.MetricsError as error:
        raise AnsibleFilterError(f"plan_metrics: {error}") from error


def converge_metrics(now: t.Any) -> str:
    """Textfile with the time of this converge (seconds since the epoch)."""
    try:
        return metrics.render(metrics.converge_families(float(now)))
    except (TypeError, ValueError) as error:
        raise AnsibleFilterError(f"converge_metrics: {now!r} is not a time in seconds") from error


def scrape_targets(hosts: t.Any, scraper: t.Any = "") -> dict[str, t.Any]:
    """file_sd target groups per job for the inference hosts of an inventory."""
    if not isinstance(hosts, Mapping):
        raise AnsibleFilterError("scrape_targets: hosts must be a mapping of inventory host to its facts")
    try:
        return scrape.scrape_targets(_plain(hosts), str(scraper or ""))
    except scrape.ScrapeError as error:
        raise AnsibleFilterError(f"scrape_targets: {error}") from error


def node_exporter_listen(
    host: t.Any, listen: t.Any, address: t.Any, monitoring_hosts: t.Any, port: t.Any = 9100, password_set: t.Any = False
) -> dict[str, t.Any]:
    """Where node exporter listens and is scraped, and why it may not listen there (``error``, '' if it may)."""
    if isinstance(monitoring_hosts, str) or not isinstance(monitoring_hosts, (list, tuple)):
        raise AnsibleFilterError("node_exporter_listen: monitoring_hosts must be a list of inventory hosts")
    try:
        found = scrape.node_exporter_listen(
            str(host), str(listen or ""), str(address or ""), list(monitoring_hosts), port
        )
    except scrape.ScrapeError as error:
        raise AnsibleFilterError(f"node_exporter_listen: {error}") from error
    return {**found, "error": scrape.node_exporter_auth_error(str(host), found, bool(password_set))}


def promql_metric_names(expr: t.Any) -> list[str]:
    """Metric names a PromQL expression reads."""
    return scrape.metric_names_in(str(expr))


def alertmanager_config_errors(receivers: t.Any, smtp: t.Any = None, route: t.Any = None) -> list[str]:
    """Why monitoring_alert_receivers, monitoring_alert_smtp or monitoring_alert_route cannot be used."""
    return alerting.alertmanager_config(_plain(receivers), _plain(smtp), _plain(route))[1]


def alertmanager_config(receivers: t.Any, smtp: t.Any = None, route: t.Any = None) -> dict[str, t.Any]:
    """Alertmanager's configuration: one route per receiver, every matching alert to every receiver."""
    config, errors = alerting.alertmanager_config(_plain(receivers), _plain(smtp), _plain(route))
    if errors:
        raise AnsibleFilterError("alertmanager_config: " + "; ".join(errors))
    return config


class FilterModule:
    """Observability filters."""

    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {
            "plan_metrics": plan_metrics,
            "converge_metrics": converge_metrics,
            "scrape_targets": scrape_targets,
            "node_exporter_listen": node_exporter_listen,
            "promql_metric_names": promql_metric_names,
            "alertmanager_config": alertmanager_config,
            "alertmanager_config_errors": alertmanager_config_errors,
        }
