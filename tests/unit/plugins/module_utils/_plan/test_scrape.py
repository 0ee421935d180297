"""Scrape targets from the inventory (_plan/scrape.py)."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._plan import scrape

HOSTS = {
    "gpu-a": {"engine": "vllm", "address": "10.0.0.5", "model": "Qwen/Qwen3-8B", "vllm_port": 8001},
    "gpu-b": {"engine": "vllm", "address": "fd00::7", "api_key": True, "dcgm_exporter": True},
    "cpu-ollama": {"engine": "ollama", "address": "10.0.0.9", "node_exporter_port": 9101},
    "bastion": {"engine": None, "address": "10.0.0.1"},
}


def test_node_exporter_on_every_inference_host_only():
    node = scrape.scrape_targets(HOSTS)["node"]
    assert [group["targets"] for group in node] == [["10.0.0.9:9101"], ["10.0.0.5:9100"], ["[fd00::7]:9100"]]
    assert {group["labels"]["host"] for group in node} == {"cpu-ollama", "gpu-a", "gpu-b"}


def test_vllm_hosts_with_and_without_a_key():
    jobs = scrape.scrape_targets(HOSTS)
    assert jobs["vllm"] == [
        {"targets": ["10.0.0.5:8001"], "labels": {"host": "gpu-a", "engine": "vllm", "model": "Qwen/Qwen3-8B"}}
    ]
    assert jobs["vllm_keyed"] == [
        {
            "host": "gpu-b",
            "job": "vllm_gpu_b",
            "groups": [{"targets": ["[fd00::7]:8000"], "labels": {"host": "gpu-b", "engine": "vllm"}}],
        }
    ]
    assert [entry["name"] for entry in jobs["files"]] == ["node", "dcgm", "vllm", "vllm_gpu_b"]


def test_dcgm_only_where_the_inventory_says_it_is_installed():
    assert scrape.scrape_targets(HOSTS)["dcgm"] == [
        {"targets": ["[fd00::7]:9400"], "labels": {"host": "gpu-b", "engine": "vllm"}}
    ]


def test_a_host_without_node_exporter():
    jobs = scrape.scrape_targets({"a": {"engine": "vllm", "node_exporter": False}})
    assert jobs["node"] == [] and jobs["vllm"][0]["targets"] == ["a:8000"]


@pytest.mark.parametrize("port", ["http", 0, 70000])
def test_a_bad_port_names_the_host(port):
    with pytest.raises(scrape.ScrapeError, match="gpu-a"):
        scrape.scrape_targets({"gpu-a": {"engine": "vllm", "vllm_port": port}})


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('up{job="vllm"} == 0', ["up"]),
        (
            "histogram_quantile(0.9, sum by (le, host) "
            '(rate(vllm:time_to_first_token_seconds_bucket{host=~"$host"}[$__rate_interval])))',
            ["vllm:time_to_first_token_seconds_bucket"],
        ),
        (
            'a_total < on(host) 0.5 * b{streams="1"} and on(host) sum by (host) (c) <= 1',
            ["a_total", "b", "c"],
        ),
        ("time() - inferops_last_converge_timestamp_seconds", ["inferops_last_converge_timestamp_seconds"]),
    ],
)
def test_metric_names_in_an_expression(expr, names):
    assert scrape.metric_names_in(expr) == names
