"""The Python client under test of the conformance runner (tests/conformance/README.md, "Clients
under test"): reads one JSON request a line from stdin, makes it a call on the sync
`AskUserClient`'s public API and writes one JSON response a line to stdout. It never judges: the
runner holds every assertion. Run it with the venv clients/python/test.sh makes, where the package
is installed as users install it."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, cast

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from askuser_client import (
    Approval,
    ApprovalOutcome,
    AskUserClient,
    AskUserError,
    Choice,
    FormValue,
    HumanAnswer,
    HumanRequest,
    PendingCalls,
    Run,
    __version__,
    agent_pb2,
    ask_user_pb2,
    tool_definition,
)

Json = dict[str, Any]
# The generated .pyi types say `EnumTypeWrapper.Value` returns an int; the client's calls take the
# enum types, hence the casts below.


def message(value: Message) -> Json:
    return MessageToDict(value)


def status(error: AskUserError) -> Json:
    return {
        "code": error.code.name,
        "message": error.message,
        "reason": error.reason or "",
        "fields": [violation.field for violation in error.field_violations],
    }


def timeout(request: Json) -> float | None:
    milliseconds = request.get("timeout_ms") or 0
    return milliseconds / 1000 if milliseconds else None


def form_values(form: Json) -> dict[str, FormValue]:
    """A conformance answer's `"form"` ({NAME: {KIND: VALUE}}) as the values `answer_form` takes:
    str, int or float, bool, or `Choice`."""
    values: dict[str, FormValue] = {}
    for name, value in form.items():
        [(kind, content)] = value.items()
        match kind, content:
            case "choice", dict():
                values[name] = Choice(values=content.get("values", []), other=content.get("other", ""))
            case ("text", str()) | ("boolean", bool()):
                values[name] = content
            # A bool is an int to Python, and answer_form would send it as a boolean.
            case "number", int() | float() if not isinstance(content, bool):
                values[name] = content
            case _:
                raise ValueError(f"a form value of an unknown kind: {value}")
    return values


def answer_kwargs(answer: Json) -> Json:
    """The answer's one kind as the keyword arguments of `Run.answer` and `resume_run`."""
    if "tool_output" in answer:
        output = answer["tool_output"]
        return {"output": output["content"], "is_error": output.get("is_error", False)}
    if "form" in answer:
        return {"form": form_values(answer["form"])}
    for key in ("text", "selections", "decline", "approve", "reject", "edit", "reply"):
        if key in answer:
            return {key: answer[key]}
    raise ValueError(f"an answer without a kind: {answer}")


def collect(frames: Iterator[agent_pb2.RunAgentResponse]) -> Json:
    """Every frame of a ResumeRun or WatchRun, then how it ended."""
    read: list[Json] = []
    try:
        for frame in frames:
            read.append(message(frame))
    except AskUserError as error:
        return {"frames": read, "error": status(error)}
    return {"frames": read, "error": None}


def plain_json(value: object) -> object:
    """A form field's value as the outcome JSON writes it: a choice as {"values", "other"}."""
    if isinstance(value, Choice):
        return {"values": list(value.values), "other": value.other}
    return value


def outcome_json(outcome: HumanAnswer | ApprovalOutcome) -> Json:
    """The protocol's OUTCOME of what `HumanRequest.wait` returned."""
    written: Json = {"kind": outcome.kind}
    if isinstance(outcome, HumanAnswer):
        if outcome.kind in ("text", "replied"):
            written["text"] = outcome.text
        elif outcome.kind == "selections":
            written["selections"] = list(outcome.selections)
        elif outcome.kind == "form":
            written["values"] = {name: plain_json(value) for name, value in outcome.values.items()}
        elif outcome.kind == "declined":
            written["reason"] = outcome.reason
    elif outcome.kind in ("approved", "edited"):
        written["arguments"] = dict(outcome.arguments)
    elif outcome.kind == "rejected":
        written["reason"] = outcome.reason
    if outcome.settled_by:
        written["settled_by"] = outcome.settled_by
    return written


