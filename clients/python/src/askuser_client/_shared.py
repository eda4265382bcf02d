"""What the sync client (client.py) and the asyncio client (aio.py) share: the messages they send,
how a connection's settings become channel credentials and options, and the `Run` verbs that all
come down to `answer`. Both clients only open calls and read their results."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeAlias, TypeVar

import grpc

from askuser.v1 import agent_pb2, ask_user_pb2, form_pb2, tool_pb2

from .auth import TLS, TokenProvider, static_token
from .errors import AskUserError

Frame = agent_pb2.RunAgentResponse
"""One event of a run: `frame.WhichOneof("event")` names it (`tool_call_suspended`, ...)."""

PendingCallEvent = agent_pb2.WatchPendingCallsResponse
"""One event of the pending-calls feed: `event.WhichOneof("event")` is `call_pending`,
`call_settled` or `snapshot_done`."""

JsonArguments: TypeAlias = str | Mapping[str, Any]
"""Tool arguments or a JSON Schema: JSON text, sent as is, or a mapping, encoded as JSON."""


def _json_text(value: JsonArguments) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class Choice:
    """A choice field's value: the selected choices' `value`s and, where the field allows it, the
    person's own text ("Other…"). A single-choice field takes one value or `other`, not both."""

    values: Sequence[str] = ()
    other: str = ""


FormValue: TypeAlias = str | int | float | bool | Sequence[str] | Choice
"""One field's value in `answer_form`: `str` for a text field, `int` or `float` for a number field,
`bool` for a boolean field, a list (or tuple) of the selected choices' values or a `Choice` (for an
"Other…" text) for a choice field."""


def field_value(value: FormValue) -> form_pb2.FieldValue:
    """The `FieldValue` of one form field's value (see `FormValue`); a TypeError for any other type."""
    # bool before int (a bool is an int to Python), str before Sequence (a str is a sequence).
    if isinstance(value, bool):
        return form_pb2.FieldValue(boolean=value)
    if isinstance(value, (int, float)):
        return form_pb2.FieldValue(number=float(value))
    if isinstance(value, str):
        return form_pb2.FieldValue(text=value)
    if isinstance(value, Choice):
        values, other = value.values, value.other
    elif isinstance(value, Sequence):
        values, other = value, ""
    else:
        raise TypeError(f"a form value is a str, int, float, bool, list of str or Choice, not {type(value).__name__}")
    if isinstance(values, str) or not all(isinstance(choice, str) for choice in values):
        raise TypeError(f"a choice field's values are a list of str, not {values!r}")
    field = form_pb2.FieldValue()
    # SetInParent marks the oneof as chosen even for an empty selection.
    field.choice.SetInParent()
    field.choice.values.extend(values)
    field.choice.other = other
    return field


def form_answer(values: Mapping[str, FormValue]) -> form_pb2.FormAnswer:
    """The `FormAnswer` of a form's values by field name (see `FormValue`)."""
    answer = form_pb2.FormAnswer()
    for name, value in values.items():
        answer.values[name].CopyFrom(field_value(value))
    return answer


