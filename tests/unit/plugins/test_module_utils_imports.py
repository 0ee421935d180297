"""plugins/module_utils imports nothing of ansible-core: the planning code is plain Python.

`make compat` relies on it: it runs the tests of everything that goes through ansible-core again under the
older supported cores and leaves out tests/unit/plugins/module_utils, whose code another core cannot change.
"""

from __future__ import annotations

import ast
from pathlib import Path

MODULE_UTILS = Path(__file__).resolve().parents[3] / "plugins" / "module_utils"


def ansible_core_imports(source: str) -> list[str]:
    """The modules of ansible-core (`ansible`, `ansible.*`) that a Python source imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [name for name in names if name == "ansible" or name.startswith("ansible.")]
    return found


def test_module_utils_import_no_ansible_core():
    imports = {
        str(path.relative_to(MODULE_UTILS)): ansible_core_imports(path.read_text())
        for path in sorted(MODULE_UTILS.rglob("*.py"))
    }
    assert len(imports) > 20
    assert {path: names for path, names in imports.items() if names} == {}


def test_the_scanner_finds_an_import():
    assert ansible_core_imports("from ansible.module_utils.basic import AnsibleModule\nimport json\n") == [
        "ansible.module_utils.basic"
    ]
    assert ansible_core_imports("import ansible\nfrom ansible_collections.inferops.llm import x\n") == ["ansible"]