class ClientUnderTest:
    def __init__(self) -> None:
        self.clients: dict[str, AskUserClient] = {}
        self.streams: dict[str, Run] = {}
        self.feeds: dict[str, PendingCalls] = {}
        self.asks: dict[str, HumanRequest] = {}

    def client(self, request: Json) -> AskUserClient:
        return self.clients[request.get("as") or "own"]

    def connect(self, request: Json) -> Json:
        for who, key in request["keys"].items():
            self.clients[who] = AskUserClient(request["address"], api_key=key or None)
        return {"client": f"askuser-client {__version__}"}

    def start(self, request: Json) -> Json:
        tools = [
            tool_definition(
                tool["name"],
                tool.get("description", ""),
                tool.get("parameters_json_schema") or None,
                approval=cast(agent_pb2.ApprovalPolicy, agent_pb2.ApprovalPolicy.Value(tool.get("approval") or "APPROVAL_POLICY_UNSPECIFIED")),
            )
            for tool in request.get("tools", [])
        ]
        run = self.client(request).start_run(
            request["agent_id"], request.get("prompt", ""), request.get("metadata"), tools=tools, timeout=timeout(request)
        )
        self.streams[request["stream"]] = run
        return {"run_id": run.run_id}

    def attach(self, request: Json) -> Json:
        self.streams[request["stream"]] = self.client(request).attach(
            request["run_id"], int(request.get("after_sequence", 0)), timeout=timeout(request)
        )
        return {}

    def send(self, request: Json) -> Json:
        answer = request["answer"]
        run = self.streams[request["stream"]]
        tool_call_id, answer_id = answer["tool_call_id"], answer.get("answer_id", "")
        # Forms and replies go through their own verbs, which answer on the stream's run; an
        # answer naming a run goes through `answer`, the one verb that takes a run_id.
        if "form" in answer and not answer.get("run_id"):
            run.answer_form(tool_call_id, form_values(answer["form"]), answer_id=answer_id)
        elif "reply" in answer and not answer.get("run_id"):
            run.reply(tool_call_id, answer["reply"], answer_id=answer_id)
        else:
            run.answer(tool_call_id, run_id=answer.get("run_id", ""), answer_id=answer_id, **answer_kwargs(answer))
        return {}

    def next(self, request: Json) -> Json:
        frame = next(self.streams[request["stream"]], None)
        return {"end": True} if frame is None else {"frame": message(frame)}

    def close(self, request: Json) -> Json:
        self.streams.pop(request["stream"]).close()
        return {}

    def resume(self, request: Json) -> Json:
        answer = request["answer"]
        return collect(
            self.client(request).resume_run(
                answer["run_id"],
                answer["tool_call_id"],
                answer_id=answer.get("answer_id", ""),
                timeout=timeout(request),
                **answer_kwargs(answer),
            )
        )

    def watch(self, request: Json) -> Json:
        return collect(
            self.client(request).watch_run(
                request["run_id"], int(request.get("after_sequence", 0)), timeout=timeout(request)
            )
        )

    def get_run(self, request: Json) -> Json:
        return {"run": message(self.client(request).get_run(request["run_id"], timeout=timeout(request)))}

    def cancel(self, request: Json) -> Json:
        return {"run": message(self.client(request).cancel_run(request["run_id"], request.get("reason", "")))}

    def ask_user(self, request: Json) -> Json:
        tool_input = request["input"]
        mode = tool_input.get("selection_mode")
        content = self.client(request).ask_user(
            tool_input.get("question", ""),
            [(option.get("label", ""), option.get("description", "")) for option in tool_input.get("options", [])],
            None if mode is None else cast(ask_user_pb2.SelectionMode, ask_user_pb2.SelectionMode.Value(mode)),
        )
        return {"content": content}

    def watch_pending(self, request: Json) -> Json:
        self.feeds[request["feed"]] = self.client(request).watch_pending_calls(
            agent_ids=request.get("agent_ids", []),
            tool_names=request.get("tool_names", []),
            kinds=[cast(agent_pb2.SuspendKind, agent_pb2.SuspendKind.Value(kind)) for kind in request.get("kinds", [])],
        )
        return {}

    def next_pending(self, request: Json) -> Json:
        event = next(self.feeds[request["feed"]], None)
        return {"end": True} if event is None else {"event": message(event)}

    def close_pending(self, request: Json) -> Json:
        self.feeds.pop(request["feed"]).close()
        return {}

    def claim(self, request: Json) -> Json:
        ttl_ms = request.get("ttl_ms") or 0
        self.client(request).claim_call(
            request["run_id"],
            request["tool_call_id"],
            request["claimant"],
            ttl=timedelta(milliseconds=ttl_ms) if ttl_ms else None,
        )
        return {}

    def ask(self, request: Json) -> Json:
        ttl_ms = request.get("ttl_ms") or 0
        common: Json = dict(
            context=request.get("context", ""),
            ttl=timedelta(milliseconds=ttl_ms) if ttl_ms else None,
            request_id=request.get("request_id") or None,
            timeout=timeout(request),
        )
        client = self.client(request)
        if (question := request.get("question")) is not None:
            mode = question.get("selection_mode")
            handle = client.ask(
                question.get("question", ""),
                options=[(option.get("label", ""), option.get("description", "")) for option in question.get("options", [])],
                selection_mode=None if mode is None else cast(ask_user_pb2.SelectionMode, ask_user_pb2.SelectionMode.Value(mode)),
                **common,
            )
        elif (form := request.get("form")) is not None:
            handle = client.ask(form=form, **common)
        else:
            approval = request["approval"]
            handle = client.ask(
                approval=Approval(approval.get("tool_name", ""), approval.get("arguments", {}), approval.get("reason", "")),
                **common,
            )
        self.asks[request["ask"]] = handle
        return {"run_id": handle.run_id, "tool_call_id": handle.tool_call_id}

    def ask_result(self, request: Json) -> Json:
        return {"outcome": outcome_json(self.asks[request["ask"]].wait(timeout(request)))}

    def respond(self, line: str) -> Json:
        request = json.loads(line)
        operation = OPERATIONS.get(request.get("op"))
        if operation is None:
            return {"failure": f"unknown op {request.get('op')!r}"}
        try:
            return {"ok": operation(self, request)}
        except AskUserError as error:
            return {"error": status(error)}
        except Exception as error:  # anything else is the client under test's own failure
            traceback.print_exc()
            return {"failure": f"{type(error).__name__}: {error}"}


OPERATIONS: dict[str, Callable[[ClientUnderTest, Json], Json]] = {
    name: getattr(ClientUnderTest, name)
    for name in (
        "connect", "start", "attach", "send", "next", "close", "resume", "watch", "get_run",
        "cancel", "ask_user", "watch_pending", "next_pending", "close_pending", "claim", "ask",
        "ask_result",
    )
}


def main() -> None:
    cut = ClientUnderTest()
    while line := sys.stdin.readline():
        if line.strip():
            print(json.dumps(cut.respond(line)), flush=True)
    for client in cut.clients.values():
        client.close()


if __name__ == "__main__":
    main()