def build_answer(
    run_id: str,
    tool_call_id: str,
    *,
    text: str | None = None,
    selections: Sequence[str] | None = None,
    decline: str | None = None,
    output: str | None = None,
    is_error: bool = False,
    approve: bool = False,
    reject: str | None = None,
    edit: JsonArguments | None = None,
    form: Mapping[str, FormValue] | None = None,
    reply: str | None = None,
    answer_id: str = "",
) -> agent_pb2.Answer:
    """An `Answer` with exactly one of:

    - for a question: `text`, `selections` (labels) or `decline` (the reason);
    - for a form (`SUSPEND_KIND_FORM`): `form`, the values by field name (see `FormValue`), or
      `decline`;
    - for a question or a form: `reply`, prose instead of an answer, which the model reads;
    - for a client tool call: `output` (the tool's output; `is_error=True` when the tool failed);
    - for a call that waits for approval: `approve=True`, `reject` (the reason, possibly "") or
      `edit` (the arguments to run the tool with, as JSON text or a mapping). `decline` rejects too.
    """
    given = sum(
        value is not None for value in (text, selections, decline, output, reject, edit, form, reply)
    ) + approve
    if given != 1:
        raise ValueError(
            "an answer has exactly one of text, selections, decline, output, approve, reject, edit,"
            " form or reply"
        )
    if is_error and output is None:
        raise ValueError("is_error goes with output")
    answer = agent_pb2.Answer(run_id=run_id, tool_call_id=tool_call_id, answer_id=answer_id)
    if text is not None:
        answer.text = text
    elif selections is not None:
        # SetInParent marks the oneof as chosen even for an empty selection ("none of these").
        answer.selections.SetInParent()
        answer.selections.labels.extend(selections)
    elif decline is not None:
        answer.decline.SetInParent()
        answer.decline.reason = decline
    elif output is not None:
        answer.tool_output.SetInParent()
        answer.tool_output.content = output
        answer.tool_output.is_error = is_error
    elif approve:
        answer.approval.approve.SetInParent()
    elif reject is not None:
        answer.approval.reject.SetInParent()
        answer.approval.reject.reason = reject
    elif form is not None:
        answer.form.CopyFrom(form_answer(form))
        # An empty form is still a form answer (one whose fields are all optional).
        answer.form.SetInParent()
    elif reply is not None:
        answer.reply = reply
    else:
        assert edit is not None
        answer.approval.edit.SetInParent()
        answer.approval.edit.arguments_json = _json_text(edit)
    return answer


def tool_definition(
    name: str,
    description: str = "",
    parameters: JsonArguments | None = None,
    *,
    approval: agent_pb2.ApprovalPolicy = agent_pb2.APPROVAL_POLICY_UNSPECIFIED,
) -> agent_pb2.ToolDefinition:
    """A client tool for one run (`start_run(tools=...)`): its name, what it does, the JSON Schema
    of its arguments (JSON text or a mapping; None: any JSON object) and whether its calls wait for
    approval (`APPROVAL_POLICY_ALWAYS`) or not (the default)."""
    return agent_pb2.ToolDefinition(
        name=name,
        description=description,
        parameters_json_schema="" if parameters is None else _json_text(parameters),
        approval=approval,
    )



@dataclass(frozen=True)
class Reconnect:
    """How a client rides out a dropped connection (a server restart, a reset): a `RunAgent`
    stream reattaches from the last sequence seen, the pending-calls feed reopens, and the
    idempotent unary calls (`get_run`, `list_runs`, `list_agents`, `cancel_run`) are retried, each
    on `UNAVAILABLE`, waiting `initial_backoff` seconds, doubling up to `max_backoff`, for up to
    `total` seconds in all before the `Unavailable` error is raised."""

    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    total: float = 30.0


DEFAULT_RECONNECT = Reconnect()

# Channel options that keep gRPC's own reconnection attempts frequent while a server restarts (its
# default backoff grows to 120 s); options given by the caller win.
RECONNECT_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (("grpc.max_reconnect_backoff_ms", 2000),)


class Backoff:
    """The waits of one outage under a `Reconnect` policy: `next_wait()` is the time to sleep
    before the next attempt, or None once the policy's total would be exceeded; `reset()` after a
    success."""

    def __init__(self, policy: Reconnect) -> None:
        self._policy = policy
        self._since: float | None = None
        self._wait = policy.initial_backoff

    def reset(self) -> None:
        self._since = None
        self._wait = self._policy.initial_backoff

    def next_wait(self) -> float | None:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        wait = self._wait
        if now - self._since + wait > self._policy.total:
            return None
        self._wait = min(wait * 2, self._policy.max_backoff)
        return wait


def is_unavailable(error: AskUserError) -> bool:
    return error.code == grpc.StatusCode.UNAVAILABLE


def acknowledged(frame: Frame) -> str | None:
    """The tool_call_id an `answer_accepted` or `answer_rejected` frame acknowledges, else None."""
    kind = frame.WhichOneof("event")
    if kind == "answer_accepted":
        return str(frame.answer_accepted.tool_call_id)
    if kind == "answer_rejected":
        return str(frame.answer_rejected.tool_call_id)
    return None


def is_heartbeat(message: agent_pb2.RunAgentResponse | agent_pb2.WatchPendingCallsResponse) -> bool:
    return bool(message.WhichOneof("event") == "heartbeat")


