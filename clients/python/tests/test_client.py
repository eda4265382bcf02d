"""Tests of the wrapper itself, against the agents of tests/conformance/agents.toml."""

import json
from datetime import datetime, timedelta, timezone

import grpc
import pytest

from askuser_client import (
    AskUserError,
    Choice,
    FieldViolation,
    agent_pb2,
    ask_user_pb2,
    build_answer,
    tool_definition,
)

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


def test_build_answer_settles_tool_calls():
    output = build_answer("r", "c", output="down", is_error=True)
    assert output.WhichOneof("answer") == "tool_output"
    assert (output.tool_output.content, output.tool_output.is_error) == ("down", True)
    assert build_answer("r", "c", approve=True).approval.WhichOneof("decision") == "approve"
    rejected = build_answer("r", "c", reject="")
    assert rejected.approval.WhichOneof("decision") == "reject"
    assert rejected.approval.reject.reason == ""
    edited = build_answer("r", "c", edit={"service": "api", "environment": "staging"})
    assert json.loads(edited.approval.edit.arguments_json) == {"service": "api", "environment": "staging"}
    assert build_answer("r", "c", edit="not json").approval.edit.arguments_json == "not json"
    with pytest.raises(ValueError):
        build_answer("r", "c", output="up", approve=True)
    with pytest.raises(ValueError):
        build_answer("r", "c")
    with pytest.raises(ValueError):
        build_answer("r", "c", text="x", is_error=True)


def test_form_values_map_to_their_field_kinds():
    answer = build_answer(
        "r",
        "c",
        form={
            "version": "1.4.2",
            "empty": "",
            "replicas": 3,
            "ratio": 0.5,
            "announce": True,
            "quiet": False,
            "checks": ["unit", "load"],
            "none": [],
            "rollout": Choice(other="one zone at a time"),
            "extra": Choice(values=("unit",), other="fuzz"),
        },
    )
    assert answer.WhichOneof("answer") == "form"
    values = answer.form.values
    kinds = {name: value.WhichOneof("value") for name, value in values.items()}
    # A bool is an int to Python: it must still be a boolean, never the number 1 or 0; and a value
    # at its default ("", False, no choices) must still say its kind.
    assert kinds == {
        "version": "text", "empty": "text", "replicas": "number", "ratio": "number",
        "announce": "boolean", "quiet": "boolean",
        "checks": "choice", "none": "choice", "rollout": "choice", "extra": "choice",
    }
    assert (values["version"].text, values["replicas"].number, values["ratio"].number) == ("1.4.2", 3.0, 0.5)
    assert (values["announce"].boolean, values["quiet"].boolean) == (True, False)
    assert list(values["checks"].choice.values) == ["unit", "load"]
    assert values["checks"].choice.other == ""
    assert list(values["none"].choice.values) == []
    assert (list(values["rollout"].choice.values), values["rollout"].choice.other) == ([], "one zone at a time")
    assert (list(values["extra"].choice.values), values["extra"].choice.other) == (["unit"], "fuzz")

    # A form whose fields are all optional may be answered with no values: still a form answer.
    assert build_answer("r", "c", form={}).WhichOneof("answer") == "form"
    reply = build_answer("r", "c", reply="ask Dana")
    assert (reply.WhichOneof("answer"), reply.reply) == ("reply", "ask Dana")

    with pytest.raises(ValueError):
        build_answer("r", "c", form={"a": "b"}, reply="both")
    for wrong in (None, {"text": "x"}, b"bytes", [1, 2], Choice(values="unit")):
        with pytest.raises(TypeError):
            build_answer("r", "c", form={"field": wrong})


def test_answer_a_form_field_by_field(client):
    with client.start_run("form", "release", timeout=STREAM_TIMEOUT) as run:
        call = until_suspended(run)[-1].tool_call_suspended
        assert call.kind == agent_pb2.SUSPEND_KIND_FORM
        assert [field.name for field in call.form.fields] == ["version", "replicas", "announce"]
        assert call.form.fields[1].number.integer

        # A str is a text value, which the boolean field refuses: the form stays answerable.
        run.answer_form(call.tool_call_id, {"version": "1.2.3", "replicas": 3, "announce": "yes"})
        rejected = next(run).answer_rejected
        assert [v.field for v in rejected.field_violations] == ['answer.form.values["announce"]']

        run.answer_form(call.tool_call_id, {"version": "1.2.3", "replicas": 3, "announce": True}, answer_id="py-form")
        rest = list(run)
    assert rest[0].answer_accepted.answer_id == "py-form"
    result = rest[1].tool_result
    assert result.kind == agent_pb2.TOOL_RESULT_KIND_ANSWERED
    assert json.loads(result.content) == {
        "action": "accept",
        "content": {"version": "1.2.3", "replicas": 3, "announce": True},
    }


