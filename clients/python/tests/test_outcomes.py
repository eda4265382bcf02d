"""The typed outcome of a request, derived from a settled call as `GetRun` gives it, and how
`requires_approval` binds a call's arguments; no server needed."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from askuser_client import ApprovalOutcome, AskUserError, Choice, HumanAnswer, agent_pb2, build_answer
from askuser_client.human import _call_arguments, _rebound, outcome_of


def run_with(kind: agent_pb2.ToolResultKind, content: str = "", answer: agent_pb2.Answer | None = None) -> agent_pb2.Run:
    run = agent_pb2.Run(run_id="r1", status=agent_pb2.RUN_STATUS_COMPLETED)
    settled = run.settled_tool_calls.add(tool_call_id="c1", tool_name="ask_user", kind=kind, content=content)
    settled.settled_by.subject = "alice"
    if answer is not None:
        settled.answer.CopyFrom(answer)
    return run


def answered(**answer: Any) -> agent_pb2.Answer:
    return build_answer("r1", "c1", **answer)


def test_question_outcomes() -> None:
    text = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_ANSWERED, "User answered: x", answered(text="x")), "c1", None)
    assert text == HumanAnswer("text", text="x", settled_by="alice", content="User answered: x", run_id="r1", tool_call_id="c1")
    picked = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_ANSWERED, "", answered(selections=["a", "b"])), "", None)
    assert (picked.kind, picked.selections) == ("selections", ("a", "b"))  # type: ignore[union-attr]
    form = outcome_of(
        run_with(
            agent_pb2.TOOL_RESULT_KIND_ANSWERED,
            "",
            answered(form={"n": 2, "x": 0.5, "ok": False, "s": "t", "c": Choice(values=["a"])}),
        ),
        "c1",
        None,
    )
    assert isinstance(form, HumanAnswer)
    assert dict(form.values) == {"n": 2, "x": 0.5, "ok": False, "s": "t", "c": Choice(values=("a",), other="")}
    declined = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_DECLINED, "", answered(decline="no")), "c1", None)
    assert (declined.kind, declined.reason) == ("declined", "no")
    replied = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_REPLIED, "", answered(reply="later")), "c1", None)
    assert (replied.kind, replied.text) == ("replied", "later")  # type: ignore[union-attr]
    assert outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_EXPIRED), "c1", None).kind == "expired"
    assert outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_CANCELLED), "c1", None).kind == "cancelled"


def test_approval_outcomes() -> None:
    asked = {"service": "api"}
    approved = outcome_of(
        run_with(agent_pb2.TOOL_RESULT_KIND_ANSWERED, json.dumps({"arguments": asked, "decision": "approved"}), answered(approve=True)),
        "c1",
        asked,
    )
    assert isinstance(approved, ApprovalOutcome)
    assert (approved.kind, dict(approved.arguments), approved.approved) == ("approved", asked, True)
    # Without content to read, the asked arguments.
    plain = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_ANSWERED, "", answered(approve=True)), "c1", asked)
    assert dict(plain.arguments) == asked  # type: ignore[union-attr]
    edited = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_ANSWERED, "", answered(edit={"service": "web"})), "c1", asked)
    assert (edited.kind, dict(edited.arguments)) == ("edited", {"service": "web"})  # type: ignore[union-attr]
    rejected = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_REJECTED, "", answered(reject="no")), "c1", asked)
    assert (rejected.kind, rejected.reason, rejected.approved) == ("rejected", "no", False)  # type: ignore[union-attr]
    declined = outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_REJECTED, "", answered(decline="nope")), "c1", asked)
    assert (declined.kind, declined.reason) == ("rejected", "nope")
    assert outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_EXPIRED), "c1", asked) == ApprovalOutcome(
        "expired", settled_by="alice", run_id="r1", tool_call_id="c1"
    )


def test_a_run_cancelled_before_any_settlement_and_an_unknown_settlement() -> None:
    cancelled = agent_pb2.Run(run_id="r1", status=agent_pb2.RUN_STATUS_CANCELLED)
    assert outcome_of(cancelled, "c1", {}) == ApprovalOutcome("cancelled", run_id="r1", tool_call_id="c1")
    with pytest.raises(AskUserError):
        outcome_of(agent_pb2.Run(run_id="r1", status=agent_pb2.RUN_STATUS_COMPLETED), "c1", None)
    with pytest.raises(AskUserError):
        outcome_of(run_with(agent_pb2.TOOL_RESULT_KIND_OUTPUT, "", answered(output="x")), "c1", None)


def test_arguments_are_bound_by_name_and_rebound_to_call() -> None:
    def function(a: int, /, b: int, *rest: int, c: int = 3, **more: int) -> None:
        pass

    signature = inspect.signature(function)
    asked, kept = _call_arguments(signature, (1, 2, 9), {"d": 4})
    assert asked == {"a": 1, "b": 2, "rest": [9], "c": 3, "d": 4}
    assert kept == {}
    args, kwargs = _rebound(signature, {**asked, "b": 5, "c": 6}, kept)
    assert (args, kwargs) == ([1, 5, 9], {"c": 6, "d": 4})

    def method(self: object, service: str, environment: str = "staging") -> None:
        pass

    signature = inspect.signature(method)
    receiver = object()
    asked, kept = _call_arguments(signature, (receiver, "api"), {})
    assert asked == {"service": "api", "environment": "staging"}
    assert kept == {"self": receiver}
    args, kwargs = _rebound(signature, {"service": "web"}, kept)
    # An argument the approver left out takes its default.
    assert (args, kwargs) == ([], {"self": receiver, "service": "web"})
