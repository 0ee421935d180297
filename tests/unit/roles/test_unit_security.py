"""Every unit the collection installs or overrides scores at most its recorded figure, and at most 2.5, in
`systemd-analyze security --offline=true` (issue 28).

Each template is rendered with Jinja2 as Ansible would, with the values of unit_security_cases.yml (Ansible's
`comment`, `combine` and `bool` filters stubbed, the collection's `systemd_environment` filter itself); a
drop-in is analysed over Debian's own unit (tests/unit/fixtures/systemd). The figures are the table
"Measured scores" of docs/security.md, so that the documentation and the test cannot disagree.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.inferops.llm.plugins.filter.systemd import systemd_environment, systemd_restart

ROOT = Path(__file__).resolve().parents[3]
CASES = yaml.safe_load((Path(__file__).parent / "unit_security_cases.yml").read_text())["cases"]
FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "systemd"
LIMIT = 2.5
ANALYZE = shutil.which("systemd-analyze")

ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
ENV.filters["comment"] = lambda text: f"# {text}"
ENV.filters["combine"] = lambda *maps: {key: value for mapping in maps for key, value in mapping.items()}
ENV.filters["bool"] = lambda value: value if isinstance(value, bool) else str(value).lower() in ("true", "1", "yes")
ENV.filters["inferops.llm.systemd_environment"] = systemd_environment
ENV.filters["inferops.llm.systemd_restart"] = systemd_restart


def recorded_scores() -> dict[str, float]:
    """The table under "## Measured scores" in docs/security.md: | case | template | score | ..."""
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## Measured scores", 1)[1].split("\n## ", 1)[0]
    scores = {}
    for row in re.findall(r"^\|(.+)\|\s*$", section, re.MULTILINE):
        cells = [cell.strip().strip("`") for cell in row.split("|")]
        if re.fullmatch(r"\d+\.\d", cells[2]):
            scores[cells[0]] = float(cells[2])
    return scores


def render(case: dict) -> str:
    return ENV.from_string((ROOT / case["template"]).read_text()).render(case["context"])


def exposure(case: dict, tmp_path: Path) -> tuple[float, str]:
    root = tmp_path / "root"
    system = root / "etc" / "systemd" / "system"
    system.mkdir(parents=True)
    if case.get("base"):
        vendor = root / "lib" / "systemd" / "system"
        vendor.mkdir(parents=True)
        shutil.copy(FIXTURES / case["base"], vendor / case["unit"])
        (system / f"{case['unit']}.d").mkdir()
        (system / f"{case['unit']}.d" / "inferops-hardening.conf").write_text(render(case))
    else:
        (system / case["unit"]).write_text(render(case))
    result = subprocess.run(
        [ANALYZE, "security", "--offline=true", f"--root={root}", "--no-pager", case["unit"]],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    return float(found.group(1)), result.stdout


def test_every_case_has_a_recorded_score_within_the_limit():
    scores = recorded_scores()
    assert sorted(scores) == sorted(case["name"] for case in CASES)
    assert all(score <= LIMIT for score in scores.values()), scores


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed (Debian package systemd)")
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_unit_scores_at_most_its_recorded_figure(case, tmp_path):
    score, report = exposure(case, tmp_path)
    recorded = recorded_scores()[case["name"]]
    assert score <= recorded, f"{case['name']}: {score} > {recorded} recorded in docs/security.md\n{report}"
