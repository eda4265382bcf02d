"""The asyncio client (`grpc.aio`): `AsyncAskUserClient`, with the same calls, arguments and
errors as the sync `AskUserClient`, as coroutines and async iterators.

```python
from askuser_client.aio import AsyncAskUserClient

async with AsyncAskUserClient("127.0.0.1:50051", api_key=key) as client:
    async with await client.start_run("deploy", "Deploy the web app") as run:
        async for frame in run:
            if frame.WhichOneof("event") == "tool_call_suspended":
                await run.answer_text(frame.tool_call_suspended.tool_call_id, "staging")
```

The messages and the request-building code are the sync client's (`askuser_client._shared`);
failures raise the same `AskUserError` subclasses (`NotFound`, `DeadlineExceeded`, ...).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, TypeVar

import grpc
import grpc.aio

from askuser.v1 import agent_pb2, agent_pb2_grpc, ask_user_pb2, form_pb2, human_pb2, human_pb2_grpc, tool_pb2_grpc

from ._shared import (
    DEFAULT_RECONNECT,
    Answering,
    Backoff,
    ChannelSettings,
    FormValue,
    Frame,
    JsonArguments,
    PendingCallEvent,
    Reconnect,
    acknowledged,
    ask_user_request,
    attach_request,
    build_answer,
    check_run_started,
    claim_request,
    is_heartbeat,
    is_unavailable,
    list_runs_request,
    pending_calls_request,
    start_request,
)
from .auth import TLS, TokenProvider
from .errors import AskUserError
from .human import Approval, ApprovalOutcome, HumanAnswer, Progress, ask_request, new_request_id, unexpected_end

__all__ = ["AsyncAskUserClient", "AsyncHumanRequest", "AsyncPendingCalls", "AsyncRun"]

T = TypeVar("T")
Metadata = tuple[tuple[str, str], ...]


class _StreamCall(Protocol):
    """What grpc.aio returns for a streaming call, as used here."""

    async def read(self) -> Any: ...

    def cancel(self) -> bool: ...


async def _unary(call: Awaitable[T]) -> T:
    try:
        return await call
    except grpc.RpcError as error:
        raise AskUserError.from_rpc_error(error) from error


async def _read(call: _StreamCall) -> Any:
    """The next message of a stream but heartbeats; None at its end."""
    while True:
        try:
            message = await call.read()
        except grpc.RpcError as error:
            raise AskUserError.from_rpc_error(error) from error
        if message is grpc.aio.EOF:
            return None
        if not is_heartbeat(message):
            return message


async def _frames(call: _StreamCall) -> AsyncIterator[Frame]:
    while (frame := await _read(call)) is not None:
        yield frame


async def _watching(
    reopen: Callable[[int, float | None], _StreamCall],
    after_sequence: int,
    timeout: float | None,
    reconnect: Reconnect | None,
) -> AsyncIterator[Frame]:
    """The frames of `WatchRun` (`reopen(after_sequence, timeout)`), reopened after the last
    sequence yielded when the call drops with UNAVAILABLE (the server replays from there, so
    nothing is yielded twice)."""
    backoff = Backoff(reconnect) if reconnect is not None else None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        call = reopen(after_sequence, None if deadline is None else max(deadline - time.monotonic(), 0.0))
        try:
            while (frame := await _read(call)) is not None:
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
            # An abandoned iteration (break, aclose()) must not leave the call open.
            call.cancel()
        await asyncio.sleep(wait)


class AsyncRun(Answering[Awaitable[None]]):
    """One `RunAgent` stream: `async for` its frames and `await` its answers
    (`await run.answer_text(id, "yes")`). Like the sync `Run`: heartbeats skipped, iteration stops
    when the run has ended, a failure raises AskUserError, a rejected answer comes back as an
    `answer_rejected` frame, and a stream dropped with UNAVAILABLE reattaches from `last_sequence`
    under the client's `Reconnect` policy. An answer sent while the stream is down does not raise:
    it is kept, with any answer not yet acknowledged, and sent again once iteration has reattached
    (`answer_id` makes that resend idempotent). Close it (or use `async with`) to drop the
    stream."""

    def __init__(
        self,
        call: Any,
        first: agent_pb2.RunAgentRequest,
        run_id: str,
        reopen: Callable[[float | None], Any] | None = None,
        reconnect: Reconnect | None = None,
        timeout: float | None = None,
    ) -> None:
        self.run_id = run_id
        """The run this stream follows."""
        self.last_sequence = first.attach.after_sequence if first.HasField("attach") else 0
        """The sequence of the last stored frame seen (where a reattachment picks up)."""
        self._call = call
        self._first: agent_pb2.RunAgentRequest | None = first
        self._reopen = reopen
        self._reconnect = reconnect if reopen is not None else None
        self._backoff = None if self._reconnect is None else Backoff(self._reconnect)
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._unacknowledged: list[agent_pb2.RunAgentRequest] = []
        self._read_ahead: list[Frame] = []
        self._closed = False

    async def _write(self, request: agent_pb2.RunAgentRequest) -> None:
        try:
            await self._call.write(request)
        except grpc.RpcError as error:
            raise AskUserError.from_rpc_error(error) from error
        except asyncio.InvalidStateError as error:
            # The call has ended (dropped): the same as a failed write.
            raise AskUserError.for_code(grpc.StatusCode.UNAVAILABLE, str(error)) from error

    async def _send_first(self) -> None:
        # The first request (start or attach) goes out on the first read or write, so that
        # `attach` needs no await; after a reattachment, the unacknowledged answers follow it.
        if self._first is not None:
            first, self._first = self._first, None
            resend = list(self._unacknowledged)
            await self._write(first)
            for request in resend:
                await self._write(request)

    async def _peek(self) -> Frame | None:
        try:
            frame = await self.__anext__()
        except StopAsyncIteration:
            return None
        self._read_ahead.append(frame)
        return frame

    def __aiter__(self) -> AsyncRun:
        return self

    async def __anext__(self) -> Frame:
        if self._read_ahead:
            return self._read_ahead.pop()
        while True:
            if self._closed:
                raise StopAsyncIteration
            try:
                await self._send_first()
                frame: Frame | None = await _read(self._call)
            except AskUserError as error:
                wait = self._reattach_wait(error)
                if wait is None:
                    raise
                self._call.cancel()
                await asyncio.sleep(wait)
                self._reattach()
                continue
            if frame is None:
                raise StopAsyncIteration
            if self._backoff is not None:
                self._backoff.reset()
            if 0 < frame.sequence <= self.last_sequence:
                continue  # already yielded before a reattachment
            self.last_sequence = max(self.last_sequence, frame.sequence)
            if (tool_call_id := acknowledged(frame)) is not None:
                for index, request in enumerate(self._unacknowledged):
                    if request.answer.tool_call_id == tool_call_id:
                        del self._unacknowledged[index]
                        break
            return frame

    def _reattach_wait(self, error: AskUserError) -> float | None:
        """How long to wait before reattaching after `error`; None: raise it."""
        if self._closed or self._backoff is None or not self.run_id or not is_unavailable(error):
            return None
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return None
        return self._backoff.next_wait()

    def _reattach(self) -> None:
        assert self._reopen is not None
        timeout = None if self._deadline is None else max(self._deadline - time.monotonic(), 0.0)
        self._call = self._reopen(timeout)
        self._first = attach_request(self.run_id, self.last_sequence)

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
    ) -> Awaitable[None]:
        if self._closed:
            raise ValueError("the stream is closed")
        # Built (and checked) now, so that a bad combination raises ValueError at the call.
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

        async def send() -> None:
            if self._reconnect is None:
                await self._send_first()
                await self._write(request)
                return
            self._unacknowledged.append(request)
            try:
                if self._first is not None:
                    await self._send_first()  # sends this answer too
                else:
                    await self._write(request)
            except AskUserError as error:
                if not (is_unavailable(error) and self.run_id):
                    raise
                # Kept: sent again once iteration reattaches.

        return send()

    async def close(self) -> None:
        """Drops the stream. The run goes on without it; `attach` picks it up."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    async def __aenter__(self) -> AsyncRun:
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.close()


