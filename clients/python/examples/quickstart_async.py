"""The asyncio client: starts the agent `status_check`, which calls the client tool
`service_status`; this program runs the tool, sends its output back and prints the agent's reply.
Then it watches the pending-calls feed while a second run waits, and settles that call from the
feed, as a worker would.

    askuser serve --config tests/conformance/agents.toml
    python examples/quickstart_async.py [HOST:PORT]          # default 127.0.0.1:50051

For a server with --auth keys, put a key in ASKUSER_API_KEY.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from askuser_client import NotFound, agent_pb2
from askuser_client.aio import AsyncAskUserClient


def service_status(service: str) -> str:
    """The client tool `service_status`, which runs here, in the caller."""
    return "healthy" if service == "api" else "unknown"


async def status_check(client: AsyncAskUserClient) -> str:
    """Runs the agent and its client tool; returns the agent's reply."""
    async with await client.start_run("status_check", "Is the api up?", timeout=30) as run:
        async for frame in run:
            kind = frame.WhichOneof("event")
            if kind == "tool_call_suspended":
                call = frame.tool_call_suspended
                if call.kind != agent_pb2.SUSPEND_KIND_CLIENT_TOOL:
                    raise RuntimeError(f"unexpected call: {call}")
                output = service_status(json.loads(call.arguments_json)["service"])
                print(f"{call.tool_name}({call.arguments_json}) -> {output}")
                await run.send_output(call.tool_call_id, output)
            elif kind == "run_completed":
                return frame.run_completed.output_text
            elif kind == "run_failed":
                raise RuntimeError(frame.run_failed.message)
    raise RuntimeError("the run ended without a result")


async def worker(client: AsyncAskUserClient) -> str:
    """Settles a waiting call found on the pending-calls feed; returns the run's reply."""
    kinds = [agent_pb2.SUSPEND_KIND_CLIENT_TOOL]
    async with client.watch_pending_calls(agent_ids=["status_check"], kinds=kinds, timeout=30) as feed:
        run = await client.start_run("status_check", "Is the api up?", timeout=30)
        await run.close()  # nobody answers on the run's own stream
        async for event in feed:
            if event.WhichOneof("event") == "call_pending" and event.call_pending.run_id == run.run_id:
                call = event.call_pending.call
                await client.claim_call(run.run_id, call.tool_call_id, "quickstart-worker")
                output = service_status(json.loads(call.arguments_json)["service"])
                async for frame in client.resume_run(run.run_id, call.tool_call_id, output=output, timeout=30):
                    if frame.WhichOneof("event") == "run_completed":
                        return frame.run_completed.output_text
    raise RuntimeError("the feed ended")


async def main() -> int:
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    async with AsyncAskUserClient(address, api_key=os.environ.get("ASKUSER_API_KEY") or None) as client:
        try:
            print(f"Result: {await status_check(client)}")  # "api is healthy"
            print(f"Worker: {await worker(client)}")
        except NotFound as error:
            if error.reason != "AGENT_NOT_FOUND":
                raise
            print("(skipped: the server has no agent status_check)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
