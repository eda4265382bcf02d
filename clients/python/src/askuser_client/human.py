"""Ask a person from any code (`HumanService.Ask`): the typed outcomes of a request, what the sync
and asyncio clients share to create and follow one, and the `requires_approval` decorator.

```python
from askuser_client import AskUserClient

with AskUserClient("127.0.0.1:50051", api_key=key) as client:
    answer = client.ask_human("Which release name?", context="The nightly build is green.")
    if answer.kind == "text":
        print(answer.text)
    decision = client.request_approval("deploy", {"service": "api"}, "production deploys need a second pair of eyes")
    if decision.approved:
        deploy(**decision.arguments)
```

A request is a run of no agent holding one call: `ask(...)` creates it (with a generated
`request_id` unless one is given: asking again with the same id follows the same request) and
returns a handle once the call waits for someone; `wait()` follows it until someone settled it (or
it expired, or was cancelled), across dropped connections and server restarts, and returns a
`HumanAnswer` (a question or a form) or an `ApprovalOutcome` (an approval).
"""

from __future__ import annotations

import functools
import inspect
import json
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast

import grpc
from google.protobuf import json_format

from askuser.v1 import agent_pb2, ask_user_pb2, form_pb2, human_pb2

from ._shared import Choice, Frame
from .errors import AskUserError

if TYPE_CHECKING:
    from .aio import AsyncAskUserClient
    from .client import AskUserClient

__all__ = [
    "Approval",
    "ApprovalKind",
    "ApprovalOutcome",
    "ApprovalRejected",
    "AnswerKind",
    "FormFieldValue",
    "HumanAnswer",
    "requires_approval",
]

AnswerKind: TypeAlias = Literal["text", "selections", "form", "declined", "replied", "expired", "cancelled"]
"""How a question or a form was settled (`HumanAnswer.kind`)."""

ApprovalKind: TypeAlias = Literal["approved", "edited", "rejected", "expired", "cancelled"]
"""How an approval was settled (`ApprovalOutcome.kind`)."""

FormFieldValue: TypeAlias = str | int | float | bool | Choice
"""One field's value in a form's answer: `str` (text), `int` or `float` (number: an `int` when it
is whole), `bool` (yes or no) or `Choice` (the selected values and any "Other…" text)."""


@dataclass(frozen=True)
class HumanAnswer:
    """How a person settled a question or a form, by `kind`:

    - `"text"`: `text` (a free-text answer, or a single-select question's chosen label);
    - `"selections"`: `selections`, the chosen labels in order;
    - `"form"`: `values`, each answered field's value by name (see `FormFieldValue`);
    - `"declined"`: `reason` (may be "");
    - `"replied"`: `text`, prose the person wrote instead of answering;
    - `"expired"`: nobody settled it in time; `"cancelled"`: the request was cancelled.

    `settled_by` is the subject of who settled it ("" when nobody did, "askuser" for an expiry),
    `content` the result text the server gave (`User answered: …`)."""

    kind: AnswerKind
    text: str = ""
    selections: tuple[str, ...] = ()
    values: Mapping[str, FormFieldValue] = field(default_factory=dict)
    reason: str = ""
    settled_by: str = ""
    content: str = ""
    run_id: str = ""
    tool_call_id: str = ""


@dataclass(frozen=True)
class ApprovalOutcome:
    """How a person decided on an approval, by `kind`:

    - `"approved"`: run the tool with `arguments` (the ones asked about);
    - `"edited"`: run it with `arguments`, the ones the approver changed them to;
    - `"rejected"`: do not run it; `reason` says why (may be "");
    - `"expired"`: nobody decided in time; `"cancelled"`: the request was cancelled.

    `approved` is True for the first two. `settled_by` and `content` as in `HumanAnswer`."""

    kind: ApprovalKind
    arguments: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    settled_by: str = ""
    content: str = ""
    run_id: str = ""
    tool_call_id: str = ""

    @property
    def approved(self) -> bool:
        """Whether the tool may run (with `arguments`): approved as asked or edited."""
        return self.kind in ("approved", "edited")


Outcome: TypeAlias = HumanAnswer | ApprovalOutcome


class ApprovalRejected(Exception):
    """Raised by a function wrapped with `requires_approval` (instead of running it) when its
    approval was rejected, expired or was cancelled: `outcome` is the `ApprovalOutcome`, `reason`
    the approver's reason ("" when none was given or nobody decided)."""

    def __init__(self, outcome: ApprovalOutcome) -> None:
        what = {"rejected": "was rejected", "expired": "expired", "cancelled": "was cancelled"}.get(
            outcome.kind, outcome.kind
        )
        message = f"the approval {what}"
        if outcome.reason:
            message += f": {outcome.reason}"
        super().__init__(message)
        self.outcome = outcome
        self.reason = outcome.reason


