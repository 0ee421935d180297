"""roles/vllm secrets.env: the Ray cluster's token reaches vLLM's Ray driver on the head, and only there.

Rendered with Jinja2 as Ansible would (the role's vars/main.yml expression for the token, the template),
with Ansible's `comment` and `bool` filters stubbed: the behaviour under test is the template's logic.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import yaml

ROLE = Path(__file__).resolve().parents[4] / "roles" / "vllm"
TOKEN_EXPRESSION = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["_vllm_ray_auth_token"]
ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
ENV.filters["comment"] = lambda text: f"# {text}"
ENV.filters["bool"] = lambda value: str(value).lower() in ("true", "1", "yes")
ENV.filters["default"] = jinja2.filters.do_default
TEMPLATE = ENV.from_string((ROLE / "templates" / "secrets.env.j2").read_text())

# (ray backend, vllm_ray_auth_token, the host's ray_auth_token or None, token written)
CASES = [
    (True, "", "cluster-token-1", "cluster-token-1"),
    (True, "own-token-2", "cluster-token-1", "own-token-2"),
    (True, "", None, None),
    (False, "", "cluster-token-1", None),  # no Ray backend: vLLM does not join a cluster
    (False, "own-token-2", None, None),
]


def render(backend: bool, own: str, cluster) -> str:
    context = {"vllm_ray_auth_token": own}
    if cluster is not None:
        context["ray_auth_token"] = cluster
    token = ENV.from_string(TOKEN_EXPRESSION).render(context).strip()
    return TEMPLATE.render(
        ansible_managed="managed", vllm_service_name="vllm", vllm_api_key="", vllm_hf_token="",
        vllm_hf_hub_offline=True, _vllm_ray_backend=str(backend), _vllm_ray_auth_token=token,
    )  # fmt: skip


@pytest.mark.parametrize(("backend", "own", "cluster", "written"), CASES)
def test_the_ray_token_reaches_vllm_only_on_a_ray_head(backend, own, cluster, written):
    text = render(backend, own, cluster)
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    if written is None:
        assert not [line for line in lines if line.startswith("RAY_")]
    else:
        assert lines == ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN={written}"]


@pytest.mark.parametrize(("offline", "written"), [(True, False), (False, True), ("false", True)])
def test_the_hf_token_reaches_the_engine_only_when_it_may_download(offline, written):
    text = TEMPLATE.render(
        ansible_managed="managed", vllm_service_name="vllm", vllm_api_key="k", vllm_hf_token="hf-token-3",
        vllm_hf_hub_offline=offline, _vllm_ray_backend="false", _vllm_ray_auth_token="",
    )  # fmt: skip
    assert ("HF_TOKEN=hf-token-3" in text) is written
    assert "VLLM_API_KEY=k" in text