def check_run_started(first: Frame | None) -> str:
    """The run id of the first frame of a started run; an AskUserError (UNKNOWN) if it is not
    `run_started`."""
    if first is None:
        raise AskUserError.for_code(grpc.StatusCode.UNKNOWN, "the stream ended before run_started")
    if first.WhichOneof("event") != "run_started":
        raise AskUserError.for_code(grpc.StatusCode.UNKNOWN, f"the first frame is not run_started: {first}")
    return first.run_id


def start_request(
    agent_id: str,
    prompt: str,
    metadata: Mapping[str, str] | None,
    question_ttl: timedelta | None,
    tools: Iterable[agent_pb2.ToolDefinition],
) -> agent_pb2.RunAgentRequest:
    start = agent_pb2.StartRun(agent_id=agent_id, prompt=prompt, metadata=metadata or {}, tools=list(tools))
    if question_ttl is not None:
        start.question_ttl.FromTimedelta(question_ttl)
    return agent_pb2.RunAgentRequest(start=start)


def attach_request(run_id: str, after_sequence: int) -> agent_pb2.RunAgentRequest:
    return agent_pb2.RunAgentRequest(attach=agent_pb2.AttachRun(run_id=run_id, after_sequence=after_sequence))


def list_runs_request(
    status: agent_pb2.RunStatus, agent_id: str, page_size: int, page_token: str
) -> agent_pb2.ListRunsRequest:
    return agent_pb2.ListRunsRequest(status=status, agent_id=agent_id, page_size=page_size, page_token=page_token)


def pending_calls_request(
    agent_ids: Iterable[str],
    tool_names: Iterable[str],
    kinds: Iterable[agent_pb2.SuspendKind],
    assigned_to_me: bool,
) -> agent_pb2.WatchPendingCallsRequest:
    return agent_pb2.WatchPendingCallsRequest(
        agent_ids=list(agent_ids),
        tool_names=list(tool_names),
        kinds=list(kinds),
        assigned_to_me=assigned_to_me,
    )


def claim_request(
    run_id: str, tool_call_id: str, claimant: str, ttl: timedelta | None
) -> agent_pb2.ClaimCallRequest:
    request = agent_pb2.ClaimCallRequest(run_id=run_id, tool_call_id=tool_call_id, claimant=claimant)
    if ttl is not None:
        request.ttl.FromTimedelta(ttl)
    return request


def ask_user_request(
    question: str,
    options: Iterable[str | tuple[str, str]],
    selection_mode: ask_user_pb2.SelectionMode | None,
) -> tool_pb2.AskUserRequest:
    tool_input = ask_user_pb2.AskUserInput(
        question=question,
        options=[
            ask_user_pb2.AskUserOption(label=option)
            if isinstance(option, str)
            else ask_user_pb2.AskUserOption(label=option[0], description=option[1])
            for option in options
        ],
    )
    if selection_mode is not None:
        tool_input.selection_mode = selection_mode
    return tool_pb2.AskUserRequest(input=tool_input)


@dataclass(frozen=True)
class ChannelSettings:
    """A connection's settings, checked: credentials (None: plaintext), channel options and the
    token provider (None: no `authorization` header)."""

    credentials: grpc.ChannelCredentials | None
    options: list[tuple[str, Any]]
    token_provider: TokenProvider | None

    @classmethod
    def of(
        cls,
        *,
        api_key: str | None,
        token_provider: TokenProvider | None,
        tls: TLS | bool,
        credentials: grpc.ChannelCredentials | None,
        options: Sequence[tuple[str, object]] | None,
    ) -> ChannelSettings:
        if api_key is not None and token_provider is not None:
            raise ValueError("give api_key or token_provider, not both")
        if tls is not False and credentials is not None:
            raise ValueError("give tls or credentials, not both")
        channel_options: list[tuple[str, Any]] = list(options or ())
        if tls is not False:
            settings = TLS() if tls is True else tls
            credentials = settings.channel_credentials()
            channel_options += settings.channel_options()
        if api_key is not None:
            token_provider = static_token(api_key)
        given = {name for name, _ in channel_options}
        channel_options += [option for option in RECONNECT_CHANNEL_OPTIONS if option[0] not in given]
        return cls(credentials, channel_options, token_provider)


