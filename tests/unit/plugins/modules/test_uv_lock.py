"""inferops.llm.uv_lock and the install from its lock (issue 28, part 3): two wheels of a find-links directory
locked with hashes by the module the roles run on the controller, installed with the command the role runs
on a host (uv pip sync --require-hashes); a tampered wheel is refused. No network: --no-index."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.module_utils._core import uv_lock
from ansible_collections.inferops.llm.plugins.modules import uv_lock as uv_lock_module

UV = uv_lock_module.find_uv()
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
needs_uv = pytest.mark.skipif(UV is None, reason="uv is not installed beside the toolchain (make venv installs it)")


def run_module(capsys, **args):
    def main():
        module = AnsibleModule(argument_spec=uv_lock_module.ARGUMENT_SPEC, supports_check_mode=True)
        module.exit_json(**uv_lock_module.run(module))

    with patch_module_args(args), pytest.raises(SystemExit):
        main()
    return json.loads(capsys.readouterr().out)


def write_wheel(directory, name, version, requires=(), payload="VALUE = 1\n"):
    """A pure-Python wheel written as the zip it is: one module, METADATA, WHEEL and RECORD."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": payload,
        f"{dist}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {item}\n" for item in requires),
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: inferops-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture(name="wheels")
def fixture_wheels(tmp_path):
    directory = tmp_path / "wheels"
    directory.mkdir()
    write_wheel(directory, "inferops_lock_app", "1.0.0", requires=["inferops_lock_dep>=2"])
    write_wheel(directory, "inferops_lock_dep", "2.0.0")
    write_wheel(directory, "inferops_lock_dep", "1.0.0")
    return directory


def lock_args(tmp_path, wheels, **extra):
    args = {
        "dir": str(tmp_path / "locks"),
        "dir_var": "vllm_lock_dir",
        "package": "inferops_lock_app",
        "version": "1.0.0",
        "requirements": ["inferops_lock_app==1.0.0"],
        "find_links": [str(wheels)],
        "python": PYTHON,
        "platform": "x86_64-manylinux_2_36",
        "uv": UV or "",
    }
    args.update(extra)
    return args


def environment(target):
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(target)], check=True)
    return target


def sync(target, lock, wheels):
    """The host's install (roles/_common/tasks/install.yml), with a cache of the environment's own (a host
    that never saw the good wheel)."""
    argv = uv_lock.sync_argv(UV, str(target / "bin" / "python"), lock, "", [str(wheels)], compile_bytecode=True)
    env = dict(os.environ, UV_CACHE_DIR=str(target) + "-uv-cache", UV_PYTHON_DOWNLOADS="never", NO_COLOR="1")
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)


