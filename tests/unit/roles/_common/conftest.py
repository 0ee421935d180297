"""Fixtures of the _common role's real-run tests: a local HTTP server for a handler class (a service's fixture)."""

from __future__ import annotations

import contextlib
import http.server
import threading

import pytest


@contextlib.contextmanager
def _servers():
    with contextlib.ExitStack() as stack:

        def start(handler):
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
            stack.callback(server.server_close)
            stack.callback(server.shutdown)
            return server

        yield start


@pytest.fixture
def serve():
    """serve(handler_class) starts a threading HTTP server on a free loopback port and returns it; stopped after."""
    with _servers() as start:
        yield start


@pytest.fixture(scope="module")
def serve_module():
    """As serve, for the servers of a module's cases that run in one ansible-playbook: stopped after the module."""
    with _servers() as start:
        yield start
