"""_core.files: one atomic write for the controller's reports and the host's metrics file."""

from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.files import write_if_changed


def test_writes_a_new_file_with_its_mode_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "report.json"
    assert write_if_changed(str(path), "{}\n", 0o600) is True
    assert path.read_text() == "{}\n"
    assert os.stat(path).st_mode & 0o7777 == 0o600
    assert os.listdir(tmp_path) == ["report.json"]


def test_same_content_and_mode_is_no_change(tmp_path):
    path = tmp_path / "report.json"
    write_if_changed(str(path), "a\n", 0o644)
    before = os.stat(path).st_ino
    assert write_if_changed(str(path), "a\n", 0o644) is False
    assert os.stat(path).st_ino == before


def test_only_the_mode_differs_is_fixed_in_place(tmp_path):
    path = tmp_path / "report.json"
    write_if_changed(str(path), "a\n", 0o644)
    before = os.stat(path).st_ino
    assert write_if_changed(str(path), "a\n", 0o600) is True
    assert os.stat(path).st_ino == before and os.stat(path).st_mode & 0o7777 == 0o600


def test_new_content_replaces_the_file_in_one_rename(tmp_path):
    path = tmp_path / "report.json"
    write_if_changed(str(path), "a\n", 0o644)
    before = os.stat(path).st_ino
    assert write_if_changed(str(path), "b\n", 0o644) is True
    assert path.read_text() == "b\n" and os.stat(path).st_ino != before


def test_a_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "metrics.prom"
    path.write_text("old\n")

    def refuse(*_args):
        raise OSError("no")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_if_changed(str(path), "new\n", 0o644)
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["metrics.prom"]
