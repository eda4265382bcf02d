"""AskUserClient, Run and PendingCalls: a thin layer over the generated askuser.v1 stubs.

Frames, runs and agents are the generated protobuf messages themselves; this layer only opens the
calls, feeds the `RunAgent` stream its answers, skips heartbeats and raises AskUserError.
"""

from __future__ import annotations

import queue
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Protocol

import grpc

from askuser.v1 import agent_pb2, agent_pb2_grpc, ask_user_pb2, tool_pb2, tool_pb2_grpc

from ._shared import (
    Answering,
    ChannelSettings,
    Frame,
    JsonArguments,
    PendingCallEvent,
    attach_request,
    ask_user_request,
    build_answer,
    check_run_started,
    claim_request,
    is_heartbeat,
    list_runs_request,
    pending_calls_request,
    start_request,
    tool_definition,
)
from .auth import TLS, BearerToken, TokenProvider
from .errors import AskUserError, raising_ask_user_errors

__all__ = [
    "AskUserClient",
    "Frame",
    "JsonArguments",
    "PendingCallEvent",
    "PendingCalls",
    "Run",
    "build_answer",
    "tool_definition",
]


def _without_heartbeats(frames: Iterable[Frame]) -> Iterator[Frame]:
    with raising_ask_user_errors():
        for frame in frames:
            if not is_heartbeat(frame):
                yield frame


class Run(Answering[None]):
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
                if not is_heartbeat(event):
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
        settings = ChannelSettings.of(
            api_key=api_key, token_provider=token_provider, tls=tls, credentials=credentials, options=options
        )
        if settings.credentials is None:
            channel = grpc.insecure_channel(address, options=settings.options)
        else:
            channel = grpc.secure_channel(address, settings.credentials, options=settings.options)
        self._channel = channel
        if settings.token_provider is not None:
            channel = grpc.intercept_channel(channel, BearerToken(settings.token_provider))
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
        request = start_request(agent_id, prompt, metadata, question_ttl, tools)
        run = Run(self._agents, request, "", timeout)
        try:
            first: Frame | None = run._peek()
        except StopIteration:
            first = None
        try:
            run.run_id = check_run_started(first)
        except AskUserError:
            run.close()
            raise
        return run

    def attach(self, run_id: str, after_sequence: int = 0, *, timeout: float | None = None) -> Run:
        """Attaches to an existing run: iterating replays its stored frames after `after_sequence`
        (0: all), then follows it live. An unknown run raises NOT_FOUND when iteration starts."""
        return Run(self._agents, attach_request(run_id, after_sequence), run_id, timeout)

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
            response: agent_pb2.GetRunResponse = self._agents.GetRun(
                agent_pb2.GetRunRequest(run_id=run_id), timeout=timeout
            )
        return response.run

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
        request = list_runs_request(status, agent_id, page_size, page_token)
        with raising_ask_user_errors():
            response: agent_pb2.ListRunsResponse = self._agents.ListRuns(request, timeout=timeout)
        return response

    def cancel_run(self, run_id: str, reason: str = "", *, timeout: float | None = None) -> agent_pb2.Run:
        """Cancels a suspended or working run; returns it as it is after cancellation."""
        request = agent_pb2.CancelRunRequest(run_id=run_id, reason=reason)
        with raising_ask_user_errors():
            response: agent_pb2.CancelRunResponse = self._agents.CancelRun(request, timeout=timeout)
        return response.run

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
        request = pending_calls_request(agent_ids, tool_names, kinds, assigned_to_me)
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
        request = claim_request(run_id, tool_call_id, claimant, ttl)
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
        request = ask_user_request(question, options, selection_mode)
        with raising_ask_user_errors():
            response: tool_pb2.AskUserResponse = self._tools.AskUser(request, timeout=timeout)
        return response.content
