"""The tests talk to a running server whose address ASKUSER_ADDR gives (`host:port`), started with
tests/conformance/agents.toml; clients/python/conformance.sh runs them that way."""

import os

import pytest

from askuser_client import AskUserClient


@pytest.fixture
def client():
    address = os.environ.get("ASKUSER_ADDR")
    if not address:
        pytest.fail("set ASKUSER_ADDR to the host:port of a server run with tests/conformance/agents.toml")
    with AskUserClient(address) as client:
        yield client
