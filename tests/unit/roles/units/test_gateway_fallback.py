"""The gateway's routing config and its callback: no back-off retry for one replica, 503, drain, text chunks.

LiteLLM's config rendered from the role's own vars/main.yml (unit_render.py); the callback
(roles/gateway/files/inferops_errors.py) read without LiteLLM: its 503 classification, its drain filter
(case table gateway_drain_cases.yml) and its repair of streamed text-completion chunks, on plain dicts and
objects. The same callback in the real LiteLLM 1.109.1 proxy: the gateway Molecule scenario (verify.yml).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from script_loader import load_script
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


hook = load_script(ROOT / "roles/gateway/files/inferops_errors.py", "inferops_errors")


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


DRAIN_CASES = yaml.safe_load((Path(__file__).parent / "gateway_drain_cases.yml").read_text(encoding="utf-8"))


def deployments(ids):
    return [{"model_name": ident.rsplit("@", 1)[0], "model_info": {"id": ident}} for ident in ids]


@pytest.mark.parametrize("case", DRAIN_CASES["route"], ids=lambda case: case["name"])
def test_drained_hosts_get_no_request(case):
    asked = []

    def everyone():
        asked.append(True)
        return deployments(case["everyone"])

    args = ("m", deployments(case["healthy"]), everyone, frozenset(case["drained"]))
    if case["route"] == "Drained":
        with pytest.raises(hook.Drained, match="is drained"):
            hook.route(*args)
        assert hook.unavailable(hook.Drained("x")).startswith("every engine of it is drained")
        return
    assert [d["model_info"]["id"] for d in hook.route(*args)] == case["route"]
    # Every deployment is asked for only when draining emptied LiteLLM's candidates.
    assert bool(asked) == (
        bool(case["healthy"]) and not hook.undrained(deployments(case["healthy"]), frozenset(case["drained"]))
    )


def test_the_drain_directory_holds_one_file_per_drained_host(tmp_path):
    assert hook.drained_hosts(str(tmp_path / "missing")) == frozenset()
    (tmp_path / "gpu-1").write_text("drained\n")
    (tmp_path / ".gpu-2.tmp").write_text("")  # a file being written by a copy is not a host yet
    (tmp_path / "subdir").mkdir()
    assert hook.drained_hosts(str(tmp_path)) == frozenset({"gpu-1"})


def test_the_filter_hook_reads_the_drain_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(hook, "DRAIN_DIR", str(tmp_path))
    (tmp_path / "b").write_text("")
    kept = asyncio.run(hook.InferopsErrors().async_filter_deployments("m", deployments(["m@a", "m@b"]), messages=None))
    assert [d["model_info"]["id"] for d in kept] == ["m@a"]


def test_the_callback_and_the_shared_drain_name_the_same_drain_directory():
    named = set()
    for step in ("drain", "undrain"):
        tasks = yaml.safe_load((ROOT / f"roles/_common/tasks/{step}.yml").read_text(encoding="utf-8"))
        named |= {task["vars"]["_common_drain_dir"] for task in tasks if "_common_drain_dir" in task.get("vars", {})}
    assert named == {"/run/inferops-drain"}
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("INFEROPS_GATEWAY_DRAIN_DIR", raising=False)
        module = load_script(ROOT / "roles/gateway/files/inferops_errors.py", "inferops_errors_default")
    assert named == {module.DRAIN_DIR}


# What LiteLLM 1.109.1's TextCompletionStreamWrapper yields for vLLM's stream of "port 8101" (measured through its
# proxy): token chunks, then a finish chunk whose text is None (its CustomStreamWrapper's finish chunk has no content).
def text_chunk(text, finish_reason=None):
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": finish_reason}]}


def test_every_streamed_text_completion_chunk_has_a_string_text():
    chunks = [text_chunk("port"), text_chunk(" "), text_chunk("8101"), text_chunk(None, "length")]
    chunks.append({"object": "text_completion", "choices": [], "usage": {"total_tokens": 4}})

    async def stream():
        for chunk in chunks:
            yield chunk

    async def collect():
        generator = hook.InferopsErrors().async_post_call_streaming_iterator_hook(None, stream(), {})
        return [chunk async for chunk in generator]

    out = asyncio.run(collect())
    assert [[choice["text"] for choice in chunk["choices"]] for chunk in out] == [["port"], [" "], ["8101"], [""], []]
    assert out[3]["choices"][0]["finish_reason"] == "length"


def test_objects_are_mended_and_chat_chunks_left_alone():
    choice = SimpleNamespace(index=0, text=None, finish_reason="stop")
    assert hook.well_formed(SimpleNamespace(object="text_completion", choices=[choice])).choices[0].text == ""
    chat = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": None}}]}
    assert hook.well_formed(chat) == {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": None}}],
    }
    assert hook.well_formed("data: [DONE]") == "data: [DONE]"


def with_bases(pairs):
    return [
        {"model_info": {"id": ident}, "litellm_params": {"api_base": f"http://{host}:8000/v1"} if host else {}}
        for ident, host in pairs
    ]


class TableProbe:
    def __init__(self, refusing):
        self.refusing_hosts, self.asked = set(refusing), []

    async def refusing(self, address):
        self.asked.append(address)
        return address[0] in self.refusing_hosts


@pytest.mark.parametrize("case", DRAIN_CASES["reachable"], ids=lambda case: case["name"])
def test_engines_that_refuse_connections_get_no_request(case):
    probe = TableProbe(case["refusing"])
    kept = asyncio.run(hook.reachable(with_bases(case["deployments"]), probe))
    assert [d["model_info"]["id"] for d in kept] == case["kept"]
    # Each engine is asked once per routing decision, and never where there is no choice to make.
    assert len(probe.asked) == len(set(probe.asked))
    assert probe.asked == [] or len(case["deployments"]) > 1


def test_the_probe_tells_a_closed_port_from_an_open_one_and_asks_again_after_its_ttl():
    import socket

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: refused, as vLLM's port while it starts
    now = [100.0]
    probe = hook.Probe(ttl=1.0, timeout=2.0, clock=lambda: now[0])
    open_address, closed_address = listening.getsockname(), closed.getsockname()

    async def ask(address):
        return await probe.refusing(address)

    try:
        assert asyncio.run(ask(open_address)) is False
        assert asyncio.run(ask(closed_address)) is True
        listening.close()
        assert asyncio.run(ask(open_address)) is False  # within the TTL: the answer kept
        now[0] += 1.0
        assert asyncio.run(ask(open_address)) is True  # asked again: now closed
    finally:
        listening.close()
        closed.close()


def test_the_filter_hook_leaves_out_an_engine_whose_port_is_closed(tmp_path, monkeypatch):
    import socket

    monkeypatch.setattr(hook, "DRAIN_DIR", str(tmp_path))
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    candidates = [
        {
            "model_info": {"id": "m@a"},
            "litellm_params": {"api_base": f"http://127.0.0.1:{listening.getsockname()[1]}/v1"},
        },
        {
            "model_info": {"id": "m@b"},
            "litellm_params": {"api_base": f"http://127.0.0.1:{closed.getsockname()[1]}/v1"},
        },
    ]
    try:
        kept = asyncio.run(hook.InferopsErrors().async_filter_deployments("m", candidates, messages=None))
    finally:
        listening.close()
        closed.close()
    assert [d["model_info"]["id"] for d in kept] == ["m@a"]


@pytest.mark.parametrize(
    ("base", "address"),
    [
        ("http://gpu-1:8000/v1", ("gpu-1", 8000)),
        ("https://engine.example/v1", ("engine.example", 443)),
        ("http://10.0.0.5/v1", ("10.0.0.5", 80)),
        ("", None),
        ("http://:8000/v1", None),
        ("http://gpu-1:port/v1", None),
    ],
)
def test_the_probed_address_is_the_api_base_host_and_port(base, address):
    assert hook.endpoint({"litellm_params": {"api_base": base}}) == address
