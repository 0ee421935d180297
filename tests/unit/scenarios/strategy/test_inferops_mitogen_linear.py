"""extensions/molecule/strategy/inferops_mitogen_linear.py: Molecule's Docker connection goes to Mitogen's `docker`
transport, the controller's local connection stays with ansible-core (Mitogen's async_status broke Molecule's destroy),
and every other name reaches Mitogen's own wrapper unchanged. A Mitogen release that renames what the plugin patches
fails here, not in the middle of a scenario."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("ansible_mitogen")
PLUGIN = Path(__file__).resolve().parents[4] / "extensions" / "molecule" / "strategy" / "inferops_mitogen_linear.py"


@pytest.fixture(scope="module")
def plugin():
    spec = importlib.util.spec_from_file_location("inferops_mitogen_linear", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docker_connection_is_redirected_and_the_local_one_is_not(plugin):
    from ansible_mitogen import strategy

    assert "community.docker.docker" in strategy.REDIRECTED_CONNECTION_PLUGINS
    assert "docker" in strategy.REDIRECTED_CONNECTION_PLUGINS
    assert "local" not in strategy.REDIRECTED_CONNECTION_PLUGINS
    assert strategy.wrap_connection_loader__get_with_context is plugin.get_with_context


@pytest.mark.parametrize(
    ("name", "passed"), [("community.docker.docker", "docker"), ("ssh", "ssh"), ("local", "local")]
)
def test_the_wrapper_hands_mitogen_the_short_name(plugin, monkeypatch, name, passed):
    calls = []
    monkeypatch.setattr(plugin, "UPSTREAM_GET", lambda *args, **kwargs: calls.append((args, kwargs)) or "conn")
    assert plugin.get_with_context(name, "play-context", new_stdin=None) == "conn"
    assert calls == [((passed, "play-context"), {"new_stdin": None})]


def test_the_strategy_is_mitogens_linear(plugin):
    from ansible_mitogen import strategy

    assert issubclass(plugin.StrategyModule, strategy.StrategyMixin)
    assert plugin.StrategyModule.__mro__[2].__module__.endswith("linear")
