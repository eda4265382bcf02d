// Tests of the browser entry, @askuser/client/web, over gRPC-Web against the server in ASKUSER_ADDR
// (with --auth keys; ASKUSER_API_KEY is a key of it), as test.sh runs them. Node 20 has fetch, on
// which Connect's gRPC-Web transport runs as it does in a browser; runs are started with the Node
// client, since a browser cannot start one (RunAgent streams from the client).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { AskUserClient } from "@askuser/client";
import { AskUserError, AskUserWebClient, RunStatus, SelectionMode, SuspendKind, ToolResultKind, type RunAgentResponse } from "@askuser/client/web";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (see clients/typescript/test.sh)`);
  return value;
}

const address = env("ASKUSER_ADDR");
const apiKey = env("ASKUSER_API_KEY");
const baseUrl = `http://${address}`;
const web = new AskUserWebClient(baseUrl, { apiKey });
const node = new AskUserClient(address, { apiKey });
after(() => node.close());

/** Starts `agentId` with the Node client and reads it until its first pending call, then lets its stream go. */
async function suspendedRun(agentId: string): Promise<{ runId: string; toolCallId: string }> {
  const run = node.startRun(agentId, "test");
  for await (const frame of run) {
    if (frame.event?.$case === "toolCallSuspended") {
      run.close();
      return { runId: run.runId, toolCallId: frame.event.value.toolCallId };
    }
  }
  assert.fail(`${agentId} ended without waiting`);
}

async function collect<T>(frames: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const frame of frames) all.push(frame);
  return all;
}

function kinds(frames: RunAgentResponse[]): (string | undefined)[] {
  return frames.map((frame) => frame.event.case);
}

/** Asserts that `promise` rejects with the web entry's AskUserError of `codeName` and returns it. */
async function rejectsWith(promise: Promise<unknown>, codeName: string): Promise<AskUserError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AskUserError, `expected an AskUserError, got ${String(error)}`);
    assert.equal(error.codeName, codeName, `expected ${codeName}, got ${error.message}`);
    return error;
  }
  assert.fail(`expected the call to fail with ${codeName}`);
}

test("the web entry loads neither grpc-js nor a Node built-in", async () => {
  // Records every module the entry requires, its dependencies' included, in a process of its own.
  const program = `const Module = require("node:module");
    const required = new Set();
    const load = Module.prototype.require;
    Module.prototype.require = function (id) { required.add(id); return load.call(this, id); };
    require("@askuser/client/web");
    console.log(JSON.stringify([...required].filter((id) => Module.isBuiltin(id) || id.startsWith("@grpc/"))));`;
  const { stdout } = await promisify(execFile)(process.execPath, ["-e", program], { cwd: __dirname });
  assert.deepEqual(JSON.parse(stdout), []);
});

test("a run started in Node is answered with resumeRun and watched with watchRun", async () => {
  const { runId, toolCallId } = await suspendedRun("pick");
  const run = await web.getRun(runId);
  assert.equal(run.status, RunStatus.SUSPENDED);
  assert.deepEqual(run.pendingToolCalls.map((call) => call.toolCallId), [toolCallId]);

  const resumed = await collect(web.resumeRun(runId, toolCallId, { text: "production" }, { answerId: "web-1" }));
  assert.equal(resumed[0].event.case, "answerAccepted");
  assert.equal(kinds(resumed).at(-1), "runCompleted");

  const watched = await collect(web.watchRun(runId));
  assert.deepEqual(
    watched.map((frame) => frame.sequence),
    watched.map((_, index) => BigInt(index + 1)),
    "a watch from 0 replays every stored event in order",
  );
  assert.equal(kinds(watched)[0], "runStarted");
  assert.ok(!kinds(watched).includes("heartbeat"), "heartbeats are left out");
  const completed = watched.at(-1)!.event;
  assert.ok(completed.case === "runCompleted");
  assert.equal(completed.value.outputText, "Deploying to production");
  assert.deepEqual(kinds(await collect(web.watchRun(runId, watched.length - 1))), ["runCompleted"]);

  const retried = await collect(web.resumeRun(runId, toolCallId, { text: "production" }, { answerId: "web-1" }));
  const accepted = retried[0].event;
  assert.ok(accepted.case === "answerAccepted" && accepted.value.duplicate, "a retried answer id is a duplicate");
});

