# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Alertmanager's configuration from the inventory: who gets the collection's alerts, and how.

``monitoring_alert_receivers`` is a list of receivers, each with a ``name`` and exactly one of ``webhook_url``
or ``email_to`` (a list, or one address), optionally ``severities`` (the alert rules' ``severity`` labels it
gets; all when absent) and ``send_resolved`` (default true). Every alert goes to every receiver whose
severities match (one route per receiver, ``continue: true``); an alert no receiver wants ends at a
receiver without configuration. E-mail needs ``monitoring_alert_smtp`` (``smarthost`` host:port, ``from``,
optionally ``auth_username``/``auth_password`` and ``require_tls``). Errors name the variable and a value
that passes; secrets (a webhook URL may hold a token, the SMTP password) are never repeated in a message.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

SEVERITIES = ("critical", "warning", "info")
NOBODY = "inferops-nobody"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
_EMAIL_RE = re.compile(r"[^@\s,]+@[^@\s,]+\.[^@\s,]+\Z")
_URL_RE = re.compile(r"https?://[^\s]+\Z")
_HOSTPORT_RE = re.compile(r"[A-Za-z0-9.\[\]:-]+:[0-9]{1,5}\Z")
_DURATION_RE = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+\Z")
_RECEIVER_KEYS = {"name", "webhook_url", "email_to", "severities", "send_resolved"}
_SMTP_KEYS = {"smarthost", "from", "auth_username", "auth_password", "require_tls"}
DEFAULT_ROUTE = {
    "group_by": ["alertname", "host"],
    "group_wait": "30s",
    "group_interval": "5m",
    "repeat_interval": "4h",
}


def _receiver(index: int, given: Any, errors: List[str]) -> Optional[Dict[str, Any]]:
    where = f"monitoring_alert_receivers[{index}]"
    example = (
        "{name: ops, webhook_url: 'https://hooks.example.org/alerts'} or {name: oncall, email_to: [ops@example.org]}"
    )
    if not isinstance(given, Mapping):
        errors.append(f"{where} must be a mapping such as {example}")
        return None
    unknown = sorted(set(given) - _RECEIVER_KEYS)
    if unknown:
        errors.append(
            f"{where} has unknown keys {', '.join(map(str, unknown))}: use {', '.join(sorted(_RECEIVER_KEYS))}"
        )
    name = str(given.get("name", ""))
    if not _NAME_RE.match(name) or name == NOBODY:
        errors.append(f"{where}.name must be 1 to 64 letters, digits, '.', '_' or '-' (e.g. ops), not {name!r}")
    kinds = [key for key in ("webhook_url", "email_to") if given.get(key)]
    if len(kinds) != 1:
        errors.append(f"{where} ({name}) needs exactly one of webhook_url and email_to, e.g. {example}")
        return None
    receiver: Dict[str, Any] = {"name": name, "send_resolved": bool(given.get("send_resolved", True))}
    if kinds[0] == "webhook_url":
        url = given["webhook_url"]
        if not isinstance(url, str) or not _URL_RE.match(url):
            errors.append(
                f"{where}.webhook_url ({name}) must be an http(s) URL such as https://hooks.example.org/alerts"
            )
        receiver["webhook_url"] = str(url)
    else:
        to = given["email_to"]
        addresses = [to] if isinstance(to, str) else to
        if not isinstance(addresses, list) or not all(isinstance(a, str) and _EMAIL_RE.match(a) for a in addresses):
            errors.append(f"{where}.email_to ({name}) must be an address or a list of them, e.g. [ops@example.org]")
            addresses = []
        receiver["email_to"] = list(addresses)
    severities = given.get("severities")
    if severities is not None:
        if not isinstance(severities, list) or not severities or not set(map(str, severities)) <= set(SEVERITIES):
            errors.append(
                f"{where}.severities ({name}) must be a non-empty list of {', '.join(SEVERITIES)}, e.g. [critical]"
            )
        else:
            receiver["severities"] = [s for s in SEVERITIES if s in severities]
    return receiver