class AsyncPendingCalls:
    """A `WatchPendingCalls` feed: `async for` its events (heartbeats skipped), as the sync
    `PendingCalls`, reopened with a new snapshot after a drop with UNAVAILABLE. After `close()`,
    iteration just stops."""

    def __init__(
        self,
        call: _StreamCall,
        reopen: Callable[[], _StreamCall] | None = None,
        reconnect: Reconnect | None = None,
    ) -> None:
        self._call = call
        self._reopen = reopen
        self._backoff = Backoff(reconnect) if reconnect is not None and reopen is not None else None
        self._closed = False

    def __aiter__(self) -> AsyncPendingCalls:
        return self

    async def __anext__(self) -> PendingCallEvent:
        while True:
            if self._closed:
                raise StopAsyncIteration
            try:
                event: PendingCallEvent | None = await _read(self._call)
            except AskUserError as error:
                if self._closed:
                    raise StopAsyncIteration from None
                wait = self._backoff.next_wait() if self._backoff is not None and is_unavailable(error) else None
                if wait is None or self._reopen is None:
                    raise
                await asyncio.sleep(wait)
                if self._closed:
                    raise StopAsyncIteration from None
                self._call = self._reopen()
                continue
            if event is None:
                raise StopAsyncIteration
            if self._backoff is not None:
                self._backoff.reset()
            return event

    async def close(self) -> None:
        """Cancels the feed."""
        if not self._closed:
            self._closed = True
            self._call.cancel()

    async def __aenter__(self) -> AsyncPendingCalls:
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.close()


