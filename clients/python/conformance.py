#!/usr/bin/env python3
"""The Python conformance runner: runs every scenario in tests/conformance (the format is in its
README) with askuser_client against the server at HOST:PORT and prints `N passed, N failed` last.

Usage: conformance.py HOST:PORT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from askuser_client import AskUserClient, AskUserError, Frame, agent_pb2, ask_user_pb2

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
    if kind == "answer_rejected" and field == "fields":
        return [violation.field for violation in event.field_violations]
    if (kind, field) in PLAIN_FIELDS:
        return getattr(event, field)
    raise KeyError(field)


class ScenarioRun:
    """One scenario being run: its client, saved values and open streams."""

    def __init__(self, client: AskUserClient):
        self.client = client
        self.saved: dict[str, str] = {}
        self.streams: dict[str, FrameSource] = {}

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

    def step_start(self, body) -> None:
        body = fields(body, ["stream", "agent_id", "prompt", "metadata"])
        body = self.resolve(body)
        name = body.get("stream", "main")
        try:
            run = self.client.start_run(
                body.get("agent_id", ""),
                body.get("prompt", ""),
                body.get("metadata") or {},
                timeout=STREAM_TIMEOUT,
            )
        except AskUserError as failure:
            self.open(name, FrameSource(iter(()), "", failure=failure))
            return
        self.saved["run_id"] = run.run_id
        self.open(name, FrameSource(run, run.run_id, run=run))

    def step_attach(self, body) -> None:
        body = fields(body, ["stream", "run_id", "after_sequence"])
        run_id = self.resolve(body.get("run_id", ""))
        after_sequence = self.number(body.get("after_sequence", 0), "after_sequence")
        run = self.client.attach(run_id, after_sequence, timeout=STREAM_TIMEOUT)
        self.open(body.get("stream", "main"), FrameSource(run, run_id, run=run))

    def answer_of(self, body: dict) -> dict:
        """The keyword arguments of the answer an `answer` or `resume` step describes."""
        answer = {key: self.resolve(body[key]) for key in ("text", "selections", "decline") if key in body}
        if len(answer) != 1:
            raise StepFailed("an answer has exactly one of text, selections, decline")
        answer["answer_id"] = self.resolve(body.get("answer_id", ""))
        return answer

    def step_answer(self, body) -> None:
        body = fields(
            body, ["stream", "run_id", "tool_call_id", "text", "selections", "decline", "answer_id"]
        )
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
        body = fields(body, ["stream", "code"])
        want = body.get("code")
        got = self.stream(body)[1].next()
        if not isinstance(got, AskUserError):
            raise StepFailed(f"expected {want}, got {'the end' if got is END else got}")
        if got.code.name != want:
            raise StepFailed(f"expected {want}, got {got}")

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
                if tool_call_id(frame) is None:
                    raise StepFailed("save needs a frame with a tool_call_id")
                self.saved[want] = tool_call_id(frame)
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
                if actual != want or type(actual) is not type(want):
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
            [
                "run_id",
                "tool_call_id",
                "text",
                "selections",
                "decline",
                "answer_id",
                "expect",
                "expect_error",
            ],
        )
        run_id = self.resolve(body.get("run_id", ""))
        frames = self.client.resume_run(
            run_id, self.resolve(body.get("tool_call_id", "")), timeout=STREAM_TIMEOUT, **self.answer_of(body)
        )
        self.expect_stream(frames, body, run_id, ["code", "reason", "field"])

    def step_watch(self, body) -> None:
        body = fields(body, ["run_id", "after_sequence", "expect"])
        run_id = self.resolve(body.get("run_id", ""))
        after_sequence = self.number(body.get("after_sequence", 0), "after_sequence")
        frames = self.client.watch_run(run_id, after_sequence, timeout=STREAM_TIMEOUT)
        self.expect_stream(frames, body, run_id, [])

    def step_get_run(self, body) -> None:
        body = fields(body, ["run_id", "status", "pending", "output_text", "last_sequence", "expect_error"])
        try:
            run = self.client.get_run(self.resolve(body.get("run_id", "")), timeout=CALL_TIMEOUT)
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
        try:
            content = self.client.ask_user(
                tool_input.get("question", ""),
                options,
                None if mode is None else ask_user_pb2.SelectionMode.Value(mode),
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

    def close(self) -> None:
        for source in self.streams.values():
            if source.run is not None:
                source.run.close()


def run_scenario(client: AskUserClient, path: Path) -> tuple[str, str | None]:
    """Runs one scenario file: its name, and what failed (None when it passed)."""
    name = path.name
    run = ScenarioRun(client)
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
    with AskUserClient(sys.argv[1]) as client:
        for path in files:
            name, failure = run_scenario(client, path)
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
