"""AskUserClient, Run and PendingCalls: a thin layer over the generated askuser.v1 stubs.

Frames, runs and agents are the generated protobuf messages themselves; this layer only opens the
calls, feeds the `RunAgent` stream its answers, skips heartbeats and raises AskUserError.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, TypeVar

import grpc

from askuser.v1 import agent_pb2, agent_pb2_grpc, ask_user_pb2, form_pb2, human_pb2, human_pb2_grpc, tool_pb2, tool_pb2_grpc

from ._shared import (
    DEFAULT_RECONNECT,
    Answering,
    Backoff,
    ChannelSettings,
    Choice,
    FormValue,
    Frame,
    JsonArguments,
    PendingCallEvent,
    Reconnect,
    acknowledged,
    attach_request,
    ask_user_request,
    build_answer,
    check_run_started,
    claim_request,
    is_heartbeat,
    is_unavailable,
    list_runs_request,
    pending_calls_request,
    start_request,
    tool_definition,
)
from .auth import TLS, BearerToken, TokenProvider
from .errors import AskUserError, raising_ask_user_errors
from .human import Approval, ApprovalOutcome, HumanAnswer, Progress, ask_request, new_request_id, unexpected_end

T = TypeVar("T")

__all__ = [
    "AskUserClient",
    "Choice",
    "FormValue",
    "Frame",
    "HumanRequest",
    "JsonArguments",
    "PendingCallEvent",
    "PendingCalls",
    "Reconnect",
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

    Reattachment: when the stream drops with UNAVAILABLE (a server restart, a reset connection),
    iteration re-opens it with `AttachRun(run_id, after_sequence=last_sequence)` under the client's
    `Reconnect` policy and goes on, with no stored frame lost or repeated; Unavailable is raised
    once the policy gives up. Answers are never lost to a drop: an answer sent while the stream is
    down, or sent before the drop and not yet acknowledged (`answer_accepted` / `answer_rejected`),
    is sent again on the reattached stream. Give answers an `answer_id` to make that resend
    idempotent: without one, an answer that had reached the server before the drop comes back
    rejected (the question is no longer pending).
    """

    def __init__(
        self,
        stub: agent_pb2_grpc.AgentServiceStub,
        first: agent_pb2.RunAgentRequest,
        run_id: str,
        timeout: float | None,
        reconnect: Reconnect | None = None,
    ) -> None:
        self.run_id = run_id
        """The run this stream follows."""
        self.last_sequence = first.attach.after_sequence if first.HasField("attach") else 0
        """The sequence of the last stored frame seen (where a reattachment picks up)."""
        self._stub = stub
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._reconnect = reconnect
        self._backoff = Backoff(reconnect) if reconnect is not None else None
        self._lock = threading.Lock()
        self._unacknowledged: list[agent_pb2.RunAgentRequest] = []
        self._read_ahead: list[Frame] = []
        self._closed = False
        self._open(first)

    def _open(self, first: agent_pb2.RunAgentRequest) -> None:
        """Opens a stream whose first request is `first`, followed by the unacknowledged answers."""
        with self._lock:
            requests: queue.SimpleQueue[agent_pb2.RunAgentRequest | None] = queue.SimpleQueue()
            requests.put(first)
            for answer in self._unacknowledged:
                requests.put(answer)
            self._requests = requests
            timeout = None if self._deadline is None else max(self._deadline - time.monotonic(), 0.0)
            self._call = self._stub.RunAgent(_outgoing(requests), timeout=timeout)
            self._frames = _without_heartbeats(self._call)

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
        while True:
            try:
                frame = next(self._frames)
            except StopIteration:
                # The call is over: let gRPC's request thread finish too.
                self._requests.put(None)
                raise
            except AskUserError as error:
                self._requests.put(None)
                wait = self._reattach_wait(error)
                if wait is None:
                    raise
                time.sleep(wait)
                if self._closed:
                    raise
                self._open(attach_request(self.run_id, self.last_sequence))
                continue
            if self._backoff is not None:
                self._backoff.reset()
            if 0 < frame.sequence <= self.last_sequence:
                continue  # already yielded before a reattachment
            self.last_sequence = max(self.last_sequence, frame.sequence)
            if (tool_call_id := acknowledged(frame)) is not None:
                self._acknowledge(tool_call_id)
            return frame

    def _reattach_wait(self, error: AskUserError) -> float | None:
        """How long to wait before reattaching after `error`; None: raise it."""
        if self._closed or self._backoff is None or not self.run_id or not is_unavailable(error):
            return None
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return None
        return self._backoff.next_wait()

    def _acknowledge(self, tool_call_id: str) -> None:
        with self._lock:
            for index, request in enumerate(self._unacknowledged):
                if request.answer.tool_call_id == tool_call_id:
                    del self._unacknowledged[index]
                    return

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
    ) -> None:
        if self._closed:
            raise ValueError("the stream is closed")
        request = agent_pb2.RunAgentRequest(
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
                form=form,
                reply=reply,
                answer_id=answer_id,
            )
        )
        with self._lock:
            if self._reconnect is not None:
                self._unacknowledged.append(request)
            self._requests.put(request)

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