test("failures are AskUserErrors with the code's name, the reason and the field violations", async () => {
  const notFound = await rejectsWith(web.getRun("no-such-run"), "NOT_FOUND");
  assert.equal(notFound.code, 5);
  assert.equal(notFound.reason, "RUN_NOT_FOUND");
  assert.equal(notFound.domain, "askuser.dev");
  assert.match(notFound.message, /^NOT_FOUND: /);
  assert.equal(notFound.name, "AskUserError");

  const invalid = await rejectsWith(web.askUser({ question: " ", options: [{ label: "a" }, { label: "a" }] }), "INVALID_ARGUMENT");
  assert.deepEqual(invalid.fieldViolations.map((violation) => violation.field), ["input.question", "input.options[1].label"]);
  assert.ok(invalid.fieldViolations.every((violation) => violation.description !== ""));

  const { runId, toolCallId } = await suspendedRun("pick");
  const refused = await rejectsWith(collect(web.resumeRun(runId, toolCallId, { selections: ["qa"] })), "INVALID_ARGUMENT");
  assert.equal(refused.reason, "INVALID_ANSWER");
  assert.deepEqual(refused.fieldViolations.map((violation) => violation.field), ["answer.selections.labels[0]"]);
  await collect(web.resumeRun(runId, toolCallId, { text: "staging" }));
  const again = await rejectsWith(collect(web.resumeRun(runId, toolCallId, { decline: "" })), "FAILED_PRECONDITION");
  assert.equal(again.reason, "ALREADY_ANSWERED");
});

test("resumeRun answers a form (a wrong value refused naming the field) and replies to a question", async () => {
  const form = await suspendedRun("form");
  const pending = (await web.getRun(form.runId)).pendingToolCalls[0];
  assert.equal(pending.kind, SuspendKind.FORM);
  assert.deepEqual(pending.form?.fields.map((field) => field.name), ["version", "replicas", "announce"]);
  const refused = await rejectsWith(collect(web.resumeRun(form.runId, form.toolCallId, { form: { version: "v1", replicas: 3 } })), "INVALID_ARGUMENT");
  assert.deepEqual(refused.fieldViolations.map((violation) => violation.field), ['answer.form.values["version"]']);
  const answered = await collect(web.resumeRun(form.runId, form.toolCallId, { form: { version: "1.2.3", replicas: 3, announce: true } }));
  const result = answered.find((frame) => frame.event.case === "toolResult")?.event;
  assert.ok(result?.case === "toolResult");
  assert.equal(result.value.kind, ToolResultKind.ANSWERED);
  assert.deepEqual(JSON.parse(result.value.content), { action: "accept", content: { version: "1.2.3", replicas: 3, announce: true } });

  const question = await suspendedRun("free_text");
  const replied = await collect(web.resumeRun(question.runId, question.toolCallId, { reply: "why?" }));
  const reply = replied.find((frame) => frame.event.case === "toolResult")?.event;
  assert.ok(reply?.case === "toolResult");
  assert.equal(reply.value.kind, ToolResultKind.REPLIED);
  assert.equal(reply.value.content, "User replied instead of answering: why?");
});

test("timeoutMs ends a watch of a waiting run with DEADLINE_EXCEEDED; timeoutMs <= 0 means none", async () => {
  const { runId } = await suspendedRun("free_text");
  const began = Date.now();
  await rejectsWith(collect(web.watchRun(runId, 0, { timeoutMs: 1_000 })), "DEADLINE_EXCEEDED");
  assert.ok(Date.now() - began >= 900, "the deadline did not expire early");
  assert.equal((await web.getRun(runId, { timeoutMs: 0 })).status, RunStatus.SUSPENDED, "the run itself still waits");
  assert.equal((await web.cancelRun(runId, "done", { timeoutMs: -1 })).status, RunStatus.CANCELLED);
});

test("an abort cancels a watch while it waits, and an aborted signal cancels calls at once: CANCELLED", async () => {
  const { runId } = await suspendedRun("free_text");
  const controller = new AbortController();
  const frames = web.watchRun(runId, 0, { signal: controller.signal })[Symbol.asyncIterator]();
  for (let frame = await frames.next(); !frame.done && frame.value.event.case !== "toolCallSuspended"; frame = await frames.next());
  setTimeout(() => controller.abort(), 50);
  await rejectsWith(frames.next(), "CANCELLED");
  assert.equal((await web.getRun(runId)).status, RunStatus.SUSPENDED);
  await web.cancelRun(runId);

  const signal = AbortSignal.abort();
  await rejectsWith(web.listAgents({ signal }), "CANCELLED");
  await rejectsWith(web.listRuns({ pageSize: 1, signal }), "CANCELLED");
  await rejectsWith(collect(web.watchPendingCalls({ signal })), "CANCELLED");
});

