"""tests/bin/molecule-excerpt: the lines CI shows of a failed scenario name the task that failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tests" / "bin" / "molecule-excerpt"
CASES = yaml.safe_load((Path(__file__).with_name("molecule_excerpt_cases.yml")).read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_excerpt_names_the_failure(case: dict, tmp_path: Path) -> None:
    log = tmp_path / "scenario.log"
    log.write_text(case["log"])
    out = subprocess.run([sys.executable, str(SCRIPT), str(log)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("== why scenario failed")
    for text in case["shows"]:
        assert text in out
    for text in case["hides"]:
        assert text not in out
    assert len(out.splitlines()) <= 31


@pytest.mark.parametrize("path", ["", "missing.log"])
def test_a_job_without_a_log_gets_an_excerpt_not_a_traceback(path: str, tmp_path: Path) -> None:
    # run-stages asks for an excerpt of every failed job, also of one that failed before it wrote a log
    # (a failed input); an empty path is the current directory.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), path], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
