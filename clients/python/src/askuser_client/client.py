"""AskUserClient, Run and PendingCalls: a thin layer over the generated askuser.v1 stubs.

Frames, runs and agents are the generated protobuf messages themselves; this layer only opens the
calls, feeds the `RunAgent` stream its answers, skips heartbeats and raises AskUserError.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, TypeAlias

import grpc
from google.protobuf import duration_pb2

from askuser.v1 import agent_pb2, agent_pb2_grpc, ask_user_pb2, tool_pb2, tool_pb2_grpc

from .auth import TLS, BearerToken, TokenProvider, static_token
from .errors import AskUserError, raising_ask_user_errors

Frame = agent_pb2.RunAgentResponse
"""One event of a run: `frame.WhichOneof("event")` names it (`tool_call_suspended`, ...)."""

PendingCallEvent = agent_pb2.WatchPendingCallsResponse
"""One event of the pending-calls feed: `event.WhichOneof("event")` is `call_pending`,
`call_settled` or `snapshot_done`."""

JsonArguments: TypeAlias = str | Mapping[str, Any]
"""Tool arguments or a JSON Schema: JSON text, sent as is, or a mapping, encoded as JSON."""


def _json_text(value: JsonArguments) -> str:
    return value if isinstance(value, str) else json.dumps(value)


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
    answer_id: str = "",
) -> agent_pb2.Answer:
    """An `Answer` with exactly one of:

    - for a question: `text`, `selections` (labels) or `decline` (the reason);
    - for a client tool call: `output` (the tool's output; `is_error=True` when the tool failed);
    - for a call that waits for approval: `approve=True`, `reject` (the reason, possibly "") or
      `edit` (the arguments to run the tool with, as JSON text or a mapping). `decline` rejects too.
    """
    given = sum(value is not None for value in (text, selections, decline, output, reject, edit)) + approve
    if given != 1:
        raise ValueError(
            "an answer has exactly one of text, selections, decline, output, approve, reject or edit"
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


def _without_heartbeats(frames: Iterable[Frame]) -> Iterator[Frame]:
    with raising_ask_user_errors():
        for frame in frames:
            if frame.WhichOneof("event") != "heartbeat":
                yield frame


class Run:
    """One `RunAgent` stream: iterate it for the run's frames and answer its questions.

    Iteration yields every frame but heartbeats and stops when the run has ended; a failure of the
    stream raises AskUserError. A rejected answer does not end the stream: it comes back as an
    `answer_rejected` frame and the question stays answerable.
    """

    def __init__(
        self,
        stub: agent_pb2_grpc.AgentServiceStub,
        first: agent_pb2.RunAgentRequest,
        run_id: str,
        timeout: float | None,
    ) -> None:
        self.run_id = run_id
        """The run this stream follows."""
        self._requests: queue.SimpleQueue[agent_pb2.RunAgentRequest | None] = queue.SimpleQueue()
        self._requests.put(first)
        self._call = stub.RunAgent(self._outgoing(), timeout=timeout)
        self._frames = _without_heartbeats(self._call)
        self._read_ahead: list[Frame] = []
        self._closed = False

    def _outgoing(self) -> Iterator[agent_pb2.RunAgentRequest]:
        # gRPC reads this on its own thread; None half-closes the stream.
        while (request := self._requests.get()) is not None:
            yield request

    def _peek(self) -> Frame:
        """Reads the next frame and keeps it for iteration."""
        frame = next(self)
        self._read_ahead.append(frame)
        return frame

    def __iter__(self) -> Run:
        return self

    def __next__(self) -> Frame:
        if self._read_ahead:
            return self._read_ahead.pop()
        try:
            return next(self._frames)
        except (StopIteration, AskUserError):
            # The call is over: let gRPC's request thread finish too.
            self._requests.put(None)
            raise

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
        answer_id: str = "",
        run_id: str = "",
    ) -> None:
        """Settles a call (exactly one of the answers `build_answer` takes); the outcome comes back
        as an `answer_accepted` or `answer_rejected` frame.

        `answer_id` is an optional idempotency key: resending it is acknowledged as a duplicate.
        `run_id` defaults to this stream's run (naming another is rejected as `RUN_MISMATCH`).
        """
        if self._closed:
            raise ValueError("the stream is closed")
        self._requests.put(
            agent_pb2.RunAgentRequest(
                answer=build_answer(
                    run_id,
                    tool_call_id,
                    text=text,
                    selections=selections,
                    decline=decline,
                    output=output,
                    is_error=is_error,
                    approve=approve,
                    reject=reject,
                    edit=edit,
                    answer_id=answer_id,
                )
            )
        )

    def answer_text(self, tool_call_id: str, text: str, *, answer_id: str = "") -> None:
        """Answers a free-text question, or a single-select one with the chosen label."""
        self.answer(tool_call_id, text=text, answer_id=answer_id)

    def answer_selections(self, tool_call_id: str, labels: Sequence[str], *, answer_id: str = "") -> None:
        """Answers a select question with the chosen labels (single select: exactly one)."""
        self.answer(tool_call_id, selections=labels, answer_id=answer_id)

    def decline(self, tool_call_id: str, reason: str = "", *, answer_id: str = "") -> None:
        """Declines to answer a question of any kind (on an approval: rejects the call)."""
        self.answer(tool_call_id, decline=reason, answer_id=answer_id)

    def send_output(
        self, tool_call_id: str, content: str, *, is_error: bool = False, answer_id: str = ""
    ) -> None:
        """Settles a client tool call (`SUSPEND_KIND_CLIENT_TOOL`) with the output of the tool the
        caller ran; `is_error=True` tells the model the tool failed."""
        self.answer(tool_call_id, output=content, is_error=is_error, answer_id=answer_id)

    def approve(self, tool_call_id: str, *, answer_id: str = "") -> None:
        """Approves a call that waits for approval (`SUSPEND_KIND_APPROVAL`). A client tool call is
        then suspended again, with the same id, as `SUSPEND_KIND_CLIENT_TOOL`."""
        self.answer(tool_call_id, approve=True, answer_id=answer_id)

    def reject(self, tool_call_id: str, reason: str = "", *, answer_id: str = "") -> None:
        """Rejects a call that waits for approval: the tool never runs and the model gets the
        reason."""
        self.answer(tool_call_id, reject=reason, answer_id=answer_id)

    def edit(self, tool_call_id: str, arguments: JsonArguments, *, answer_id: str = "") -> None:
        """Approves a call that waits for approval with other arguments (JSON text or a mapping),
        which the server checks against the tool's schema."""
        self.answer(tool_call_id, edit=arguments, answer_id=answer_id)

    def close(self) -> None:
        """Half-closes and drops the stream. The run goes on without it; `attach` picks it up."""
        if not self._closed:
            self._closed = True
            self._requests.put(None)
            self._call.cancel()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.close()


class _EventCall(Protocol):
    """What grpcio returns for a server-streaming call: an iterator of its messages that cancels."""

    def __iter__(self) -> Iterator[PendingCallEvent]: ...

    def cancel(self) -> bool: ...


class PendingCalls:
    """A `WatchPendingCalls` feed: iterate it for its events (heartbeats skipped).

    First every call pending at connect (`call_pending`), then `snapshot_done`, then each new
    pending call and each settlement (`call_settled`) live, until `close()` (or the deadline). A
    failure of the feed raises AskUserError; after `close()`, iteration just stops.
    """

    def __init__(self, call: _EventCall) -> None:
        self._call = call
        self._events = iter(call)
        self._closed = False

    def __iter__(self) -> PendingCalls:
        return self

    def __next__(self) -> PendingCallEvent:
        try:
            while True:
                event = next(self._events)
                if event.WhichOneof("event") != "heartbeat":
                    return event
        except grpc.RpcError as error:
            if self._closed:
                raise StopIteration from None
            raise AskUserError.from_rpc_error(error) from error

    def close(self) -> None:
        """Cancels the feed."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    def __enter__(self) -> PendingCalls:
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.close()


class AskUserClient:
    """A connection to an askuser server (`host:port`).

    Credentials: `api_key` (sent as `authorization: Bearer <key>` on every call), or
    `token_provider`, a function called for every call that returns the token to send (for
    rotating JWTs). Either works on a plaintext connection too.

    Transport: plaintext by default; `tls=True` verifies the server against the system's root
    certificates, `tls=TLS(...)` or `TLS.from_files(ca, cert, key)` against a given CA, with a
    client certificate for mTLS. `credentials` (grpc.ChannelCredentials) is the raw alternative to
    `tls`.

    Every call takes an optional `timeout` in seconds: the gRPC deadline of the call (for a stream,
    of the whole stream). Failures raise AskUserError.
    """

    def __init__(
        self,
        address: str,
        *,
        api_key: str | None = None,
        token_provider: TokenProvider | None = None,
        tls: TLS | bool = False,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, object]] | None = None,
    ) -> None:
        if api_key is not None and token_provider is not None:
            raise ValueError("give api_key or token_provider, not both")
        if tls is not False and credentials is not None:
            raise ValueError("give tls or credentials, not both")
        channel_options = list(options or ())
        if tls is not False:
            settings = TLS() if tls is True else tls
            credentials = settings.channel_credentials()
            channel_options += settings.channel_options()
        if credentials is None:
            channel = grpc.insecure_channel(address, options=channel_options)
        else:
            channel = grpc.secure_channel(address, credentials, options=channel_options)
        self._channel = channel
        if api_key is not None:
            token_provider = static_token(api_key)
        if token_provider is not None:
            channel = grpc.intercept_channel(channel, BearerToken(token_provider))
        self._agents = agent_pb2_grpc.AgentServiceStub(channel)
        self._tools = tool_pb2_grpc.ToolServiceStub(channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> AskUserClient:
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.close()

    def start_run(
        self,
        agent_id: str,
        prompt: str = "",
        metadata: Mapping[str, str] | None = None,
        *,
        question_ttl: timedelta | None = None,
        tools: Iterable[agent_pb2.ToolDefinition] = (),
        timeout: float | None = None,
    ) -> Run:
        """Starts a run of an agent. Returns once the run exists (its `run_id` is set); iterating
        the Run yields its frames from `run_started` on. An unknown agent raises NOT_FOUND.

        `tools` are client tools for this run only (see `tool_definition`), offered beside the
        agent's own; settle their calls with `Run.send_output`. A bad definition raises
        INVALID_ARGUMENT with a field violation such as `start.tools[0].parameters_json_schema`."""
        start = agent_pb2.StartRun(
            agent_id=agent_id, prompt=prompt, metadata=metadata or {}, tools=list(tools)
        )
        if question_ttl is not None:
            ttl = duration_pb2.Duration()
            ttl.FromTimedelta(question_ttl)
            start.question_ttl.CopyFrom(ttl)
        run = Run(self._agents, agent_pb2.RunAgentRequest(start=start), "", timeout)
        try:
            first = run._peek()
        except StopIteration:
            raise AskUserError(grpc.StatusCode.UNKNOWN, "the stream ended before run_started") from None
        if first.WhichOneof("event") != "run_started":
            run.close()
            raise AskUserError(grpc.StatusCode.UNKNOWN, f"the first frame is not run_started: {first}")
        run.run_id = first.run_id
        return run

    def attach(self, run_id: str, after_sequence: int = 0, *, timeout: float | None = None) -> Run:
        """Attaches to an existing run: iterating replays its stored frames after `after_sequence`
        (0: all), then follows it live. An unknown run raises NOT_FOUND when iteration starts."""
        attach = agent_pb2.AttachRun(run_id=run_id, after_sequence=after_sequence)
        return Run(self._agents, agent_pb2.RunAgentRequest(attach=attach), run_id, timeout)

    def resume_run(
        self,
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
        answer_id: str = "",
        timeout: float | None = None,
    ) -> Iterator[Frame]:
        """Settles one call without a `RunAgent` stream (ResumeRun; exactly one of the answers
        `build_answer` takes) and yields what follows: `answer_accepted`, then the run's frames
        until it waits again or ends. A bad answer raises AskUserError (e.g. INVALID_ARGUMENT, or
        FAILED_PRECONDITION `ALREADY_ANSWERED`) when iteration starts; the answer is sent at once
        either way."""
        answer = build_answer(
            run_id,
            tool_call_id,
            text=text,
            selections=selections,
            decline=decline,
            output=output,
            is_error=is_error,
            approve=approve,
            reject=reject,
            edit=edit,
            answer_id=answer_id,
        )
        request = agent_pb2.ResumeRunRequest(answer=answer)
        return _without_heartbeats(self._agents.ResumeRun(request, timeout=timeout))

    def watch_run(
        self, run_id: str, after_sequence: int = 0, *, timeout: float | None = None
    ) -> Iterator[Frame]:
        """Replays a run's stored frames after `after_sequence`, then follows it until it ends,
        without answering."""
        request = agent_pb2.WatchRunRequest(run_id=run_id, after_sequence=after_sequence)
        return _without_heartbeats(self._agents.WatchRun(request, timeout=timeout))

    def get_run(self, run_id: str, *, timeout: float | None = None) -> agent_pb2.Run:
        """One run with its pending questions."""
        with raising_ask_user_errors():
            return self._agents.GetRun(agent_pb2.GetRunRequest(run_id=run_id), timeout=timeout).run

    def list_runs(
        self,
        *,
        status: agent_pb2.RunStatus = agent_pb2.RUN_STATUS_UNSPECIFIED,
        agent_id: str = "",
        page_size: int = 0,
        page_token: str = "",
        timeout: float | None = None,
    ) -> agent_pb2.ListRunsResponse:
        """One page of runs, newest first; pass its `next_page_token` for the next page."""
        request = agent_pb2.ListRunsRequest(
            status=status, agent_id=agent_id, page_size=page_size, page_token=page_token
        )
        with raising_ask_user_errors():
            return self._agents.ListRuns(request, timeout=timeout)

    def cancel_run(self, run_id: str, reason: str = "", *, timeout: float | None = None) -> agent_pb2.Run:
        """Cancels a suspended or working run; returns it as it is after cancellation."""
        request = agent_pb2.CancelRunRequest(run_id=run_id, reason=reason)
        with raising_ask_user_errors():
            return self._agents.CancelRun(request, timeout=timeout).run

    def watch_pending_calls(
        self,
        *,
        agent_ids: Iterable[str] = (),
        tool_names: Iterable[str] = (),
        kinds: Iterable[agent_pb2.SuspendKind] = (),
        assigned_to_me: bool = False,
        timeout: float | None = None,
    ) -> PendingCalls:
        """Opens the pending-calls feed across runs (WatchPendingCalls): the calls that wait for
        someone now, `snapshot_done`, then new ones and settlements live. Filters combine with AND;
        an empty filter matches everything; `assigned_to_me` keeps only the calls whose assignees
        name the caller. Close the feed (or use it as a context manager) to stop.

        ```python
        with client.watch_pending_calls(kinds=[agent_pb2.SUSPEND_KIND_CLIENT_TOOL]) as feed:
            for event in feed:
                if event.WhichOneof("event") == "call_pending":
                    ...
        ```
        """
        request = agent_pb2.WatchPendingCallsRequest(
            agent_ids=list(agent_ids),
            tool_names=list(tool_names),
            kinds=list(kinds),
            assigned_to_me=assigned_to_me,
        )
        return PendingCalls(self._agents.WatchPendingCalls(request, timeout=timeout))

    def claim_call(
        self,
        run_id: str,
        tool_call_id: str,
        claimant: str,
        *,
        ttl: timedelta | None = None,
        timeout: float | None = None,
    ) -> datetime:
        """Claims a pending call for `ttl` (1 s to 1 h; None: the server's default of 60 s), so that
        other workers on the same feed leave it alone; the same claimant renews its claim. Returns
        when the claim lapses (UTC). Another claimant's live claim raises FAILED_PRECONDITION with
        reason `ALREADY_CLAIMED`; a call that no longer waits, `TOOL_CALL_NOT_PENDING`. A claim
        never blocks settling: the first settlement wins."""
        request = agent_pb2.ClaimCallRequest(run_id=run_id, tool_call_id=tool_call_id, claimant=claimant)
        if ttl is not None:
            request.ttl.FromTimedelta(ttl)
        with raising_ask_user_errors():
            response: agent_pb2.ClaimCallResponse = self._agents.ClaimCall(request, timeout=timeout)
        return response.expire_time.ToDatetime(tzinfo=timezone.utc)

    def list_agents(self, *, timeout: float | None = None) -> list[agent_pb2.Agent]:
        """The agents the server runs, ordered by id."""
        with raising_ask_user_errors():
            return list(self._agents.ListAgents(agent_pb2.ListAgentsRequest(), timeout=timeout).agents)

    def ask_user(
        self,
        question: str,
        options: Iterable[str | tuple[str, str]] = (),
        selection_mode: ask_user_pb2.SelectionMode | None = None,
        *,
        timeout: float | None = None,
    ) -> str:
        """Runs the `ask_user` tool outside any run (ToolService.AskUser): validates the question
        and returns its fallback text. Options are labels or (label, description) pairs. Invalid
        input raises INVALID_ARGUMENT with field violations."""
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
        with raising_ask_user_errors():
            return self._tools.AskUser(tool_pb2.AskUserRequest(input=tool_input), timeout=timeout).content
