"""Fixtures of the roles' real-run tests (ansible-playbook on localhost, as root)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from real_run import RUN_ENV, Runs

ROOT = Path(__file__).resolve().parents[3]


def _root_dirs(made: list):
    def make(prefix: str) -> Path:
        base = ROOT / "build"
        base.mkdir(exist_ok=True)
        for part in [base, *base.parents]:
            info = part.stat()
            if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                pytest.skip(f"{part} is not root's alone: root_state would refuse every path under it")
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        path.chmod(0o755)
        made.append(path)
        return path

    return make


@pytest.fixture
def root_dir():
    """root_dir(prefix): a new directory under build/ on a path root owns and no one else may write (root_state,
    which the shared lifecycle runs, checks every component); removed after the test. Skips where the checkout's
    path is not root's alone."""
    made = []
    yield _root_dirs(made)
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def root_dir_module():
    """As root_dir, for the cases of a module that run in one ansible-playbook: removed after the module."""
    made = []
    yield _root_dirs(made)
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def _env(tmp_path: Path) -> dict:
    collections = Path(os.environ.get("INFEROPS_COLLECTIONS", ROOT / "build" / "collections"))
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
                ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
                NO_COLOR="1", **RUN_ENV)  # fmt: skip


@pytest.fixture
def playbook(tmp_path):
    """playbook(text, extra_vars): runs ansible-playbook on localhost (local connection, this Python) with the
    checkout's collection and the roles under tmp_path/roles; returns the completed process."""

    def run(text: str, extra_vars: dict) -> subprocess.CompletedProcess:
        path = tmp_path / "play.yml"
        path.write_text(text)
        extra = tmp_path / "vars.json"
        extra.write_text(json.dumps({**extra_vars, "ansible_python_interpreter": sys.executable}))
        argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(path),
                "-e", f"@{extra}"]  # fmt: skip
        return subprocess.run(argv, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, check=False)

    return run


@pytest.fixture
def playbook_runs(tmp_path):
    """playbook_runs(count): ``count`` runs of the role tmp_path/roles/caller on localhost, one after another in one
    ansible-playbook (real_run.Runs: ``.run(variables)`` returns each run's completed process); stopped after."""
    started = []

    def start(count: int) -> Runs:
        argv = [str(Path(sys.executable).parent / "ansible-playbook")]
        env = dict(_env(tmp_path), ANSIBLE_CALLBACK_RESULT_FORMAT="json")
        started.append(Runs(tmp_path / "runs", count, argv, env, ROOT))
        return started[-1]

    yield start
    for runs in started:
        runs.close()
