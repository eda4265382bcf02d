// Asking a person from any code (HumanService.Ask): ask / askHuman / requestApproval against a real
// server started with tests/conformance/agents.toml (ASKUSER_ADDR, ASKUSER_API_KEY; see test.sh).
// Each request is answered by a second client, as a person would through another surface.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { AskUserClient, AskUserError, type AnswerValue, type HumanRequest, v1 } from "@askuser/client";
import { approveDeploy, type HandlerResponse } from "../examples/approval-service";

const address = process.env.ASKUSER_ADDR;
if (!address) throw new Error("ASKUSER_ADDR must name the server (host:port)");
const apiKey = process.env.ASKUSER_API_KEY || undefined;
/** The asker. */
const client = new AskUserClient(address, { apiKey });
/** Whoever answers, with a connection of its own. */
const person = new AskUserClient(address, { apiKey });
after(() => {
  client.close();
  person.close();
});

/** Settles a request's call as a person would, without a stream; returns the frames that followed. */
async function settle(request: { runId: string; toolCallId: string }, answer: AnswerValue): Promise<string[]> {
  const kinds: string[] = [];
  for await (const frame of person.resumeRun(request.runId, request.toolCallId, answer)) kinds.push(frame.event?.$case ?? "none");
  return kinds;
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

/** A request id of this test run. */
function requestId(name: string): string {
  return `ts-${name}-${randomUUID()}`;
}

test("ask resolves once the question waits; an answer from someone else comes back as text, with who settled it", async () => {
  const request = await client.ask({ question: "Release name?", context: "The nightly build is **green**." });
  assert.match(request.runId, /\S/);
  assert.equal(request.suspended.suspendPayload?.question, "Release name?");
  assert.match(request.requestId, /^[0-9a-f-]{36}$/, "a request id is generated");
  const run = await person.getRun(request.runId);
  assert.equal(run.agentId, "", "a request is a run of no agent");
  assert.equal(run.prompt, "The nightly build is **green**.");
  assert.deepEqual(run.pendingToolCalls.map((call) => call.toolCallId), [request.toolCallId]);

  assert.deepEqual(await settle(request, { text: "Apollo" }), ["answerAccepted", "toolResult", "runCompleted"]);
  const outcome = await request.wait();
  assert.equal(outcome.kind, "text");
  assert.equal(outcome.kind === "text" && outcome.text, "Apollo");
  assert.notEqual(outcome.settledBy, "");
  assert.equal(outcome.content, "User answered: Apollo");
  assert.deepEqual(await request.wait(), outcome, "waiting again gives the same outcome");
});

test("askHuman waits for the answer; ask with the same requestId follows the same request", async () => {
  const id = requestId("same");
  const answered = client.askHuman("Which region?", { requestId: id });
  const again = await client.ask({ question: "Which region?", requestId: id });
  const third = await client.ask({ question: "Which region?", requestId: id });
  assert.equal(third.runId, again.runId);
  assert.equal(third.toolCallId, again.toolCallId);
  assert.equal(again.requestId, id);
  await settle(again, { reply: "ask the infra team" });
  assert.deepEqual(await answered, { kind: "replied", text: "ask the infra team", settledBy: (await again.wait()).settledBy, content: (await third.wait()).content });
  const listed = await client.listRuns({ requestsOnly: true, pageSize: 1000 });
  assert.equal(listed.runs.filter((run) => run.runId === again.runId).length, 1, "one request, however often asked");
});

test("selections: the labels a person picked, in order", async () => {
  const request = await client.ask({
    question: "Which checks?",
    options: ["unit", { label: "load, soak", description: "slow" }, "e2e"],
    selectionMode: v1.SelectionMode.SELECTION_MODE_MULTI_SELECT,
  });
  assert.deepEqual(request.suspended.suspendPayload?.options.map((option) => option.label), ["unit", "load, soak", "e2e"]);
  await settle(request, { selections: ["e2e", "load, soak"] });
  const outcome = await request.wait();
  assert.deepEqual(outcome.kind === "selections" && outcome.selections, ["e2e", "load, soak"]);
});

test("a form comes back as plain values; a decline as declined with the reason", async () => {
  const form = await client.ask({
    form: {
      title: "Release",
      fields: [
        { name: "name", question: "Release name?", required: true, kind: { $case: "text", value: {} } },
        { name: "replicas", question: "How many replicas?", kind: { $case: "number", value: { integer: true, minimum: 1, maximum: 9 } } },
        { name: "canary", question: "Canary first?", kind: { $case: "boolean", value: {} } },
        {
          name: "zone",
          question: "Zone?",
          kind: { $case: "choice", value: { choices: [{ value: "eu" }, { value: "us" }], allowOther: true } },
        },
      ],
    },
  });
  assert.deepEqual(form.suspended.form?.fields.map((field) => field.name), ["name", "replicas", "canary", "zone"]);
  const refused = await rejection(settle(form, { form: { name: "Apollo", replicas: 12 } }));
  assert.deepEqual(refused.fieldViolations.map((violation) => violation.field), ['answer.form.values["replicas"]']);
  await settle(form, { form: { name: "Apollo", replicas: 3, canary: true, zone: { values: [], other: "asia" } } });
  assert.deepEqual(await form.wait(), {
    kind: "form",
    values: { name: "Apollo", replicas: 3, canary: true, zone: { values: [], other: "asia" } },
    settledBy: (await form.wait()).settledBy,
    content: (await form.wait()).content,
  });

  const question = await client.ask({ question: "Your phone number?" });
  await settle(question, { decline: "prefer not" });
  const declined = await question.wait();
  assert.equal(declined.kind, "declined");
  assert.equal(declined.kind === "declined" && declined.reason, "prefer not");
});

/** Starts `requestApproval`, settles its call once it waits, and returns its outcome. */
async function approval(name: string, args: Record<string, unknown>, answer: AnswerValue) {
  const id = requestId(name);
  const outcome = client.requestApproval("deploy", args, { reason: "a deploy", requestId: id });
  // The same request id follows the request that requestApproval made.
  const request = await client.ask({ approval: { toolName: "deploy", arguments: args }, requestId: id });
  assert.equal(request.suspended.kind, v1.SuspendKind.SUSPEND_KIND_APPROVAL);
  assert.equal(request.suspended.toolName, "deploy");
  assert.deepEqual(JSON.parse(request.suspended.argumentsJson), args);
  await settle(request, answer);
  return outcome;
}

test("requestApproval: approved with the arguments asked, edited with the new ones, rejected with the reason", async () => {
  const args = { service: "api", environment: "production" };
  const approved = await approval("approve", args, { approve: true });
  assert.equal(approved.kind, "approved");
  assert.deepEqual(approved.kind === "approved" && approved.arguments, args);
  assert.notEqual(approved.settledBy, "");

  const edited = await approval("edit", args, { edit: { service: "api", environment: "staging" } });
  assert.equal(edited.kind, "edited");
  assert.deepEqual(edited.kind === "edited" && edited.arguments, { service: "api", environment: "staging" });

  const rejected = await approval("reject", args, { reject: "not on a Friday" });
  assert.deepEqual(rejected.kind === "rejected" && [rejected.reason, rejected.content], ["not on a Friday", "User rejected the call: not on a Friday"]);

  const declined = await approval("decline", args, { decline: "no" });
  assert.deepEqual(declined.kind === "rejected" && declined.reason, "no", "a decline rejects an approval");
});

test("a request that expires, and one cancelled, say so", async () => {
  const late = await client.ask({ question: "Still there?", ttlMs: 1000 });
  assert.equal((await late.wait({ timeoutMs: 30_000 })).kind, "expired");

  const cancelled = await client.ask({ approval: { toolName: "drop_table", arguments: '{"table":"users"}' } });
  const outcome = cancelled.wait();
  await person.cancelRun(cancelled.runId, "not needed");
  assert.equal((await outcome).kind, "cancelled");
});

test("bad input fails with INVALID_ARGUMENT naming the field, and creates nothing", async () => {
  const id = requestId("bad");
  const empty = await rejection(client.ask({ question: "", requestId: id }));
  assert.equal(empty.code, status.INVALID_ARGUMENT);
  assert.deepEqual(empty.fieldViolations.map((violation) => violation.field), ["question.question"]);
  const tool = await rejection(client.requestApproval("no spaces", {}));
  assert.deepEqual(tool.fieldViolations.map((violation) => violation.field), ["approval.tool_name"]);
  const none = await rejection(client.ask({} as never));
  assert.deepEqual(none.fieldViolations.map((violation) => violation.field), ["call"]);
  await assert.rejects(client.ask({ question: "a", form: {} } as never), TypeError);
  // The id was not taken by the failed ask.
  const request = await client.ask({ question: "Fine now?", requestId: id });
  await person.cancelRun(request.runId);
});

test("a deadline or an abort ends the wait for good, and the request goes on waiting", async () => {
  const request: HumanRequest = await client.ask({ question: "Slow?", timeoutMs: 10_000 });
  const started = Date.now();
  const expired = await rejection(request.wait({ timeoutMs: 300 }));
  assert.equal(expired.code, status.DEADLINE_EXCEEDED);
  assert.ok(Date.now() - started < 5_000);
  const deadline = await rejection(client.askHuman("Slow too?", { timeoutMs: 300 }));
  assert.equal(deadline.code, status.DEADLINE_EXCEEDED);

  const abort = new AbortController();
  const waiting = request.wait({ signal: abort.signal });
  setTimeout(() => abort.abort(), 100);
  assert.equal((await rejection(waiting)).code, status.CANCELLED);

  assert.equal((await person.getRun(request.runId)).status, v1.RunStatus.RUN_STATUS_SUSPENDED);
  await settle(request, { text: "no" });
  assert.equal((await request.wait({ timeoutMs: 10_000 })).kind, "text");
});

/** An Express-style response that keeps what the handler answered. */
function recorder(): HandlerResponse & { code?: number; body?: unknown } {
  const res: HandlerResponse & { code?: number; body?: unknown } = {
    status(code) {
      res.code = code;
      return res;
    },
    json(body) {
      res.body = body;
    },
  };
  return res;
}

/** Settles the next pending `deploy` approval of `service` from the pending-calls feed with `answer`. */
async function approveFromFeed(service: string, answer: AnswerValue): Promise<void> {
  const feed = person.watchPendingCalls({ toolNames: ["deploy"], kinds: [v1.SuspendKind.SUSPEND_KIND_APPROVAL] });
  try {
    for await (const update of feed) {
      if (update.event?.$case !== "callPending") continue;
      const call = update.event.value.call!;
      if (JSON.parse(call.argumentsJson).service !== service) continue;
      await settle({ runId: update.event.value.runId, toolCallId: call.toolCallId }, answer);
      return;
    }
  } finally {
    feed.close();
  }
}

test("examples/approval-service.ts: the handler deploys what was approved and refuses what was rejected", async () => {
  const deployed: unknown[] = [];
  const handler = approveDeploy(client, async (args) => {
    deployed.push(args);
    return `${args.service}@${args.environment}`;
  });
  const service = `svc-${randomUUID()}`;

  const res = recorder();
  await Promise.all([
    handler({ body: { service, environment: "production" }, headers: { "idempotency-key": requestId("example") } }, res),
    approveFromFeed(service, { edit: { service, environment: "staging" } }),
  ]);
  assert.equal(res.code, 200);
  assert.deepEqual(res.body, { decision: "edited", approvedBy: (res.body as { approvedBy: string }).approvedBy, deployed: `${service}@staging` });
  assert.deepEqual(deployed, [{ service, environment: "staging" }]);

  const refused = recorder();
  await Promise.all([
    handler({ body: { service, environment: "production" }, headers: {} }, refused),
    approveFromFeed(service, { reject: "freeze" }),
  ]);
  assert.equal(refused.code, 403);
  assert.deepEqual(refused.body, { decision: "rejected", reason: "freeze" });
  assert.equal(deployed.length, 1, "nothing deployed on a rejection");

  const bad = recorder();
  await handler({ body: { service }, headers: {} }, bad);
  assert.equal(bad.code, 400);
});