def test_reply_instead_of_answering_with_resume_run(client):
    run = client.start_run("questions", "release", timeout=STREAM_TIMEOUT)
    call = until_suspended(run)[-1].tool_call_suspended
    run.close()
    assert [field.name for field in call.form.fields] == ["q1", "q2"]
    assert client.get_run(run.run_id).pending_tool_calls[0].form.fields[0].choice.allow_other

    frames = list(client.resume_run(run.run_id, call.tool_call_id, reply="ask Dana", timeout=STREAM_TIMEOUT))
    result = frames[1].tool_result
    assert result.kind == agent_pb2.TOOL_RESULT_KIND_REPLIED
    assert result.content == "User replied instead of answering: ask Dana"


def test_client_tool_output_and_error_output(client):
    with client.start_run("status_check", "check", timeout=STREAM_TIMEOUT) as run:
        call = until_suspended(run)[-1].tool_call_suspended
        assert call.kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL
        assert call.tool_name == "service_status"
        assert json.loads(call.arguments_json) == {"service": "api"}
        assert client.get_run(run.run_id).pending_tool_calls[0].kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL

        run.approve(call.tool_call_id)  # not an approval: rejected, and the call stays pending
        assert [v.field for v in next(run).answer_rejected.field_violations] == ["answer.approval"]
        run.send_output(call.tool_call_id, "healthy", answer_id="py-out-1")
        rest = list(run)
    assert rest[0].answer_accepted.answer_id == "py-out-1"
    result = rest[1].tool_result
    assert result.kind == agent_pb2.TOOL_RESULT_KIND_OUTPUT
    assert (result.content, result.is_error) == ("healthy", False)
    assert rest[-1].run_completed.output_text == "api is healthy"

    run = client.start_run("status_check", "check", timeout=STREAM_TIMEOUT)
    call = until_suspended(run)[-1].tool_call_suspended
    run.close()
    frames = list(
        client.resume_run(
            run.run_id, call.tool_call_id, output="connection refused", is_error=True, timeout=STREAM_TIMEOUT
        )
    )
    assert frames[1].tool_result.is_error is True
    assert frames[-1].run_completed.output_text == "api is connection refused"


def until_deploy_approval(client, environment="production"):
    """A `deployer` run driven up to its `deploy` call: (run, that call's tool_call_suspended)."""
    run = client.start_run("deployer", "ship api", timeout=STREAM_TIMEOUT)
    question = until_suspended(run)[-1].tool_call_suspended
    assert question.kind == agent_pb2.SUSPEND_KIND_QUESTION
    run.answer_text(question.tool_call_id, environment)
    status = until_suspended(run)[-1].tool_call_suspended
    run.send_output(status.tool_call_id, "healthy")
    return run, until_suspended(run)[-1].tool_call_suspended


def test_approve_then_run_the_client_tool(client):
    run, deploy = until_deploy_approval(client)
    with run:
        assert deploy.kind == agent_pb2.SUSPEND_KIND_APPROVAL
        assert deploy.approval_reason == 'args.environment == "production"'
        assert json.loads(deploy.arguments_json) == {"service": "api", "environment": "production"}
        run.approve(deploy.tool_call_id)
        again = until_suspended(run)
        assert again[0].answer_accepted.tool_call_id == deploy.tool_call_id
        assert again[-1].tool_call_suspended.tool_call_id == deploy.tool_call_id
        assert again[-1].tool_call_suspended.kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL
        run.send_output(deploy.tool_call_id, "deployed v42")
        assert list(run)[-1].run_completed.output_text == (
            "Deploy of api to production (status healthy): deployed v42"
        )


