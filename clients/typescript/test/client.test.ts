// Tests of the wrapper against a real server started with tests/conformance/agents.toml, whose
// address is in ASKUSER_ADDR, with a key of it in ASKUSER_API_KEY when it checks keys (see test.sh).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { status } from "@grpc/grpc-js";
import { AskUserClient, AskUserError, type Run, v1 } from "@askuser/client";

const address = process.env.ASKUSER_ADDR;
if (!address) throw new Error("ASKUSER_ADDR must name the server (host:port)");
const client = new AskUserClient(address, { apiKey: process.env.ASKUSER_API_KEY || undefined });
after(() => client.close());

type Frame = v1.RunAgentResponse;
type EventOf<Case> = Extract<NonNullable<Frame["event"]>, { $case: Case }>["value"];

/** Reads a run's frames up to and including the first of `kind`; fails if the stream ends first. */
async function readUntil<Case extends NonNullable<Frame["event"]>["$case"]>(
  events: AsyncIterator<Frame>,
  kind: Case,
): Promise<EventOf<Case>> {
  for (;;) {
    const result = await events.next();
    assert.ok(!result.done, `the stream ended before a ${kind} frame`);
    if (result.value.event?.$case === kind) return result.value.event.value as EventOf<Case>;
  }
}

async function collect(frames: AsyncIterable<Frame>): Promise<Frame[]> {
  const all: Frame[] = [];
  for await (const frame of frames) all.push(frame);
  return all;
}

function kinds(frames: Frame[]): string[] {
  return frames.map((frame) => frame.event?.$case ?? "none");
}

