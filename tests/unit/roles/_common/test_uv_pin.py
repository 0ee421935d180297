"""uv in each role's tools environment: a pinned release installed with its hash required (issue 28).

The data (roles/_common/vars/main.yml, _common_uv_wheels, from PyPI's JSON) covers every role's default
*_uv_version; the hashes and the requirement line the install writes are rendered with the role's own variables
and Ansible's Templar (cases: uv_pin_cases.yml); pip installs from that line only a wheel of a listed hash.
pip runs again only when the tools environment's `uv --version` does not name the pinned release.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "units"))
from unit_render import render_all

ROOT = Path(__file__).resolve().parents[4]
CASES = yaml.safe_load((Path(__file__).parent / "uv_pin_cases.yml").read_text())
WHEELS = yaml.safe_load((ROOT / "roles/_common/vars/main.yml").read_text())["_common_uv_wheels"]
CALLERS = ("vllm", "ray", "gateway")


def lifecycle(**values):
    base = {"install_dir": "/opt/inferops-test", "python": "/usr/bin/python3"}
    return dict(base, **values)


JOBS = {
    f"sha-{index}": (
        "_common",
        "expr:{{ _common_uv_sha256 | to_json }}",
        {"_common_lifecycle": lifecycle(**case["lifecycle"])},
    )
    for index, case in enumerate(CASES)
}
JOBS.update(
    {
        f"caller-{role}": (
            role,
            "expr:{{ {'version': _%s_lifecycle['uv_version'], 'sha256': _%s_lifecycle['uv_sha256'],"
            " 'vars': [_%s_lifecycle['uv_version_var'], _%s_lifecycle['uv_sha256_var']]} | to_json }}" % ((role,) * 4),
            {},
        )
        for role in CALLERS
    }
)
RENDERED = render_all(JOBS)


def rendered(key):
    assert "text" in RENDERED[key], RENDERED[key].get("error")
    return json.loads(RENDERED[key]["text"])


def test_the_data_has_the_linux_wheels_of_each_release():
    for version, wheels in WHEELS.items():
        assert any("x86_64" in name for name in wheels) and any("aarch64" in name for name in wheels), version
        for name, sha256 in wheels.items():
            assert name.startswith(f"uv-{version}-") and name.endswith(".whl"), name
            assert re.fullmatch(r"[0-9a-f]{64}", sha256), name


@pytest.mark.parametrize("role", CALLERS)
def test_every_callers_default_release_has_hashes(role):
    found = rendered(f"caller-{role}")
    defaults = yaml.safe_load((ROOT / f"roles/{role}/defaults/main.yml").read_text())
    assert found["version"] == defaults[f"{role}_uv_version"] and str(found["version"]) in WHEELS
    assert found["sha256"] == [] and found["vars"] == [f"{role}_uv_version", f"{role}_uv_sha256"]


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=[case["name"] for case in CASES])
def test_hashes_for_a_lifecycle(index, case):
    expected = (
        list(WHEELS[str(case["lifecycle"]["uv_version"])].values()) if case["sha256"] == "data" else case["sha256"]
    )
    assert rendered(f"sha-{index}") == expected


def fake_uv_wheel(directory: Path) -> Path:
    """A wheel named uv 0.13.9 (not uv: a stand-in, so that the test needs no network)."""
    dist = "uv-0.13.9.dist-info"
    files = {
        "uv_stand_in.py": "",
        f"{dist}/METADATA": "Metadata-Version: 2.1\nName: uv\nVersion: 0.13.9\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: inferops-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/RECORD": "",
    }
    wheel = directory / "uv-0.13.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@pytest.mark.skipif(importlib.util.find_spec("pip") is None, reason="pip is not in the toolchain")
def test_pip_installs_only_a_wheel_of_a_pinned_hash(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    stand_in = hashlib.sha256(fake_uv_wheel(wheels).read_bytes()).hexdigest()
    lines = render_all(
        {
            name: (
                "_common",
                "expr:{{ _common_uv_requirement }}",
                {"_common_lifecycle": lifecycle(uv_version="0.13.9", uv_sha256=sha)},
            )
            for name, sha in (("pinned", []), ("stand-in", [stand_in]))
        }
    )

    def install(name):
        requirements = tmp_path / f"{name}.txt"
        requirements.write_text(lines[name]["text"] + "\n")
        argv = [sys.executable, "-m", "pip", "install", "--isolated", "--no-index", "--find-links", str(wheels)]
        argv += ["--require-hashes", "--no-deps", "--target", str(tmp_path / name), "-r", str(requirements)]
        return subprocess.run(argv, capture_output=True, text=True, check=False)

    # The collection's hashes are PyPI's uv wheels: the stand-in's bytes are refused.
    refused = install("pinned")
    assert refused.returncode != 0 and "DO NOT MATCH THE HASHES" in refused.stderr
    assert not (tmp_path / "pinned" / "uv_stand_in.py").exists()
    # The same line with the stand-in's hash installs it.
    accepted = install("stand-in")
    assert accepted.returncode == 0, accepted.stderr
    assert (tmp_path / "stand-in" / "uv_stand_in.py").exists()


def uv_install_condition() -> str:
    tasks = yaml.safe_load((ROOT / "roles/_common/tasks/install.yml").read_text())
    return next(t for t in tasks if t["name"].startswith("Install uv into its tools environment"))["when"]


# (what `uv --version` printed, its exit status) -> whether pip installs uv 0.13.9 again
UV_FOUND = {
    "the pinned release": ({"rc": 0, "stdout": "uv 0.13.9 (x86_64-unknown-linux-gnu)"}, False),
    "the pinned release, no build line": ({"rc": 0, "stdout": "uv 0.13.9"}, False),
    "another release": ({"rc": 0, "stdout": "uv 0.13.10 (x86_64-unknown-linux-gnu)"}, True),
    "a release the pin starts with": ({"rc": 0, "stdout": "uv 0.13.9.1"}, True),
    "no uv yet": ({"rc": 2, "msg": "[Errno 2] No such file or directory"}, True),
    "uv that prints nothing": ({"rc": 1, "stdout": ""}, True),
}
UV_CONDITION = render_all(
    {
        name: (
            "_common",
            "expr:{{ (" + uv_install_condition() + ") | to_json }}",
            {"_common_lifecycle": lifecycle(uv_version="0.13.9"), "__common_uv_found": found},
        )
        for name, (found, _install) in UV_FOUND.items()
    }
)


@pytest.mark.parametrize("name", UV_FOUND)
def test_pip_installs_uv_unless_the_tools_environment_has_the_pinned_release(name):
    assert "text" in UV_CONDITION[name], UV_CONDITION[name].get("error")
    assert json.loads(UV_CONDITION[name]["text"]) is UV_FOUND[name][1]
