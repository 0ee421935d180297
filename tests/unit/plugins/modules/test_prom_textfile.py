"""inferops.llm.prom_textfile: atomic, checked, idempotent textfile writes."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.modules import prom_textfile

GOOD = '# HELP inferops_x An x.\n# TYPE inferops_x gauge\ninferops_x{gpu="0"} 1.5\n'


def run_module(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        prom_textfile.main()
    return json.loads(capsys.readouterr().out)


def test_writes_once_then_changes_nothing(tmp_path, capsys):
    path = tmp_path / "inferops.prom"
    first = run_module(capsys, path=str(path), content=GOOD)
    assert first["changed"] is True and first["samples"] == 1
    assert path.read_text() == GOOD
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert run_module(capsys, path=str(path), content=GOOD)["changed"] is False
    assert sorted(os.listdir(tmp_path)) == ["inferops.prom"]  # no temporary file left behind


def test_check_mode_writes_nothing(tmp_path, capsys):
    path = tmp_path / "inferops.prom"
    assert run_module(capsys, path=str(path), content=GOOD, _ansible_check_mode=True)["changed"] is True
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("inferops_x 1\n", "no HELP and TYPE"),
        ("# HELP inferops_x An x.\n# TYPE inferops_x gauge\ninferops_x one\n", "not a sample line"),
        (GOOD.rstrip("\n"), "line break"),
    ],
)
def test_text_the_collector_would_reject_is_refused(tmp_path, capsys, content, problem):
    path = tmp_path / "inferops.prom"
    result = run_module(capsys, path=str(path), content=content)
    assert result["failed"] is True and problem in result["msg"]
    assert not path.exists()


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temporary(tmp_path, capsys, monkeypatch):
    path = tmp_path / "inferops.prom"
    path.write_text(GOOD)

    def refuse(*_args):
        raise OSError("no")

    monkeypatch.setattr(prom_textfile.os, "replace", refuse)
    with patch_module_args({"path": str(path), "content": GOOD.replace("1.5", "2")}), pytest.raises(OSError):
        prom_textfile.main()
    assert path.read_text() == GOOD
    assert sorted(os.listdir(tmp_path)) == ["inferops.prom"]