def test_reject_and_edit(client):
    run, deploy = until_deploy_approval(client)
    with run:
        run.reject(deploy.tool_call_id, "not today")
        rest = list(run)
    result = rest[1].tool_result
    assert result.kind == agent_pb2.TOOL_RESULT_KIND_REJECTED
    assert result.content == "User rejected the call: not today"

    run, deploy = until_deploy_approval(client)
    run.edit(deploy.tool_call_id, {"service": "api", "environment": "moon"})
    assert [v.field for v in next(run).answer_rejected.field_violations] == [
        "answer.approval.edit.arguments_json"
    ]
    run.close()
    # Settling without a stream takes the same answers.
    edited = '{"service": "api", "environment": "staging"}'
    frames = list(client.resume_run(run.run_id, deploy.tool_call_id, edit=edited, timeout=STREAM_TIMEOUT))
    suspended = frames[-1].tool_call_suspended
    assert suspended.kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL
    assert json.loads(suspended.arguments_json) == {"service": "api", "environment": "staging"}
    frames = list(client.resume_run(run.run_id, deploy.tool_call_id, output="ok", timeout=STREAM_TIMEOUT))
    assert frames[-1].run_completed.output_text.endswith("Result: ok")


def test_start_run_with_per_run_tools(client):
    schema = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
    lookup = tool_definition("lookup", "Looks a key up", schema)
    with client.start_run("per_run", "look up a", tools=[lookup], timeout=STREAM_TIMEOUT) as run:
        call = until_suspended(run)[-1].tool_call_suspended
        # No approval policy: the call waits straight away for the tool's output.
        assert call.kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL
        assert json.loads(call.arguments_json) == {"key": "a"}
        run.send_output(call.tool_call_id, "42")
        assert list(run)[-1].run_completed.output_text == "lookup: 42"

    guarded = tool_definition("lookup", parameters=schema, approval=agent_pb2.APPROVAL_POLICY_ALWAYS)
    with client.start_run("per_run", "look up a", tools=[guarded], timeout=STREAM_TIMEOUT) as run:
        call = until_suspended(run)[-1].tool_call_suspended
        assert (call.kind, call.approval_reason) == (agent_pb2.SUSPEND_KIND_APPROVAL, "always")

    with pytest.raises(AskUserError) as invalid:
        client.start_run("per_run", tools=[tool_definition("lookup", parameters='{"type": 12}')])
    assert invalid.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "start.tools[0].parameters_json_schema" in [v.field for v in invalid.value.field_violations]


def iter_until_snapshot_done(feed):
    """The feed's events up to and including snapshot_done."""
    for event in feed:
        yield event
        if event.WhichOneof("event") == "snapshot_done":
            return


def next_of_run(feed, run_id):
    """The next call_pending or call_settled event of one run (the server is shared)."""
    for event in feed:
        kind = event.WhichOneof("event")
        if kind in ("call_pending", "call_settled") and getattr(event, kind).run_id == run_id:
            return event
    raise AssertionError("the feed ended")


def test_watch_pending_calls_and_claim(client):
    feed = client.watch_pending_calls(
        agent_ids=["status_check"], kinds=[agent_pb2.SUSPEND_KIND_CLIENT_TOOL], timeout=STREAM_TIMEOUT
    )
    with feed:
        assert "snapshot_done" in [event.WhichOneof("event") for event in iter_until_snapshot_done(feed)]
        run = client.start_run("status_check", "check", timeout=STREAM_TIMEOUT)
        run.close()

        pending = next_of_run(feed, run.run_id).call_pending
        assert pending.agent_id == "status_check"
        assert pending.call.tool_name == "service_status"
        assert pending.call.kind == agent_pb2.SUSPEND_KIND_CLIENT_TOOL
        assert json.loads(pending.call.arguments_json) == {"service": "api"}
        call_id = pending.call.tool_call_id

        until = client.claim_call(run.run_id, call_id, "worker-1", ttl=timedelta(seconds=30))
        assert until.tzinfo is not None
        assert timedelta(seconds=20) < until - datetime.now(timezone.utc) <= timedelta(seconds=31)
        with pytest.raises(AskUserError) as claimed:
            client.claim_call(run.run_id, call_id, "worker-2")
        assert claimed.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert claimed.value.reason == "ALREADY_CLAIMED"
        client.claim_call(run.run_id, call_id, "worker-1")  # renews its own claim
        assert client.get_run(run.run_id).pending_tool_calls[0].claimant == "worker-1"

        frames = list(client.resume_run(run.run_id, call_id, output="up", timeout=STREAM_TIMEOUT))
        assert frames[-1].run_completed.output_text == "api is up"
        settled = next_of_run(feed, run.run_id).call_settled
        assert (settled.tool_call_id, settled.kind) == (call_id, agent_pb2.TOOL_RESULT_KIND_OUTPUT)

        with pytest.raises(AskUserError) as done:
            client.claim_call(run.run_id, call_id, "worker-2")
        assert done.value.reason == "TOOL_CALL_NOT_PENDING"
    # A closed feed just stops.
    assert list(feed) == []
