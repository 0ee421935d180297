# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What the code after the plan needs to know of each engine, by its ``inferops_engine`` name: one record per
engine, read by the service section, the report, the picture, the metrics, the scrape targets and the gateway
instead of switching on engine names.

The planners are registered in ``_plan/engines.py`` (by engine and device); this table holds only plain facts,
so that the filters that read it (scrape targets, gateway, report) do not import the planning code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional


@dataclass(frozen=True)
class EngineFacts:
    """display_name: as messages name it. listen_variable / port_variable / default_port: where its role binds the
    API (the roles' defaults). api_key_variable: the role's API key (None: the engine has no keys).
    config_from_command: the service's config is parsed from the plan's command (``vllm serve --config``), else
    it is the resolved settings. prometheus_metrics: serves Prometheus ``/metrics`` on its API port (scraped by
    the monitoring role). startup_report: its role stores the memory report of a start as a local fact that the
    next plan reads. splits_layers: the engine has no tensor/pipeline layout; it splits the layers over the GPUs
    itself, each GPU one rank."""

    display_name: str
    listen_variable: str
    port_variable: str
    default_port: int
    api_key_variable: Optional[str]
    config_from_command: bool
    prometheus_metrics: bool
    startup_report: bool
    splits_layers: bool


ENGINES: Dict[str, EngineFacts] = {
    "vllm": EngineFacts(
        display_name="vLLM",
        listen_variable="vllm_host",
        port_variable="vllm_port",
        default_port=8000,
        api_key_variable="vllm_api_key",
        config_from_command=True,
        prometheus_metrics=True,
        startup_report=True,
        splits_layers=False,
    ),
    "ollama": EngineFacts(
        display_name="Ollama",
        listen_variable="ollama_host",
        port_variable="ollama_port",
        default_port=11434,
        api_key_variable=None,
        config_from_command=False,
        prometheus_metrics=False,
        startup_report=False,
        splits_layers=True,  # llama.cpp's layer split
    ),
}
