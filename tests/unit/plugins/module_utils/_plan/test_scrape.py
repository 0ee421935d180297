"""Scrape targets from the inventory (_plan/scrape.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan import scrape

# Node exporter beyond loopback needs its password (node_exporter_password: whether one is set).
HOSTS = {
    "gpu-a": {
        "engine": "vllm", "address": "10.0.0.5", "model": "Qwen/Qwen3-8B", "vllm_port": 8001,
        "node_exporter_password": True, "monitoring_hosts": ["prom1"],
    },
    "gpu-b": {
        "engine": "vllm", "address": "fd00::7", "api_key": True, "dcgm_exporter": True, "node_exporter_password": True,
        "monitoring_hosts": ["prom1"],
    },
    "cpu-ollama": {
        "engine": "ollama", "address": "10.0.0.9", "node_exporter_port": 9101, "monitoring_hosts": ["cpu-ollama"],
    },
    "bastion": {"engine": None, "address": "10.0.0.1"},
}  # fmt: skip
LISTEN_CASES = yaml.safe_load((Path(__file__).parent / "node_exporter_listen_cases.yml").read_text())


def test_node_exporter_on_every_inference_host_only():
    jobs = scrape.scrape_targets(HOSTS)
    # cpu-ollama is scraped by its own Prometheus only: loopback, no password.
    assert jobs["node"] == [{"targets": ["127.0.0.1:9101"], "labels": {"host": "cpu-ollama", "engine": "ollama"}}]
    assert [(keyed["job"], keyed["user"], keyed["groups"][0]["targets"]) for keyed in jobs["node_keyed"]] == [
        ("node_gpu_a", "prometheus", ["10.0.0.5:9100"]),
        ("node_gpu_b", "prometheus", ["[fd00::7]:9100"]),
    ]
    assert [entry["name"] for entry in jobs["files"]] == [
        "node",
        "dcgm",
        "vllm",
        "node_gpu_a",
        "node_gpu_b",
        "vllm_gpu_b",
    ]


@pytest.mark.parametrize("case", LISTEN_CASES["listen"], ids=[case["name"] for case in LISTEN_CASES["listen"]])
def test_where_node_exporter_listens_and_is_scraped(case):
    found = scrape.node_exporter_listen(
        case["host"], case.get("listen", ""), case.get("address", ""), case.get("monitoring_hosts", []),
        case.get("port", 9100),
    )  # fmt: skip
    assert found == case["expected"]
    error = scrape.node_exporter_auth_error(case["host"], found, password_set=False)
    assert bool(error) == (not case["expected"]["loopback"])
    assert scrape.node_exporter_auth_error(case["host"], found, password_set=True) == ""


@pytest.mark.parametrize("case", LISTEN_CASES["refused"], ids=[case["name"] for case in LISTEN_CASES["refused"]])
def test_a_node_exporter_beyond_loopback_without_its_password_is_refused(case):
    with pytest.raises(scrape.ScrapeError) as raised:
        scrape.scrape_targets({case["host"]: case["spec"]})
    message = str(raised.value)
    # The host, the variable to set, a value that passes, and the other way out.
    for part in (case["host"], "node_metrics_basic_auth_password", "node_metrics_listen_address: 127.0.0.1"):
        assert part in message
    passing = {**case["spec"], "node_exporter_password": True}
    assert scrape.scrape_targets({case["host"]: passing})["node_keyed"][0]["host"] == case["host"]


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


def test_dcgm_only_where_the_inventory_says_it_is_installed():
    assert scrape.scrape_targets(HOSTS)["dcgm"] == [
        {"targets": ["[fd00::7]:9400"], "labels": {"host": "gpu-b", "engine": "vllm"}}
    ]


@pytest.mark.parametrize(
    "case", LISTEN_CASES["unreachable"], ids=[case["name"] for case in LISTEN_CASES["unreachable"]]
)
def test_a_loopback_node_exporter_of_another_host_is_refused_to_its_scraper(case):
    with pytest.raises(scrape.ScrapeError) as raised:
        scrape.scrape_targets({case["host"]: case["spec"]}, scraper=case["scraper"])
    assert case["host"] in str(raised.value) and "node_metrics_monitoring_hosts" in str(raised.value)
    # Its own Prometheus reaches it.
    assert scrape.scrape_targets({case["host"]: case["spec"]}, scraper=case["host"])["node"][0]["targets"] == [
        "127.0.0.1:9100"
    ]


def test_the_password_is_not_an_input_and_never_in_the_jobs():
    jobs = scrape.scrape_targets({"a": {"engine": "vllm", "node_exporter_password": "s3cret-node-pw"}})
    assert "s3cret-node-pw" not in repr(jobs)


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
