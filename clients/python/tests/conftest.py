"""The tests talk to a running server whose address ASKUSER_ADDR gives (`host:port`), started with
tests/conformance/agents.toml; clients/python/test.sh runs them that way. Calls carry
ASKUSER_API_KEY when it is set; the TLS tests need the mTLS server of scripts/conformance-servers.sh
(ASKUSER_TLS_ADDR and the files it names)."""

import os

import pytest

from askuser_client import AskUserClient


def required_env(name: str) -> str:
    """An environment variable the test cannot do without: a missing one fails the test."""
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"set {name} (scripts/conformance-servers.sh exports it)")
    return value


@pytest.fixture
def address() -> str:
    return required_env("ASKUSER_ADDR")


@pytest.fixture
def client(address):
    with AskUserClient(address, api_key=os.environ.get("ASKUSER_API_KEY") or None) as client:
        yield client
