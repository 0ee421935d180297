"""known_variables.json agrees with the roles' argument specs and defaults (the unknown-variable check's data)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import KNOWN_VARIABLES, known_names

ROOT = Path(__file__).resolve().parents[5]
PREFIX = re.compile(r"(vllm|ollama|inferops)_")


def _role_options():
    roles = {}
    for spec in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = spec.parts[-3]
        names = set()
        for entry in (yaml.safe_load(spec.read_text()) or {})["argument_specs"].values():
            names |= set(entry.get("options") or {})
        defaults = spec.parents[1] / "defaults" / "main.yml"
        if defaults.exists():
            names |= set(yaml.safe_load(defaults.read_text()) or {})
        names = sorted(n for n in names if PREFIX.match(n))
        if names:
            roles[role] = names
    return roles


def test_role_options_match_the_argument_specs():
    assert KNOWN_VARIABLES["role_options"] == _role_options(), (
        "update plugins/module_utils/_plan/known_variables.json role_options"
    )


def test_every_prefixed_name_the_collection_uses_is_known():
    used = set()
    for path in [
        *(ROOT / "roles").rglob("*.yml"),
        *(ROOT / "playbooks").glob("*.yml"),
        *(ROOT / "inventories").rglob("*.yml"),
    ]:
        used |= set(re.findall(r"^\s*((?:vllm|ollama|inferops)_[a-z0-9_]+):", path.read_text(), re.MULTILINE))
    assert used - set(known_names()) == set()
