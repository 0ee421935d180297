"""roles/_common install_archive, snapshot and prune for a release archive (the ollama role's lifecycle): real runs.

Real runs on localhost include ``tasks_from: install_archive`` (then ``snapshot``) from a caller role, as the
ollama role does, with archives built here (a ``bin/svc`` program and a library file, tar + gzip) copied
from the controller (``archive.local_path``). Checked on disk: the version directory under ``envs`` with the archive
unpacked and its marker, the ``current`` link, the snapshot's ``env`` link and unit copy (no secrets), which version
directories prune keeps, and that a kept version is used again without its archive (the path given does not exist).
Root only: the files are root's and root_state accepts only a root-owned path.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest
from real_run import shown

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the install writes root's files (run as root)")

CALLER = """
- name: Install the release archive through the shared lifecycle
  ansible.builtin.include_role:
    name: inferops.llm._common
    tasks_from: install_archive
  vars:
    _common_lifecycle: "{{ test_lifecycle }}"

- name: Keep what the caller's gate passed
  ansible.builtin.include_role:
    name: inferops.llm._common
    tasks_from: snapshot
  vars:
    _common_lifecycle: "{{ test_lifecycle }}"
  when: test_snapshot

# Shown, not written to a file: a debug runs no module on the host (a copy runs two, about 0.7 s of CPU).
- name: Report whether current moved
  ansible.builtin.debug:
    msg: "TEST-REPORT {{ {'current_changed': __common_current is changed} | to_json }}"
"""


def _archive(directory: Path, version: str, executable: bool = True) -> tuple[Path, str]:
    """A release archive as Ollama's .tgz: bin/svc and lib/svc/FILE; its path and sha256."""
    path = directory / f"svc-{version}.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text, mode in (("bin/svc", f"#!/bin/sh\necho {version}\n", 0o755 if executable else 0o644),
                                 ("lib/svc/FILE", "library\n", 0o644)):  # fmt: skip
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def host(tmp_path, root_dir):
    base = root_dir("test-install-archive-")
    (base / "etc").mkdir()
    (base / "etc" / "svc.service").write_text("[Service]\nExecStart=/opt/svc/current/bin/svc\n")
    archives = tmp_path / "archives"
    archives.mkdir()
    yield {"base": base, "install": base / "install", "rollback": base / "rollback" / "svc", "archives": archives}


def _caller(tmp_path):
    tasks = tmp_path / "roles" / "caller" / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    (tasks / "main.yml").write_text(CALLER)


def _run(tmp_path, runs, host, version, local_path, sha256, snapshot=False, keep=2):
    lifecycle = {
        "name": "Svc", "service": "svc", "version": version, "install_dir": str(host["install"]),
        "archive": {"name": "svc.tgz", "url": "http://127.0.0.1:9/never", "local_path": str(local_path),
                    "sha256": sha256},
        "executable": "bin/svc", "keep_versions": keep, "rollback_dir": str(host["rollback"]),
        "rollback_files": [{"src": str(host["base"] / "etc" / "svc.service"), "name": "svc.service",
                            "group": "root", "mode": "0644"}],
    }  # fmt: skip
    result = runs.run({"test_lifecycle": lifecycle, "test_snapshot": snapshot})
    output = result.stdout + result.stderr
    return result.returncode, output, shown(result.stdout, "TEST-REPORT")


def _envs(host) -> list[str]:
    return sorted(path.name for path in (host["install"] / "envs").iterdir())


def _install(tmp_path, runs, host, version, snapshot=True, executable=True, sha256=None):
    """Installs a fresh archive of the version (of another sha256 where given), returns rc, output, report."""
    archive, real_sha256 = _archive(host["archives"], version, executable)
    result = _run(tmp_path, runs, host, version, archive, sha256 or real_sha256, snapshot=snapshot)
    if result[0] == 0:
        os.utime(host["install"] / "envs" / version, (1000 + float(version), 1000 + float(version)))
    return result


