"""One exception class per gRPC status code, raised by the sync and the asyncio clients with the
decoded details, against the real server."""

import asyncio
import os
import socket

import grpc
import pytest

import askuser_client
from askuser_client import (
    ERROR_CLASSES,
    AskUserClient,
    AskUserError,
    DeadlineExceeded,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from askuser_client.aio import AsyncAskUserClient

STREAM_TIMEOUT = 30.0


def test_a_class_per_status_code_but_ok():
    codes = {cls.status_code for cls in ERROR_CLASSES}
    assert codes == set(grpc.StatusCode) - {grpc.StatusCode.OK}
    for cls in ERROR_CLASSES:
        assert issubclass(cls, AskUserError)
        assert getattr(askuser_client, cls.__name__) is cls
        error = AskUserError.for_code(cls.status_code, "boom", reason="R")
        assert type(error) is cls
        assert (error.code, error.message, error.reason, str(error)) == (
            cls.status_code,
            "boom",
            "R",
            f"{cls.status_code.name}: boom",
        )
    assert type(AskUserError.for_code(grpc.StatusCode.OK, "odd")) is AskUserError


def until_suspended(run):
    for frame in run:
        if frame.WhichOneof("event") == "tool_call_suspended":
            return frame.tool_call_suspended
    raise AssertionError("the run ended without a question")


def test_sync_client_raises_the_classes_with_details(client):
    with pytest.raises(NotFound) as agent:
        client.start_run("no_such_agent")
    assert agent.value.reason == "AGENT_NOT_FOUND"
    with pytest.raises(NotFound):
        client.get_run("no-such-run")

    with pytest.raises(InvalidArgument) as invalid:
        client.ask_user(" ", ["a", "a"])
    assert invalid.value.violations == invalid.value.field_violations
    assert [v.field for v in invalid.value.violations] == ["input.question", "input.options[1].label"]
    assert all(isinstance(v, FieldViolation) and v.description for v in invalid.value.violations)

    run = client.start_run("checks", "check", timeout=STREAM_TIMEOUT)
    question = until_suspended(run)
    run.close()
    list(client.resume_run(run.run_id, question.tool_call_id, selections=[], timeout=STREAM_TIMEOUT))
    with pytest.raises(FailedPrecondition) as again:
        list(client.resume_run(run.run_id, question.tool_call_id, selections=["unit"]))
    assert (again.value.reason, again.value.domain) == ("ALREADY_ANSWERED", "askuser.dev")


def test_sync_deadline_exceeded(client):
    run = client.start_run("free_text", "hi", timeout=1.0)
    until_suspended(run)
    with pytest.raises(DeadlineExceeded):
        next(run)
    with pytest.raises(DeadlineExceeded):
        list(client.watch_pending_calls(agent_ids=["no_such_agent"], timeout=0.5))


def test_unauthenticated(address):
    if not os.environ.get("ASKUSER_API_KEY"):
        pytest.skip("the server takes calls without a key")
    with AskUserClient(address) as anonymous:
        with pytest.raises(Unauthenticated) as missing:
            anonymous.list_agents()
    assert missing.value.reason == "MISSING_CREDENTIALS"

    async def wrong_key() -> Unauthenticated:
        async with AsyncAskUserClient(address, api_key="ak_wrong") as wrong:
            with pytest.raises(Unauthenticated) as invalid:
                await wrong.list_agents()
        return invalid.value

    assert asyncio.run(wrong_key()).reason == "INVALID_CREDENTIALS"


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_unavailable_from_both_clients():
    address = closed_port()
    # reconnect=None: raised at once, not retried for the timeout's 10 s.
    with AskUserClient(address, reconnect=None) as client:
        with pytest.raises(Unavailable):
            client.list_agents(timeout=10)

    async def unavailable() -> None:
        async with AsyncAskUserClient(address, reconnect=None) as client:
            with pytest.raises(Unavailable):
                await client.list_agents(timeout=10)

    asyncio.run(unavailable())
