"""known_variables.json agrees with the roles' argument specs and defaults (the unknown-variable check's data)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    KNOWN_VARIABLES,
    VARIABLE_NAME_PATTERN,
    VARIABLE_PREFIXES,
    known_names,
    validate_inputs,
)

ROOT = Path(__file__).resolve().parents[5]
PREFIX = re.compile(VARIABLE_NAME_PATTERN)


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
        used |= set(re.findall(rf"^\s*((?:{'|'.join(VARIABLE_PREFIXES)})_[a-z0-9_]+):", path.read_text(), re.MULTILINE))
    assert used - set(known_names()) == set()


def test_every_role_has_its_prefix_checked():
    """Each role's public prefix is one the unknown-variable check covers (the plan role's are plan_ options)."""
    for spec in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = spec.parts[-3]
        if role not in ("_common", "plan"):
            assert role in VARIABLE_PREFIXES, role


def test_the_plan_role_selects_the_same_names():
    text = (ROOT / "roles" / "plan" / "vars" / "main.yml").read_text()
    assert f"query('ansible.builtin.varnames', '{VARIABLE_NAME_PATTERN}')" in text


@pytest.mark.parametrize(
    "typo, meant",
    [
        ("ray_auth_tokn", "ray_auth_token"),
        ("node_metrics_textfile_dirr", "node_metrics_textfile_dir"),
        ("gateway_prot", "gateway_port"),
        ("monitoring_retension", "monitoring_retention"),
        ("nvidia_driver_branh", "nvidia_driver_branch"),
        ("model_download_max_worker", "model_download_max_workers"),
    ],
)
def test_a_typo_in_any_role_variable_is_refused_with_the_name_meant(typo, meant):
    assert meant in known_names(), meant
    variables = {"inferops_engine": "ollama", "ollama_version": "0.30.0", typo: 1}
    with pytest.raises(ValueError) as error:
        validate_inputs(variables, list(variables))
    assert f"{typo} is not a variable of inferops.llm" in str(error.value)
    assert f"did you mean {meant}?" in str(error.value)
