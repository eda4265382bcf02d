"""Starts the demo agent `deploy` and answers its questions from the keyboard.

Run a server with the built-in demo agents (`askuser serve`, no --config), then:

    python examples/quickstart.py [HOST:PORT]    # default 127.0.0.1:50051
"""

import sys

from askuser_client import AskUserClient, ask_user_pb2


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


def main() -> int:
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    with AskUserClient(address) as client, client.start_run("deploy", "Deploy the web app") as run:
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


if __name__ == "__main__":
    sys.exit(main())
