"""Credentials and TLS: an API key or a token provider on every call, and an mTLS connection to the
server of scripts/conformance-servers.sh."""

import grpc
import pytest
from conftest import required_env
from google.rpc import error_details_pb2, status_pb2

from askuser_client import TLS, AskUserClient, AskUserError

# Long enough for a handshake on a busy machine; a refused connection fails well before.
CALL_TIMEOUT = 20.0

# Some of the agents of tests/conformance/agents.toml.
CONFORMANCE_AGENTS = {"free_text", "pick", "checks", "feed"}


def tls_files() -> TLS:
    return TLS.from_files(
        required_env("ASKUSER_TLS_CA"),
        required_env("ASKUSER_TLS_CLIENT_CERT"),
        required_env("ASKUSER_TLS_CLIENT_KEY"),
    )


def refusal(client: AskUserClient) -> AskUserError:
    """The error ListAgents fails with."""
    with pytest.raises(AskUserError) as refused:
        client.list_agents(timeout=CALL_TIMEOUT)
    return refused.value


def test_mtls_round_trip_with_an_api_key():
    address, key = required_env("ASKUSER_TLS_ADDR"), required_env("ASKUSER_TLS_API_KEY")
    with AskUserClient(address, api_key=key, tls=tls_files()) as client:
        agents = client.list_agents(timeout=CALL_TIMEOUT)
    assert CONFORMANCE_AGENTS <= {agent.agent_id for agent in agents}


def test_mtls_without_a_key_is_unauthenticated():
    with AskUserClient(required_env("ASKUSER_TLS_ADDR"), tls=tls_files()) as client:
        error = refusal(client)
    assert error.code == grpc.StatusCode.UNAUTHENTICATED
    assert error.reason == "MISSING_CREDENTIALS"


def test_a_server_name_override_is_checked_against_the_certificate():
    # The certificate names localhost and 127.0.0.1; an override it lacks fails the handshake.
    address, key = required_env("ASKUSER_TLS_ADDR"), required_env("ASKUSER_TLS_API_KEY")
    port = address.rsplit(":", 1)[1]
    files = tls_files()
    named = TLS(files.root_certificates, files.certificate_chain, files.private_key, server_name="localhost")
    with AskUserClient(f"127.0.0.1:{port}", api_key=key, tls=named) as client:
        assert client.list_agents(timeout=CALL_TIMEOUT)
    wrong = TLS(files.root_certificates, files.certificate_chain, files.private_key, server_name="elsewhere.test")
    with AskUserClient(address, api_key=key, tls=wrong, reconnect=None) as client:
        assert refusal(client).code == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize(
    "connection",
    ["system roots, not the server's CA", "no client certificate", "plaintext"],
)
def test_a_connection_the_server_cannot_trust_or_that_cannot_trust_it_fails(connection):
    address, key = required_env("ASKUSER_TLS_ADDR"), required_env("ASKUSER_TLS_API_KEY")
    files = tls_files()
    tls = {
        "system roots, not the server's CA": TLS(None, files.certificate_chain, files.private_key),
        "no client certificate": TLS(files.root_certificates),
        "plaintext": False,
    }[connection]
    with AskUserClient(address, api_key=key, tls=tls, reconnect=None) as client:
        assert refusal(client).code == grpc.StatusCode.UNAVAILABLE


def test_the_token_provider_is_asked_for_every_call(address):
    key = required_env("ASKUSER_API_KEY")
    calls = []

    def token() -> str:
        calls.append(len(calls))
        return key

    with AskUserClient(address, token_provider=token) as client:
        client.list_agents(timeout=CALL_TIMEOUT)
        with pytest.raises(AskUserError) as missing:
            client.get_run("no-such-run", timeout=CALL_TIMEOUT)
        with client.start_run("free_text", "hi", timeout=CALL_TIMEOUT) as run:
            assert next(run).WhichOneof("event") == "run_started"
        client.cancel_run(run.run_id, timeout=CALL_TIMEOUT)
    # The key went with each call: GetRun got as far as looking the run up.
    assert missing.value.code == grpc.StatusCode.NOT_FOUND
    assert len(calls) == 4


def test_a_wrong_key_is_unauthenticated(address):
    with AskUserClient(address, token_provider=lambda: "ak_0_not-a-key") as client:
        error = refusal(client)
    assert error.code == grpc.StatusCode.UNAUTHENTICATED
    assert error.reason == "INVALID_CREDENTIALS"


def test_api_key_and_token_provider_exclude_each_other(address):
    with pytest.raises(ValueError):
        AskUserClient(address, api_key="a", token_provider=lambda: "b")


class _RefusedCall(grpc.RpcError, grpc.Call):
    """A failed call as grpcio raises it, carrying a google.rpc.Status in its trailers."""

    def __init__(self, code: grpc.StatusCode, message: str, status: bytes) -> None:
        self._code, self._message, self._status = code, message, status

    def code(self):
        return self._code

    def details(self):
        return self._message

    def trailing_metadata(self):
        return (("grpc-status-details-bin", self._status),)

    def initial_metadata(self):
        return ()

    def is_active(self):
        return False

    def time_remaining(self):
        return None

    def cancel(self):
        return False

    def add_callback(self, callback):
        return False


def test_a_missing_scope_names_the_scope():
    # No conformance key lacks a scope the client's calls need: the refusal is built as the
    # server sends it.
    info = error_details_pb2.ErrorInfo(reason="MISSING_SCOPE", domain="askuser.dev", metadata={"scope": "runs:cancel"})
    status = status_pb2.Status(code=grpc.StatusCode.PERMISSION_DENIED.value[0], message="needs runs:cancel")
    status.details.add().Pack(info)
    refused = _RefusedCall(grpc.StatusCode.PERMISSION_DENIED, status.message, status.SerializeToString())
    error = AskUserError.from_rpc_error(refused)
    assert error.code == grpc.StatusCode.PERMISSION_DENIED
    assert (error.reason, error.metadata) == ("MISSING_SCOPE", {"scope": "runs:cancel"})
