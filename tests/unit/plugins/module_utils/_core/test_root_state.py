"""_core.root_state: which paths root may read its state back from, and what an old snapshot gives up."""

from __future__ import annotations

import os
import pathlib

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core import root_state

OTHER = 65534  # nobody: a service account
ME = os.geteuid()


def test_root_owned_path_has_no_problems(tmp_path):
    state = tmp_path / "inferops" / "rollback" / "vllm"
    state.mkdir(parents=True, mode=0o700)
    for directory in (state, state.parent, state.parent.parent):
        directory.chmod(0o755 if directory != state else 0o700)
    assert root_state.path_problems(str(state), ME, str(tmp_path)) == []
    # What does not exist yet is created by root: no problem.
    assert root_state.path_problems(str(state / "missing" / "deeper"), ME, str(tmp_path)) == []


@pytest.mark.skipif(ME != 0, reason="chown to another account needs root")
def test_a_parent_of_the_service_account_is_named(tmp_path):
    home = tmp_path / "var-lib-vllm"
    (home / "rollback").mkdir(parents=True)
    os.chown(home, OTHER, OTHER)
    problems = root_state.path_problems(str(home / "rollback"), 0, str(tmp_path))
    assert problems == [f"{home}: directory owned by uid {OTHER}, not 0"]


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o1777])
def test_group_or_other_writable_parent_is_named(tmp_path, mode):
    parent = tmp_path / "shared"
    (parent / "rollback").mkdir(parents=True)
    parent.chmod(mode)
    problems = root_state.path_problems(str(parent / "rollback"), ME, str(tmp_path))
    assert len(problems) == 1 and problems[0].startswith(f"{parent}: directory mode {mode:04o}")


def test_link_on_the_way_is_resolved_and_checked(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    (open_dir / "rollback").mkdir()
    (tmp_path / "via").symlink_to(open_dir)
    problems = root_state.path_problems(str(tmp_path / "via" / "rollback"), ME, str(tmp_path))
    assert problems == [
        f"{open_dir}: directory mode 0777 lets its group or others write it"
        f" (the resolved path of {tmp_path}/via/rollback)"
    ]


def test_relative_path_is_refused():
    assert root_state.path_problems("var/lib/x") == ["var/lib/x: not an absolute path"]


def make_snapshot(directory: pathlib.Path, envs: pathlib.Path) -> None:
    directory.mkdir(mode=0o700)
    directory.chmod(0o700)
    for name in ("serve.yaml", "vllm.service", "secrets.env"):
        (directory / name).write_text(f"{name} of root\n")
        (directory / name).chmod(0o600)
    (envs / "0.31.0").mkdir(parents=True)
    (directory / "env").symlink_to(envs / "0.31.0")


def test_adopt_takes_root_written_files_and_the_environment_link(tmp_path):
    envs = tmp_path / "opt" / "envs"
    make_snapshot(tmp_path / "old", envs)
    files, target, left = root_state.adopt(
        str(tmp_path / "old"),
        ["serve.yaml", "vllm.service", "secrets.env", "absent"],
        "env",
        str(envs),
        ME,
        str(tmp_path),
    )
    assert files == {name: f"{name} of root\n".encode() for name in ("serve.yaml", "vllm.service", "secrets.env")}
    assert target == str(envs / "0.31.0") and left == []


def test_adopt_leaves_a_swapped_in_file_link_and_foreign_target(tmp_path):
    envs = tmp_path / "opt" / "envs"
    old = tmp_path / "old"
    make_snapshot(old, envs)
    (old / "serve.yaml").unlink()
    (old / "serve.yaml").symlink_to("/etc/shadow")
    (old / "vllm.service").chmod(0o644)
    (old / "env").unlink()
    (tmp_path / "attacker-env").mkdir()
    (old / "env").symlink_to(tmp_path / "attacker-env")
    files, target, left = root_state.adopt(
        str(old), ["serve.yaml", "vllm.service", "secrets.env"], "env", str(envs), ME, str(tmp_path)
    )
    assert list(files) == ["secrets.env"] and target is None
    assert [reason.split(":")[0] for reason in left] == ["serve.yaml", "vllm.service", "env"]


@pytest.mark.skipif(ME != 0, reason="chown to another account needs root")
def test_adopt_takes_nothing_from_a_directory_the_service_account_made(tmp_path):
    envs = tmp_path / "opt" / "envs"
    old = tmp_path / "old"
    make_snapshot(old, envs)
    os.chown(old, OTHER, OTHER)
    files, target, left = root_state.adopt(str(old), ["secrets.env"], "env", str(envs), 0, str(tmp_path))
    assert (files, target) == ({}, None) and left == [f"{old}: owned by uid {OTHER} with mode 0700"]


@pytest.mark.skipif(ME != 0, reason="chown to another account needs root")
def test_adopt_leaves_a_file_of_the_service_account(tmp_path):
    envs = tmp_path / "opt" / "envs"
    old = tmp_path / "old"
    make_snapshot(old, envs)
    os.chown(old / "vllm.service", OTHER, OTHER)
    files, _link, left = root_state.adopt(str(old), ["vllm.service", "secrets.env"], "env", str(envs), 0, str(tmp_path))
    assert list(files) == ["secrets.env"] and left == ["vllm.service: not a regular file of uid 0 with one link"]


def test_adopt_refuses_a_linked_directory(tmp_path):
    envs = tmp_path / "opt" / "envs"
    make_snapshot(tmp_path / "real", envs)
    (tmp_path / "old").symlink_to(tmp_path / "real")
    files, target, left = root_state.adopt(str(tmp_path / "old"), ["secrets.env"], "env", str(envs), ME, str(tmp_path))
    assert (files, target) == ({}, None) and "not a plain directory" in left[0]


def test_adopt_of_nothing(tmp_path):
    assert root_state.adopt(str(tmp_path / "none"), ["x"], "env", str(tmp_path), ME) == ({}, None, [])
