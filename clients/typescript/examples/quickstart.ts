// Starts the demo agent `deploy`, asks each of its questions on the terminal and prints the result.
//
//   askuser serve                       # the demo agents, on 127.0.0.1:50051
//   npm run build && node dist/examples/quickstart.js [HOST:PORT]
import { createInterface } from "node:readline";
import { AskUserClient, type Run, v1 } from "@askuser/client";

// Lines are read through the async iterator, which buffers them, so piped input works as well as a terminal.
const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function prompt(text: string): Promise<string> {
  process.stdout.write(text);
  const line = await input.next();
  if (line.done) throw new Error("stdin closed before the run finished");
  return line.value;
}

/** Asks a suspended question on the terminal and sends the answer on the run's stream. */
async function answer(run: Run, suspended: v1.ToolCallSuspended): Promise<void> {
  const { question, options, selectionMode } = suspended.suspendPayload!;
  const labels = options.map((option) => option.label);
  if (labels.length === 0) {
    run.answerText(suspended.toolCallId, await prompt(`${question} `));
  } else if (selectionMode === v1.SelectionMode.SELECTION_MODE_MULTI_SELECT) {
    const line = await prompt(`${question} Pick any of ${labels.join(", ")} (comma-separated): `);
    const picked = line.split(",").map((label) => label.trim()).filter((label) => label !== "");
    run.answerSelections(suspended.toolCallId, picked);
  } else {
    run.answerText(suspended.toolCallId, await prompt(`${question} Pick one of ${labels.join(", ")}: `));
  }
}

async function main(): Promise<void> {
  const client = new AskUserClient(process.argv[2] ?? "127.0.0.1:50051");
  const questions = new Map<string, v1.ToolCallSuspended>();
  try {
    const run = client.startRun("deploy", "Deploy the web app");
    for await (const frame of run) {
      const event = frame.event!;
      switch (event.$case) {
        case "textDelta":
          process.stdout.write(event.value.text);
          break;
        case "toolCallSuspended":
          questions.set(event.value.toolCallId, event.value);
          await answer(run, event.value);
          break;
        case "answerRejected":
          // A rejected answer leaves its question pending, so ask it again.
          console.log(`Not accepted: ${event.value.message}`);
          await answer(run, questions.get(event.value.toolCallId)!);
          break;
        case "runCompleted":
          console.log(`\nResult: ${event.value.outputText}`);
          break;
        case "runFailed":
          console.log(`\nThe run failed: ${event.value.message}`);
          break;
      }
    }
  } finally {
    input.return?.();
    client.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
