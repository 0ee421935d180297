# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on a callback plugin, as on every module)
"""The inferops.llm.preload callback: the collection's controller-side plugins imported once, before the forks."""

from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: Import this collection's filter and action plugins once, in the controller's main process
version_added: 0.1.0
description:
  - ansible-core runs each task in a worker process forked from the controller's main process, and imports a
    collection's Python (its filter and action plugins and the C(module_utils) they use) from source, without
    bytecode, in every worker that needs it. This collection's filters and actions use its planning code, so
    each task that calls one compiled that code again, about 0.3 s of CPU per task.
  - When enabled, this callback imports every filter and action plugin of inferops.llm, and with them the
    planning code, once when the playbook starts; the workers forked afterwards share what was imported.
  - It prints nothing and changes no result. A plugin that fails to import is named in a warning, and the
    task that uses it then fails as it would without this callback.
requirements:
  - Enable it in ansible.cfg (C(callbacks_enabled = inferops.llm.preload)) or with
    E(ANSIBLE_CALLBACKS_ENABLED=inferops.llm.preload).
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = inferops.llm.preload
"""

import importlib
import pkgutil
import typing as t

from ansible.plugins.callback import CallbackBase

PACKAGES = ("ansible_collections.inferops.llm.plugins.filter", "ansible_collections.inferops.llm.plugins.action")


def preload(packages: t.Iterable[str] = PACKAGES) -> tuple[list[str], dict[str, str]]:
    """Import every module of each package; the modules imported and, by name, the errors of those that failed."""
    imported: list[str] = []
    failed: dict[str, str] = {}
    for package in packages:
        try:
            paths = importlib.import_module(package).__path__
        except ImportError as error:
            failed[package] = str(error)
            continue
        for info in pkgutil.iter_modules(paths):
            name = f"{package}.{info.name}"
            try:
                importlib.import_module(name)
            except Exception as error:  # pylint: disable=broad-exception-caught  # reported, the play goes on
                failed[name] = f"{type(error).__name__}: {error}"
            else:
                imported.append(name)
    return imported, failed


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "inferops.llm.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display: t.Any = None, options: t.Any = None) -> None:
        super().__init__(display=display, options=options)
        _imported, failed = preload()
        for name, error in failed.items():
            self._display.warning(f"inferops.llm.preload: {name} could not be imported ahead ({error})")
