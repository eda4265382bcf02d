"""Tests of the wrapper itself, against the agents of tests/conformance/agents.toml."""

import grpc
import pytest

from askuser_client import AskUserError, FieldViolation, agent_pb2, ask_user_pb2

# A whole stream may take this long before the test fails instead of hanging.
STREAM_TIMEOUT = 30.0


def kinds(frames):
    return [frame.WhichOneof("event") for frame in frames]


def until_suspended(run):
    """The frames up to and including the next tool_call_suspended."""
    frames = []
    for frame in run:
        frames.append(frame)
        if frame.WhichOneof("event") == "tool_call_suspended":
            return frames
    raise AssertionError(f"the run ended without a question: {kinds(frames)}")


def test_start_run_answer_and_complete(client):
    run = client.start_run("pick", "deploy", {"team": "core"}, timeout=STREAM_TIMEOUT)
    assert run.run_id
    frames = until_suspended(run)
    assert kinds(frames) == ["run_started", "tool_call", "tool_call_suspended"]
    assert all(frame.run_id == run.run_id for frame in frames)
    question = frames[-1].tool_call_suspended
    assert question.suspend_payload.question == "Which environment?"
    assert [o.label for o in question.suspend_payload.options] == ["staging", "production"]

    run.answer_selections(question.tool_call_id, ["production"], answer_id="py-1")
    rest = list(run)
    assert kinds(rest)[:2] == ["answer_accepted", "tool_result"]
    assert rest[0].answer_accepted.answer_id == "py-1"
    assert rest[-1].run_completed.output_text == "Deploying to production"

    stored = client.get_run(run.run_id)
    assert stored.status == agent_pb2.RUN_STATUS_COMPLETED
    assert dict(stored.metadata) == {"team": "core"}


def test_bad_answer_is_a_frame_and_the_question_stays(client):
    with client.start_run("free_text", "hi", timeout=STREAM_TIMEOUT) as run:
        question = until_suspended(run)[-1].tool_call_suspended
        run.answer_text(question.tool_call_id, "  ")
        rejected = next(run).answer_rejected
        assert rejected.reason == "INVALID_ANSWER"
        assert [v.field for v in rejected.field_violations] == ["answer.text"]
        run.decline(question.tool_call_id, "rather not")
        assert next(run).answer_accepted.tool_call_id == question.tool_call_id
        result = next(run).tool_result
        assert result.kind == agent_pb2.TOOL_RESULT_KIND_DECLINED
        assert result.content == "User declined to answer: rather not"


def test_resume_run_errors_carry_reason_and_field_violations(client):
    run = client.start_run("checks", "check", timeout=STREAM_TIMEOUT)
    question = until_suspended(run)[-1].tool_call_suspended
    run.close()

    with pytest.raises(AskUserError) as invalid:
        list(client.resume_run(run.run_id, question.tool_call_id, selections=["lint", "lint"]))
    assert invalid.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert invalid.value.reason == "INVALID_ANSWER"
    assert [v.field for v in invalid.value.field_violations] == ["answer.selections.labels[1]"]

    frames = list(client.resume_run(run.run_id, question.tool_call_id, selections=[], timeout=STREAM_TIMEOUT))
    assert frames[0].answer_accepted.duplicate is False
    assert frames[-1].run_completed.output_text == "Checks []"

    with pytest.raises(AskUserError) as again:
        list(client.resume_run(run.run_id, question.tool_call_id, selections=["unit"]))
    assert again.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert again.value.reason == "ALREADY_ANSWERED"
    assert again.value.domain == "askuser.dev"


def test_unknown_agent_and_run_are_not_found(client):
    with pytest.raises(AskUserError) as agent:
        client.start_run("no_such_agent")
    assert agent.value.code == grpc.StatusCode.NOT_FOUND
    assert agent.value.reason == "AGENT_NOT_FOUND"

    with pytest.raises(AskUserError) as run:
        client.get_run("no-such-run")
    assert run.value.code == grpc.StatusCode.NOT_FOUND

    with pytest.raises(AskUserError) as attached:
        next(client.attach("no-such-run", timeout=STREAM_TIMEOUT))
    assert attached.value.code == grpc.StatusCode.NOT_FOUND


def test_attach_watch_list_and_cancel(client):
    run = client.start_run("two_step", "release", timeout=STREAM_TIMEOUT)
    asked = until_suspended(run)
    run.close()

    with client.attach(run.run_id, after_sequence=asked[1].sequence, timeout=STREAM_TIMEOUT) as again:
        assert next(again).sequence == asked[2].sequence

    page = client.list_runs(status=agent_pb2.RUN_STATUS_SUSPENDED, agent_id="two_step")
    assert run.run_id in [r.run_id for r in page.runs]

    cancelled = client.cancel_run(run.run_id, "changed my mind")
    assert cancelled.status == agent_pb2.RUN_STATUS_CANCELLED
    watched = list(client.watch_run(run.run_id, after_sequence=asked[-1].sequence, timeout=STREAM_TIMEOUT))
    assert kinds(watched) == ["tool_result", "run_cancelled"]
    assert watched[0].tool_result.kind == agent_pb2.TOOL_RESULT_KIND_CANCELLED
    assert watched[1].run_cancelled.reason == "changed my mind"


def test_list_agents(client):
    agents = {agent.agent_id: agent for agent in client.list_agents()}
    assert {"free_text", "pick", "checks", "parallel", "two_step"} <= agents.keys()
    assert list(agents["pick"].tools) == ["ask_user"]
    assert agents["pick"].model_provider == "scripted"


def test_ask_user_fallback_and_violations(client):
    assert (
        client.ask_user(
            "Which checks?",
            ["lint", ("unit", "fast")],
            ask_user_pb2.SELECTION_MODE_MULTI_SELECT,
        )
        == "[Question for user]: Which checks?\nOptions: lint, unit\nSelection mode: multi_select"
    )
    with pytest.raises(AskUserError) as invalid:
        client.ask_user(" ", ["a", "a"])
    assert invalid.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in invalid.value.field_violations] == ["input.question", "input.options[1].label"]
    assert isinstance(invalid.value.field_violations[0], FieldViolation)
    assert invalid.value.field_violations[0].description
