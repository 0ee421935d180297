"""The shape of plugins/: layers only point down, no module imports another module's underscore-private
names, no function is longer than 80 lines. A ratchet: architecture_allowlist.yml lists what was there when
the rule came (issue 23); a new violation fails, and so does a listed one that is gone (take it off the list)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Iterator, Set

import yaml

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = ROOT / "plugins"
PREFIX = "ansible_collections.inferops.llm."
ALLOWED = yaml.safe_load((Path(__file__).parent / "architecture_allowlist.yml").read_text())
MAX_FUNCTION_LINES = 80

# plugins/module_utils/<layer package> -> its layer; everything else under plugins/ (modules, filters,
# actions) sits on top. An import may point to its own layer or a lower one.
LAYERS = {"_core": 0, "_hardware": 1, "_model": 1, "_engines": 2, "_plan": 3}
TOP = 4


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int:
    parts = module.split(".")
    if parts[:2] == ["plugins", "module_utils"] and len(parts) > 2:
        return LAYERS.get(parts[2], TOP)
    return TOP


def _sources() -> Iterator[Path]:
    yield from sorted(PLUGINS.rglob("*.py"))


def _imports(tree: ast.AST) -> Iterator[ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            yield node


def violations() -> dict:
    upward: Set[str] = set()
    private: Set[str] = set()
    long_functions: Set[str] = set()
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        here = _module_name(path)
        for node in _imports(tree):
            target = node.module[len(PREFIX) :]
            if _layer(target) > _layer(here):
                upward.add(f"{here} -> {target}")
            if target != here:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.add(f"{here} <- {target}.{alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.add(f"{here}:{node.name}")
    return {"upward_imports": upward, "private_imports": private, "long_functions": long_functions}


FOUND = violations()


def _ratchet(kind: str) -> None:
    allowed = set(ALLOWED[kind] or [])
    new = sorted(FOUND[kind] - allowed)
    gone = sorted(allowed - FOUND[kind])
    assert not new, f"new {kind} (fix them; the allow-list only shrinks): {new}"
    assert not gone, f"{kind} fixed but still in architecture_allowlist.yml (remove them): {gone}"


def test_layers_only_point_down():
    _ratchet("upward_imports")


def test_no_module_imports_another_modules_private_names():
    _ratchet("private_imports")


def test_no_function_over_80_lines():
    _ratchet("long_functions")


def test_the_scanner_sees_the_tree():
    # a scanner that reads nothing would pass every ratchet above
    assert len(list(_sources())) > 50
    # (no violation is left to find in the real tree: the next test shows that the scanner finds each kind)
    assert ROOT / "plugins" / "module_utils" / "_plan" / "cluster.py" in set(_sources())


def test_the_scanner_finds_each_kind_of_violation(tmp_path, monkeypatch):
    bad = tmp_path / "plugins" / "module_utils" / "_core" / "bad.py"
    bad.parent.mkdir(parents=True)
    body = "\n".join(f"    x = {i}" for i in range(MAX_FUNCTION_LINES))
    bad.write_text(
        f"from {PREFIX}plugins.module_utils._plan.layout import ParallelDims\n"
        f"from {PREFIX}plugins.module_utils._engines.vllm.releases import _ORDERED\n"
        f"def long():\n{body}\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PLUGINS", tmp_path / "plugins")
    found = violations()
    assert found["upward_imports"] == {
        "plugins.module_utils._core.bad -> plugins.module_utils._plan.layout",
        "plugins.module_utils._core.bad -> plugins.module_utils._engines.vllm.releases",
    }
    assert found["private_imports"] == {
        "plugins.module_utils._core.bad <- plugins.module_utils._engines.vllm.releases._ORDERED"
    }
    assert found["long_functions"] == {"plugins.module_utils._core.bad:long"}
