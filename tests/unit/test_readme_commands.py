"""README.md, "Plan your own hosts": its commands run as written, by a new user, outside the clone.

The section's console blocks (``$ ...`` lines) and its inventory (the YAML block whose first line names
the file) are read from the README itself, so that the test follows the README when it changes. They run
in a temporary directory outside a fresh copy of the checkout (the files git tracks or would track:
no build/, plans/ or .venv), with a HOME of their own (no collection installed before) and no
ANSIBLE_* variables. The one substitution is the README's placeholder CLONE, the path of the clone.
Ansible is the toolchain's (the one `make venv` builds, as the README says).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Plan your own hosts"
# Commands of the section that contact the inventory's hosts: never run here (the README says so too).
CONTACTS_HOSTS = re.compile(r"ansible-playbook inferops\.llm\.site\b")


def _section(text: str) -> str:
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.M | re.S)


def _commands(section: str) -> list[str]:
    return [line[2:] for block in _blocks(section, "console") for line in block.splitlines() if line.startswith("$ ")]


def _fresh_clone(dest: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the fresh clone is made from the files git lists")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name, follow_symlinks=False)
    return dest


def _user_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MAKE")) and k != "MFLAGS"}
    (tmp_path / "home").mkdir()
    env.update(
        HOME=str(tmp_path / "home"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        NO_COLOR="1",
    )
    return env


@pytest.fixture(scope="module")
def readme_section() -> str:
    return _section((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_section_has_setup_inventory_and_plan_commands(readme_section):
    commands = _commands(readme_section)
    assert any(c.startswith("ansible-galaxy collection install") for c in commands), commands
    assert any("inferops.llm.plan" in c for c in commands), commands
    inventories = [b for b in _blocks(readme_section, "yaml") if re.match(r"# [\w.-]+\.ya?ml\b", b)]
    assert len(inventories) == 1, "one YAML block whose first line names the inventory file"


def test_readme_commands_plan_a_users_inventory_from_outside_the_clone(tmp_path, readme_section):
    clone = _fresh_clone(tmp_path / "inferops-llm")
    work = tmp_path / "my-fleet"
    work.mkdir()
    for block in _blocks(readme_section, "yaml"):
        name = re.match(r"# ([\w.-]+\.ya?ml)\b", block)
        if name:
            (work / name.group(1)).write_text(block, encoding="utf-8")
    env = _user_env(tmp_path)
    ran, outputs = [], []
    for command in _commands(readme_section):
        if CONTACTS_HOSTS.search(command):
            continue
        command = re.sub(r"\bCLONE\b", str(clone), command)
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command], cwd=work, env=env, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, f"$ {command}\n{result.stdout[-4000:]}\n{result.stderr[-3000:]}"
        ran.append(command)
        outputs.append(result.stdout)
    assert any("inferops.llm.plan" in c for c in ran)
    host_plans = sorted(p.name for p in (work / "plans").glob("*.json"))
    assert host_plans, "the plan wrote no report"
    for name in host_plans:
        plan = json.loads((work / "plans" / name).read_text())
        assert plan["host"] + ".json" == name
        assert (work / "plans" / f"{plan['host']}.md").is_file()
        assert not [c for c in plan["checks"] if c["severity"] == "error"], plan["checks"]
    printed = "\n".join(outputs)
    assert "| host " in printed and "my-4090" in printed, printed[-3000:]
    assert '"| host' not in printed  # the readable table, not a JSON-quoted list of lines
    assert "findings" in printed


def test_make_plan_takes_an_inventory(tmp_path):
    """`make plan INVENTORY=path` in a fresh clone whose toolchain exists (VENV: the one running these tests)."""
    clone = _fresh_clone(tmp_path / "inferops-llm")
    inventory = tmp_path / "inventory.yml"
    example = ROOT / "inventories" / "example" / "host_vars" / "desktop-5090.yml"
    inventory.write_text(
        json.dumps({"all": {"children": {"vllm": {"hosts": {"solo": None}}}}}) + "\n", encoding="utf-8"
    )
    (tmp_path / "host_vars").mkdir()
    shutil.copy(example, tmp_path / "host_vars" / "solo.yml")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("inferops_engine: vllm\n", encoding="utf-8")
    env = _user_env(tmp_path)
    env["VENV"] = str(Path(sys.executable).parents[1])
    result = subprocess.run(
        ["make", "-o", f"{env['VENV']}/bin/.installed", "plan", f"INVENTORY={inventory}"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    assert (clone / "plans" / "solo.json").is_file()
    assert not (clone / "plans" / "desktop-5090.json").exists(), "make plan planned the example, not INVENTORY"
