"""tests/bin/ansible-test-pip-bootstrap: the pip it puts in a sanity venv hands ansible-test's installs and
uninstalls to uv (with the environment's TLS settings, bytecode compiled) and leaves every other command to pip.

A stand-in pip wheel (pip itself cannot be downloaded here) and a stand-in uv that records its arguments."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tests" / "bin" / "ansible-test-pip-bootstrap"
UV = """#!/bin/sh
printf '%s\\n' "$*" >>"$UV_CALLS"
printf 'SSL_CERT_FILE=%s\\n' "$SSL_CERT_FILE" >>"$UV_CALLS"
"""

# pip's own command line in the stand-in wheel: it echoes what it was asked.
PIP_CLI = "import sys\n\ndef main():\n    print('pip', *sys.argv[1:])\n    return 0\n"


def pip_version() -> str:
    pytest.importorskip("ansible_test")
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import types, ansible_test._internal.python_requirements as r; "
            "print(r.get_venv_packages(types.SimpleNamespace(version='3.12'))['pip'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.strip()


@pytest.fixture
def sanity_venv(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A venv bootstrapped as ansible-test does it, with the generated script; the environment to run it in."""
    version = pip_version()
    home = tmp_path / "home"
    cache = home / ".ansible" / "test" / "cache"
    wheel_dir = cache / f"pip-{version}"
    wheel_dir.mkdir(parents=True)
    with zipfile.ZipFile(wheel_dir / f"pip-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr("pip/__init__.py", "")
        wheel.writestr("pip/__main__.py", "raise SystemExit('the wheel entry point ran')\n")
        wheel.writestr("pip/_internal/__init__.py", "")
        wheel.writestr("pip/_internal/cli/__init__.py", "")
        wheel.writestr("pip/_internal/cli/main.py", PIP_CLI)
        wheel.writestr(f"pip-{version}.dist-info/METADATA", f"Name: pip\nVersion: {version}\n")
        wheel.writestr(f"pip-{version}.dist-info/RECORD", "")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(UV)
    (bin_dir / "uv").chmod(0o755)
    env = {
        "HOME": str(home),
        # The stand-in uv first, then this Python's directory (its `python`, which imports ansible_test).
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "SSL_CERT_FILE": "/etc/ssl/certs/a-proxy-ca.crt",
    }
    subprocess.run([str(SCRIPT)], env=env, check=True, capture_output=True)
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    get_pip = cache / f"get_pip_{version.replace('.', '_')}.py"
    subprocess.run([str(python), str(get_pip), f"pip=={version}", "--no-setuptools", "--no-wheel"], check=True, env=env)
    # ansible-test runs pip with HOME and PATH only: the TLS setting must come from the script.
    run_env = {"HOME": env["HOME"], "PATH": env["PATH"], "UV_CALLS": str(tmp_path / "uv-calls")}
    return python, run_env


def pip(python: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", *args], env=env, capture_output=True, text=True, check=True)


def test_installs_and_uninstalls_go_to_uv_with_the_environments_tls_and_bytecode(sanity_venv) -> None:
    python, env = sanity_venv
    pip(python, env, "install", "--disable-pip-version-check", "-r", "requirements/sanity.pylint.txt", "-c", "c.txt")
    pip(python, env, "uninstall", "-y", "--disable-pip-version-check", "pip")
    calls = Path(env["UV_CALLS"]).read_text().splitlines()
    assert calls == [
        f"pip install --python {python} -r requirements/sanity.pylint.txt -c c.txt --compile-bytecode",
        "SSL_CERT_FILE=/etc/ssl/certs/a-proxy-ca.crt",
        f"pip uninstall --python {python} pip",
        "SSL_CERT_FILE=/etc/ssl/certs/a-proxy-ca.crt",
    ]


def test_other_commands_are_pips_own(sanity_venv) -> None:
    python, env = sanity_venv
    assert pip(python, env, "-V").stdout.strip() == "pip -V"
    assert not Path(env["UV_CALLS"]).exists()


def test_the_installer_is_recorded_so_that_uninstalling_pip_removes_its_dist_info(sanity_venv) -> None:
    python = sanity_venv[0]
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (record,) = Path(site).glob("pip-*.dist-info/RECORD")
    assert record.read_text().splitlines() == [f"{record.parent.name}/INSTALLER,,"]
