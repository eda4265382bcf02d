// Tests of the per-call options (timeoutMs, signal, headers) and of `run.started`, against the server
// in ASKUSER_ADDR (with --auth keys; ASKUSER_API_KEY is a key of it), as test.sh runs them.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { AskUserClient, AskUserError, v1 } from "@askuser/client";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (see clients/typescript/test.sh)`);
  return value;
}

const address = env("ASKUSER_ADDR");
const apiKey = env("ASKUSER_API_KEY");
const client = new AskUserClient(address, { apiKey });
/** A client without credentials of its own: each call brings its `authorization` header. */
const bare = new AskUserClient(address);
after(() => {
  client.close();
  bare.close();
});

type Frame = v1.RunAgentResponse;

/** Reads frames up to and including the first of `kind`; fails if the stream ends first. */
async function readUntil(events: AsyncIterator<{ event?: { $case: string } }>, kind: string): Promise<void> {
  for (;;) {
    const result = await events.next();
    assert.ok(!result.done, `the stream ended before a ${kind} frame`);
    if (result.value.event?.$case === kind) return;
  }
}

/** Asserts that `promise` rejects with an AskUserError of `code` and returns it. */
async function rejectsWith(promise: Promise<unknown>, code: status): Promise<AskUserError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AskUserError, `expected an AskUserError, got ${String(error)}`);
    assert.equal(error.code, code, `expected ${status[code]}, got ${error.message}`);
    return error;
  }
  assert.fail(`expected the call to fail with ${status[code]}`);
}

test("a deadline expires on a run that waits for an answer: DEADLINE_EXCEEDED", async () => {
  const run = client.startRun("free_text", "greet me", {}, { timeoutMs: 1_000 });
  const events = run[Symbol.asyncIterator]();
  const began = Date.now();
  await readUntil(events, "toolCallSuspended");
  const waiting = events.next(); // no answer is coming
  await rejectsWith(waiting, status.DEADLINE_EXCEEDED);
  assert.ok(Date.now() - began >= 900, "the deadline did not expire early");
  // The run itself goes on on the server, still waiting.
  assert.equal((await client.getRun(run.runId)).status, v1.RunStatus.RUN_STATUS_SUSPENDED);
  await client.cancelRun(run.runId);
});

test("a deadline applies to watchRun, attach and resumeRun too, and timeoutMs <= 0 means none", async () => {
  const run = client.startRun("two_step", "launch");
  const runId = await run.started;
  const events = run[Symbol.asyncIterator]();
  await readUntil(events, "toolCallSuspended");
  run.close();

  const watched = client.watchRun(runId, 0, { timeoutMs: 300 })[Symbol.asyncIterator]();
  await readUntil(watched, "toolCallSuspended");
  await rejectsWith(watched.next(), status.DEADLINE_EXCEEDED);

  const attached = client.attach(runId, 0, { timeoutMs: 300 });
  const replay = attached[Symbol.asyncIterator]();
  await readUntil(replay, "toolCallSuspended");
  await rejectsWith(replay.next(), status.DEADLINE_EXCEEDED);

  const pending = (await client.getRun(runId, { timeoutMs: 5_000 })).pendingToolCalls[0];
  const resumed = client.resumeRun(runId, pending.toolCallId, { text: "Apollo" }, { answerId: "a-1", timeoutMs: 300 });
  const afterAnswer = resumed[Symbol.asyncIterator]();
  await readUntil(afterAnswer, "answerAccepted");
  await readUntil(afterAnswer, "toolCallSuspended"); // the second question; ResumeRun ends there
  assert.deepEqual(await afterAnswer.next(), { done: true, value: undefined });

  // No deadline at all: the unary calls complete.
  assert.equal((await client.getRun(runId, { timeoutMs: 0 })).runId, runId);
  assert.equal((await client.cancelRun(runId, "done", { timeoutMs: -1 })).status, v1.RunStatus.RUN_STATUS_CANCELLED);
});

test("aborting a watchPendingCalls feed cancels it: the iteration throws CANCELLED", async () => {
  const controller = new AbortController();
  const feed = client.watchPendingCalls({ agentIds: ["feed"], signal: controller.signal });
  const events = feed[Symbol.asyncIterator]();
  await readUntil(events, "snapshotDone");
  const waiting = events.next(); // nothing new is pending
  controller.abort();
  const error = await rejectsWith(waiting, status.CANCELLED);
  assert.equal(error.codeName, "CANCELLED");
  assert.deepEqual(await events.next(), { done: true, value: undefined });
});