async def _retrying(
    reconnect: Reconnect | None, timeout: float | None, call: Callable[[float | None], Awaitable[T]]
) -> T:
    """`await call(timeout)`, retried on UNAVAILABLE under `reconnect` (for idempotent calls only),
    all attempts within `timeout`."""
    backoff = Backoff(reconnect) if reconnect is not None else None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            return await _unary(call(None if deadline is None else max(deadline - time.monotonic(), 0.0)))
        except AskUserError as error:
            wait = backoff.next_wait() if backoff is not None and is_unavailable(error) else None
            if wait is None or (deadline is not None and time.monotonic() + wait >= deadline):
                raise
            await asyncio.sleep(wait)


class AsyncHumanRequest:
    """A request made with `AsyncAskUserClient.ask`, whose call waits for a person: `await
    request.wait()` for how it was settled, as the sync `HumanRequest` (reattaching with
    `WatchRun` after a dropped connection, under the client's `Reconnect` policy)."""

    def __init__(self, client: AsyncAskUserClient, progress: Progress) -> None:
        self._client = client
        self._progress = progress
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
        return f"AsyncHumanRequest(run_id={self.run_id!r}, tool_call_id={self.tool_call_id!r}, request_id={self.request_id!r})"

    async def _follow(self, until_waiting: bool, deadline: float | None) -> None:
        """As `HumanRequest._follow`: `Ask` until the run id is known, then `WatchRun` after the
        last sequence seen; reattaching on UNAVAILABLE."""
        client, progress = self._client, self._progress
        reconnect = client._reconnect
        backoff = Backoff(reconnect) if reconnect is not None else None
        while True:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            call: _StreamCall
            if progress.run_id:
                watch = agent_pb2.WatchRunRequest(run_id=progress.run_id, after_sequence=progress.last_sequence)
                call = client._agents.WatchRun(watch, timeout=remaining, metadata=client._metadata())
            else:
                call = client._humans.Ask(progress.request, timeout=remaining, metadata=client._metadata())
            try:
                while (frame := await _read(call)) is not None:
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
            await asyncio.sleep(wait)

    async def wait(self, timeout: float | None = None) -> HumanAnswer | ApprovalOutcome:
        """Waits until the request is settled, expires or is cancelled, as `HumanRequest.wait`."""
        if self._outcome is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            if not self._progress.ended:
                await self._follow(False, deadline)
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            run = await self._client.get_run(self.run_id, timeout=remaining)
            self._outcome = self._progress.outcome(run)
        return self._outcome


