"""Starts the demo agent `deploy` and answers its questions from the keyboard; then starts the agent
`status_check`, which calls the client tool `service_status`: this program runs the tool, sends its
output back and prints the agent's reply. A part whose agent the server lacks is skipped.

    askuser serve                                            # the demo agents (`deploy`)
    askuser serve --config tests/conformance/agents.toml     # agents with client tools (`status_check`)
    python examples/quickstart.py [HOST:PORT]                # default 127.0.0.1:50051

For a server with --auth keys, put a key in ASKUSER_API_KEY.
"""

import json
import os
import sys
from collections.abc import Callable

from askuser_client import AskUserClient, AskUserError, agent_pb2, ask_user_pb2


def read_answer(question: ask_user_pb2.SuspendPayload) -> dict:
    """Asks the person at the keyboard; returns the answer as keyword arguments of Run.answer."""
    print(f"\n{question.question}")
    if not question.options:
        return {"text": input("> ")}
    for number, option in enumerate(question.options, 1):
        about = f" - {option.description}" if option.description else ""
        print(f"  {number}. {option.label}{about}")
    multi = question.selection_mode == ask_user_pb2.SELECTION_MODE_MULTI_SELECT
    prompt = "numbers or labels, comma-separated (empty for none)" if multi else "number or label"
    labels = []
    for choice in filter(None, (part.strip() for part in input(f"{prompt}> ").split(","))):
        # A number picks an option; anything else goes as typed, for the server to check.
        is_number = choice.isdigit() and 1 <= int(choice) <= len(question.options)
        labels.append(question.options[int(choice) - 1].label if is_number else choice)
    return {"selections": labels}


def deploy(client: AskUserClient) -> int:
    """Part 1: a person answers the agent's questions at the keyboard."""
    with client.start_run("deploy", "Deploy the web app") as run:
        questions = {}
        for frame in run:
            kind = frame.WhichOneof("event")
            if kind == "tool_call_suspended":
                asked = frame.tool_call_suspended
                questions[asked.tool_call_id] = asked.suspend_payload
                run.answer(asked.tool_call_id, **read_answer(asked.suspend_payload))
            elif kind == "answer_rejected":
                # The question stays open: say why and ask again.
                rejected = frame.answer_rejected
                print(f"Not accepted: {rejected.message}")
                run.answer(rejected.tool_call_id, **read_answer(questions[rejected.tool_call_id]))
            elif kind == "run_completed":
                print(f"\nResult: {frame.run_completed.output_text}")
                return 0
            elif kind == "run_failed":
                print(f"\nThe run failed: {frame.run_failed.message}", file=sys.stderr)
                return 1
    return 1


def service_status(service: str) -> str:
    """The client tool `service_status`, which runs here, in the caller, when the agent calls it."""
    return "healthy" if service == "api" else "unknown"


def status_check(client: AskUserClient) -> int:
    """Part 2: the agent calls a client tool; this program runs it and sends the output back."""
    with client.start_run("status_check", "Is the api up?") as run:
        for frame in run:
            kind = frame.WhichOneof("event")
            if kind == "tool_call_suspended":
                call = frame.tool_call_suspended
                if call.kind != agent_pb2.SUSPEND_KIND_CLIENT_TOOL or call.tool_name != "service_status":
                    run.close()
                    print(f"Unexpected call: {call}", file=sys.stderr)
                    return 1
                arguments = json.loads(call.arguments_json)  # {"service": "api"}
                output = service_status(arguments["service"])
                print(f"{call.tool_name}({call.arguments_json}) -> {output}")
                run.send_output(call.tool_call_id, output)
            elif kind == "run_completed":
                print(f"Result: {frame.run_completed.output_text}")  # "api is healthy"
                return 0
            elif kind == "run_failed":
                print(f"The run failed: {frame.run_failed.message}", file=sys.stderr)
                return 1
    return 1


def part(name: str, run: Callable[[], int]) -> int:
    """Runs one part; a server without its agent skips it."""
    try:
        return run()
    except AskUserError as error:
        if error.reason != "AGENT_NOT_FOUND":
            raise
        print(f"(skipped: the server has no agent {name})")
        return 0


def main() -> int:
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    # A server with --auth keys wants a key on every call.
    with AskUserClient(address, api_key=os.environ.get("ASKUSER_API_KEY") or None) as client:
        status = part("deploy", lambda: deploy(client))
        if status != 0:
            return status
        return part("status_check", lambda: status_check(client))


if __name__ == "__main__":
    sys.exit(main())