@dataclass(frozen=True)
class Approval:
    """A tool call to have approved before running it: its name (letters, digits, `_` and `-`), its
    arguments (a mapping, or JSON text of an object) and why approval is asked."""

    tool_name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    reason: str = ""


def new_request_id() -> str:
    return str(uuid.uuid4())


def ask_request(
    *,
    question: str | None,
    options: Iterable[str | tuple[str, str]] | None,
    selection_mode: ask_user_pb2.SelectionMode | None,
    form: form_pb2.Form | Mapping[str, Any] | None,
    approval: Approval | human_pb2.ApprovalRequest | None,
    context: str,
    assignees: Iterable[str],
    ttl: timedelta | None,
    metadata: Mapping[str, str] | None,
    webhooks: Iterable[agent_pb2.WebhookSubscription],
    request_id: str,
) -> human_pb2.AskRequest:
    """The `AskRequest` of `ask(...)`: exactly one of `question`, `form` or `approval` (ValueError
    otherwise); a `form` mapping is a `Form` in the proto3 JSON mapping."""
    if sum(value is not None for value in (question, form, approval)) != 1:
        raise ValueError("ask exactly one of question, form or approval")
    if question is None and (options is not None or selection_mode is not None):
        raise ValueError("options and selection_mode go with a question")
    request = human_pb2.AskRequest(
        context=context,
        assignees=list(assignees),
        metadata=dict(metadata or {}),
        webhooks=list(webhooks),
        request_id=request_id,
    )
    if question is not None:
        request.question.question = question
        for option in options or ():
            if isinstance(option, str):
                request.question.options.add(label=option)
            else:
                request.question.options.add(label=option[0], description=option[1])
        if selection_mode is not None:
            request.question.selection_mode = selection_mode
        # A question of "" is still a question (the server says what is wrong with it).
        request.question.SetInParent()
    elif form is not None:
        if isinstance(form, form_pb2.Form):
            request.form.CopyFrom(form)
        else:
            json_format.ParseDict(dict(form), request.form)
        request.form.SetInParent()
    elif isinstance(approval, human_pb2.ApprovalRequest):
        request.approval.CopyFrom(approval)
        request.approval.SetInParent()
    else:
        assert approval is not None
        arguments = approval.arguments
        request.approval.tool_name = approval.tool_name
        request.approval.arguments_json = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        request.approval.reason = approval.reason
        request.approval.SetInParent()
    if ttl is not None:
        request.ttl.FromTimedelta(ttl)
    return request


class Progress:
    """Where following a request stands: what its frames said so far. Both clients feed it every
    frame of the `Ask` stream and of the `WatchRun` streams that reattach to it."""

    def __init__(self, request: human_pb2.AskRequest) -> None:
        self.request = request
        self.request_id = request.request_id
        self.run_id = ""
        self.tool_call_id = ""
        self.last_sequence = 0
        self.suspended = False
        self.ended = False

    def see(self, frame: Frame) -> None:
        """Takes in one frame (heartbeats already skipped); one seen before a reattachment (its
        sequence at or below the last one) changes nothing."""
        if 0 < frame.sequence <= self.last_sequence:
            return
        self.last_sequence = max(self.last_sequence, frame.sequence)
        event = frame.WhichOneof("event")
        if frame.run_id and not self.run_id:
            self.run_id = frame.run_id
        if event == "tool_call" and not self.tool_call_id:
            self.tool_call_id = frame.tool_call.tool_call_id
        elif event == "tool_call_suspended":
            self.tool_call_id = self.tool_call_id or frame.tool_call_suspended.tool_call_id
            self.suspended = True
        elif event in ("tool_result", "run_completed", "run_failed", "run_cancelled"):
            # A request already settled (asked again with its request_id) may never show the
            # suspension again to a reattached stream: past it is as good as waiting.
            self.suspended = True
            if event != "tool_result":
                self.ended = True

    def is_approval(self) -> bool:
        return bool(self.request.WhichOneof("call") == "approval")

    def approval_arguments(self) -> dict[str, Any]:
        try:
            arguments = json.loads(self.request.approval.arguments_json or "{}")
        except ValueError:
            return {}
        return arguments if isinstance(arguments, dict) else {}

    def outcome(self, run: agent_pb2.Run) -> Outcome:
        """The typed outcome of the ended request `run` (from `GetRun`)."""
        return outcome_of(run, self.tool_call_id, self.approval_arguments() if self.is_approval() else None)