@needs_uv
def test_lock_installs_with_hashes_and_refuses_a_tampered_wheel(tmp_path, capsys, wheels):
    made = run_module(capsys, **lock_args(tmp_path, wheels))
    assert made["changed"] and made["made"]
    text = pathlib.Path(made["path"]).read_text(encoding="utf-8")
    assert uv_lock.read_key(text) == made["key"]
    # Both distributions pinned, each with the sha256 of its wheel; the dependency at its newest fitting version.
    for wheel in ("inferops_lock_app-1.0.0-py3-none-any.whl", "inferops_lock_dep-2.0.0-py3-none-any.whl"):
        assert "sha256:" + hashlib.sha256((wheels / wheel).read_bytes()).hexdigest() in text
    assert "inferops-lock-dep==2.0.0" in text and "1.0.0 \\" not in text.split("inferops-lock-dep")[1]

    target = environment(tmp_path / "env")
    first = sync(target, made["path"], wheels)
    assert first.returncode == 0, first.stderr
    listed = subprocess.run(
        [UV, "pip", "list", "--python", str(target / "bin" / "python"), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert {(item["name"], item["version"]) for item in json.loads(listed)} == {
        ("inferops-lock-app", "1.0.0"),
        ("inferops-lock-dep", "2.0.0"),
    }

    # Same name, same version, other bytes: what a compromised mirror or a swapped cache would serve.
    write_wheel(wheels, "inferops_lock_dep", "2.0.0", payload="VALUE = 'attacker'\n")
    fresh = environment(tmp_path / "env2")
    tampered = sync(fresh, made["path"], wheels)
    assert tampered.returncode != 0
    assert "hash" in tampered.stderr.lower() and "inferops-lock-dep" in tampered.stderr
    assert not list((fresh / "lib").glob("python*/site-packages/inferops_lock_dep.py"))


@needs_uv
def test_an_existing_lock_is_used_as_it_is(tmp_path, capsys, wheels):
    made = run_module(capsys, **lock_args(tmp_path, wheels))
    before = pathlib.Path(made["path"]).read_text(encoding="utf-8")
    # The same key a day later: the lock is not made again (the same bytes), even without uv. (A newer
    # dependency on the index changes nothing either; a changed find-links file does: the next test.)
    again = run_module(capsys, **lock_args(tmp_path, wheels, uv="/nonexistent/uv"))
    assert again["changed"] is False and again["made"] is False and again["path"] == made["path"]
    assert again["sha256"] == made["sha256"] and pathlib.Path(made["path"]).read_text(encoding="utf-8") == before


@needs_uv
def test_a_changed_find_links_file_names_a_new_lock(tmp_path, capsys, wheels):
    made = run_module(capsys, **lock_args(tmp_path, wheels))
    dep = "inferops_lock_dep-2.0.0-py3-none-any.whl"
    old_hash = hashlib.sha256((wheels / dep).read_bytes()).hexdigest()
    assert made["key"]["find_links_files"][0][dep] == old_hash
    # The wheel is rebuilt: same name and version, other bytes. The key changes, a new lock is made from the
    # wheel as it is now, and the old lock stays beside it (the change shows in the lock directory's diff).
    write_wheel(wheels, "inferops_lock_dep", "2.0.0", payload="VALUE = 2\n")
    new_hash = hashlib.sha256((wheels / dep).read_bytes()).hexdigest()
    rebuilt = run_module(capsys, **lock_args(tmp_path, wheels))
    assert rebuilt["made"] and rebuilt["path"] != made["path"] and pathlib.Path(made["path"]).exists()
    assert rebuilt["key"]["find_links_files"][0][dep] == new_hash
    text = pathlib.Path(rebuilt["path"]).read_text(encoding="utf-8")
    assert f"sha256:{new_hash}" in text and f"sha256:{old_hash}" not in text
    # An added wheel changes the key as well; the key holds each file once, by name.
    write_wheel(wheels, "inferops_lock_dep", "3.0.0")
    added = run_module(capsys, **lock_args(tmp_path, wheels))
    assert added["made"] and added["path"] not in (made["path"], rebuilt["path"])
    assert sorted(added["key"]["find_links_files"][0]) == sorted(path.name for path in wheels.iterdir())


@needs_uv
def test_a_new_pin_or_python_names_a_new_lock(tmp_path, capsys, wheels):
    first = run_module(capsys, **lock_args(tmp_path, wheels))
    other = run_module(capsys, **lock_args(tmp_path, wheels, overrides=["inferops_lock_dep==1.0.0"]))
    assert other["made"] and other["path"] != first["path"]
    assert "inferops-lock-dep==1.0.0" in pathlib.Path(other["path"]).read_text(encoding="utf-8")


def test_check_mode_makes_nothing(tmp_path, capsys, wheels):
    result = run_module(capsys, _ansible_check_mode=True, **lock_args(tmp_path, wheels))
    assert result["changed"] and result["made"] and result["sha256"] is None
    assert not (tmp_path / "locks").exists()


def test_an_edited_header_is_refused(tmp_path, capsys, wheels):
    args = lock_args(tmp_path, wheels)
    key = uv_lock.lock_key(
        args["package"],
        args["version"],
        args["requirements"],
        PYTHON,
        args["platform"],
        find_links=args["find_links"],
        find_links_hashes=uv_lock.find_links_files(args["find_links"]),
    )
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / uv_lock.lock_name(key)).write_text("# key: {}\ninferops-lock-app==1.0.0\n")
    result = run_module(capsys, **args)
    assert result["failed"] and "does not hold the key" in result["msg"]


def test_a_missing_lock_without_the_index_names_the_variable(tmp_path, capsys, wheels, monkeypatch):
    # The index is a closed port: uv's retries with backoff (3 by default) only add 10 s to the same failure.
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    args = lock_args(
        tmp_path, wheels, index_url="https://user:s3cret@127.0.0.1:9/simple", find_links=[], uv=UV or "/nonexistent/uv"
    )
    result = run_module(capsys, **args)
    assert result["failed"] and "vllm_lock_dir" in result["msg"] and str(tmp_path / "locks") in result["msg"]
    assert "s3cret" not in json.dumps(result)
    assert result["key"]["index_url"] == "https://127.0.0.1:9/simple"