class AsyncAskUserClient:
    """A `grpc.aio` connection to an askuser server (`host:port`), with the arguments of
    `AskUserClient`: `api_key` or `token_provider` (called for every call), `tls` or
    `credentials`, `options`. Every call takes `timeout=` in seconds (for a stream, of the whole
    stream). `reconnect` is the `Reconnect` policy of `AskUserClient` (runs reattach, the feed
    reopens, idempotent calls retry on UNAVAILABLE; None: off). Create it inside a running event loop; close it with `await client.close()` or use
    `async with`."""

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
            self._channel = grpc.aio.insecure_channel(address, options=settings.options)
        else:
            self._channel = grpc.aio.secure_channel(address, settings.credentials, options=settings.options)
        # The token goes in each call's metadata (grpc.aio's interceptors are not needed for that).
        self._token_provider = settings.token_provider
        self._agents = agent_pb2_grpc.AgentServiceStub(self._channel)
        self._tools = tool_pb2_grpc.ToolServiceStub(self._channel)
        self._humans = human_pb2_grpc.HumanServiceStub(self._channel)

    def _metadata(self) -> Metadata:
        if self._token_provider is None:
            return ()
        return (("authorization", f"Bearer {self._token_provider()}"),)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncAskUserClient:
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.close()

    def _run(self, first: agent_pb2.RunAgentRequest, run_id: str, timeout: float | None) -> AsyncRun:
        def reopen(timeout: float | None) -> Any:
            return self._agents.RunAgent(timeout=timeout, metadata=self._metadata())

        return AsyncRun(reopen(timeout), first, run_id, reopen, self._reconnect, timeout)

    async def start_run(
        self,
        agent_id: str,
        prompt: str = "",
        metadata: Mapping[str, str] | None = None,
        *,
        question_ttl: timedelta | None = None,
        tools: Iterable[agent_pb2.ToolDefinition] = (),
        timeout: float | None = None,
    ) -> AsyncRun:
        """Starts a run of an agent; returns once the run exists (`run.run_id` set), as
        `AskUserClient.start_run`. An unknown agent raises NotFound."""
        run = self._run(start_request(agent_id, prompt, metadata, question_ttl, tools), "", timeout)
        try:
            run.run_id = check_run_started(await run._peek())
        except AskUserError:
            await run.close()
            raise
        return run

    def attach(self, run_id: str, after_sequence: int = 0, *, timeout: float | None = None) -> AsyncRun:
        """Attaches to an existing run: `async for` replays its stored frames after
        `after_sequence` (0: all), then follows it live. An unknown run raises NotFound when
        iteration starts."""
        return self._run(attach_request(run_id, after_sequence), run_id, timeout)

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
    ) -> AsyncIterator[Frame]:
        """Settles one call without a `RunAgent` stream (ResumeRun) and yields what follows, as
        `AskUserClient.resume_run`; a bad answer raises AskUserError when iteration starts."""
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
        return _frames(self._agents.ResumeRun(request, timeout=timeout, metadata=self._metadata()))

    def watch_run(self, run_id: str, after_sequence: int = 0, *, timeout: float | None = None) -> AsyncIterator[Frame]:
        """Replays a run's stored frames after `after_sequence`, then follows it until it ends; a
        watch that drops with UNAVAILABLE reopens after the last sequence it yielded, as
        `AskUserClient.watch_run`."""

        def reopen(after_sequence: int, timeout: float | None) -> _StreamCall:
            request = agent_pb2.WatchRunRequest(run_id=run_id, after_sequence=after_sequence)
            call: _StreamCall = self._agents.WatchRun(request, timeout=timeout, metadata=self._metadata())
            return call

        return _watching(reopen, after_sequence, timeout, self._reconnect)

    async def get_run(self, run_id: str, *, timeout: float | None = None) -> agent_pb2.Run:
        """One run with its pending questions."""
        request = agent_pb2.GetRunRequest(run_id=run_id)
        response: agent_pb2.GetRunResponse = await _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.GetRun(request, timeout=timeout, metadata=self._metadata())
        )
        return response.run

    async def list_runs(
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
        response: agent_pb2.ListRunsResponse = await _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.ListRuns(request, timeout=timeout, metadata=self._metadata())
        )
        return response

    async def cancel_run(self, run_id: str, reason: str = "", *, timeout: float | None = None) -> agent_pb2.Run:
        """Cancels a suspended or working run; returns it as it is after cancellation."""
        request = agent_pb2.CancelRunRequest(run_id=run_id, reason=reason)
        response: agent_pb2.CancelRunResponse = await _retrying(
            self._reconnect, timeout, lambda timeout: self._agents.CancelRun(request, timeout=timeout, metadata=self._metadata())
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
    ) -> AsyncPendingCalls:
        """Opens the pending-calls feed across runs, as `AskUserClient.watch_pending_calls`:
        `async with client.watch_pending_calls(...) as feed: async for event in feed: ...`."""
        request = pending_calls_request(agent_ids, tool_names, kinds, assigned_to_me)

        def reopen() -> _StreamCall:
            call: _StreamCall = self._agents.WatchPendingCalls(request, timeout=timeout, metadata=self._metadata())
            return call

        return AsyncPendingCalls(reopen(), reopen, self._reconnect)

    async def claim_call(
        self,
        run_id: str,
        tool_call_id: str,
        claimant: str,
        *,
        ttl: timedelta | None = None,
        timeout: float | None = None,
    ) -> datetime:
        """Claims a pending call for `ttl`, as `AskUserClient.claim_call`; returns when the claim
        lapses (UTC)."""
        request = claim_request(run_id, tool_call_id, claimant, ttl)
        response: agent_pb2.ClaimCallResponse = await _unary(
            self._agents.ClaimCall(request, timeout=timeout, metadata=self._metadata())
        )
        return response.expire_time.ToDatetime(tzinfo=timezone.utc)

    async def list_agents(self, *, timeout: float | None = None) -> list[agent_pb2.Agent]:
        """The agents the server runs, ordered by id."""
        response: agent_pb2.ListAgentsResponse = await _retrying(
            self._reconnect,
            timeout,
            lambda timeout: self._agents.ListAgents(agent_pb2.ListAgentsRequest(), timeout=timeout, metadata=self._metadata()),
        )
        return list(response.agents)

    async def ask_user(
        self,
        question: str,
        options: Iterable[str | tuple[str, str]] = (),
        selection_mode: ask_user_pb2.SelectionMode | None = None,
        *,
        timeout: float | None = None,
    ) -> str:
        """Runs the `ask_user` tool outside any run (ToolService.AskUser); returns its fallback
        text."""
        request = ask_user_request(question, options, selection_mode)
        response = await _unary(self._tools.AskUser(request, timeout=timeout, metadata=self._metadata()))
        content: str = response.content
        return content

    async def ask(
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
    ) -> AsyncHumanRequest:
        """Asks a person from outside any run (HumanService.Ask), as `AskUserClient.ask`; returns
        once the call waits, with a handle to `await handle.wait()` on."""
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
        handle = AsyncHumanRequest(self, Progress(request))
        await handle._follow(True, None if timeout is None else time.monotonic() + timeout)
        return handle

    async def ask_human(
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
        """Asks a question (or a form) and waits for the answer, as `AskUserClient.ask_human`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        handle = await self.ask(
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
        outcome = await handle.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        assert isinstance(outcome, HumanAnswer)
        return outcome

    async def request_approval(
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
        """Asks for approval of a tool call and waits for the decision, as
        `AskUserClient.request_approval`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        handle = await self.ask(
            approval=Approval(tool_name, arguments, reason),
            context=context,
            assignees=assignees,
            ttl=ttl,
            metadata=metadata,
            webhooks=webhooks,
            request_id=request_id,
            timeout=timeout,
        )
        outcome = await handle.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        assert isinstance(outcome, ApprovalOutcome)
        return outcome