def _plain(value: form_pb2.FieldValue) -> FormFieldValue:
    kind = value.WhichOneof("value")
    if kind == "text":
        return value.text
    if kind == "number":
        number = value.number
        return int(number) if number.is_integer() else number
    if kind == "boolean":
        return value.boolean
    return Choice(values=tuple(value.choice.values), other=value.choice.other)


def _parsed_content(content: str) -> dict[str, Any]:
    try:
        parsed = json.loads(content)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def outcome_of(run: agent_pb2.Run, tool_call_id: str, approval_arguments: dict[str, Any] | None) -> Outcome:
    """The typed outcome of a request's settled call `tool_call_id` ("": its only one) in `run`;
    `approval_arguments` are the asked arguments for an approval, None for a question or a form.
    An AskUserError (UNKNOWN) if the call was not settled in a way a request's call can be."""
    settled = next(
        (call for call in run.settled_tool_calls if not tool_call_id or call.tool_call_id == tool_call_id), None
    )
    common: dict[str, Any] = {"run_id": run.run_id}
    if settled is None:
        if run.status == agent_pb2.RUN_STATUS_CANCELLED:
            common["tool_call_id"] = tool_call_id
            return ApprovalOutcome("cancelled", **common) if approval_arguments is not None else HumanAnswer("cancelled", **common)
        raise AskUserError.for_code(
            grpc.StatusCode.UNKNOWN, f"the request {run.run_id} ended without settling its call ({run.error_message})"
        )
    common.update(
        tool_call_id=settled.tool_call_id,
        settled_by=settled.settled_by.subject if settled.HasField("settled_by") else "",
        content=settled.content,
    )
    answer = settled.answer if settled.HasField("answer") else agent_pb2.Answer()
    given = answer.WhichOneof("answer")
    if approval_arguments is not None:
        if settled.kind == agent_pb2.TOOL_RESULT_KIND_EXPIRED:
            return ApprovalOutcome("expired", **common)
        if settled.kind == agent_pb2.TOOL_RESULT_KIND_CANCELLED:
            return ApprovalOutcome("cancelled", **common)
        decision = answer.approval.WhichOneof("decision") if given == "approval" else None
        content = _parsed_content(settled.content)
        if decision == "reject":
            return ApprovalOutcome("rejected", reason=answer.approval.reject.reason, **common)
        if given == "decline":
            return ApprovalOutcome("rejected", reason=answer.decline.reason, **common)
        if decision == "edit":
            edited = _parsed_content(answer.approval.edit.arguments_json) or content.get("arguments") or {}
            return ApprovalOutcome("edited", arguments=edited, **common)
        if decision == "approve" or content.get("decision") == "approved":
            arguments = content.get("arguments")
            return ApprovalOutcome(
                "approved", arguments=arguments if isinstance(arguments, dict) else approval_arguments, **common
            )
        if content.get("decision") == "edited" and isinstance(content.get("arguments"), dict):
            return ApprovalOutcome("edited", arguments=content["arguments"], **common)
        if settled.kind == agent_pb2.TOOL_RESULT_KIND_REJECTED:
            return ApprovalOutcome("rejected", **common)
    else:
        if settled.kind == agent_pb2.TOOL_RESULT_KIND_EXPIRED:
            return HumanAnswer("expired", **common)
        if settled.kind == agent_pb2.TOOL_RESULT_KIND_CANCELLED:
            return HumanAnswer("cancelled", **common)
        if given == "text":
            return HumanAnswer("text", text=answer.text, **common)
        if given == "selections":
            return HumanAnswer("selections", selections=tuple(answer.selections.labels), **common)
        if given == "form":
            values = {name: _plain(value) for name, value in answer.form.values.items()}
            return HumanAnswer("form", values=values, **common)
        if given == "decline":
            return HumanAnswer("declined", reason=answer.decline.reason, **common)
        if given == "reply":
            return HumanAnswer("replied", text=answer.reply, **common)
    raise AskUserError.for_code(
        grpc.StatusCode.UNKNOWN,
        f"the request's call {settled.tool_call_id} was settled as {agent_pb2.ToolResultKind.Name(settled.kind)}"
        f" with no answer a request's call takes: {settled.content}",
    )


def unexpected_end(progress: Progress) -> AskUserError:
    return AskUserError.for_code(
        grpc.StatusCode.UNKNOWN, f"the Ask stream of request {progress.request_id!r} ended before its call waited"
    )