def test_one_host_through_install_refusals_rollback_by_pin_and_prune(tmp_path, playbook_runs, host):
    """One host's life in seven runs of the shared lifecycle (each run costs about 15 s, so the cases share the host,
    and the runs are the plays of one ansible-playbook: real_run.Runs): an install, two refused changes that leave
    it as it was, a second version, the first one again from its kept directory without its archive, and a third
    that prunes to keep_versions."""
    _caller(tmp_path)
    runs = playbook_runs(7)
    env_1 = host["install"] / "envs" / "1.0"
    # 1. the archive is unpacked into its version directory and current points at it
    rc, output, report = _install(tmp_path, runs, host, "1.0")
    assert rc == 0, output[-3000:]
    assert (env_1 / "bin" / "svc").read_text() == "#!/bin/sh\necho 1.0\n"
    assert (env_1 / "bin" / "svc").stat().st_mode & stat.S_IXUSR
    assert (env_1 / "lib" / "svc" / "FILE").stat().st_uid == 0
    sha_1 = hashlib.sha256((host["archives"] / "svc-1.0.tgz").read_bytes()).hexdigest()
    assert json.loads((env_1 / "inferops-install.json").read_text()) == {"archive": "svc.tgz", "sha256": sha_1}
    assert os.readlink(host["install"] / "current") == str(env_1)
    assert report == {"current_changed": True}
    assert list((host["install"] / ".downloads").iterdir()) == []  # the archive is removed once unpacked

    # 2. an archive of another sha256 is refused before anything is unpacked
    rc, output, _report = _install(tmp_path, runs, host, "3.0", sha256=sha_1)
    assert rc != 0
    other = hashlib.sha256((host["archives"] / "svc-3.0.tgz").read_bytes()).hexdigest()
    assert f"svc.tgz has sha256 {other}, expected {sha_1}" in output
    assert "for Svc 3.0: the file is not that release." in output, output[-3000:]
    assert _envs(host) == ["1.0"]
    assert os.readlink(host["install"] / "current") == str(env_1)

    # 3. an archive without its program leaves no marker, and current where it was
    rc, output, _report = _install(tmp_path, runs, host, "2.0", executable=False)
    assert rc != 0, output[-3000:]
    assert "Check the unpacked program, bin/svc" in output
    assert not (host["install"] / "envs" / "2.0" / "inferops-install.json").exists()
    assert os.readlink(host["install"] / "current") == str(env_1)

    # 4. the same version again, whole: the partly unpacked directory is replaced
    rc, output, _report = _install(tmp_path, runs, host, "2.0")
    assert rc == 0, output[-3000:]
    assert os.readlink(host["install"] / "current") == str(host["install"] / "envs" / "2.0")

    # 5. a rollback by changing the pinned version back: the directory's marker matches, nothing is fetched
    rc, output, report = _run(tmp_path, runs, host, "1.0", host["archives"] / "gone.tgz", sha_1)
    assert rc == 0, output[-3000:]
    assert os.readlink(host["install"] / "current") == str(env_1)
    assert report == {"current_changed": True}
    # the same again changes nothing
    assert _run(tmp_path, runs, host, "1.0", host["archives"] / "gone.tgz", sha_1)[2] == {"current_changed": False}

    # 6. the snapshot keeps the unit and the version without secrets, and prune keeps keep_versions
    rc, output, _report = _install(tmp_path, runs, host, "3.0")
    assert rc == 0, output[-3000:]
    snapshot = host["rollback"]
    assert sorted(path.name for path in snapshot.iterdir()) == ["env", "svc.service"]
    assert os.readlink(snapshot / "env") == str(host["install"] / "envs" / "3.0")
    assert stat.S_IMODE(snapshot.stat().st_mode) == 0o700
    assert _envs(host) == ["2.0", "3.0"]  # keep_versions 2: the active one and the newest other
