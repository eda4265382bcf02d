"""Asking a person from any code (HumanService.Ask): `ask` / `ask_human` / `request_approval` on
both clients, the `requires_approval` decorator and the LangGraph-node example, each answered by
another client (ResumeRun) and read back as a typed outcome. Reattachment across a server restart
is in test_reattach.py."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from askuser_client import (
    Approval,
    ApprovalOutcome,
    ApprovalRejected,
    AskUserClient,
    Choice,
    DeadlineExceeded,
    HumanAnswer,
    InvalidArgument,
    agent_pb2,
    ask_user_pb2,
    requires_approval,
)
from askuser_client.aio import AsyncAskUserClient

WAIT = 30.0
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "langgraph_node.py"


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def api_key() -> str | None:
    return os.environ.get("ASKUSER_API_KEY") or None


@pytest.fixture
def other(address: str) -> Iterator[AskUserClient]:
    """A second client: the person who answers."""
    with AskUserClient(address, api_key=api_key()) as client:
        yield client


def settle(client: AskUserClient, run_id: str, tool_call_id: str, **answer: Any) -> None:
    frames = list(client.resume_run(run_id, tool_call_id, timeout=WAIT, **answer))
    assert frames[0].WhichOneof("event") == "answer_accepted", frames
    assert frames[-1].WhichOneof("event") == "run_completed", frames


class Answerer(threading.Thread):
    """Answers, from a client of its own, the first pending call that `match` accepts (watching
    the pending-calls feed), with `answer` (the keyword arguments of `resume_run`). `asked` is the
    call it answered."""

    def __init__(self, address: str, match: Callable[[agent_pb2.PendingToolCall], bool], **answer: Any) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.match = match
        self.answer = answer
        self.asked: agent_pb2.PendingToolCall | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            with AskUserClient(self.address, api_key=api_key()) as client:
                with client.watch_pending_calls(timeout=WAIT) as feed:
                    for event in feed:
                        pending = event.call_pending
                        if event.WhichOneof("event") == "call_pending" and self.match(pending.call):
                            self.asked = pending.call
                            settle(client, pending.run_id, pending.call.tool_call_id, **self.answer)
                            return
        except BaseException as error:  # reported by done()
            self.error = error

    def done(self) -> agent_pb2.PendingToolCall:
        self.join(WAIT)
        if self.error is not None:
            raise self.error
        assert self.asked is not None, "the answerer answered nothing"
        return self.asked


def question_is(text: str) -> Callable[[agent_pb2.PendingToolCall], bool]:
    return lambda call: call.suspend_payload.question == text


def tool_is(name: str) -> Callable[[agent_pb2.PendingToolCall], bool]:
    return lambda call: call.tool_name == name


# --- ask, and the handle -----------------------------------------------------------------------


def test_ask_returns_once_the_call_waits_and_wait_gives_the_typed_text(client: AskUserClient, other: AskUserClient) -> None:
    handle = client.ask("Release name?", context="The nightly build is **green**.", timeout=WAIT)
    assert handle.run_id and handle.tool_call_id
    assert str(uuid.UUID(handle.request_id)) == handle.request_id  # generated
    run = client.get_run(handle.run_id)
    assert run.agent_id == ""
    assert run.status == agent_pb2.RUN_STATUS_SUSPENDED
    assert [call.tool_call_id for call in run.pending_tool_calls] == [handle.tool_call_id]
    assert run.pending_tool_calls[0].suspend_payload.question == "Release name?"

    settle(other, handle.run_id, handle.tool_call_id, text="Apollo")
    outcome = handle.wait(WAIT)
    assert isinstance(outcome, HumanAnswer)
    assert outcome.kind == "text"
    assert outcome.text == "Apollo"
    assert outcome.content == "User answered: Apollo"
    assert outcome.settled_by  # the answering key's subject
    assert (outcome.run_id, outcome.tool_call_id) == (handle.run_id, handle.tool_call_id)
    assert handle.wait() is outcome  # known now: no further call


def test_the_same_request_id_follows_the_same_request(client: AskUserClient, other: AskUserClient) -> None:
    request_id = unique("retry")
    first = client.ask("Which region?", request_id=request_id, timeout=WAIT)
    again = client.ask("Which region?", request_id=request_id, timeout=WAIT)
    assert (again.run_id, again.tool_call_id, again.request_id) == (first.run_id, first.tool_call_id, request_id)
    settle(other, first.run_id, first.tool_call_id, text="eu-west")
    assert first.wait(WAIT) == again.wait(WAIT)
    # Asked again after it was settled: the same request, already answered.
    late = client.ask("Which region?", request_id=request_id, timeout=WAIT)
    assert late.run_id == first.run_id
    answer = late.wait(WAIT)
    assert isinstance(answer, HumanAnswer) and answer.text == "eu-west"


def test_decline_and_reply(client: AskUserClient, other: AskUserClient) -> None:
    declined = client.ask("Your phone number?", timeout=WAIT)
    settle(other, declined.run_id, declined.tool_call_id, decline="prefer not")
    outcome = declined.wait(WAIT)
    assert isinstance(outcome, HumanAnswer)
    assert (outcome.kind, outcome.reason) == ("declined", "prefer not")

    replied = client.ask("Ship it tonight?", options=["yes", "no"], timeout=WAIT)
    settle(other, replied.run_id, replied.tool_call_id, reply="ask me after the standup")
    outcome = replied.wait(WAIT)
    assert isinstance(outcome, HumanAnswer)
    assert (outcome.kind, outcome.text) == ("replied", "ask me after the standup")


def test_a_cancelled_request_and_an_expired_one(client: AskUserClient) -> None:
    handle = client.ask("Still needed?", timeout=WAIT)
    client.cancel_run(handle.run_id, "no longer needed")
    outcome = handle.wait(WAIT)
    assert isinstance(outcome, HumanAnswer) and outcome.kind == "cancelled"

    late = client.request_approval("deploy", {"service": "api"}, ttl=timedelta(seconds=1), timeout=WAIT)
    assert late.kind == "expired"
    assert not late.approved


def test_bad_input_raises_invalid_argument_with_the_field(client: AskUserClient) -> None:
    with pytest.raises(InvalidArgument) as blank:
        client.ask("   ", timeout=WAIT)
    assert "question.question" in [violation.field for violation in blank.value.field_violations]
    with pytest.raises(InvalidArgument) as bad_tool:
        client.request_approval("no spaces allowed", {}, timeout=WAIT)
    assert "approval.tool_name" in [violation.field for violation in bad_tool.value.field_violations]
    with pytest.raises(InvalidArgument) as bad_arguments:
        client.ask(approval=Approval("deploy", "[1, 2]"), timeout=WAIT)
    assert "approval.arguments_json" in [violation.field for violation in bad_arguments.value.field_violations]
    with pytest.raises(ValueError):
        client.ask(timeout=WAIT)  # nothing to ask
    with pytest.raises(ValueError):
        client.ask("Which?", form={"fields": []}, timeout=WAIT)  # two things


def test_a_deadline_ends_the_wait_and_a_later_wait_goes_on(client: AskUserClient, other: AskUserClient) -> None:
    handle = client.ask("Which colour?", timeout=WAIT)
    with pytest.raises(DeadlineExceeded):
        handle.wait(timeout=0.5)
    settle(other, handle.run_id, handle.tool_call_id, text="blue")
    outcome = handle.wait(WAIT)
    assert isinstance(outcome, HumanAnswer) and outcome.text == "blue"

    request_id = unique("deadline")
    with pytest.raises(DeadlineExceeded):
        client.ask_human("Nobody answers this", request_id=request_id, timeout=0.5)
    # The request is still there, waiting: find it by its request_id and cancel it.
    client.cancel_run(client.ask("Nobody answers this", request_id=request_id, timeout=WAIT).run_id)


# --- ask_human -----------------------------------------------------------------------------------


def test_ask_human_selections(client: AskUserClient, address: str) -> None:
    question = unique("Which checks?")
    answerer = Answerer(address, question_is(question), selections=["unit", "load, soak"])
    outcome = client.ask_human(
        question,
        options=["unit", ("load, soak", "the long ones"), "e2e"],
        selection_mode=ask_user_pb2.SELECTION_MODE_MULTI_SELECT,
        timeout=WAIT,
    )
    asked = answerer.done()
    assert [option.label for option in asked.suspend_payload.options] == ["unit", "load, soak", "e2e"]
    assert outcome.kind == "selections"
    assert outcome.selections == ("unit", "load, soak")


def test_ask_human_form(client: AskUserClient, address: str) -> None:
    title = unique("Release")
    form = {
        "title": title,
        "fields": [
            {"name": "name", "question": "Release name?", "required": True, "text": {}},
            {"name": "replicas", "question": "How many replicas?", "number": {"integer": True, "minimum": 1, "maximum": 9}},
            {"name": "ratio", "question": "Canary share?", "number": {}},
            {"name": "canary", "question": "Canary first?", "boolean": {}},
            {
                "name": "checks",
                "question": "Which checks?",
                "choice": {"choices": [{"value": "unit", "label": "Unit"}, {"value": "load", "label": "Load"}], "multiple": True, "allowOther": True},
            },
        ],
    }
    values = {"name": "Apollo", "replicas": 3, "ratio": 0.25, "canary": True, "checks": Choice(values=["unit"], other="smoke")}
    answerer = Answerer(address, lambda call: call.form.title == title, form=values)
    outcome = client.ask_human(form=form, context="Fill in the release.", timeout=WAIT)
    answerer.done()
    assert outcome.kind == "form"
    assert dict(outcome.values) == {
        "name": "Apollo",
        "replicas": 3,
        "ratio": 0.25,
        "canary": True,
        "checks": Choice(values=("unit",), other="smoke"),
    }
    assert isinstance(outcome.values["replicas"], int)
    assert json.loads(outcome.content)["action"] == "accept"


# --- request_approval ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "kind", "arguments", "reason"),
    [
        ({"approve": True}, "approved", {"service": "api", "environment": "production"}, ""),
        ({"edit": {"service": "api", "environment": "staging"}}, "edited", {"service": "api", "environment": "staging"}, ""),
        ({"reject": "not on a Friday"}, "rejected", {}, "not on a Friday"),
        ({"decline": "no"}, "rejected", {}, "no"),
    ],
)
def test_request_approval(client: AskUserClient, address: str, answer: dict[str, Any], kind: str, arguments: dict[str, Any], reason: str) -> None:
    tool = unique("deploy")
    answerer = Answerer(address, tool_is(tool), **answer)
    outcome = client.request_approval(
        tool, {"service": "api", "environment": "production"}, "production deploys need a second pair of eyes", timeout=WAIT
    )
    asked = answerer.done()
    assert json.loads(asked.arguments_json) == {"service": "api", "environment": "production"}
    assert isinstance(outcome, ApprovalOutcome)
    assert (outcome.kind, dict(outcome.arguments), outcome.reason) == (kind, arguments, reason)
    assert outcome.approved == (kind in ("approved", "edited"))
    assert outcome.settled_by
    if kind == "rejected" and "reject" in answer:
        assert outcome.content == "User rejected the call: not on a Friday"


# --- requires_approval ---------------------------------------------------------------------------


def test_requires_approval_runs_the_function_with_the_edited_arguments(client: AskUserClient, address: str) -> None:
    tool = unique("deploy")
    calls: list[tuple[str, str, int]] = []

    @requires_approval(client, tool_name=tool, reason="a deploy", timeout=WAIT)
    def deploy(service: str, environment: str = "staging", *, replicas: int = 1) -> str:
        calls.append((service, environment, replicas))
        return f"{service}@{environment}x{replicas}"

    assert deploy.__name__ == "deploy"
    answerer = Answerer(address, tool_is(tool), edit={"service": "api", "environment": "staging", "replicas": 2})
    assert deploy("api", "production") == "api@stagingx2"
    # Asked about with every argument by name, defaults included.
    assert json.loads(answerer.done().arguments_json) == {"service": "api", "environment": "production", "replicas": 1}
    assert calls == [("api", "staging", 2)]

    answerer = Answerer(address, tool_is(tool), approve=True)
    assert deploy("web", environment="production", replicas=3) == "web@productionx3"
    answerer.done()
    assert calls[-1] == ("web", "production", 3)


def test_requires_approval_raises_on_a_rejection_and_passes_self_through(client: AskUserClient, address: str) -> None:
    tool = unique("drop_table")

    class Database:
        dropped: list[str] = []

        @requires_approval(client, tool_name=tool, timeout=WAIT)
        def drop(self, table: str) -> None:
            self.dropped.append(table)

    database = Database()
    answerer = Answerer(address, tool_is(tool), reject="not on a Friday")
    with pytest.raises(ApprovalRejected) as rejected:
        database.drop("users")
    assert json.loads(answerer.done().arguments_json) == {"table": "users"}
    assert rejected.value.reason == "not on a Friday"
    assert rejected.value.outcome.kind == "rejected"
    assert Database.dropped == []

    answerer = Answerer(address, tool_is(tool), edit={"table": "sessions"})
    database.drop("users")
    answerer.done()
    assert Database.dropped == ["sessions"]


def test_requires_approval_needs_the_client_that_matches_the_function(client: AskUserClient) -> None:
    async def async_function() -> None:
        pass

    with pytest.raises(TypeError):
        requires_approval(client)(async_function)


# --- the asyncio client --------------------------------------------------------------------------


def test_async_ask_request_approval_and_decorator(address: str) -> None:
    async def main() -> None:
        async with AsyncAskUserClient(address, api_key=api_key()) as client:
            question = unique("Release name?")
            answerer = Answerer(address, question_is(question), text="Apollo")
            answer = await client.ask_human(question, timeout=WAIT)
            answerer.done()
            assert (answer.kind, answer.text) == ("text", "Apollo")

            tool = unique("deploy")
            answerer = Answerer(address, tool_is(tool), edit={"service": "api", "environment": "staging"})
            decision = await client.request_approval(tool, {"service": "api", "environment": "production"}, timeout=WAIT)
            answerer.done()
            assert (decision.kind, dict(decision.arguments)) == ("edited", {"service": "api", "environment": "staging"})

            handle = await client.ask("Which colour?", timeout=WAIT)
            with pytest.raises(DeadlineExceeded):
                await handle.wait(timeout=0.5)
            again = await client.ask("Which colour?", request_id=handle.request_id, timeout=WAIT)
            assert again.run_id == handle.run_id
            await client.cancel_run(handle.run_id)
            cancelled = await handle.wait(WAIT)
            assert cancelled.kind == "cancelled"

            with pytest.raises(InvalidArgument) as blank:
                await client.ask("", timeout=WAIT)
            assert [violation.field for violation in blank.value.field_violations] == ["question.question"]

            tool = unique("deploy")
            ran: list[dict[str, str]] = []

            @requires_approval(client, tool_name=tool, timeout=WAIT)
            async def deploy(service: str, environment: str) -> str:
                ran.append({"service": service, "environment": environment})
                return environment

            answerer = Answerer(address, tool_is(tool), edit={"service": "api", "environment": "staging"})
            assert await deploy("api", "production") == "staging"
            answerer.done()
            answerer = Answerer(address, tool_is(tool), reject="frozen")
            with pytest.raises(ApprovalRejected) as rejected:
                await deploy("api", "production")
            answerer.done()
            assert rejected.value.reason == "frozen"
            assert ran == [{"service": "api", "environment": "staging"}]

            def plain() -> None:
                pass

            with pytest.raises(TypeError):
                requires_approval(client)(plain)

    asyncio.run(main())


# --- the LangGraph-node example ------------------------------------------------------------------


def test_the_langgraph_node_example(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKUSER_ADDR", address)
    spec = importlib.util.spec_from_file_location("langgraph_node", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    try:
        # As LangGraph calls the node: with the graph's state, for the state to go on with.
        service = unique("api")
        answerer = Answerer(address, lambda call: call.tool_name == "deploy" and service in call.arguments_json,
                            edit={"service": service, "environment": "staging"})
        state = example.approve_deploy({"service": service, "environment": "production", "build": uuid.uuid4().hex})
        answerer.done()
        assert state["approved"] is True
        assert (state["decision"], state["environment"], state["service"]) == ("edited", "staging", service)
        assert state["approved_by"]

        answerer = Answerer(address, lambda call: call.tool_name == "deploy" and service in call.arguments_json,
                            reject="the release is frozen")
        state = example.approve_deploy({"service": service, "environment": "production"})
        answerer.done()
        assert (state["approved"], state["decision"], state["reason"]) == (False, "rejected", "the release is frozen")
        assert state["environment"] == "production"
    finally:
        example.client.close()
