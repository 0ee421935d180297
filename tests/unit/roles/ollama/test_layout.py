"""roles/ollama tasks/layout.yml: a host of the role's earlier layout taken over into the shared one (real runs).

Earlier releases unpacked each Ollama version into ``<install_root>/<version>`` (its archive's sha256 in
``.archive-sha256``) and kept no snapshot. A real ansible-playbook on localhost includes the role's ``layout.yml``
on such a tree: the version directories move under ``envs`` with the shared marker (so none is downloaded again),
``current`` follows the version it pointed at, and that version and its unit become the snapshot a failed gate goes
back to. A second run, and a run on a host of the shared layout, change nothing.
Root only: the files are root's and root_state accepts only a root-owned path.
"""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the layout step moves root's files (run as root)")

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Take over the earlier layout
      ansible.builtin.include_role:
        name: inferops.llm.ollama
        tasks_from: layout.yml
"""


@pytest.fixture
def host(root_dir):
    base = root_dir("test-ollama-layout-")
    install = base / "opt"
    for version, sha256 in (("0.5.0", "a" * 64), ("0.6.0", "b" * 64)):
        (install / version / "bin").mkdir(parents=True)
        (install / version / "bin" / "ollama").write_text(version)
        (install / version / ".archive-sha256").write_text(sha256 + "\n")
    (install / "current").symlink_to(install / "0.6.0")
    (base / "ollama.service").write_text("[Service]\nExecStart=/opt/ollama/current/bin/ollama serve\n")
    yield {"base": base, "install": install, "rollback": base / "rollback" / "ollama"}


def _run(playbook, host):
    result = playbook(PLAYBOOK, {
        "ollama_install_root": str(host["install"]), "_ollama_rollback_dir": str(host["rollback"]),
        "_ollama_unit_path": str(host["base"] / "ollama.service"), "ollama_arch": "x86_64",
        "__ollama_archive": "ollama-linux-amd64.tar.zst", "__ollama_sha256": "c" * 64, "ollama_version": "0.32.9",
    })  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def test_the_earlier_layout_moves_under_envs_and_its_running_version_becomes_the_state_to_go_back_to(playbook, host):
    rc, output = _run(playbook, host)
    assert rc == 0, output[-3000:]
    install, envs = host["install"], host["install"] / "envs"
    assert sorted(path.name for path in install.iterdir()) == ["current", "envs"]
    assert sorted(path.name for path in envs.iterdir()) == ["0.5.0", "0.6.0"]
    # the marker of roles/_common/tasks/install_archive.yml: the archive name of each version's release
    assert json.loads((envs / "0.5.0" / "inferops-install.json").read_text()) == {
        "archive": "ollama-linux-amd64.tgz", "sha256": "a" * 64}  # fmt: skip
    assert json.loads((envs / "0.6.0" / "inferops-install.json").read_text()) == {
        "archive": "ollama-linux-amd64.tgz", "sha256": "b" * 64}  # fmt: skip
    assert (envs / "0.6.0" / "bin" / "ollama").read_text() == "0.6.0"
    assert os.readlink(install / "current") == str(envs / "0.6.0")
    assert os.readlink(host["rollback"] / "env") == str(envs / "0.6.0")
    assert (host["rollback"] / "ollama.service").read_text() == (host["base"] / "ollama.service").read_text()
    assert not (host["rollback"] / "secrets.env").exists()
    # once taken over, nothing is left to do
    rc, output = _run(playbook, host)
    assert rc == 0 and "changed=0" in output, output[-3000:]
