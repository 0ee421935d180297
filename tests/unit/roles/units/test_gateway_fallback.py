"""The gateway's routing config: no back-off retry for a model with one replica, the 503 hook registered.

LiteLLM's config rendered from the role's own vars/main.yml (unit_render.py); the hook's classification
(roles/gateway/files/inferops_errors.py) read without LiteLLM.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from unit_render import ROOT, render_all


def entry(name, host):
    return {
        "model_name": name,
        "litellm_params": {"model": "hosted_vllm/" + name, "api_base": f"http://{host}:8000/v1"},
    }


# Qwen/Qwen3-8B on two hosts (and its profile on both); tiny/model on one host, with a profile.
MODEL_LIST = [entry("Qwen/Qwen3-8B", "a"), entry("Qwen/Qwen3-8B", "b"), entry("qwen-coding", "a"),
              entry("qwen-coding", "b"), entry("tiny/model", "c"), entry("tiny-greedy", "c")]  # fmt: skip
PLAN = {"model_list": MODEL_LIST, "routes": [], "profiles": []}
RENDERED = render_all({"config": ("gateway", "expr:{{ _gateway_config | to_json }}", {"__gateway_plan": PLAN})})


def config():
    assert "text" in RENDERED["config"], RENDERED["config"].get("error")
    return json.loads(RENDERED["config"]["text"])


def test_a_model_with_one_replica_is_not_retried_and_one_with_two_is():
    router = config()["router_settings"]
    assert router["model_group_retry_policy"] == {
        "tiny/model": {"DefaultRetries": 0},
        "tiny-greedy": {"DefaultRetries": 0},
    }
    assert int(router["num_retries"]) == 2  # the replicated names retry on the other replica
    assert int(router["allowed_fails"]) == 1 and int(router["cooldown_time"]) == 30


def test_the_503_hook_is_registered_and_health_checks_route():
    settings = config()
    assert settings["litellm_settings"]["callbacks"] == ["inferops_errors.proxy_handler_instance"]
    assert settings["general_settings"]["enable_health_check_routing"] in (True, "True")


def _hook():
    spec = importlib.util.spec_from_file_location("inferops_errors", ROOT / "roles/gateway/files/inferops_errors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _hook()


class APIConnectionError(Exception):
    """Named as LiteLLM's (litellm.exceptions.APIConnectionError): the hook reads class names along the MRO."""


class LiteLLMConnectionSubclass(APIConnectionError):
    pass


class RouterRateLimitError(ValueError):
    pass


class BadRequestError(Exception):
    pass


class InternalServerError(Exception):
    """Named as LiteLLM's: what its proxy raised for a closed vLLM port (LiteLLM 1.109.1, measured)."""


def _raised_while_refused(message):
    try:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    except ConnectionRefusedError:
        try:
            raise InternalServerError(message)
        except InternalServerError as error:
            return error


@pytest.mark.parametrize(
    ("error", "why"),
    [
        (APIConnectionError("Connection error."), "does not accept connections"),
        (LiteLLMConnectionSubclass("x"), "does not accept connections"),
        (RouterRateLimitError("No deployments available"), "cool-down"),
        (BadRequestError("bad"), None),
        (_raised_while_refused("litellm.InternalServerError: Hosted_vllmException"), "does not accept connections"),
        (InternalServerError("Hosted_vllmException - Cannot connect to host 10.0.0.5:8000 ssl:None"), "does not"),
        (InternalServerError("the engine crashed while decoding"), None),
        (ValueError("other"), None),
    ],
)
def test_which_errors_become_503(error, why):
    found = hook.unavailable(error)
    assert (found is None) if why is None else (why in found)


def test_the_message_names_the_model():
    assert hook.message("tiny/model", "x") == "No engine serves model 'tiny/model' right now: x. Try again shortly."
