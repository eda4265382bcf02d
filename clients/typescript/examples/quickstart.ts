// Starts the demo agent `deploy`, asks each of its questions on the terminal and prints the result;
// then starts the agent `status_check`, which calls the client tool `service_status`: this program
// runs the tool, sends its output back and prints the agent's reply. A part whose agent the server
// does not have is skipped with a note.
//
//   askuser serve                       # the demo agents (`deploy`), on 127.0.0.1:50051
//   askuser serve --config tests/conformance/agents.toml   # agents with client tools (`status_check`)
//   npm run build && node dist/examples/quickstart.js [HOST:PORT]
//
// Against a server that checks API keys, put the key in ASKUSER_API_KEY.
import { createInterface } from "node:readline";
import { AskUserClient, AskUserError, type Run, v1 } from "@askuser/client";

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

/** Part 1: a person answers the agent's questions on the terminal. */
async function deploy(client: AskUserClient): Promise<void> {
  const questions = new Map<string, v1.ToolCallSuspended>();
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
}

/** The client tool `service_status`, which this program runs when the agent calls it. */
function serviceStatus(args: { service?: string }): string {
  return args.service === "api" ? "healthy" : "unknown";
}

/** Part 2: the agent calls a client tool; this program runs it and sends the output back. */
async function statusCheck(client: AskUserClient): Promise<void> {
  const run = client.startRun("status_check", "Is the api up?");
  for await (const frame of run) {
    const event = frame.event!;
    if (event.$case === "toolCallSuspended" && event.value.kind === v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL) {
      const { toolCallId, toolName, argumentsJson } = event.value;
      const output = toolName === "service_status" ? serviceStatus(JSON.parse(argumentsJson)) : `no tool ${toolName} here`;
      console.log(`${toolName}(${argumentsJson}) -> ${output}`);
      run.sendToolOutput(toolCallId, output, { isError: toolName !== "service_status" });
    } else if (event.$case === "runCompleted") {
      console.log(`Result: ${event.value.outputText}`);
    } else if (event.$case === "runFailed") {
      console.log(`The run failed: ${event.value.message}`);
    }
  }
}

/** Runs one part; a server without its agent skips it. */
async function part(name: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (!(error instanceof AskUserError && error.reason === "AGENT_NOT_FOUND")) throw error;
    console.log(`(skipped: the server has no agent ${name})`);
  }
}

async function main(): Promise<void> {
  const client = new AskUserClient(process.argv[2] ?? "127.0.0.1:50051", { apiKey: process.env.ASKUSER_API_KEY || undefined });
  try {
    await part("deploy", () => deploy(client));
    await part("status_check", () => statusCheck(client));
  } finally {
    input.return?.();
    client.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
