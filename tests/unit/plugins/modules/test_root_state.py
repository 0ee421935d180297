"""inferops.llm.root_state: refuses a path another account can change, creates, takes an old snapshot over."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.modules import root_state


def run_module(capsys, start, **args):
    def main():
        module = AnsibleModule(argument_spec=root_state.ARGUMENT_SPEC, supports_check_mode=True)
        module.exit_json(**root_state.run(module, start=start))

    with patch_module_args(args), pytest.raises(SystemExit):
        main()
    return json.loads(capsys.readouterr().out)


def test_creates_then_changes_nothing(tmp_path, capsys):
    path = tmp_path / "inferops" / "rollback" / "vllm"
    first = run_module(capsys, str(tmp_path), path=str(path))
    assert first["changed"] and first["created"] == [str(path.parent.parent), str(path.parent), str(path)]
    assert oct(path.stat().st_mode & 0o777) == "0o700" and oct(path.parent.stat().st_mode & 0o777) == "0o755"
    assert run_module(capsys, str(tmp_path), path=str(path))["changed"] is False


def test_check_mode_creates_nothing(tmp_path, capsys):
    path = tmp_path / "rollback"
    assert run_module(capsys, str(tmp_path), path=str(path), _ansible_check_mode=True)["changed"] is True
    assert not path.exists()


def test_refuses_a_writable_parent_before_creating(tmp_path, capsys):
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    result = run_module(capsys, str(tmp_path), path=str(parent / "rollback"))
    assert result["failed"] and f"{parent}: directory mode 0777" in result["msg"]
    assert not (parent / "rollback").exists()


def test_takes_an_old_snapshot_over_and_removes_it(tmp_path, capsys):
    envs = tmp_path / "opt" / "envs"
    (envs / "0.31.0").mkdir(parents=True)
    old = tmp_path / "home" / "rollback"
    old.mkdir(parents=True, mode=0o700)
    (old / "secrets.env").write_text("KEY=1\n")
    (old / "secrets.env").chmod(0o600)
    (old / "unit").write_text("attacker's\n")
    (old / "unit").chmod(0o666)
    (old / "env").symlink_to(envs / "0.31.0")
    path = tmp_path / "state" / "vllm"
    result = run_module(
        capsys,
        str(tmp_path),
        path=str(path),
        legacy=str(old),
        files=["secrets.env", "unit"],
        link_root=str(envs),
    )
    assert result["adopted"] == ["secrets.env", "env"] and result["left_behind"] == ["unit: mode 0666"]
    assert (path / "secrets.env").read_text() == "KEY=1\n" and oct(
        (path / "secrets.env").stat().st_mode & 0o777
    ) == "0o600"
    assert os.readlink(path / "env") == str(envs / "0.31.0")
    assert not (path / "unit").exists() and not old.exists()