def _outgoing(requests: queue.SimpleQueue[agent_pb2.RunAgentRequest | None]) -> Iterator[agent_pb2.RunAgentRequest]:
    # gRPC reads this on its own thread; None half-closes the stream.
    while (request := requests.get()) is not None:
        yield request


def _watching(
    stub: agent_pb2_grpc.AgentServiceStub,
    run_id: str,
    after_sequence: int,
    timeout: float | None,
    reconnect: Reconnect | None,
) -> Iterator[Frame]:
    """The frames of `WatchRun`, reopened after the last sequence yielded when the call drops with
    UNAVAILABLE (the server replays from there, so nothing is yielded twice)."""
    backoff = Backoff(reconnect) if reconnect is not None else None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        request = agent_pb2.WatchRunRequest(run_id=run_id, after_sequence=after_sequence)
        call = stub.WatchRun(request, timeout=None if deadline is None else max(deadline - time.monotonic(), 0.0))
        try:
            for frame in _without_heartbeats(call):
                if backoff is not None:
                    backoff.reset()
                after_sequence = max(after_sequence, frame.sequence)
                yield frame
            return
        except AskUserError as error:
            wait = backoff.next_wait() if backoff is not None and is_unavailable(error) else None
            if wait is None or (deadline is not None and time.monotonic() + wait >= deadline):
                raise
        finally:
            # An abandoned iteration (break, close()) must not leave the call open.
            call.cancel()
        time.sleep(wait)


class _EventCall(Protocol):
    """What grpcio returns for a server-streaming call: an iterator of its messages that cancels."""

    def __iter__(self) -> Iterator[PendingCallEvent]: ...

    def cancel(self) -> bool: ...


