#!/usr/bin/env python3
"""The Python conformance runner: runs every scenario in tests/conformance (the format is in its
README) with askuser_client against the server at HOST:PORT and prints `N passed, N failed` last.

Usage: conformance.py HOST:PORT

Calls carry ASKUSER_API_KEY when it is set; steps with "as": "other" carry ASKUSER_OTHER_API_KEY
and fail without it.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path
from typing import cast

from askuser_client import (
    AskUserClient,
    AskUserError,
    Frame,
    PendingCallEvent,
    PendingCalls,
    agent_pb2,
    ask_user_pb2,
    tool_definition,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "tests" / "conformance"
# Deadlines: a hung server fails one step instead of the whole run hanging.
STREAM_TIMEOUT = 60.0
CALL_TIMEOUT = 20.0

# What `FrameSource.next` returns at the end of a stream that ended with OK.
END = None


class StepFailed(Exception):
    pass


def fields(value, allowed) -> dict:
    """The step's fields, rejecting any key the step does not know (a typo would otherwise pass)."""
    if not isinstance(value, dict):
        raise StepFailed(f"expected an object, got {value!r}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise StepFailed(f"unknown field {unknown[0]!r}")
    return value


class FrameSource:
    """The frames of one stream (a Run, or a ResumeRun / WatchRun iterator), all of one run."""

    def __init__(self, frames, run_id: str, run=None, failure: AskUserError | None = None):
        self.frames = frames
        self.run_id = run_id
        self.run = run
        self.failure = failure

    def next(self) -> Frame | AskUserError | None:
        """The next frame, the error the stream failed with, or END."""
        if self.failure is not None:
            failure, self.failure = self.failure, None
            return failure
        try:
            return next(self.frames)
        except StopIteration:
            return END
        except AskUserError as error:
            return error

    def next_frame(self) -> Frame:
        got = self.next()
        if got is END:
            raise StepFailed("the stream ended; a frame was expected")
        if isinstance(got, AskUserError):
            raise StepFailed(f"the stream failed: {got}")
        if got.run_id != self.run_id:
            raise StepFailed(f"frame of run {got.run_id!r} on a stream of run {self.run_id!r}: {got}")
        return got

    def expect_end(self) -> None:
        got = self.next()
        if got is not END:
            raise StepFailed(f"expected the end of the stream, got {got}")


def json_equal(actual, want) -> bool:
    """JSON values compare equal: objects by keys whatever their order, arrays in order, and a
    boolean is never a number."""
    if isinstance(want, bool) or isinstance(actual, bool):
        return type(actual) is type(want) and actual == want
    if isinstance(want, (int, float)) and isinstance(actual, (int, float)):
        return actual == want
    if isinstance(want, dict) and isinstance(actual, dict):
        return actual.keys() == want.keys() and all(json_equal(actual[k], want[k]) for k in want)
    if isinstance(want, list) and isinstance(actual, list):
        return len(actual) == len(want) and all(map(json_equal, actual, want))
    return type(actual) is type(want) and actual == want


class Arguments:
    """An `arguments` check's actual value: `arguments_json` parsed as JSON, compared by json_equal."""

    def __init__(self, text: str):
        self.text = text

    def matches(self, want) -> bool:
        try:
            return json_equal(json.loads(self.text), want)
        except ValueError:
            return False

    def __repr__(self) -> str:
        return f"arguments_json {self.text!r}"


# The keys of an `answer` or `resume` step that say what the answer is: exactly one is given.
ANSWER_KINDS = ("text", "selections", "decline", "tool_output", "approve", "reject", "edit")

# The frame kinds that name a tool call.
TOOL_CALL_KINDS = {"tool_call", "tool_call_suspended", "tool_result", "answer_rejected", "answer_accepted"}

# Check fields that compare with the event field of the same name, by frame kind.
PLAIN_FIELDS = {
    ("tool_call", "tool_name"),
    ("tool_call_suspended", "tool_name"),
    ("tool_result", "content"),
    ("tool_result", "is_error"),
    ("answer_rejected", "reason"),
    ("answer_accepted", "duplicate"),
    ("text_delta", "text"),
    ("run_completed", "output_text"),
    ("run_failed", "message"),
    ("run_started", "agent_id"),
    ("run_started", "prompt"),
    ("tool_call_suspended", "approval_reason"),
}


def tool_call_id(frame: Frame) -> str | None:
    kind = frame.WhichOneof("event")
    return getattr(frame, kind).tool_call_id if kind in TOOL_CALL_KINDS else None


def event_field(frame: Frame, field: str):
    """The value a frame check's field compares against, as JSON would hold it; KeyError when the
    field does not apply to the frame's kind."""
    kind = frame.WhichOneof("event")
    event = getattr(frame, kind)
    if field == "tool_call_id" and tool_call_id(frame) is not None:
        return tool_call_id(frame)
    if kind == "tool_call_suspended" and field in ("question", "options", "selection_mode"):
        payload = event.suspend_payload
        if field == "question":
            return payload.question
        if field == "options":
            return [option.label for option in payload.options]
        if not payload.HasField("selection_mode"):
            return None
        return ask_user_pb2.SelectionMode.Name(payload.selection_mode)
    if kind == "tool_result" and field == "result_kind":
        return agent_pb2.ToolResultKind.Name(event.kind)
    if kind == "tool_call_suspended" and field == "suspend_kind":
        return agent_pb2.SuspendKind.Name(event.kind)
    if kind in ("tool_call", "tool_call_suspended") and field == "arguments":
        return Arguments(event.arguments_json)
    if kind == "answer_rejected" and field == "fields":
        return [violation.field for violation in event.field_violations]
    if (kind, field) in PLAIN_FIELDS:
        return getattr(event, field)
    raise KeyError(field)


def matches(actual, want) -> bool:
    """Whether a check field's actual value matches what the check wants."""
    if isinstance(actual, Arguments):
        return actual.matches(want)
    return actual == want and type(actual) is type(want)


def pending_field(event: PendingCallEvent, field: str):
    """The value an `expect_pending` check's field compares against; KeyError when the field does
    not apply to the event's kind."""
    kind = event.WhichOneof("event")
    if kind == "call_pending":
        pending = event.call_pending
        call = pending.call
        values = {
            "run_id": lambda: pending.run_id,
            "agent_id": lambda: pending.agent_id,
            "tool_call_id": lambda: call.tool_call_id,
            "tool_name": lambda: call.tool_name,
            "suspend_kind": lambda: agent_pb2.SuspendKind.Name(call.kind),
            "arguments": lambda: Arguments(call.arguments_json),
        }
    elif kind == "call_settled":
        settled = event.call_settled
        values = {
            "run_id": lambda: settled.run_id,
            "tool_call_id": lambda: settled.tool_call_id,
            "result_kind": lambda: agent_pb2.ToolResultKind.Name(settled.kind),
        }
    else:
        values = {}
    return values[field]()


def event_run_id(event: PendingCallEvent) -> str | None:
    kind = event.WhichOneof("event")
    if kind == "call_pending":
        return event.call_pending.run_id
    if kind == "call_settled":
        return event.call_settled.run_id
    return None


# The fields an `expect_pending` check may have, by the kind it checks.
PENDING_CHECK_FIELDS = {
    "call_pending": [
        "feed", "kind", "run_id", "agent_id", "tool_call_id", "tool_name", "suspend_kind", "arguments", "save"
    ],
    "call_settled": ["feed", "kind", "run_id", "tool_call_id", "result_kind", "save"],
    "snapshot_done": ["feed", "kind", "absent"],
}


class ScenarioRun:
    """One scenario being run: its clients, saved values and open streams."""

    def __init__(self, client: AskUserClient, other: AskUserClient | None):
        self.client = client
        self.other = other
        self.saved: dict[str, str] = {}
        self.streams: dict[str, FrameSource] = {}
        self.feeds: dict[str, PendingCalls] = {}

    def caller(self, body: dict) -> AskUserClient:
        """The client a step calls with: the other tenant's for "as": "other"."""
        if "as" not in body:
            return self.client
        if body["as"] != "other":
            raise StepFailed(f"as must be \"other\", got {body['as']!r}")
        if self.other is None:
            raise StepFailed('"as": "other" needs ASKUSER_OTHER_API_KEY')
        return self.other

    def resolve(self, value):
        """Substitutes every "$name" string in value with the saved string."""
        if isinstance(value, str) and value.startswith("$"):
            if value[1:] not in self.saved:
                raise StepFailed(f"nothing saved as {value}")
            return self.saved[value[1:]]
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if isinstance(value, dict):
            return {key: self.resolve(item) for key, item in value.items()}
        return value

    def number(self, value, key: str) -> int:
        """A number field, written as a number or as a saved "$name"."""
        resolved = self.resolve(value)
        if isinstance(resolved, str) and resolved.isdigit():
            return int(resolved)
        if isinstance(resolved, int) and not isinstance(resolved, bool) and resolved >= 0:
            return resolved
        raise StepFailed(f"{key} must be a non-negative integer, got {value!r}")

    def stream(self, step: dict) -> tuple[str, FrameSource]:
        name = step.get("stream", "main")
        if name not in self.streams:
            raise StepFailed(f"no open stream {name!r}")
        return name, self.streams[name]

    def run(self, steps: list) -> None:
        for index, step in enumerate(steps, 1):
            try:
                if not isinstance(step, dict) or len(step) != 1:
                    raise StepFailed("a step is an object with exactly one key")
                ((kind, body),) = step.items()
                handler = getattr(self, f"step_{kind}", None)
                if handler is None:
                    raise StepFailed(f"unknown step kind {kind!r}")
                handler(body)
            except StepFailed as failure:
                raise StepFailed(f"step {index} {json.dumps(step)}: {failure}") from None

    def open(self, name: str, source: FrameSource) -> None:
        if name in self.streams:
            raise StepFailed(f"stream {name!r} is already open")
        self.streams[name] = source

    def tools_of(self, tools) -> list[agent_pb2.ToolDefinition]:
        """The per-run tools of a `start` step."""
        if not isinstance(tools, list):
            raise StepFailed("tools must be an array")
        definitions = []
        for tool in tools:
            tool = fields(tool, ["name", "description", "parameters_json_schema", "approval"])
            approval = tool.get("approval", "APPROVAL_POLICY_UNSPECIFIED")
            try:
                policy = cast(agent_pb2.ApprovalPolicy, agent_pb2.ApprovalPolicy.Value(approval))
            except ValueError:
                raise StepFailed(f"unknown approval policy {approval!r}") from None
            definitions.append(
                tool_definition(
                    tool.get("name", ""),
                    tool.get("description", ""),
                    tool.get("parameters_json_schema", ""),
                    approval=policy,
                )
            )
        return definitions

    def step_start(self, body) -> None:
        body = fields(body, ["stream", "agent_id", "prompt", "metadata", "tools", "as"])
        body = self.resolve(body)
        name = body.get("stream", "main")
        tools = self.tools_of(body.get("tools", []))
        client = self.caller(body)
        try:
            run = client.start_run(
                body.get("agent_id", ""),
                body.get("prompt", ""),
                body.get("metadata") or {},
                tools=tools,
                timeout=STREAM_TIMEOUT,
            )
        except AskUserError as failure:
            self.open(name, FrameSource(iter(()), "", failure=failure))
            return
        self.saved["run_id"] = run.run_id
        self.open(name, FrameSource(run, run.run_id, run=run))

    def step_attach(self, body) -> None:
        body = fields(body, ["stream", "run_id", "after_sequence", "as"])
        run_id = self.resolve(body.get("run_id", ""))
        after_sequence = self.number(body.get("after_sequence", 0), "after_sequence")
        run = self.caller(body).attach(run_id, after_sequence, timeout=STREAM_TIMEOUT)
        self.open(body.get("stream", "main"), FrameSource(run, run_id, run=run))

    def answer_of(self, body: dict) -> dict:
        """The keyword arguments of the answer an `answer` or `resume` step describes."""
        given = [key for key in ANSWER_KINDS if key in body]
        if len(given) != 1:
            raise StepFailed(f"an answer has exactly one of {', '.join(ANSWER_KINDS)}")
        key = given[0]
        value = self.resolve(body[key])
        answer: dict = {"answer_id": self.resolve(body.get("answer_id", ""))}
        if key == "tool_output":
            output = fields(value, ["content", "is_error"])
            answer["output"] = output.get("content", "")
            answer["is_error"] = output.get("is_error", False)
            if not isinstance(answer["output"], str) or not isinstance(answer["is_error"], bool):
                raise StepFailed("tool_output is {content: string, is_error: boolean}")
        elif key == "approve":
            if value is not True:
                raise StepFailed("approve must be true")
            answer["approve"] = True
        elif key in ("reject", "edit") and not isinstance(value, str):
            raise StepFailed(f"{key} must be a string")
        else:
            answer[key] = value
        return answer

    def step_answer(self, body) -> None:
        body = fields(body, ["stream", "run_id", "tool_call_id", "answer_id", *ANSWER_KINDS])
        name, source = self.stream(body)
        if source.run is None:
            raise StepFailed(f"stream {name!r} takes no answers")
        source.run.answer(
            self.resolve(body.get("tool_call_id", "")),
            run_id=self.resolve(body.get("run_id", "")),
            **self.answer_of(body),
        )

    def step_expect(self, body) -> None:
        check = dict(body)
        name = check.pop("stream", "main")
        self.expect(self.stream({"stream": name})[1], check)

    def step_expect_end(self, body) -> None:
        self.stream(fields(body, ["stream"]))[1].expect_end()

    def step_expect_stream_error(self, body) -> None:
        body = fields(body, ["stream", "code", "field"])
        want = body.get("code")
        got = self.stream(body)[1].next()
        if not isinstance(got, AskUserError):
            raise StepFailed(f"expected {want}, got {'the end' if got is END else got}")
        want_error = {key: value for key, value in body.items() if key != "stream"}
        self.expect_error(got, want_error, ["code", "field"])

    def step_close(self, body) -> None:
        name, source = self.stream(fields(body, ["stream"]))
        if source.run is not None:
            source.run.close()
        del self.streams[name]

    def expect(self, source: FrameSource, check: dict) -> None:
        """Reads the frame (or, for text_deltas, the frames) one check describes and compares."""
        kind = check.get("kind")
        if kind == "text_deltas":
            fields(check, ["kind", "text"])
            self.expect_text_deltas(source, self.resolve(check.get("text", "")))
            return
        frame = source.next_frame()
        if frame.WhichOneof("event") != kind:
            raise StepFailed(f"expected {kind}, got {frame}")
        for field, want in check.items():
            if field == "kind":
                continue
            if field == "save":
                saved = tool_call_id(frame)
                if saved is None:
                    raise StepFailed("save needs a frame with a tool_call_id")
                self.saved[want] = saved
            elif field == "save_sequence":
                self.saved[want] = str(frame.sequence)
            elif field == "sequence":
                if frame.sequence != self.number(want, "sequence"):
                    raise StepFailed(f"expected sequence {want}, got {frame}")
            else:
                try:
                    actual = event_field(frame, field)
                except KeyError:
                    raise StepFailed(f"{kind} frames have no field {field!r}") from None
                want = self.resolve(want)
                if not matches(actual, want):
                    raise StepFailed(f"{field}: expected {want!r}, got {actual!r} in {frame}")

    def expect_text_deltas(self, source: FrameSource, want: str) -> None:
        text = ""
        while text != want:
            frame = source.next_frame()
            if frame.WhichOneof("event") != "text_delta":
                raise StepFailed(f"text deltas {text!r} end before {want!r}: {frame}")
            text += frame.text_delta.text
            if not want.startswith(text):
                raise StepFailed(f"text deltas {text!r} do not spell {want!r}")

    def expect_all(self, source: FrameSource, checks) -> None:
        """One check per frame (a text_deltas check spans several), then the end with OK."""
        if not isinstance(checks, list):
            raise StepFailed("expect must be an array")
        for index, check in enumerate(checks, 1):
            try:
                self.expect(source, check)
            except StepFailed as failure:
                raise StepFailed(f"check {index}: {failure}") from None
        source.expect_end()

    def expect_error(self, error: AskUserError, want, allowed) -> None:
        """Compares a failure with {"code", "reason", "field", "fields"}."""
        want = self.resolve(fields(want, allowed))
        if error.code.name != want.get("code"):
            raise StepFailed(f"expected {want.get('code')}, got {error}")
        if "reason" in want and error.reason != want["reason"]:
            raise StepFailed(f"expected reason {want['reason']}, got {error.reason!r}")
        violations = [violation.field for violation in error.field_violations]
        if "field" in want and want["field"] not in violations:
            raise StepFailed(f"no violation of {want['field']}; got {violations}")
        if "fields" in want and violations != want["fields"]:
            raise StepFailed(f"expected violations {want['fields']}, got {violations}")

    def expect_stream(self, frames, body: dict, run_id: str, error_fields) -> None:
        """Checks a server-streaming call against the step's expect frames or expect_error."""
        if ("expect" in body) == ("expect_error" in body):
            raise StepFailed("give exactly one of expect, expect_error")
        source = FrameSource(frames, run_id)
        if "expect" in body:
            self.expect_all(source, body["expect"])
            return
        got = source.next()
        if not isinstance(got, AskUserError):
            raise StepFailed(f"expected an error, got {'the end' if got is END else got}")
        self.expect_error(got, body["expect_error"], error_fields)

    def step_resume(self, body) -> None:
        body = fields(
            body,
            ["run_id", "tool_call_id", "answer_id", "expect", "expect_error", "as", *ANSWER_KINDS],
        )
        run_id = self.resolve(body.get("run_id", ""))
        frames = self.caller(body).resume_run(
            run_id, self.resolve(body.get("tool_call_id", "")), timeout=STREAM_TIMEOUT, **self.answer_of(body)
        )
        self.expect_stream(frames, body, run_id, ["code", "reason", "field"])

    def step_watch(self, body) -> None:
        body = fields(body, ["run_id", "after_sequence", "expect", "expect_error", "as"])
        run_id = self.resolve(body.get("run_id", ""))
        after_sequence = self.number(body.get("after_sequence", 0), "after_sequence")
        frames = self.caller(body).watch_run(run_id, after_sequence, timeout=STREAM_TIMEOUT)
        self.expect_stream(frames, body, run_id, ["code"])

    def step_get_run(self, body) -> None:
        body = fields(body, ["run_id", "status", "pending", "output_text", "last_sequence", "expect_error", "as"])
        try:
            run = self.caller(body).get_run(self.resolve(body.get("run_id", "")), timeout=CALL_TIMEOUT)
        except AskUserError as error:
            if "expect_error" not in body:
                raise StepFailed(f"GetRun failed: {error}") from None
            self.expect_error(error, body["expect_error"], ["code"])
            return
        if "expect_error" in body:
            raise StepFailed(f"expected an error, got {run}")
        if "status" in body and agent_pb2.RunStatus.Name(run.status) != body["status"]:
            raise StepFailed(f"expected status {body['status']}, got {run}")
        if "pending" in body:
            pending = [call.tool_call_id for call in run.pending_tool_calls]
            if pending != self.resolve(body["pending"]):
                raise StepFailed(f"expected pending {self.resolve(body['pending'])}, got {run}")
        if "output_text" in body and run.output_text != self.resolve(body["output_text"]):
            raise StepFailed(f"expected output_text {body['output_text']!r}, got {run}")
        if "last_sequence" in body and run.last_sequence != self.number(
            body["last_sequence"], "last_sequence"
        ):
            raise StepFailed(f"expected last_sequence {body['last_sequence']}, got {run}")

    def step_ask_user(self, body) -> None:
        body = fields(body, ["input", "content", "expect_error"])
        tool_input = self.resolve(fields(body.get("input"), ["question", "options", "selection_mode"]))
        options = [
            (option.get("label", ""), option.get("description", ""))
            for option in (
                fields(option, ["label", "description"]) for option in tool_input.get("options", [])
            )
        ]
        mode = tool_input.get("selection_mode")
        if mode is not None:
            mode = cast(ask_user_pb2.SelectionMode, ask_user_pb2.SelectionMode.Value(mode))
        try:
            content = self.client.ask_user(
                tool_input.get("question", ""),
                options,
                mode,
                timeout=CALL_TIMEOUT,
            )
        except AskUserError as error:
            if "expect_error" not in body:
                raise StepFailed(f"AskUser failed: {error}") from None
            self.expect_error(error, body["expect_error"], ["code", "fields"])
            return
        if "expect_error" in body:
            raise StepFailed(f"expected an error, got {content!r}")
        if content != self.resolve(body.get("content")):
            raise StepFailed(f"expected content {body.get('content')!r}, got {content!r}")

    def feed(self, body: dict) -> tuple[str, PendingCalls]:
        name = body.get("feed", "main")
        if name not in self.feeds:
            raise StepFailed(f"no open feed {name!r}")
        return name, self.feeds[name]

    def step_watch_pending(self, body) -> None:
        body = self.resolve(fields(body, ["feed", "agent_ids", "tool_names", "kinds", "as"]))
        name = body.get("feed", "main")
        if name in self.feeds:
            raise StepFailed(f"feed {name!r} is already open")
        try:
            kinds = [agent_pb2.SuspendKind.Value(kind) for kind in body.get("kinds", [])]
        except ValueError as error:
            raise StepFailed(f"kinds: {error}") from None
        self.feeds[name] = self.caller(body).watch_pending_calls(
            agent_ids=body.get("agent_ids", []),
            tool_names=body.get("tool_names", []),
            kinds=cast(list[agent_pb2.SuspendKind], kinds),
            timeout=STREAM_TIMEOUT,
        )

    def step_expect_pending(self, body) -> None:
        kind = body.get("kind") if isinstance(body, dict) else None
        if kind not in PENDING_CHECK_FIELDS:
            raise StepFailed(f"kind must be one of {', '.join(PENDING_CHECK_FIELDS)}")
        check = self.resolve(fields(body, PENDING_CHECK_FIELDS[kind]))
        _, feed = self.feed(check)
        run_id = check.get("run_id")
        # Calls the snapshot must not hold; checked on every event read up to its end.
        absent = check.get("absent", [])
        while True:
            try:
                event = next(feed)
            except StopIteration:
                raise StepFailed(f"the feed ended; {kind} was expected") from None
            except AskUserError as error:
                raise StepFailed(f"the feed failed: {error}") from None
            got = event.WhichOneof("event")
            if got == "call_pending" and event.call_pending.call.tool_call_id in absent:
                raise StepFailed(f"the snapshot holds an absent call: {event}")
            if run_id is not None:
                # Only events of this run count; one of another kind is a failure.
                if event_run_id(event) != run_id:
                    continue
                if got != kind:
                    raise StepFailed(f"expected {kind}, got {event}")
            elif got != kind:
                continue
            break
        for field, want in check.items():
            if field in ("feed", "kind", "absent"):
                continue
            if field == "save":
                self.saved[want] = pending_field(event, "tool_call_id")
                continue
            actual = pending_field(event, field)
            if not matches(actual, want):
                raise StepFailed(f"{field}: expected {want!r}, got {actual!r} in {event}")

    def step_close_pending(self, body) -> None:
        name, feed = self.feed(fields(body, ["feed"]))
        feed.close()
        del self.feeds[name]

    def step_claim(self, body) -> None:
        body = fields(body, ["run_id", "tool_call_id", "claimant", "ttl_ms", "expect_error", "as"])
        ttl = None
        if "ttl_ms" in body:
            ttl = timedelta(milliseconds=self.number(body["ttl_ms"], "ttl_ms"))
        try:
            expire_time = self.caller(body).claim_call(
                self.resolve(body.get("run_id", "")),
                self.resolve(body.get("tool_call_id", "")),
                self.resolve(body.get("claimant", "")),
                ttl=ttl,
                timeout=CALL_TIMEOUT,
            )
        except AskUserError as error:
            if "expect_error" not in body:
                raise StepFailed(f"ClaimCall failed: {error}") from None
            self.expect_error(error, body["expect_error"], ["code", "reason"])
            return
        if "expect_error" in body:
            raise StepFailed(f"expected an error, got a claim until {expire_time}")

    def step_cancel(self, body) -> None:
        body = fields(body, ["run_id", "reason", "expect_error", "as"])
        try:
            run = self.caller(body).cancel_run(
                self.resolve(body.get("run_id", "")), self.resolve(body.get("reason", "")), timeout=CALL_TIMEOUT
            )
        except AskUserError as error:
            if "expect_error" not in body:
                raise StepFailed(f"CancelRun failed: {error}") from None
            self.expect_error(error, body["expect_error"], ["code", "reason"])
            return
        if "expect_error" in body:
            raise StepFailed(f"expected an error, got {run}")
        if run.status != agent_pb2.RUN_STATUS_CANCELLED:
            raise StepFailed(f"expected a cancelled run, got {run}")

    def close(self) -> None:
        for source in self.streams.values():
            if source.run is not None:
                source.run.close()
        for feed in self.feeds.values():
            feed.close()


def run_scenario(client: AskUserClient, other: AskUserClient | None, path: Path) -> tuple[str, str | None]:
    """Runs one scenario file: its name, and what failed (None when it passed)."""
    name = path.name
    run = ScenarioRun(client, other)
    try:
        scenario = fields(json.loads(path.read_text()), ["name", "description", "steps"])
        name = scenario.get("name", name)
        steps = scenario.get("steps")
        if not isinstance(steps, list):
            raise StepFailed("steps must be an array")
        run.run(steps)
        return name, None
    except (StepFailed, ValueError, AskUserError) as failure:
        return name, str(failure)
    finally:
        run.close()


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: conformance.py HOST:PORT", file=sys.stderr)
        return 2
    files = sorted(SCENARIOS.glob("*.json"))
    passed = failed = 0
    address = sys.argv[1]
    own_key, other_key = os.environ.get("ASKUSER_API_KEY"), os.environ.get("ASKUSER_OTHER_API_KEY")
    with (
        AskUserClient(address, api_key=own_key or None) as client,
        AskUserClient(address, api_key=other_key) if other_key else nullcontext() as other,
    ):
        for path in files:
            name, failure = run_scenario(client, other, path)
            if failure is None:
                passed += 1
                print(f"PASS {name}", flush=True)
            else:
                failed += 1
                print(f"FAIL {name}: {failure}", flush=True)
    if not files:
        print(f"no scenarios in {SCENARIOS}")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