test("credentials: an API key, a token provider, or an authorization header of the call", async () => {
  const bare = new AskUserWebClient(baseUrl);
  const missing = await rejectsWith(bare.listAgents(), "UNAUTHENTICATED");
  assert.equal(missing.reason, "MISSING_CREDENTIALS");
  assert.ok((await bare.listAgents({ headers: { authorization: `Bearer ${apiKey}`, "x-trace-bin": "é" } })).length > 0);

  const provided = new AskUserWebClient(baseUrl, { tokenProvider: async () => apiKey });
  assert.ok((await provided.listAgents()).some((agent) => agent.agentId === "free_text"));
  const none = new AskUserWebClient(baseUrl, { tokenProvider: () => undefined });
  await rejectsWith(none.listAgents(), "UNAUTHENTICATED");
  const failing = new AskUserWebClient(baseUrl, {
    tokenProvider: () => {
      throw new Error("no token today");
    },
  });
  assert.match((await rejectsWith(failing.listAgents(), "UNAUTHENTICATED")).message, /no token today/);
  assert.throws(() => new AskUserWebClient(baseUrl, { apiKey, tokenProvider: () => apiKey }), TypeError);
});

test("listAgents, listRuns, askUser, watchPendingCalls and claimCall", async () => {
  assert.ok((await web.listAgents()).some((agent) => agent.agentId === "status_check"));
  assert.equal(
    await web.askUser({ question: "Which checks?", options: [{ label: "lint" }, { label: "unit" }], selectionMode: SelectionMode.MULTI_SELECT }),
    "[Question for user]: Which checks?\nOptions: lint, unit\nSelection mode: multi_select",
  );

  const controller = new AbortController();
  const feed = web.watchPendingCalls({ agentIds: ["status_check"], kinds: [SuspendKind.CLIENT_TOOL], signal: controller.signal });
  const updates = feed[Symbol.asyncIterator]();
  const next = async (kind: string, runId?: string) => {
    for (;;) {
      const { done, value } = await updates.next();
      assert.ok(!done, `the feed ended before ${kind}`);
      const event = value.event;
      if (event.case === kind && (runId === undefined || (event.value as { runId: string }).runId === runId)) return event;
    }
  };
  await next("snapshotDone");
  const { runId, toolCallId } = await suspendedRun("status_check");
  const pending = await next("callPending", runId);
  assert.ok(pending.case === "callPending" && pending.value.call?.toolCallId === toolCallId);

  const expires = await web.claimCall(runId, toolCallId, "web-worker", { ttlMs: 30_000 });
  assert.ok(expires instanceof Date && expires.getTime() > Date.now() + 29_000);
  assert.equal((await rejectsWith(web.claimCall(runId, toolCallId, "other"), "FAILED_PRECONDITION")).reason, "ALREADY_CLAIMED");
  const page = await web.listRuns({ agentId: "status_check", pendingKind: SuspendKind.CLIENT_TOOL, pageSize: 1000 });
  assert.ok(page.runs.some((run) => run.runId === runId));

  await collect(web.resumeRun(runId, toolCallId, { toolOutput: { content: "up" } }));
  const settled = await next("callSettled", runId);
  assert.ok(settled.case === "callSettled" && settled.value.kind === ToolResultKind.OUTPUT);
  controller.abort();
  await rejectsWith(updates.next(), "CANCELLED");
});

test("ask, askHuman and requestApproval from a page: the typed outcome of an answer given elsewhere", async () => {
  const question = await web.ask({
    question: "Which checks?",
    options: ["unit", "e2e"],
    selectionMode: SelectionMode.MULTI_SELECT,
    context: "from a page",
  });
  assert.equal(question.suspended.suspendPayload?.question, "Which checks?");
  await collect(node.resumeRun(question.runId, question.toolCallId, { selections: ["e2e"] }));
  const picked = await question.wait({ timeoutMs: 10_000 });
  assert.deepEqual(picked.kind === "selections" && picked.selections, ["e2e"]);
  assert.notEqual(picked.settledBy, "");

  const form = await web.ask({ form: { fields: [{ name: "n", question: "How many?", kind: { case: "number", value: { integer: true } } }] } });
  await collect(node.resumeRun(form.runId, form.toolCallId, { form: { n: 4 } }));
  const values = await form.wait();
  assert.deepEqual(values.kind === "form" && values.values, { n: 4 });

  const id = `ts-web-${Date.now()}-${Math.random()}`;
  const decision = web.requestApproval("deploy", { service: "api" }, { reason: "a deploy", requestId: id });
  const same = await web.ask({ approval: { toolName: "deploy", arguments: { service: "api" } }, requestId: id });
  await collect(node.resumeRun(same.runId, same.toolCallId, { edit: { service: "web" } }));
  const edited = await decision;
  assert.deepEqual(edited.kind === "edited" && edited.arguments, { service: "web" });

  const bad = await rejectsWith(web.askHuman(" "), "INVALID_ARGUMENT");
  assert.deepEqual(bad.fieldViolations.map((violation) => violation.field), ["question.question"]);
  const waiting = await web.ask({ question: "Slow?" });
  await rejectsWith(waiting.wait({ timeoutMs: 300 }), "DEADLINE_EXCEEDED");
  await node.cancelRun(waiting.runId);
  assert.equal((await waiting.wait()).kind, "cancelled");
});
