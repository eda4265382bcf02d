"""The asyncio client against the real server (tests/conformance/agents.toml): the same calls as
the sync client, as coroutines and async iterators. Each test runs its own event loop."""

import asyncio
import functools
import json
import os

import grpc
import pytest

from askuser_client import (
    AskUserError,
    Choice,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    agent_pb2,
)
from askuser_client.aio import AsyncAskUserClient, AsyncRun

STREAM_TIMEOUT = 30.0


def in_event_loop(test):
    """Runs an async test function with asyncio.run (its fixtures stay sync)."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


def connect(address: str) -> AsyncAskUserClient:
    return AsyncAskUserClient(address, api_key=os.environ.get("ASKUSER_API_KEY") or None)


def kinds(frames):
    return [frame.WhichOneof("event") for frame in frames]


async def until_suspended(run: AsyncRun):
    frames = []
    async for frame in run:
        frames.append(frame)
        if frame.WhichOneof("event") == "tool_call_suspended":
            return frames
    raise AssertionError(f"the run ended without a question: {kinds(frames)}")


@in_event_loop
async def test_start_run_answer_and_complete(address):
    async with connect(address) as client:
        run = await client.start_run("pick", "deploy", {"team": "core"}, timeout=STREAM_TIMEOUT)
        async with run:
            assert run.run_id
            frames = await until_suspended(run)
            assert kinds(frames) == ["run_started", "tool_call", "tool_call_suspended"]
            question = frames[-1].tool_call_suspended
            assert [o.label for o in question.suspend_payload.options] == ["staging", "production"]
            await run.answer_selections(question.tool_call_id, ["production"], answer_id="py-aio-1")
            rest = [frame async for frame in run]
        assert kinds(rest)[:2] == ["answer_accepted", "tool_result"]
        assert rest[0].answer_accepted.answer_id == "py-aio-1"
        assert rest[-1].run_completed.output_text == "Deploying to production"

        stored = await client.get_run(run.run_id)
        assert stored.status == agent_pb2.RUN_STATUS_COMPLETED
        assert dict(stored.metadata) == {"team": "core"}
        page = await client.list_runs(agent_id="pick", status=agent_pb2.RUN_STATUS_COMPLETED)
        assert run.run_id in [r.run_id for r in page.runs]
        assert "pick" in [agent.agent_id for agent in await client.list_agents()]


@in_event_loop
async def test_rejected_answer_is_a_frame_with_violations(address):
    async with connect(address) as client:
        async with await client.start_run("free_text", "hi", timeout=STREAM_TIMEOUT) as run:
            question = (await until_suspended(run))[-1].tool_call_suspended
            await run.answer_text(question.tool_call_id, "  ")
            rejected = (await run.__anext__()).answer_rejected
            assert rejected.reason == "INVALID_ANSWER"
            assert [v.field for v in rejected.field_violations] == ["answer.text"]
            await run.decline(question.tool_call_id, "rather not")
            assert (await run.__anext__()).answer_accepted.tool_call_id == question.tool_call_id
            result = (await run.__anext__()).tool_result
            assert result.kind == agent_pb2.TOOL_RESULT_KIND_DECLINED
        with pytest.raises(ValueError):
            run.answer(question.tool_call_id, text="closed")


@in_event_loop
async def test_resume_run_raises_the_error_classes_with_details(address):
    async with connect(address) as client:
        run = await client.start_run("checks", "check", timeout=STREAM_TIMEOUT)
        question = (await until_suspended(run))[-1].tool_call_suspended
        await run.close()

        with pytest.raises(InvalidArgument) as invalid:
            [f async for f in client.resume_run(run.run_id, question.tool_call_id, selections=["lint", "lint"])]
        assert invalid.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert invalid.value.reason == "INVALID_ANSWER"
        assert [v.field for v in invalid.value.violations] == ["answer.selections.labels[1]"]

        frames = [
            f
            async for f in client.resume_run(
                run.run_id, question.tool_call_id, selections=[], timeout=STREAM_TIMEOUT
            )
        ]
        assert frames[-1].run_completed.output_text == "Checks []"

        with pytest.raises(FailedPrecondition) as again:
            [f async for f in client.resume_run(run.run_id, question.tool_call_id, selections=["unit"])]
        assert again.value.reason == "ALREADY_ANSWERED"
        assert isinstance(again.value, AskUserError)


@in_event_loop
async def test_not_found_attach_watch_and_cancel(address):
    async with connect(address) as client:
        with pytest.raises(NotFound) as agent:
            await client.start_run("no_such_agent")
        assert agent.value.reason == "AGENT_NOT_FOUND"
        with pytest.raises(NotFound):
            await client.get_run("no-such-run")
        with pytest.raises(NotFound):
            await client.attach("no-such-run", timeout=STREAM_TIMEOUT).__anext__()

        run = await client.start_run("two_step", "release", timeout=STREAM_TIMEOUT)
        asked = await until_suspended(run)
        await run.close()
        async with client.attach(run.run_id, after_sequence=asked[1].sequence, timeout=STREAM_TIMEOUT) as again:
            assert (await again.__anext__()).sequence == asked[2].sequence
        cancelled = await client.cancel_run(run.run_id, "changed my mind")
        assert cancelled.status == agent_pb2.RUN_STATUS_CANCELLED
        watched = [
            f async for f in client.watch_run(run.run_id, after_sequence=asked[-1].sequence, timeout=STREAM_TIMEOUT)
        ]
        assert kinds(watched) == ["tool_result", "run_cancelled"]


@in_event_loop
async def test_client_tool_and_approval_verbs(address):
    async with connect(address) as client:
        async with await client.start_run("deployer", "ship api", timeout=STREAM_TIMEOUT) as run:
            question = (await until_suspended(run))[-1].tool_call_suspended
            await run.answer_text(question.tool_call_id, "production")
            status = (await until_suspended(run))[-1].tool_call_suspended
            assert status.kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL
            await run.send_output(status.tool_call_id, "healthy")
            deploy = (await until_suspended(run))[-1].tool_call_suspended
            assert deploy.kind == agent_pb2.SUSPEND_KIND_APPROVAL
            await run.edit(deploy.tool_call_id, {"service": "api", "environment": "moon"})
            assert [v.field for v in (await run.__anext__()).answer_rejected.field_violations] == [
                "answer.approval.edit.arguments_json"
            ]
            await run.approve(deploy.tool_call_id)
            again = (await until_suspended(run))[-1].tool_call_suspended
            assert (again.tool_call_id, again.kind) == (deploy.tool_call_id, agent_pb2.SUSPEND_KIND_CLIENT_TOOL)
            await run.send_output(deploy.tool_call_id, "deployed v42")
            rest = [f async for f in run]
        assert rest[-1].run_completed.output_text == "Deploy of api to production (status healthy): deployed v42"


@in_event_loop
async def test_pending_calls_feed_and_claim(address):
    async with connect(address) as client:
        feed = client.watch_pending_calls(
            agent_ids=["status_check"], kinds=[agent_pb2.SUSPEND_KIND_CLIENT_TOOL], timeout=STREAM_TIMEOUT
        )
        async with feed:
            async for event in feed:
                if event.WhichOneof("event") == "snapshot_done":
                    break
            run = await client.start_run("status_check", "check", timeout=STREAM_TIMEOUT)
            await run.close()
            async for event in feed:
                if event.WhichOneof("event") == "call_pending" and event.call_pending.run_id == run.run_id:
                    pending = event.call_pending
                    break
            assert pending.call.tool_name == "service_status"
            assert json.loads(pending.call.arguments_json) == {"service": "api"}

            await client.claim_call(run.run_id, pending.call.tool_call_id, "worker-a")
            with pytest.raises(FailedPrecondition) as taken:
                await client.claim_call(run.run_id, pending.call.tool_call_id, "worker-b")
            assert taken.value.reason == "ALREADY_CLAIMED"

            frames = [
                f
                async for f in client.resume_run(
                    run.run_id, pending.call.tool_call_id, output="healthy", timeout=STREAM_TIMEOUT
                )
            ]
            assert frames[-1].run_completed.output_text == "api is healthy"
            async for event in feed:
                if event.WhichOneof("event") == "call_settled" and event.call_settled.run_id == run.run_id:
                    break
        # Closed: iteration just stops.
        assert [event async for event in feed] == []


@in_event_loop
async def test_a_deadline_that_expires_raises_deadline_exceeded(address):
    async with connect(address) as client:
        # The run waits for an answer that never comes: the stream's deadline ends it.
        run = await client.start_run("free_text", "hi", timeout=1.0)
        await until_suspended(run)
        with pytest.raises(DeadlineExceeded) as expired:
            await run.__anext__()
        assert expired.value.code == grpc.StatusCode.DEADLINE_EXCEEDED

        feed = client.watch_pending_calls(agent_ids=["no_such_agent"], timeout=0.5)
        with pytest.raises(DeadlineExceeded):
            async for _ in feed:
                pass


@in_event_loop
async def test_ask_user_and_credentials(address):
    async with connect(address) as client:
        assert (await client.ask_user("Which?", ["a", ("b", "bee")])).startswith("[Question for user]: Which?")
        with pytest.raises(InvalidArgument) as invalid:
            await client.ask_user(" ", ["a", "a"])
        assert [v.field for v in invalid.value.violations] == ["input.question", "input.options[1].label"]
    if os.environ.get("ASKUSER_API_KEY"):
        async with AsyncAskUserClient(address) as anonymous:
            with pytest.raises(AskUserError) as refused:
                await anonymous.list_agents()
            assert refused.value.reason == "MISSING_CREDENTIALS"
        async with AsyncAskUserClient(address, token_provider=lambda: "wrong") as wrong:
            with pytest.raises(AskUserError) as refused:
                await wrong.list_agents()
            assert refused.value.reason == "INVALID_CREDENTIALS"


@in_event_loop
async def test_answer_questions_with_other_text_and_reply(address):
    async with connect(address) as client:
        async with await client.start_run("questions", "release", timeout=STREAM_TIMEOUT) as run:
            call = (await until_suspended(run))[-1].tool_call_suspended
            assert call.kind == agent_pb2.SUSPEND_KIND_FORM
            await run.answer_form(
                call.tool_call_id, {"q1": Choice(other="one zone at a time"), "q2": ["unit", "load"]}
            )
            rest = [frame async for frame in run]
        assert json.loads(rest[1].tool_result.content) == {
            "answers": {"Which rollout?": "one zone at a time", "Which checks?": ["unit", "load"]}
        }
        assert rest[-1].run_completed.output_text == "one zone at a time / unit, load"

        async with await client.start_run("free_text", "hi", timeout=STREAM_TIMEOUT) as run:
            question = (await until_suspended(run))[-1].tool_call_suspended
            await run.reply(question.tool_call_id, "why?")
            rest = [frame async for frame in run]
        assert rest[1].tool_result.kind == agent_pb2.TOOL_RESULT_KIND_REPLIED
        assert rest[-1].run_completed.output_text == "Hello, User replied instead of answering: why?!"
