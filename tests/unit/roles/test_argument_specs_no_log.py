"""Every role option that carries a secret has no_log in its argument spec (issue 28).

Ansible masks a no_log option's value in the role's argument validation messages; without it a vaulted key
that fails its type check is printed. An option whose name says credential must have it, unless it is listed
below with why it is not a secret.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any, Dict, Iterator, Tuple

import pytest
import yaml

ROLES = pathlib.Path(__file__).resolve().parents[3] / "roles"
SECRET_NAME = re.compile(r"(^|_)(token|key|keys|password|passwd|secret|credential)s?(_|$)", re.IGNORECASE)
NOT_SECRETS = {
    "monitoring_kv_tokens_ratio": "a ratio of KV-cache tokens",
    "nvidia_driver_cuda_repo_key": "the file name of NVIDIA's public repository key",
    "nvidia_driver_cuda_repo_key_fingerprints": "the fingerprints of NVIDIA's public repository key",
    "nvidia_driver_container_toolkit_key_url": "the URL of a public signing key",
    "nvidia_driver_container_toolkit_key_fingerprints": "the fingerprints of NVIDIA's public toolkit repository key",
    "vllm_benchmark_output_tokens": "a token count",
}


def options(specs: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Dict[str, Any]]]:
    for name, option in (specs or {}).items():
        yield prefix + name, option
        yield from options(option.get("options") or {}, f"{prefix}{name}.")


def all_options() -> Iterator[Tuple[str, str, str, Dict[str, Any]]]:
    for path in sorted(ROLES.glob("*/meta/argument_specs.yml")):
        for entry, spec in yaml.safe_load(path.read_text())["argument_specs"].items():
            for name, option in options(spec.get("options") or {}):
                yield path.parts[-3], entry, name, option


SECRET_OPTIONS = [
    (role, entry, name, option)
    for role, entry, name, option in all_options()
    if SECRET_NAME.search(name.rsplit(".", 1)[-1]) and name not in NOT_SECRETS
]


def test_the_walk_finds_the_known_secrets():
    names = {name for _role, _entry, name, _option in SECRET_OPTIONS}
    assert {"vllm_api_key", "vllm_hf_token", "gateway_master_key", "gateway_keys", "ray_auth_token"} <= names


@pytest.mark.parametrize(
    ("role", "entry", "name", "option"), SECRET_OPTIONS, ids=[f"{r}:{e}:{n}" for r, e, n, _o in SECRET_OPTIONS]
)
def test_secret_option_has_no_log(role, entry, name, option):
    assert option.get("no_log") is True, f"roles/{role}/meta/argument_specs.yml {entry}: {name} needs no_log: true"


def test_not_secrets_still_exist():
    names = {name for _role, _entry, name, _option in all_options()}
    assert set(NOT_SECRETS) <= names