# --- requires_approval -----------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])

PASSED_THROUGH = frozenset({"self", "cls"})
"""Parameters never sent for approval (a method's receiver): passed to the function as they were."""


def _call_arguments(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the arguments asked about, by name; the ones passed through unchanged): the call's
    arguments bound to the signature, defaults applied; a `**kwargs` parameter's entries at the top
    level."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    asked: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        parameter = signature.parameters[name]
        if name in PASSED_THROUGH:
            kept[name] = value
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            asked.update(value)
        elif parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            asked[name] = list(value)
        else:
            asked[name] = value
    return asked, kept


def _rebound(signature: inspect.Signature, arguments: Mapping[str, Any], kept: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments that call the function with `arguments` (by name, as
    `_call_arguments` gives them, possibly edited) and the passed-through ones. A parameter the
    edited arguments left out takes its default; one without a default raises TypeError."""
    values = {**arguments, **kept}
    parameters = signature.parameters
    has_var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values())
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, parameter in parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            args.extend(values.get(name, ()))
        elif parameter.kind is inspect.Parameter.POSITIONAL_ONLY or (
            # Before a *args parameter, positional-or-keyword ones go by position.
            parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and has_var_positional
        ):
            if name in values:
                args.append(values[name])
            elif parameter.default is not inspect.Parameter.empty:
                args.append(parameter.default)
            else:
                raise TypeError(f"the approved arguments have no {name!r}")
        elif name in values:
            kwargs[name] = values[name]
    # Names of no parameter: a **kwargs parameter's entries (or a TypeError from the call).
    kwargs.update({name: value for name, value in values.items() if name not in parameters})
    return args, kwargs


def requires_approval(
    client: AskUserClient | AsyncAskUserClient,
    *,
    tool_name: str | None = None,
    reason: str = "",
    context: str = "",
    assignees: Iterable[str] = (),
    ttl: timedelta | None = None,
    metadata: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Callable[[F], F]:
    """A decorator: each call of the wrapped function first asks for approval through `client`
    (`request_approval`, the tool name `tool_name` or the function's name, its arguments the
    call's arguments by parameter name, defaults applied, as JSON), then, once approved, runs it,
    with the edited arguments if the approver changed them; a rejection, an expiry or a
    cancellation raises `ApprovalRejected` instead (the function does not run).

    ```python
    @requires_approval(client, reason="production deploys need a second pair of eyes")
    def deploy(service: str, environment: str = "staging") -> str:
        ...
    ```

    An `async def` function needs the `AsyncAskUserClient` (the approval is awaited), a plain one
    the sync `AskUserClient`. A method's `self` / `cls` is passed through, not asked about; every
    other argument must be JSON-serializable. `timeout` (seconds) bounds the wait for the decision
    (DeadlineExceeded); each call is a new request.
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        name = tool_name or function.__name__
        is_async_client = inspect.iscoroutinefunction(client.request_approval)
        options: dict[str, Any] = dict(
            context=context, assignees=tuple(assignees), ttl=ttl, metadata=metadata, timeout=timeout
        )

        def run_with(
            outcome: ApprovalOutcome, kept: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> tuple[list[Any], dict[str, Any]]:
            if not outcome.approved:
                raise ApprovalRejected(outcome)
            if outcome.kind == "approved":
                # As called: the values themselves, not their JSON round trip.
                return list(args), kwargs
            return _rebound(signature, outcome.arguments, kept)

        if inspect.iscoroutinefunction(function):
            if not is_async_client:
                raise TypeError("requires_approval on an async function needs the AsyncAskUserClient")
            async_request = cast(Callable[..., Awaitable[ApprovalOutcome]], client.request_approval)

            @functools.wraps(function)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                asked, kept = _call_arguments(signature, args, kwargs)
                outcome = await async_request(name, asked, reason, **options)
                call_args, call_kwargs = run_with(outcome, kept, args, kwargs)
                return await function(*call_args, **call_kwargs)

            return cast(F, async_wrapper)

        if is_async_client:
            raise TypeError("requires_approval on a plain function needs the sync AskUserClient")
        sync_request = cast(Callable[..., ApprovalOutcome], client.request_approval)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            asked, kept = _call_arguments(signature, args, kwargs)
            outcome = sync_request(name, asked, reason, **options)
            call_args, call_kwargs = run_with(outcome, kept, args, kwargs)
            return function(*call_args, **call_kwargs)

        return cast(F, wrapper)

    return decorate

