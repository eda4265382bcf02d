"""Reattachment and retries against a server of the test's own that it kills (SIGKILL) and starts
again on the same port and data dir: `ASKUSER_BIN` (default `target/debug/askuser` under the repo
root) serving tests/conformance/agents.toml, anonymous. A run waiting for an answer survives the
restart: its iteration goes on, the answer sent after the restart settles it, and the sequences
of its stored frames run 1, 2, 3, ... with none missing or repeated."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from askuser_client import (
    Approval,
    ApprovalOutcome,
    AskUserClient,
    Frame,
    HumanAnswer,
    Reconnect,
    Unavailable,
    agent_pb2,
)
from askuser_client.aio import AsyncAskUserClient

ROOT = Path(__file__).resolve().parents[3]
STREAM_TIMEOUT = 60.0
# A client's own subchannel: not the process-wide one that a client from before a restart left
# backing off, which would refuse this client's first call too.
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


class Server:
    """An `askuser serve` process on a fixed port and data dir that can be killed and restarted."""

    def __init__(self, data_dir: str) -> None:
        self.binary = os.environ.get("ASKUSER_BIN") or str(ROOT / "target/debug/askuser")
        if not os.path.exists(self.binary):
            pytest.fail(f"no askuser binary at {self.binary} (set ASKUSER_BIN)")
        self.data_dir = data_dir
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = open(os.path.join(data_dir, "server.log"), "ab")

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "serve",
                "--listen",
                self.address,
                "--data-dir",
                os.path.join(self.data_dir, "data"),
                "--config",
                str(ROOT / "tests/conformance/agents.toml"),
            ],
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the server exited ({self.process.returncode}); see {self.log.name}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        pytest.fail("the server did not start listening")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self, down_for: float = 0.5) -> None:
        self.kill()
        time.sleep(down_for)
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
        self.log.close()


@pytest.fixture
def server() -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as data_dir:
        server = Server(data_dir)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def kinds(frames: list[Frame]) -> list[str | None]:
    return [frame.WhichOneof("event") for frame in frames]


def check_sequences(frames: list[Frame]) -> None:
    """Stored frames (sequence > 0) run 1, 2, 3, ...: none lost, none repeated."""
    sequences = [frame.sequence for frame in frames if frame.sequence]
    assert sequences == list(range(1, len(sequences) + 1)), kinds(frames)


def test_sync_run_reattaches_after_a_server_restart(server: Server) -> None:
    with AskUserClient(server.address) as client:
        with client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT) as run:
            frames: list[Frame] = []
            for frame in run:
                frames.append(frame)
                if frame.WhichOneof("event") == "tool_call_suspended":
                    break
            question = frames[-1].tool_call_suspended
            server.restart()
            # Sent on the dropped stream: kept and sent again once iteration has reattached.
            run.answer_text(question.tool_call_id, "staging", answer_id="restart-1")
            frames += list(run)
        assert kinds(frames)[:3] == ["run_started", "tool_call", "tool_call_suspended"]
        assert "answer_accepted" in kinds(frames)
        assert kinds(frames)[-1] == "run_completed"
        check_sequences(frames)
        assert run.last_sequence == frames[-1].sequence
        # An idempotent call, retried while the server is down until it is back.
        server.kill()
        threading.Timer(1.0, server.start).start()
        assert client.get_run(run.run_id).status == agent_pb2.RUN_STATUS_COMPLETED


def test_sync_watch_run_reopens_after_a_server_restart(server: Server) -> None:
    with AskUserClient(server.address) as client:
        with client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT) as run:
            question = next(f for f in run if f.WhichOneof("event") == "tool_call_suspended").tool_call_suspended
            watch = client.watch_run(run.run_id, timeout=STREAM_TIMEOUT)
            frames = [next(watch) for _ in range(3)]
            server.restart()
            run.answer_text(question.tool_call_id, "staging", answer_id="restart-1")
            assert kinds(list(run))[-1] == "run_completed"
            # The watch dropped at the restart: it reopens after sequence 3 and replays the rest.
            frames += list(watch)
        assert kinds(frames)[:3] == ["run_started", "tool_call", "tool_call_suspended"]
        assert kinds(frames)[-1] == "run_completed"
        check_sequences(frames)


def test_sync_pending_calls_feed_reopens_after_a_server_restart(server: Server) -> None:
    with AskUserClient(server.address) as client:
        with client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT) as run:
            question = next(f for f in run if f.WhichOneof("event") == "tool_call_suspended").tool_call_suspended
            with client.watch_pending_calls(agent_ids=["pick"], timeout=STREAM_TIMEOUT) as feed:
                first = [next(feed).WhichOneof("event"), next(feed).WhichOneof("event")]
                assert first == ["call_pending", "snapshot_done"]
                server.restart()
                # A new snapshot: the call is still pending.
                event = next(feed)
                assert event.WhichOneof("event") == "call_pending"
                assert event.call_pending.call.tool_call_id == question.tool_call_id
                assert next(feed).WhichOneof("event") == "snapshot_done"


def test_sync_without_reconnect_a_restart_raises_unavailable(server: Server) -> None:
    with AskUserClient(server.address, reconnect=None) as client:
        with client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT) as run:
            next(f for f in run if f.WhichOneof("event") == "tool_call_suspended")
            server.restart()
            with pytest.raises(Unavailable):
                next(run)


def test_sync_reattachment_gives_up_after_the_policy_total(server: Server) -> None:
    with AskUserClient(server.address, reconnect=Reconnect(total=1.0)) as client:
        with client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT) as run:
            next(f for f in run if f.WhichOneof("event") == "tool_call_suspended")
            server.kill()
            started = time.monotonic()
            with pytest.raises(Unavailable):
                next(run)
            assert time.monotonic() - started < 5


def test_async_run_reattaches_after_a_server_restart(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncAskUserClient(server.address) as client:
            run = await client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT)
            async with run:
                frames: list[Frame] = []
                async for frame in run:
                    frames.append(frame)
                    if frame.WhichOneof("event") == "tool_call_suspended":
                        break
                question = frames[-1].tool_call_suspended
                await asyncio.to_thread(server.restart)
                await run.answer_text(question.tool_call_id, "production", answer_id="restart-1")
                async for frame in run:
                    frames.append(frame)
            assert kinds(frames)[:3] == ["run_started", "tool_call", "tool_call_suspended"]
            assert "answer_accepted" in kinds(frames)
            assert kinds(frames)[-1] == "run_completed"
            check_sequences(frames)
            await asyncio.to_thread(server.kill)
            loop = asyncio.get_running_loop()
            loop.call_later(1.0, lambda: threading.Thread(target=server.start).start())
            listed = await client.list_runs(agent_id="pick")
            assert [r.run_id for r in listed.runs] == [run.run_id]

    asyncio.run(scenario())


def test_async_watch_run_reopens_after_a_server_restart(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncAskUserClient(server.address) as client:
            run = await client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT)
            async with run:
                async for frame in run:
                    if frame.WhichOneof("event") == "tool_call_suspended":
                        break
                watch = client.watch_run(run.run_id, timeout=STREAM_TIMEOUT)
                frames = [await watch.__anext__() for _ in range(3)]
                await asyncio.to_thread(server.restart)
                await run.answer_text(frame.tool_call_suspended.tool_call_id, "production", answer_id="restart-1")
                assert kinds([frame async for frame in run])[-1] == "run_completed"
                frames += [frame async for frame in watch]
            assert kinds(frames)[:3] == ["run_started", "tool_call", "tool_call_suspended"]
            assert kinds(frames)[-1] == "run_completed"
            check_sequences(frames)

    asyncio.run(scenario())


def test_async_pending_calls_feed_reopens_after_a_server_restart(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncAskUserClient(server.address) as client:
            run = await client.start_run("pick", "deploy", timeout=STREAM_TIMEOUT)
            async with run:
                async for frame in run:
                    if frame.WhichOneof("event") == "tool_call_suspended":
                        break
                async with client.watch_pending_calls(agent_ids=["pick"], timeout=STREAM_TIMEOUT) as feed:
                    assert (await feed.__anext__()).WhichOneof("event") == "call_pending"
                    assert (await feed.__anext__()).WhichOneof("event") == "snapshot_done"
                    await asyncio.to_thread(server.restart)
                    event = await feed.__anext__()
                    assert event.WhichOneof("event") == "call_pending"
                    assert event.call_pending.call.tool_call_id == frame.tool_call_suspended.tool_call_id
                    assert (await feed.__anext__()).WhichOneof("event") == "snapshot_done"

    asyncio.run(scenario())


def test_sync_ask_waits_across_a_server_restart(server: Server) -> None:
    with AskUserClient(server.address) as client:
        handle = client.ask(approval=Approval("deploy", {"service": "api", "environment": "production"}), timeout=STREAM_TIMEOUT)
        outcomes: list[object] = []
        waiting = threading.Thread(target=lambda: outcomes.append(handle.wait(STREAM_TIMEOUT)))
        waiting.start()
        time.sleep(0.3)  # its WatchRun is open: the restart drops it
        server.restart()
        # Answered by someone else, on a connection of their own.
        with AskUserClient(server.address, options=OWN_CONNECTION) as other:
            settled = list(other.resume_run(handle.run_id, handle.tool_call_id, edit={"service": "api", "environment": "staging"}))
        assert kinds(settled)[-1] == "run_completed"
        waiting.join(STREAM_TIMEOUT)
        [outcome] = outcomes
        assert isinstance(outcome, ApprovalOutcome)
        assert (outcome.kind, dict(outcome.arguments)) == ("edited", {"service": "api", "environment": "staging"})
        assert outcome.run_id == handle.run_id


def test_sync_ask_asks_again_while_the_server_is_down(server: Server) -> None:
    with AskUserClient(server.address) as client:
        server.kill()
        threading.Timer(1.0, server.start).start()
        # Before the run id is known, Ask is made again with the same request_id until it answers.
        handle = client.ask("Still there?", request_id="down-1", timeout=STREAM_TIMEOUT)
        assert handle.run_id and handle.request_id == "down-1"
        assert client.ask("Still there?", request_id="down-1", timeout=STREAM_TIMEOUT).run_id == handle.run_id


def test_async_ask_waits_across_a_server_restart(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncAskUserClient(server.address) as client:
            handle = await client.ask("Release name?", timeout=STREAM_TIMEOUT)
            waiting = asyncio.create_task(handle.wait(STREAM_TIMEOUT))
            await asyncio.sleep(0.3)
            await asyncio.to_thread(server.restart)
            async with AsyncAskUserClient(server.address, options=OWN_CONNECTION) as other:
                settled = [frame async for frame in other.resume_run(handle.run_id, handle.tool_call_id, text="Apollo")]
            assert kinds(settled)[-1] == "run_completed"
            outcome = await waiting
            assert isinstance(outcome, HumanAnswer)
            assert (outcome.kind, outcome.text) == ("text", "Apollo")

    asyncio.run(scenario())


def test_retries_of_an_unreachable_server_stop_at_the_timeout() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    with AskUserClient(address) as client:
        started = time.monotonic()
        with pytest.raises(Unavailable):
            client.list_agents(timeout=1.5)
        assert time.monotonic() - started < 3
