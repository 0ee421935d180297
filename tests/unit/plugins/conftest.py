"""Shared pytest fixtures for the plugin unit tests."""

from __future__ import annotations

import os
import pathlib
import typing as t

import pytest
import yaml
from ansible.module_utils import _internal as module_utils_internal

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(autouse=True)
def module_side(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run module tests as on a managed host.

    Importing any controller code (a filter plugin, ansible.errors) marks the whole pytest process
    as the controller, after which AnsibleModule.warn() goes to the display instead of the module
    result. Modules never share a process with the controller, so undo that for tests of modules.
    """
    if request.node.path.parent.name == "modules":
        monkeypatch.setattr(module_utils_internal, "is_controller", False)


@pytest.fixture
def sysfs_tree(tmp_path: pathlib.Path) -> t.Callable[[str], str]:
    """Write the sysfs fixture tests/unit/fixtures/sysfs/<name>.yml under tmp_path; return its root.

    Lays it out as the kernel does: attribute files under devices/<path>, a bus/pci/devices/<address>
    symlink per PCI function, and module/nvidia/version when the fixture loads the driver.
    """

    def build(name: str) -> str:
        spec = yaml.safe_load((FIXTURES / "sysfs" / f"{name}.yml").read_text())
        root = tmp_path / name
        bus = root / "bus" / "pci" / "devices"
        bus.mkdir(parents=True)
        for device_path, attributes in spec["devices"].items():
            directory = root / "devices" / device_path
            directory.mkdir(parents=True)
            for attribute, value in attributes.items():
                (directory / attribute).write_text(f"{value}\n")
            os.symlink(os.path.relpath(directory, bus), bus / directory.name)
        if spec.get("nvidia_module"):
            module = root / "module" / "nvidia"
            module.mkdir(parents=True)
            (module / "version").write_text(f"{spec['nvidia_module']}\n")
        return str(root)

    return build


@pytest.fixture
def topology_sample() -> t.Callable[[str], str]:
    """The text of tests/unit/fixtures/topology/<name>."""
    return lambda name: (FIXTURES / "topology" / name).read_text(encoding="utf-8")
