"""Load a Python file that is no importable module as one, for its tests: a script a role copies to a host
(roles/*/files), a developer tool of tests/bin (no .py suffix), a generator of tests/golden or tests/accuracy, a
Molecule fixture. Importable from every test module: tests/unit/conftest.py puts tests/unit on sys.path."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path | str, name: str, monkeypatch=None) -> ModuleType:
    """Execute the file at ``path`` as a new module named ``name`` and return it. With ``monkeypatch`` (pytest's),
    the module is in sys.modules under ``name`` while it runs and until the test ends (a dataclass looks its module
    up there)."""
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    if monkeypatch is not None:
        monkeypatch.setitem(sys.modules, name, module)
    loader.exec_module(module)
    return module