def _smtp(given: Any, errors: List[str]) -> Dict[str, Any]:
    where = "monitoring_alert_smtp"
    if not isinstance(given, Mapping):
        errors.append(
            f"{where} must be a mapping such as {{smarthost: 'mail.example.org:587', from: 'alerts@example.org'}}"
        )
        return {}
    unknown = sorted(set(given) - _SMTP_KEYS)
    if unknown:
        errors.append(f"{where} has unknown keys {', '.join(map(str, unknown))}: use {', '.join(sorted(_SMTP_KEYS))}")
    if not _HOSTPORT_RE.match(str(given.get("smarthost", ""))):
        errors.append(f"{where}.smarthost must be host:port, e.g. mail.example.org:587 (an e-mail receiver needs it)")
    if not _EMAIL_RE.match(str(given.get("from", ""))):
        errors.append(f"{where}.from must be an address, e.g. alerts@example.org (an e-mail receiver needs it)")
    smtp = {
        "smtp_smarthost": str(given.get("smarthost", "")),
        "smtp_from": str(given.get("from", "")),
        "smtp_require_tls": bool(given.get("require_tls", True)),
    }
    if given.get("auth_username"):
        smtp["smtp_auth_username"] = str(given["auth_username"])
        smtp["smtp_auth_password"] = str(given.get("auth_password", ""))
    return smtp


def _route(given: Any, errors: List[str]) -> Dict[str, Any]:
    route = dict(DEFAULT_ROUTE)
    if given is None:
        return route
    if not isinstance(given, Mapping) or not set(given) <= set(DEFAULT_ROUTE):
        errors.append(f"monitoring_alert_route may set {', '.join(DEFAULT_ROUTE)}, e.g. {{repeat_interval: 12h}}")
        return route
    for key in ("group_wait", "group_interval", "repeat_interval"):
        if key in given:
            if not _DURATION_RE.match(str(given[key])):
                errors.append(f"monitoring_alert_route.{key} must be a duration such as 5m, not {given[key]!r}")
            route[key] = str(given[key])
    if "group_by" in given:
        if not isinstance(given["group_by"], list) or not all(isinstance(x, str) for x in given["group_by"]):
            errors.append("monitoring_alert_route.group_by must be a list of label names, e.g. [alertname, host]")
        else:
            route["group_by"] = list(given["group_by"])
    return route


def alertmanager_config(receivers: Any, smtp: Any = None, route: Any = None) -> Tuple[Dict[str, Any], List[str]]:
    """(alertmanager.yml as a mapping, errors); the mapping is only meaningful without errors."""
    errors: List[str] = []
    if not isinstance(receivers, list):
        errors.append("monitoring_alert_receivers must be a list, e.g. [{name: ops, webhook_url: 'https://...'}]")
        receivers = []
    checked = [r for r in (_receiver(i, given, errors) for i, given in enumerate(receivers)) if r is not None]
    names = [r["name"] for r in checked]
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"monitoring_alert_receivers: the name {name} is given more than once")
    config: Dict[str, Any] = {}
    if any("email_to" in r for r in checked):
        config["global"] = _smtp(smtp if smtp is not None else {}, errors)
    tree = _route(route, errors)
    tree = {"receiver": NOBODY, **tree, "routes": [_child(r) for r in checked]}
    config["route"] = tree
    config["receivers"] = [{"name": NOBODY}] + [_receiver_config(r) for r in checked]
    return config, errors


def _child(receiver: Mapping[str, Any]) -> Dict[str, Any]:
    child: Dict[str, Any] = {"receiver": receiver["name"], "continue": True}
    if "severities" in receiver:
        child["matchers"] = ['severity=~"' + "|".join(receiver["severities"]) + '"']
    return child


def _receiver_config(receiver: Mapping[str, Any]) -> Dict[str, Any]:
    if "webhook_url" in receiver:
        return {
            "name": receiver["name"],
            "webhook_configs": [{"url": receiver["webhook_url"], "send_resolved": receiver["send_resolved"]}],
        }
    return {
        "name": receiver["name"],
        "email_configs": [{"to": ", ".join(receiver["email_to"]), "send_resolved": receiver["send_resolved"]}],
    }