class PendingCalls:
    """A `WatchPendingCalls` feed: iterate it for its events (heartbeats skipped).

    First every call pending at connect (`call_pending`), then `snapshot_done`, then each new
    pending call and each settlement (`call_settled`) live, until `close()` (or the deadline). A
    failure of the feed raises AskUserError; after `close()`, iteration just stops.

    When the feed drops with UNAVAILABLE (a server restart), it reopens under the client's
    `Reconnect` policy and starts over with a new snapshot: the calls pending then
    (`call_pending`, possibly seen before), then `snapshot_done`.
    """

    def __init__(
        self,
        call: _EventCall,
        reopen: Callable[[], _EventCall] | None = None,
        reconnect: Reconnect | None = None,
    ) -> None:
        self._call = call
        self._events = iter(call)
        self._reopen = reopen
        self._backoff = Backoff(reconnect) if reconnect is not None and reopen is not None else None
        self._closed = False

    def __iter__(self) -> PendingCalls:
        return self

    def __next__(self) -> PendingCallEvent:
        while True:
            try:
                event = next(self._events)
            except grpc.RpcError as rpc_error:
                if self._closed:
                    raise StopIteration from None
                error = AskUserError.from_rpc_error(rpc_error)
                wait = self._backoff.next_wait() if self._backoff is not None and is_unavailable(error) else None
                if wait is None or self._reopen is None:
                    raise error from rpc_error
                time.sleep(wait)
                if self._closed:
                    raise StopIteration from None
                self._call = self._reopen()
                self._events = iter(self._call)
                continue
            if self._backoff is not None:
                self._backoff.reset()
            if not is_heartbeat(event):
                return event

    def close(self) -> None:
        """Cancels the feed."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    def __enter__(self) -> PendingCalls:
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.close()


def _retrying(reconnect: Reconnect | None, timeout: float | None, call: Callable[[float | None], T]) -> T:
    """`call(timeout)`, retried on UNAVAILABLE under `reconnect` (for idempotent calls only), all
    attempts within `timeout`."""
    backoff = Backoff(reconnect) if reconnect is not None else None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            with raising_ask_user_errors():
                return call(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        except AskUserError as error:
            wait = backoff.next_wait() if backoff is not None and is_unavailable(error) else None
            if wait is None or (deadline is not None and time.monotonic() + wait >= deadline):
                raise
            time.sleep(wait)


class HumanRequest:
    """A request made with `AskUserClient.ask`, whose call waits for a person: `wait()` for how it
    was settled.

    `wait` follows the request with `WatchRun` from the last event seen, so a dropped connection or
    a server restart (UNAVAILABLE) only makes it reattach, under the client's `Reconnect` policy;
    its `timeout` bounds one wait (DeadlineExceeded, after which `wait` may be called again)."""

    def __init__(
        self,
        agents: agent_pb2_grpc.AgentServiceStub,
        humans: human_pb2_grpc.HumanServiceStub,
        progress: Progress,
        reconnect: Reconnect | None,
    ) -> None:
        self._agents = agents
        self._humans = humans
        self._progress = progress
        self._reconnect = reconnect
        self._outcome: HumanAnswer | ApprovalOutcome | None = None

    @property
    def run_id(self) -> str:
        """The request's run (a run of no agent)."""
        return self._progress.run_id

    @property
    def tool_call_id(self) -> str:
        """The request's one call."""
        return self._progress.tool_call_id

    @property
    def request_id(self) -> str:
        """The idempotency key it was asked with: asking again with it follows the same request."""
        return self._progress.request_id

    def __repr__(self) -> str:
        return f"HumanRequest(run_id={self.run_id!r}, tool_call_id={self.tool_call_id!r}, request_id={self.request_id!r})"

    def _follow(self, until_waiting: bool, deadline: float | None) -> None:
        """Reads the request's frames until its call waits (`until_waiting`) or the request ends:
        from `Ask` (again, with the same request_id) while its run id is unknown, from `WatchRun`
        after the last sequence seen once it is known; reattaching on UNAVAILABLE."""
        progress = self._progress
        backoff = Backoff(self._reconnect) if self._reconnect is not None else None
        while True:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if progress.run_id:
                watch = agent_pb2.WatchRunRequest(run_id=progress.run_id, after_sequence=progress.last_sequence)
                call = self._agents.WatchRun(watch, timeout=remaining)
            else:
                call = self._humans.Ask(progress.request, timeout=remaining)
            try:
                for frame in _without_heartbeats(call):
                    if backoff is not None:
                        backoff.reset()
                    progress.see(frame)
                    if progress.ended or (until_waiting and progress.suspended):
                        return
                if until_waiting and not progress.suspended:
                    raise unexpected_end(progress)
                # The stream ended with OK: so did the request.
                progress.ended = True
                return
            except AskUserError as error:
                wait = backoff.next_wait() if backoff is not None and is_unavailable(error) else None
                if wait is None or (deadline is not None and time.monotonic() + wait >= deadline):
                    raise
            finally:
                call.cancel()
            time.sleep(wait)

    def wait(self, timeout: float | None = None) -> HumanAnswer | ApprovalOutcome:
        """Waits until the request is settled, expires or is cancelled; returns a `HumanAnswer` for
        a question or a form, an `ApprovalOutcome` for an approval. `timeout` in seconds (None:
        no limit) raises DeadlineExceeded when it passes first."""
        if self._outcome is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            if not self._progress.ended:
                self._follow(False, deadline)
            request = agent_pb2.GetRunRequest(run_id=self.run_id)
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            response: agent_pb2.GetRunResponse = _retrying(
                self._reconnect, remaining, lambda timeout: self._agents.GetRun(request, timeout=timeout)
            )
            self._outcome = self._progress.outcome(response.run)
        return self._outcome


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

    `reconnect` (a `Reconnect` policy; None: off) rides out a dropped connection: runs reattach
    from the last sequence seen, the pending-calls feed reopens, and `get_run`, `list_runs`,
    `list_agents` and `cancel_run` are retried, on UNAVAILABLE, with backoff (0.1 s doubling to
    2 s, for up to 30 s by default).
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
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
    ) -> None:
        self._reconnect = reconnect
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
        self._humans = human_pb2_grpc.HumanServiceStub(channel)

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
        run = Run(self._agents, request, "", timeout, self._reconnect)
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
        return Run(self._agents, attach_request(run_id, after_sequence), run_id, timeout, self._reconnect)

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
        form: Mapping[str, FormValue] | None = None,
        reply: str | None = None,
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
            form=form,
            reply=reply,
            answer_id=answer_id,
        )
        request = agent_pb2.ResumeRunRequest(answer=answer)
        return _without_heartbeats(self._agents.ResumeRun(request, timeout=timeout))

    def watch_run(
        self, run_id: str, after_sequence: int = 0, *, timeout: float | None = None
    ) -> Iterator[Frame]:
        """Replays a run's stored frames after `after_sequence`, then follows it until it ends,
        without answering. An unknown run raises NOT_FOUND when iteration starts. A watch that
        drops with UNAVAILABLE reopens after the last sequence it yielded, under the client's
        `Reconnect` policy and within `timeout`, as a `Run` reattaches."""
        return _watching(self._agents, run_id, after_sequence, timeout, self._reconnect)

    def get_run(self, run_id: str, *, timeout: float | None = None) -> agent_pb2.Run:
        """One run with its pending questions."""
        request = agent_pb2.GetRunRequest(run_id=run_id)
        response: agent_pb2.GetRunResponse = _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.GetRun(request, timeout=timeout)
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
        response: agent_pb2.ListRunsResponse = _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.ListRuns(request, timeout=timeout)
        )
        return response

    def cancel_run(self, run_id: str, reason: str = "", *, timeout: float | None = None) -> agent_pb2.Run:
        """Cancels a suspended or working run; returns it as it is after cancellation."""
        request = agent_pb2.CancelRunRequest(run_id=run_id, reason=reason)
        response: agent_pb2.CancelRunResponse = _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.CancelRun(request, timeout=timeout)
        )
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

        def reopen() -> _EventCall:
            call: _EventCall = self._agents.WatchPendingCalls(request, timeout=timeout)
            return call

        return PendingCalls(reopen(), reopen, self._reconnect)

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
        response: agent_pb2.ListAgentsResponse = _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.ListAgents(agent_pb2.ListAgentsRequest(), timeout=timeout)
        )
        return list(response.agents)

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

    def ask(
        self,
        question: str | None = None,
        *,
        options: Iterable[str | tuple[str, str]] | None = None,
        selection_mode: ask_user_pb2.SelectionMode | None = None,
        form: form_pb2.Form | Mapping[str, Any] | None = None,
        approval: Approval | human_pb2.ApprovalRequest | None = None,
        context: str = "",
        assignees: Iterable[str] = (),
        ttl: timedelta | None = None,
        metadata: Mapping[str, str] | None = None,
        webhooks: Iterable[agent_pb2.WebhookSubscription] = (),
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> HumanRequest:
        """Asks a person, from outside any run (HumanService.Ask), exactly one of: a `question`
        (with `options`, labels or (label, description) pairs, and a `selection_mode`), a `form`
        (a `form_pb2.Form`, or a mapping in its proto3 JSON form) or an `approval` (an `Approval`:
        a tool call to approve, edit or reject before the caller runs it). Returns once the call
        waits for someone; `HumanRequest.wait()` then gives the outcome.

        `context` is markdown shown with the call (what is going on, and why it is asked);
        `assignees` who may settle it (subjects, `group:NAME`); `ttl` how long it may wait;
        `metadata` labels kept with it; `webhooks` as a run's. `request_id` (a new UUID unless
        given) makes asking safe to repeat: the same id follows the same request. Bad input raises
        InvalidArgument with field violations (`question.question`, `approval.tool_name`, ...).
        `timeout` (seconds) bounds this call, reconnections included; a dropped connection before
        the call waits makes it ask again with the same request_id, under the `Reconnect` policy.
        Needs the `asks:create` scope."""
        request = ask_request(
            question=question,
            options=options,
            selection_mode=selection_mode,
            form=form,
            approval=approval,
            context=context,
            assignees=assignees,
            ttl=ttl,
            metadata=metadata,
            webhooks=webhooks,
            request_id=new_request_id() if request_id is None else request_id,
        )
        handle = HumanRequest(self._agents, self._humans, Progress(request), self._reconnect)
        handle._follow(True, None if timeout is None else time.monotonic() + timeout)
        return handle

    def ask_human(
        self,
        question: str | None = None,
        *,
        options: Iterable[str | tuple[str, str]] | None = None,
        selection_mode: ask_user_pb2.SelectionMode | None = None,
        form: form_pb2.Form | Mapping[str, Any] | None = None,
        context: str = "",
        assignees: Iterable[str] = (),
        ttl: timedelta | None = None,
        metadata: Mapping[str, str] | None = None,
        webhooks: Iterable[agent_pb2.WebhookSubscription] = (),
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> HumanAnswer:
        """Asks a person a `question` (or a `form`) and waits for the answer: `ask(...).wait()`,
        with `timeout` (seconds) bounding both. Returns a `HumanAnswer` whose `kind` says how it
        was settled: `text`, `selections`, `form`, `declined`, `replied`, `expired` or `cancelled`.

        ```python
        answer = client.ask_human("Which environment?", options=["staging", "production"])
        ```
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        handle = self.ask(
            question,
            options=options,
            selection_mode=selection_mode,
            form=form,
            context=context,
            assignees=assignees,
            ttl=ttl,
            metadata=metadata,
            webhooks=webhooks,
            request_id=request_id,
            timeout=timeout,
        )
        outcome = handle.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        assert isinstance(outcome, HumanAnswer)
        return outcome

    def request_approval(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | str,
        reason: str = "",
        *,
        context: str = "",
        assignees: Iterable[str] = (),
        ttl: timedelta | None = None,
        metadata: Mapping[str, str] | None = None,
        webhooks: Iterable[agent_pb2.WebhookSubscription] = (),
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> ApprovalOutcome:
        """Asks a person to approve a call of `tool_name` with `arguments` (a mapping, or JSON text
        of an object) before the caller runs it, and waits for the decision, `timeout` (seconds)
        bounding it all. Returns an `ApprovalOutcome`: `approved` or `edited` (run the tool with
        `outcome.arguments`), `rejected` (with `outcome.reason`), `expired` or `cancelled`.

        ```python
        decision = client.request_approval("deploy", {"service": "api"}, "a production deploy")
        if decision.approved:
            deploy(**decision.arguments)
        ```
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        handle = self.ask(
            approval=Approval(tool_name, arguments, reason),
            context=context,
            assignees=assignees,
            ttl=ttl,
            metadata=metadata,
            webhooks=webhooks,
            request_id=request_id,
            timeout=timeout,
        )
        outcome = handle.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        assert isinstance(outcome, ApprovalOutcome)
        return outcome