test("an aborted signal cancels unary calls and streams at once", async () => {
  const signal = AbortSignal.abort();
  await rejectsWith(client.listAgents({ signal }), status.CANCELLED);
  await rejectsWith(client.getRun("no-such-run", { signal }), status.CANCELLED);
  await rejectsWith(client.listRuns({ pageSize: 1, signal }), status.CANCELLED);
  await rejectsWith(client.askUser({ question: "Why?" }, { signal }), status.CANCELLED);
  const run = client.startRun("free_text", "greet me", {}, { signal });
  await rejectsWith(run.started, status.CANCELLED);
  await rejectsWith(run[Symbol.asyncIterator]().next(), status.CANCELLED);
  await rejectsWith(client.watchRun("no-such-run", 0, { signal })[Symbol.asyncIterator]().next(), status.CANCELLED);
});

test("a stream that fails before it is iterated throws when iterated, and does not crash the process", async () => {
  const signal = AbortSignal.abort();
  const streams = [
    client.watchRun("no-such-run", 0, { signal }),
    client.resumeRun("no-such-run", "call-1", { text: "hi" }, { signal }),
    client.attach("no-such-run", 0, { signal }),
    client.watchPendingCalls({ signal }),
    client.startRun("free_text", "greet me", {}, { signal }),
  ];
  await new Promise((resolve) => setTimeout(resolve, 200)); // each call has ended by now
  for (const stream of streams) await rejectsWith(stream[Symbol.asyncIterator]().next(), status.CANCELLED);
});

test("aborting a run's stream while it waits throws CANCELLED; the run goes on on the server", async () => {
  const controller = new AbortController();
  const run = client.startRun("free_text", "greet me", {}, { signal: controller.signal });
  const events = run[Symbol.asyncIterator]();
  await readUntil(events, "toolCallSuspended");
  setTimeout(() => controller.abort(), 50);
  await rejectsWith(events.next(), status.CANCELLED);
  assert.equal((await client.getRun(run.runId)).status, v1.RunStatus.RUN_STATUS_SUSPENDED);
  await client.cancelRun(run.runId);
});

test("headers are sent with the call: an authorization header instead of an API key", async () => {
  await rejectsWith(bare.listAgents(), status.UNAUTHENTICATED);
  const headers = { authorization: `Bearer ${apiKey}`, "x-request-id": "call-options-test" };
  assert.ok((await bare.listAgents({ headers })).some((agent) => agent.agentId === "free_text"));
  const bad = await rejectsWith(bare.listAgents({ headers: { authorization: "Bearer ak_unknown_secret" } }), status.UNAUTHENTICATED);
  assert.equal(bad.reason, "INVALID_CREDENTIALS");

  // Streams send them too.
  const run = bare.startRun("free_text", "greet me", {}, { headers });
  const runId = await run.started;
  const watched = bare.watchRun(runId, 0, { headers })[Symbol.asyncIterator]();
  await readUntil(watched, "toolCallSuspended");
  const feed = bare.watchPendingCalls({ agentIds: ["free_text"], headers });
  const updates = feed[Symbol.asyncIterator]();
  await readUntil(updates, "snapshotDone");
  feed.close();
  assert.equal((await bare.cancelRun(runId, "", { headers })).status, v1.RunStatus.RUN_STATUS_CANCELLED);
  run.close();
  await rejectsWith(bare.startRun("free_text", "greet me").started, status.UNAUTHENTICATED);
});

test("await run.started gives the id before the frames are read, and the iteration still sees every frame", async () => {
  const run = client.startRun("free_text", "greet me");
  assert.equal(run.runId, "");
  const runId = await run.started;
  assert.notEqual(runId, "");
  assert.equal(run.runId, runId);
  assert.equal(await run.started, runId, "the same promise, again");
  const frames: Frame[] = [];
  for await (const frame of run) {
    frames.push(frame);
    if (frame.event?.$case === "toolCallSuspended") run.answerText(frame.event.value.toolCallId, "Ada");
  }
  assert.equal(frames[0].event?.$case, "runStarted");
  assert.equal(frames[0].sequence, 1);
  assert.ok(frames.every((frame) => frame.runId === runId));
  assert.equal(frames.at(-1)!.event?.$case, "runCompleted");

  // An attached run knows its id from the start.
  const attached = client.attach(runId);
  assert.equal(await attached.started, runId);
  attached.close();
});

test("run.started rejects with the stream's error, and when the stream is closed first", async () => {
  const unknown = client.startRun("no_such_agent", "hi");
  const error = await rejectsWith(unknown.started, status.NOT_FOUND);
  const iterated = await rejectsWith(unknown[Symbol.asyncIterator]().next(), status.NOT_FOUND);
  assert.equal(iterated.message, error.message);

  const closed = client.startRun("free_text", "greet me");
  const started = closed.started;
  closed.close();
  await rejectsWith(started, status.CANCELLED);
});