/** Asserts that `promise` rejects with an AskUserError and returns it. */
async function rejection(promise: Promise<unknown>): Promise<AskUserError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AskUserError, `expected an AskUserError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected the call to fail");
}

/** Starts `agentId` and reads it until its first question; returns the run, its frames and the question. */
async function startAndSuspend(agentId: string, metadata: Record<string, string> = {}) {
  const run = client.startRun(agentId, "test", metadata);
  const events = run[Symbol.asyncIterator]();
  const question = await readUntil(events, "toolCallSuspended");
  return { run, events, question };
}

test("a started run streams its events, takes a text answer and completes", async () => {
  const run = client.startRun("free_text", "greet me");
  assert.equal(run.runId, "", "the run id is not known before run_started");
  const frames: Frame[] = [];
  for await (const frame of run) {
    frames.push(frame);
    if (frame.event?.$case === "toolCallSuspended") run.answerText(frame.event.value.toolCallId, "Ada");
  }
  assert.notEqual(run.runId, "");
  assert.ok(frames.every((frame) => frame.runId === run.runId));
  assert.deepEqual(
    kinds(frames).filter((kind) => kind !== "textDelta"),
    ["runStarted", "toolCall", "toolCallSuspended", "answerAccepted", "toolResult", "runCompleted"],
  );
  const completed = frames.at(-1)!.event as { $case: "runCompleted"; value: v1.RunCompleted };
  assert.equal(completed.value.outputText, "Hello, Ada!");
  assert.ok(frames[0].time instanceof Date, "timestamps decode to Dates");
});

test("selections, declines and text answer parallel questions", async () => {
  const run = client.startRun("parallel", "release");
  const events = run[Symbol.asyncIterator]();
  const environment = await readUntil(events, "toolCallSuspended");
  const checks = await readUntil(events, "toolCallSuspended");
  const note = await readUntil(events, "toolCallSuspended");
  assert.equal(checks.suspendPayload?.selectionMode, v1.SelectionMode.SELECTION_MODE_MULTI_SELECT);
  run.decline(environment.toolCallId, "later");
  run.answerSelections(checks.toolCallId, ["unit", "lint"], { answerId: "checks-1" });
  run.answerText(note.toolCallId, "none");
  const completed = await readUntil(events, "runCompleted");
  assert.equal(completed.outputText, "User declined to answer: later / unit, lint / none");
});

test("a bad answer is rejected in-band with field violations and the question stays answerable", async () => {
  const { run, events, question } = await startAndSuspend("pick");
  run.answerSelections(question.toolCallId, ["qa"]);
  const rejected = await readUntil(events, "answerRejected");
  assert.equal(rejected.reason, "INVALID_ANSWER");
  assert.deepEqual(rejected.fieldViolations.map((violation) => violation.field), ["answer.selections.labels[0]"]);
  run.answerText(question.toolCallId, "staging");
  assert.equal((await readUntil(events, "answerAccepted")).toolCallId, question.toolCallId);
  assert.equal((await readUntil(events, "runCompleted")).outputText, "Deploying to staging");
});

test("answerForm answers a form's fields together; a wrong value is rejected in-band naming the field", async () => {
  const { run, events, question } = await startAndSuspend("form");
  assert.equal(question.kind, v1.SuspendKind.SUSPEND_KIND_FORM);
  assert.deepEqual(question.form?.fields.map((field) => field.name), ["version", "replicas", "announce"]);
  assert.equal(question.form?.fields[1].kind?.$case, "number");

  run.answerForm(question.toolCallId, { version: "1.2.3", replicas: 12 });
  const rejected = await readUntil(events, "answerRejected");
  assert.equal(rejected.reason, "INVALID_ANSWER");
  assert.deepEqual(rejected.fieldViolations.map((violation) => violation.field), ['answer.form.values["replicas"]']);

  run.answerForm(question.toolCallId, { version: "1.2.3", replicas: 3, announce: false }, { answerId: "form-1" });
  assert.equal((await readUntil(events, "answerAccepted")).toolCallId, question.toolCallId);
  const result = await readUntil(events, "toolResult");
  assert.equal(result.kind, v1.ToolResultKind.TOOL_RESULT_KIND_ANSWERED);
  assert.deepEqual(JSON.parse(result.content), { action: "accept", content: { version: "1.2.3", replicas: 3, announce: false } });
  await readUntil(events, "runCompleted");
});

test("reply settles a question with prose instead of an answer, and the model is told so", async () => {
  const { run, events, question } = await startAndSuspend("free_text");
  run.reply(question.toolCallId, "why?");
  const result = await readUntil(events, "toolResult");
  assert.equal(result.kind, v1.ToolResultKind.TOOL_RESULT_KIND_REPLIED);
  assert.equal(result.content, "User replied instead of answering: why?");
  assert.equal((await readUntil(events, "runCompleted")).outputText, "Hello, User replied instead of answering: why?!");
});

test("close() ends the iteration quietly and attach() picks the run up after a sequence", async () => {
  const { run, events, question } = await startAndSuspend("two_step");
  run.close();
  assert.deepEqual(await events.next(), { done: true, value: undefined });

  const attached = client.attach(run.runId, 2);
  assert.equal(attached.runId, run.runId);
  const replay = attached[Symbol.asyncIterator]();
  const first = await replay.next();
  assert.ok(!first.done);
  assert.equal(first.value.sequence, 3);
  assert.equal(first.value.event?.$case, "toolCallSuspended");
  attached.answerText(question.toolCallId, "Apollo");
  const next = await readUntil(replay, "toolCallSuspended");
  assert.equal(next.suspendPayload?.question, "Ship Apollo?");
  attached.close();
});

test("leaving a loop early cancels the call, so a closed client lets the process exit", async () => {
  // A call left open keeps the process alive; a child process shows it by not exiting in time.
  const script = `
    const { AskUserClient } = require("@askuser/client");
    const client = new AskUserClient(process.argv[1], { apiKey: process.env.ASKUSER_API_KEY || undefined });
    (async () => {
      const run = client.startRun("pick", "test");
      for await (const frame of run) if (frame.event.$case === "toolCallSuspended") break;
      for await (const frame of client.watchRun(run.runId)) break;
      for await (const event of client.watchPendingCalls()) break;
      client.close();
    })();`;
  const child = promisify(execFile)(process.execPath, ["-e", script, address], {
    cwd: path.resolve(__dirname, "../.."),
    timeout: 5_000,
  });
  await assert.doesNotReject(child);
});

test("close() cancels the calls still open, even one waiting for a frame", async () => {
  const { run } = await startAndSuspend("free_text");
  const other = new AskUserClient(address!, { apiKey: process.env.ASKUSER_API_KEY || undefined });
  const frames = other.watchRun(run.runId)[Symbol.asyncIterator]();
  await readUntil(frames, "toolCallSuspended");
  const waiting = frames.next(); // the run waits for an answer: no frame is coming
  other.close();
  const error = await rejection(waiting);
  assert.equal(error.code, status.CANCELLED);
  run.close();
});

test("resumeRun answers without a stream and watchRun replays the whole run", async () => {
  const { run, question } = await startAndSuspend("pick");
  run.close();
  const resumed = await collect(client.resumeRun(run.runId, question.toolCallId, { text: "production" }, { answerId: "r-1" }));
  assert.equal(resumed[0].event?.$case, "answerAccepted");
  assert.equal(kinds(resumed).at(-1), "runCompleted");

  const watched = await collect(client.watchRun(run.runId));
  assert.deepEqual(
    watched.map((frame) => frame.sequence),
    watched.map((_, index) => index + 1),
    "a watch from 0 replays every stored event in order",
  );
  assert.equal(kinds(watched)[0], "runStarted");
  assert.deepEqual(watched.at(-1), resumed.at(-1));

  const retried = await collect(client.resumeRun(run.runId, question.toolCallId, { text: "production" }, { answerId: "r-1" }));
  const accepted = retried[0].event as { $case: "answerAccepted"; value: v1.AnswerAccepted };
  assert.equal(accepted.value.duplicate, true);

  const error = await rejection(collect(client.resumeRun(run.runId, question.toolCallId, { decline: "" })));
  assert.equal(error.code, status.FAILED_PRECONDITION);
  assert.equal(error.reason, "ALREADY_ANSWERED");
  assert.equal(error.domain, "askuser.dev");
});

test("errors carry the status code, the ErrorInfo reason and the BadRequest field violations", async () => {
  const notFound = await rejection(client.getRun("no-such-run"));
  assert.equal(notFound.code, status.NOT_FOUND);
  assert.equal(notFound.codeName, "NOT_FOUND");
  assert.equal(notFound.reason, "RUN_NOT_FOUND");
  assert.match(notFound.message, /^NOT_FOUND: /);

  const invalid = await rejection(client.askUser({ question: " ", options: [{ label: "a" }, { label: "a" }] }));
  assert.equal(invalid.codeName, "INVALID_ARGUMENT");
  assert.equal(invalid.reason, undefined);
  assert.deepEqual(invalid.fieldViolations.map((violation) => violation.field), ["input.question", "input.options[1].label"]);
  assert.ok(invalid.fieldViolations.every((violation) => violation.description !== ""));

  const unknownAgent = await rejection(collect(client.startRun("no_such_agent", "hi")));
  assert.equal(unknownAgent.code, status.NOT_FOUND);
  assert.equal(unknownAgent.reason, "AGENT_NOT_FOUND");
});

test("getRun, listRuns and cancelRun see a run's state, metadata and pending questions", async () => {
  const label = `test-${process.pid}-${Date.now()}`;
  const { run, question } = await startAndSuspend("checks", { label });
  run.close();

  const suspended = await client.getRun(run.runId);
  assert.equal(suspended.status, v1.RunStatus.RUN_STATUS_SUSPENDED);
  assert.deepEqual(suspended.metadata, { label });
  assert.deepEqual(suspended.pendingToolCalls.map((pending) => pending.toolCallId), [question.toolCallId]);

  const listed = await client.listRuns({ agentId: "checks", status: v1.RunStatus.RUN_STATUS_SUSPENDED, pageSize: 1000 });
  assert.ok(listed.runs.some((listedRun) => listedRun.runId === run.runId));
  assert.ok(listed.runs.every((listedRun) => listedRun.agentId === "checks" && listedRun.status === suspended.status));

  const cancelled = await client.cancelRun(run.runId, "not needed");
  assert.equal(cancelled.status, v1.RunStatus.RUN_STATUS_CANCELLED);
  assert.deepEqual(cancelled.pendingToolCalls, []);
  assert.equal((await client.cancelRun(run.runId)).status, v1.RunStatus.RUN_STATUS_CANCELLED, "cancelling again is a no-op");
  const stillSuspended = await client.listRuns({ agentId: "checks", status: v1.RunStatus.RUN_STATUS_SUSPENDED, pageSize: 1000 });
  assert.ok(!stillSuspended.runs.some((listedRun) => listedRun.runId === run.runId));
});

test("listRuns pages with nextPageToken", async () => {
  for (let i = 0; i < 2; i += 1) (await startAndSuspend("free_text")).run.close();
  const first = await client.listRuns({ agentId: "free_text", pageSize: 1 });
  assert.equal(first.runs.length, 1);
  assert.notEqual(first.nextPageToken, "");
  const second = await client.listRuns({ agentId: "free_text", pageSize: 1, pageToken: first.nextPageToken });
  assert.equal(second.runs.length, 1);
  assert.notEqual(second.runs[0].runId, first.runs[0].runId);
});

test("a start option sets when the run's questions expire", async () => {
  const before = Date.now();
  const run: Run = client.startRun("free_text", "greet me", {}, { questionTtlMs: 90_000 });
  const question = await readUntil(run[Symbol.asyncIterator](), "toolCallSuspended");
  run.close();
  const expires = question.expireTime?.getTime();
  assert.ok(expires !== undefined, "the question has an expiry");
  assert.ok(expires >= before + 90_000 && expires <= Date.now() + 90_000, `expiry ${expires} is 90 s after the start`);
});

test("listAgents lists the configured agents by id and askUser renders the fallback text", async () => {
  const agents = await client.listAgents();
  assert.deepEqual(
    agents.map((agent) => agent.agentId),
    ["checks", "deployer", "feed", "form", "free_text", "mcp_deployer", "parallel", "per_run", "pick", "questions", "status_check", "two_step"],
  );
  assert.ok(agents.filter((agent) => agent.agentId !== "per_run").every((agent) => agent.tools.length > 0));
  const deployer = agents.find((agent) => agent.agentId === "deployer")!;
  assert.deepEqual(deployer.tools, ["ask_user", "service_status", "deploy"]);
  const deployTool = deployer.agentTools.find((tool) => tool.name === "deploy")!;
  assert.equal(deployTool.kind, v1.ToolKind.TOOL_KIND_CLIENT);
  assert.equal(deployTool.approval, v1.ApprovalPolicy.APPROVAL_POLICY_CONDITIONAL);
  assert.equal(deployTool.approvalCondition, 'args.environment == "production"');

  const content = await client.askUser({
    question: "Which checks?",
    options: [{ label: "lint" }, { label: "unit", description: "fast" }],
    selectionMode: v1.SelectionMode.SELECTION_MODE_MULTI_SELECT,
  });
  assert.equal(content, "[Question for user]: Which checks?\nOptions: lint, unit\nSelection mode: multi_select");
});

// ---- client tools, approvals and the pending-calls feed ----

/** Reads frames until a `toolCallSuspended` of `kind`, and checks its tool. */
async function readSuspended(events: AsyncIterator<Frame>, kind: v1.SuspendKind, toolName: string): Promise<v1.ToolCallSuspended> {
  const suspended = await readUntil(events, "toolCallSuspended");
  assert.equal(suspended.kind, kind);
  assert.equal(suspended.toolName, toolName);
  return suspended;
}

/** Starts `deployer`, picks `environment`, sends `status` as the service status and reads up to the deploy call. */
async function deployerUpToDeploy(environment: string, status = "healthy") {
  const { run, events, question } = await startAndSuspend("deployer");
  assert.equal(question.kind, v1.SuspendKind.SUSPEND_KIND_QUESTION);
  run.answerText(question.toolCallId, environment);
  const check = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL, "service_status");
  run.sendToolOutput(check.toolCallId, status);
  return { run, events };
}

test("sendToolOutput settles a client tool call with its output, or with an error", async () => {
  const { run, events, question: call } = await startAndSuspend("status_check");
  assert.equal(call.kind, v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL);
  assert.equal(call.toolName, "service_status");
  assert.deepEqual(JSON.parse(call.argumentsJson), { service: "api" });
  assert.equal(call.suspendPayload, undefined, "a client tool call has no question");
  run.answerText(call.toolCallId, "healthy");
  const rejected = await readUntil(events, "answerRejected");
  assert.deepEqual(rejected.fieldViolations.map((violation) => violation.field), ["answer.text"]);
  run.sendToolOutput(call.toolCallId, "healthy", { answerId: "out-1" });
  assert.equal((await readUntil(events, "answerAccepted")).duplicate, false);
  const { settledBy, ...result } = await readUntil(events, "toolResult");
  assert.deepEqual(result, {
    toolCallId: call.toolCallId,
    content: "healthy",
    isError: false,
    kind: v1.ToolResultKind.TOOL_RESULT_KIND_OUTPUT,
  });
  // Who responded: the principal of ASKUSER_API_KEY, a key of the tenant `conformance` (key:<its name>).
  assert.equal(settledBy?.tenant, "conformance");
  assert.equal(settledBy?.method, v1.AuthMethod.AUTH_METHOD_API_KEY);
  assert.match(settledBy?.subject ?? "", /^key:./);
  assert.equal((await readUntil(events, "runCompleted")).outputText, "api is healthy");

  const failing = await startAndSuspend("status_check");
  failing.run.sendToolOutput(failing.question.toolCallId, "connection refused", { isError: true });
  const failed = await readUntil(failing.events, "toolResult");
  assert.equal(failed.isError, true);
  assert.equal((await readUntil(failing.events, "runCompleted")).outputText, "api is connection refused");
});

test("approve runs the tool: the call comes again, with the same id, as a client tool call", async () => {
  const { run, events } = await deployerUpToDeploy("production");
  const approval = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_APPROVAL, "deploy");
  assert.deepEqual(JSON.parse(approval.argumentsJson), { service: "api", environment: "production" });
  assert.equal(approval.approvalReason, 'args.environment == "production"');
  run.approve(approval.toolCallId, { answerId: "ok-1" });
  assert.equal((await readUntil(events, "answerAccepted")).toolCallId, approval.toolCallId);
  const call = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL, "deploy");
  assert.equal(call.toolCallId, approval.toolCallId);
  run.sendToolOutput(call.toolCallId, "deployed v42");
  assert.equal(
    (await readUntil(events, "runCompleted")).outputText,
    "Deploy of api to production (status healthy): deployed v42",
  );
});

test("reject tells the model why and never runs the tool", async () => {
  const { run, events } = await deployerUpToDeploy("production", "degraded");
  const approval = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_APPROVAL, "deploy");
  run.reject(approval.toolCallId, "not while degraded");
  const result = await readUntil(events, "toolResult");
  assert.equal(result.kind, v1.ToolResultKind.TOOL_RESULT_KIND_REJECTED);
  assert.equal(result.content, "User rejected the call: not while degraded");
  await readUntil(events, "runCompleted");

  const error = await rejection(collect(client.resumeRun(run.runId, approval.toolCallId, { approve: true })));
  assert.equal(error.codeName, "FAILED_PRECONDITION");
  assert.equal(error.reason, "ALREADY_ANSWERED");
});

test("edit runs the tool with other arguments, given as an object or as JSON text", async () => {
  const { run, events } = await deployerUpToDeploy("production");
  const approval = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_APPROVAL, "deploy");
  run.edit(approval.toolCallId, '{"service": "api", "environment": "moon"}');
  const rejected = await readUntil(events, "answerRejected");
  assert.deepEqual(rejected.fieldViolations.map((violation) => violation.field), ["answer.approval.edit.arguments_json"]);
  run.edit(approval.toolCallId, { service: "api", environment: "staging" });
  const call = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL, "deploy");
  assert.deepEqual(JSON.parse(call.argumentsJson), { service: "api", environment: "staging" });
  run.sendToolOutput(call.toolCallId, "deployed v42");
  const result = await readUntil(events, "toolResult");
  assert.equal(result.content, 'User edited the arguments to {"environment":"staging","service":"api"}. Result: deployed v42');
  run.close();
});

test("startRun offers per-run tools, with their approval policy, and rejects a bad schema", async () => {
  const bad = await rejection(
    collect(client.startRun("per_run", "look up a", {}, { tools: [{ name: "lookup", parametersJsonSchema: '{"type": 12}' }] })),
  );
  assert.equal(bad.codeName, "INVALID_ARGUMENT");
  assert.ok(
    bad.fieldViolations.some((violation) => violation.field === "start.tools[0].parameters_json_schema"),
    `field violations: ${JSON.stringify(bad.fieldViolations)}`,
  );

  const run = client.startRun("per_run", "look up a", {}, {
    tools: [
      {
        name: "lookup",
        description: "Looks a key up",
        parametersJsonSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
        approval: v1.ApprovalPolicy.APPROVAL_POLICY_ALWAYS,
      },
    ],
  });
  const events = run[Symbol.asyncIterator]();
  const approval = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_APPROVAL, "lookup");
  assert.equal(approval.approvalReason, "always");
  assert.deepEqual(JSON.parse(approval.argumentsJson), { key: "a" });
  run.approve(approval.toolCallId);
  const call = await readSuspended(events, v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL, "lookup");
  run.sendToolOutput(call.toolCallId, "42");
  assert.equal((await readUntil(events, "runCompleted")).outputText, "lookup: 42");
});

type FeedEvent = NonNullable<v1.WatchPendingCallsResponse["event"]>;
type FeedEventOf<Case> = Extract<FeedEvent, { $case: Case }>["value"];

/** Reads feed events until one of `kind` (of the run `runId`, when given). */
async function readFeedUntil<Case extends FeedEvent["$case"]>(
  events: AsyncIterator<v1.WatchPendingCallsResponse>,
  kind: Case,
  runId?: string,
): Promise<FeedEventOf<Case>> {
  for (;;) {
    const result = await events.next();
    assert.ok(!result.done, `the feed ended before a ${kind} event`);
    const event = result.value.event!;
    assert.notEqual(event.$case, "heartbeat", "heartbeats are left out");
    const eventRunId = (event.value as { runId?: string }).runId;
    if (event.$case === kind && (runId === undefined || eventRunId === runId)) return event.value as FeedEventOf<Case>;
  }
}

test("watchPendingCalls feeds pending calls and settlements, and claimCall keeps other workers off", async () => {
  const feed = client.watchPendingCalls({
    agentIds: ["status_check"],
    toolNames: ["service_status"],
    kinds: [v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL],
  });
  const updates = feed[Symbol.asyncIterator]();
  await readFeedUntil(updates, "snapshotDone");

  const { run, question: call } = await startAndSuspend("status_check");
  run.close();
  const pending = await readFeedUntil(updates, "callPending", run.runId);
  assert.equal(pending.agentId, "status_check");
  assert.equal(pending.call?.toolCallId, call.toolCallId);
  assert.equal(pending.call?.kind, v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL);
  assert.deepEqual(JSON.parse(pending.call!.argumentsJson), { service: "api" });

  const before = Date.now();
  const expires = await client.claimCall(run.runId, call.toolCallId, "worker-1", { ttlMs: 30_000 });
  assert.ok(expires instanceof Date);
  assert.ok(expires.getTime() >= before + 29_000 && expires.getTime() <= Date.now() + 31_000, `claim lapses at ${expires.toISOString()}`);
  const taken = await rejection(client.claimCall(run.runId, call.toolCallId, "worker-2"));
  assert.equal(taken.code, status.FAILED_PRECONDITION);
  assert.equal(taken.reason, "ALREADY_CLAIMED");
  assert.ok((await client.claimCall(run.runId, call.toolCallId, "worker-1")) instanceof Date, "the claimant renews its claim");
  const [claimed] = (await client.getRun(run.runId)).pendingToolCalls;
  assert.equal(claimed.claimant, "worker-1");
  assert.ok(claimed.claimExpireTime instanceof Date);

  // A claim does not block settling, here without a stream.
  const resumed = await collect(client.resumeRun(run.runId, call.toolCallId, { toolOutput: { content: "up" } }));
  assert.equal(kinds(resumed)[0], "answerAccepted");
  assert.equal(kinds(resumed).at(-1), "runCompleted");
  const settled = await readFeedUntil(updates, "callSettled", run.runId);
  assert.equal(settled.toolCallId, call.toolCallId);
  assert.equal(settled.kind, v1.ToolResultKind.TOOL_RESULT_KIND_OUTPUT);

  feed.close();
  assert.deepEqual(await updates.next(), { done: true, value: undefined }, "close() ends the iteration quietly");
  const gone = await rejection(client.claimCall(run.runId, call.toolCallId, "worker-2"));
  assert.equal(gone.reason, "TOOL_CALL_NOT_PENDING");
});

test("a feed closed before it is iterated ends quietly", async () => {
  const feed = client.watchPendingCalls({ agentIds: ["no_such_agent"] });
  feed.close();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(await collect(feed as AsyncIterable<never>), []);
});
