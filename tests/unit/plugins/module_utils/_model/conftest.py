"""The Hub test server as a fixture of every test of this folder (test_hub.py, test_gguf.py)."""

from __future__ import annotations

import pytest

from .hub_server import HubServer


@pytest.fixture
def hub(monkeypatch):
    constants = pytest.importorskip("huggingface_hub.constants")
    # The unit tests' process runs with HF_HUB_OFFLINE=1 (tests/unit/conftest.py), which huggingface_hub read at
    # import; the resolver decides offline from the environment it is given, so these tests turn it off.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    server = HubServer().start()
    yield server
    server.stop()
