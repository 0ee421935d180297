"""Node exporter listens where the inventory says, with basic auth beyond loopback (issue 28), and the monitoring
role scrapes it there with the password from a 0600 file.

The node_metrics role's /etc/default/prometheus-node-exporter and web config, its listen check, and the monitoring
role's scrape jobs, rendered with the roles' own variables and Ansible's Templar (unit_render.py); the bcrypt hash
is made by ansible.builtin.password_hash as on the controller. Cases: node_exporter_web_cases.yml.
"""

from __future__ import annotations

import base64
import os
import shlex
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import pytest
import yaml
from unit_render import render_all

TABLE = yaml.safe_load((Path(__file__).parent / "node_exporter_web_cases.yml").read_text())
PASSWORD = TABLE["password"]
CASES = TABLE["cases"]
REFUSED = TABLE["refused"]


def node_vars(case):
    overrides = {key: value for key, value in case["vars"].items() if key != "password"}
    overrides["inventory_hostname"] = case["host"]
    if case["vars"].get("password"):
        overrides["node_metrics_basic_auth_password"] = PASSWORD
    return overrides


def monitoring_vars(case):
    host = {key: value for key, value in node_vars(case).items() if key not in ("groups", "inventory_hostname")}
    host.setdefault("inferops_engine", "vllm")
    return {
        # The role runs on the first monitoring host.
        "inventory_hostname": case["vars"]["groups"]["monitoring"][0], "groups": case["vars"]["groups"],
        "monitoring_hosts": [case["host"]], "hostvars": {case["host"]: host},
    }  # fmt: skip


JOBS = {}
for index, case in enumerate(CASES):
    JOBS[f"default-{index}"] = ("node_metrics", "prometheus-node-exporter.default.j2", node_vars(case))
    JOBS[f"web-{index}"] = ("node_metrics", "node-exporter-web.yml.j2", node_vars(case))
    JOBS[f"listen-{index}"] = ("node_metrics", "expr:{{ _node_metrics_listen | to_json }}", node_vars(case))
    JOBS[f"scrape-{index}"] = ("monitoring", "scrape_jobs.j2", monitoring_vars(case))
    JOBS[f"files-{index}"] = ("monitoring", "expr:{{ _monitoring_jobs['files'] | to_json }}", monitoring_vars(case))
for index, case in enumerate(REFUSED):
    JOBS[f"refused-{index}"] = ("node_metrics", "expr:{{ _node_metrics_listen | to_json }}", node_vars(case))
    JOBS[f"refused-scrape-{index}"] = ("monitoring", "scrape_jobs.j2", monitoring_vars(case))
RENDERED = render_all(JOBS)


def text(key):
    assert "text" in RENDERED[key], RENDERED[key].get("error")
    return RENDERED[key]["text"]


def args(index):
    """ARGS of /etc/default/prometheus-node-exporter, as the unit's $ARGS splits them."""
    line = next(line for line in text(f"default-{index}").splitlines() if line.startswith("ARGS="))
    return shlex.split(shlex.split(line[len("ARGS=") :])[0])


def ids(cases):
    return [case["name"] for case in cases]


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=ids(CASES))
def test_node_exporter_listens_where_the_inventory_says(index, case):
    assert f"--web.listen-address={case['listen']}" in args(index)
    has_web_config = "--web.config.file=/etc/prometheus/node-exporter-web.yml" in args(index)
    assert has_web_config == case["web_config"]
    assert yaml.safe_load(text(f"listen-{index}"))["error"] == ""


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=ids(CASES))
def test_the_monitoring_role_scrapes_it_there_with_the_password_file(index, case):
    jobs = yaml.safe_load("scrape_configs:\n" + text(f"scrape-{index}"))["scrape_configs"]
    files = {entry["name"]: entry["groups"] for entry in yaml.safe_load(text(f"files-{index}"))}
    if case["web_config"]:
        keyed = next(job for job in jobs if job["job_name"] == "node_gpu1")
        user = case["vars"].get("node_metrics_basic_auth_user", "prometheus")
        assert keyed["basic_auth"] == {
            "username": user, "password_file": "/etc/prometheus/inferops/secrets/node_gpu1.password",
        }  # fmt: skip
        assert keyed["relabel_configs"] == [{"target_label": "job", "replacement": "node"}]
        assert files["node"] == [] and files["node_gpu1"][0]["targets"] == [case["target"]]
    else:
        assert [job["job_name"] for job in jobs if job["job_name"].startswith("node")] == ["node"]
        assert files["node"][0]["targets"] == [case["target"]]


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=ids(CASES))
def test_the_plain_password_is_in_no_rendered_file(index, case):
    for kind in ("default", "web", "scrape", "files", "listen"):
        assert PASSWORD not in text(f"{kind}-{index}"), kind


@pytest.mark.parametrize(("index", "case"), [(i, c) for i, c in enumerate(CASES) if c["web_config"]],
                         ids=ids([c for c in CASES if c["web_config"]]))  # fmt: skip
def test_the_web_config_holds_the_bcrypt_hash_of_the_password(index, case):
    users = yaml.safe_load(text(f"web-{index}"))["basic_auth_users"]
    user = case["vars"].get("node_metrics_basic_auth_user", "prometheus")
    assert list(users) == [user]
    digest = users[user]
    assert digest.startswith("$2b$10$") and len(digest) == 60
    # The same password gives the same file on the next run (a salt fixed per host): no change, no restart.
    assert text(f"web-{index}") == render_all({"again": JOBS[f"web-{index}"]})["again"]["text"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        crypt = pytest.importorskip("crypt")  # Python 3.12 and older; libxcrypt checks the hash
    assert crypt.crypt(PASSWORD, digest) == digest
    assert crypt.crypt(PASSWORD + "x", digest) != digest


@pytest.mark.parametrize(("index", "case"), list(enumerate(REFUSED)), ids=ids(REFUSED))
def test_beyond_loopback_without_the_password_is_refused_naming_the_variable(index, case):
    error = yaml.safe_load(text(f"refused-{index}"))["error"]
    assert "node_metrics_basic_auth_password" in error and "node_metrics_listen_address: 127.0.0.1" in error
    assert "not loopback" in error
    scrape = RENDERED[f"refused-scrape-{index}"]
    assert "error" in scrape and "node_metrics_basic_auth_password" in scrape["error"], scrape


NODE_EXPORTER = os.environ.get("INFEROPS_NODE_EXPORTER") or shutil.which("prometheus-node-exporter")


@pytest.mark.skipif(
    NODE_EXPORTER is None, reason="no node exporter (Debian's prometheus-node-exporter, or INFEROPS_NODE_EXPORTER)"
)
def test_a_real_node_exporter_takes_the_web_config_and_refuses_a_request_without_the_password(tmp_path):
    index = next(i for i, case in enumerate(CASES) if case["web_config"])
    (tmp_path / "web.yml").write_text(text(f"web-{index}"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", f"--web.config.file={tmp_path / 'web.yml'}",
         "--collector.disable-defaults", "--collector.textfile", f"--collector.textfile.directory={tmp_path}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"
    user = CASES[index]["vars"].get("node_metrics_basic_auth_user", "prometheus")

    def status(password=None):
        request = urllib.request.Request(url)
        if password is not None:
            request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    try:
        for _attempt in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        assert status() == 401
        assert status("not-the-password") == 401
        assert status(PASSWORD) == 200
    finally:
        process.terminate()
        process.wait(timeout=10)
