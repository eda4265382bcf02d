// A quickstart with no terminal, as an ES module of the installed package: it answers the agent
// `free_text`'s question itself, runs the client tool of the agent `status_check`, and stops a
// pending-calls feed with an AbortSignal. pack-test.sh runs it from an `npm pack` install.
//
//   askuser serve --config tests/conformance/agents.toml
//   npm install @askuser/client && node quickstart.mjs [HOST:PORT]
//
// Against a server that checks API keys, put the key in ASKUSER_API_KEY.
import { AskUserClient, AskUserError, v1 } from "@askuser/client";

const client = new AskUserClient(process.argv[2] ?? "127.0.0.1:50051", { apiKey: process.env.ASKUSER_API_KEY || undefined });
try {
  // A run: its id once the server has started it, then its frames; 30 s for the whole run.
  const run = client.startRun("free_text", "Greet me", { team: "web" }, { timeoutMs: 30_000 });
  console.log(`started a run: ${(await run.started).length > 0}`);
  for await (const frame of run) {
    const event = frame.event;
    if (event?.$case === "toolCallSuspended") {
      console.log(`asked: ${event.value.suspendPayload?.question}`);
      run.answerText(event.value.toolCallId, "Ada");
    } else if (event?.$case === "runCompleted") {
      console.log(`result: ${event.value.outputText}`);
    }
  }

  // A client tool: the run waits for this program to run `service_status` and send its output.
  const check = client.startRun("status_check", "Is the api up?");
  for await (const frame of check) {
    const event = frame.event;
    if (event?.$case === "toolCallSuspended" && event.value.kind === v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL) {
      const { service } = JSON.parse(event.value.argumentsJson);
      check.sendToolOutput(event.value.toolCallId, service === "api" ? "healthy" : "unknown");
    } else if (event?.$case === "runCompleted") {
      console.log(`result: ${event.value.outputText}`);
    }
  }

  // The pending-calls feed, stopped with an AbortSignal once its snapshot is in.
  const controller = new AbortController();
  try {
    for await (const update of client.watchPendingCalls({ agentIds: ["status_check"], signal: controller.signal })) {
      if (update.event?.$case === "snapshotDone") controller.abort();
    }
  } catch (error) {
    if (!(error instanceof AskUserError && error.codeName === "CANCELLED")) throw error;
    console.log(`feed aborted: ${error.codeName}`);
  }
} finally {
  client.close();
}