R = TypeVar("R")


class Answering(Generic[R]):
    """The verbs of a `RunAgent` stream, all made of `answer`: R is what `answer` returns, None for
    the sync `Run`, an awaitable for the asyncio one (so `await run.approve(id)` there)."""

    def answer(
        self,
        tool_call_id: str,
        *,
        text: str | None = None,
        selections: Sequence[str] | None = None,
        decline: str | None = None,
        output: str | None = None,
        is_error: bool = False,
        approve: bool = False,
        reject: str | None = None,
        edit: JsonArguments | None = None,
        form: Mapping[str, FormValue] | None = None,
        reply: str | None = None,
        answer_id: str = "",
        run_id: str = "",
    ) -> R:
        """Settles a call (exactly one of the answers `build_answer` takes); the outcome comes back
        as an `answer_accepted` or `answer_rejected` frame.

        `answer_id` is an optional idempotency key: resending it is acknowledged as a duplicate.
        `run_id` defaults to this stream's run (naming another is rejected as `RUN_MISMATCH`).
        """
        raise NotImplementedError

    def answer_text(self, tool_call_id: str, text: str, *, answer_id: str = "") -> R:
        """Answers a free-text question, or a single-select one with the chosen label."""
        return self.answer(tool_call_id, text=text, answer_id=answer_id)

    def answer_selections(self, tool_call_id: str, labels: Sequence[str], *, answer_id: str = "") -> R:
        """Answers a select question with the chosen labels (single select: exactly one)."""
        return self.answer(tool_call_id, selections=labels, answer_id=answer_id)

    def decline(self, tool_call_id: str, reason: str = "", *, answer_id: str = "") -> R:
        """Declines to answer a question of any kind (on an approval: rejects the call)."""
        return self.answer(tool_call_id, decline=reason, answer_id=answer_id)

    def answer_form(self, tool_call_id: str, values: Mapping[str, FormValue], *, answer_id: str = "") -> R:
        """Answers a form (`SUSPEND_KIND_FORM`) with its values by field name: `str` for a text
        field, `int` or `float` for a number, `bool` for a yes/no, a list of choice values or a
        `Choice(values=[...], other="...")` for a choice field. Optional fields may be left out; a
        wrong value comes back as `answer_rejected` naming `answer.form.values["NAME"]`.

        ```python
        run.answer_form(call.tool_call_id, {"version": "1.4.2", "replicas": 3, "announce": True,
                                            "checks": ["unit", "load"], "rollout": Choice(other="one zone at a time")})
        ```
        """
        return self.answer(tool_call_id, form=values, answer_id=answer_id)

    def reply(self, tool_call_id: str, text: str, *, answer_id: str = "") -> R:
        """Replies in prose instead of answering a question or a form: the call settles with
        `TOOL_RESULT_KIND_REPLIED` and the model reads what the person wrote."""
        return self.answer(tool_call_id, reply=text, answer_id=answer_id)

    def send_output(self, tool_call_id: str, content: str, *, is_error: bool = False, answer_id: str = "") -> R:
        """Settles a client tool call (`SUSPEND_KIND_CLIENT_TOOL`) with the output of the tool the
        caller ran; `is_error=True` tells the model the tool failed."""
        return self.answer(tool_call_id, output=content, is_error=is_error, answer_id=answer_id)

    def approve(self, tool_call_id: str, *, answer_id: str = "") -> R:
        """Approves a call that waits for approval (`SUSPEND_KIND_APPROVAL`). A client tool call is
        then suspended again, with the same id, as `SUSPEND_KIND_CLIENT_TOOL`."""
        return self.answer(tool_call_id, approve=True, answer_id=answer_id)

    def reject(self, tool_call_id: str, reason: str = "", *, answer_id: str = "") -> R:
        """Rejects a call that waits for approval: the tool never runs and the model gets the
        reason."""
        return self.answer(tool_call_id, reject=reason, answer_id=answer_id)

    def edit(self, tool_call_id: str, arguments: JsonArguments, *, answer_id: str = "") -> R:
        """Approves a call that waits for approval with other arguments (JSON text or a mapping),
        which the server checks against the tool's schema."""
        return self.answer(tool_call_id, edit=arguments, answer_id=answer_id)
