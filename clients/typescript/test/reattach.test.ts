// Reattachment and retries against a server of the test's own that it kills (SIGKILL) and starts
// again on the same port and data dir: ASKUSER_BIN (default target/debug/askuser under the repository
// root) serving tests/conformance/agents.toml, anonymous. A run waiting for an answer survives the
// restart: its iteration goes on, the answer sent after the restart settles it, and the sequences of
// its stored frames run 1, 2, 3, ... with none missing or repeated.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { AskUserClient, AskUserError, v1 } from "@askuser/client";

const ROOT = path.resolve(__dirname, "../../../..");
const BINARY = process.env.ASKUSER_BIN || path.join(ROOT, "target/debug/askuser");

/** An `askuser serve` process on a fixed port and data dir that can be killed and started again. */
class Server {
  readonly dir = mkdtempSync(path.join(tmpdir(), "askuser-ts-reattach."));
  address = "";
  #process: ChildProcess | undefined;

  async start(): Promise<void> {
    if (this.address === "") this.address = `127.0.0.1:${await freePort()}`;
    const log = openSync(path.join(this.dir, "server.log"), "a");
    const args = ["serve", "--listen", this.address, "--data-dir", path.join(this.dir, "data")];
    this.#process = spawn(BINARY, [...args, "--config", path.join(ROOT, "tests/conformance/agents.toml")], {
      stdio: ["ignore", log, log],
    });
    const [host, port] = this.address.split(":");
    for (let attempt = 0; attempt < 400; attempt++) {
      if (this.#process.exitCode !== null) throw new Error(`the server exited; see ${this.dir}/server.log`);
      const listening = await new Promise<boolean>((resolve) => {
        const socket = connect(Number(port), host, () => resolve(true)).on("error", () => resolve(false));
        socket.unref();
        socket.once("connect", () => socket.destroy());
      });
      if (listening) return;
      await delay(50);
    }
    throw new Error("the server did not start listening");
  }

  async kill(): Promise<void> {
    const child = this.#process;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  async restart(downMs: number): Promise<void> {
    await this.kill();
    await delay(downMs);
    await this.start();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.on("error", reject);
  });
}

type Frame = v1.RunAgentResponse;

/** Reads frames into `into` up to and including the first of `kind`. */
async function readUntil(frames: AsyncIterator<Frame>, kind: string, into: Frame[]): Promise<Frame> {
  for (;;) {
    const result = await frames.next();
    assert.ok(!result.done, `the stream ended before a ${kind} frame`);
    into.push(result.value);
    if (result.value.event?.$case === kind) return result.value;
  }
}

function toolCallId(frame: Frame): string {
  assert.equal(frame.event?.$case, "toolCallSuspended");
  return frame.event.value.toolCallId;
}

const server = new Server();
before(() => server.start());
after(async () => {
  await server.kill();
  rmSync(server.dir, { recursive: true, force: true });
});

test("a run's stream reattaches after a server restart, resends its answer and delivers no frame twice", async () => {
  const client = new AskUserClient(server.address);
  try {
    const run = client.startRun("pick", "deploy", {}, { timeoutMs: 60_000 });
    const frames = run[Symbol.asyncIterator]();
    const seen: Frame[] = [];
    const question = toolCallId(await readUntil(frames, "toolCallSuspended", seen));
    await server.restart(500);
    // Sent on the dropped stream: kept and sent again once the iteration has reattached.
    run.answerSelections(question, ["staging"], { answerId: "restart-1" });
    await readUntil(frames, "runCompleted", seen);
    assert.ok((await frames.next()).done);
    const kinds = seen.map((frame) => frame.event?.$case);
    assert.deepEqual(kinds.slice(0, 3), ["runStarted", "toolCall", "toolCallSuspended"]);
    assert.ok(kinds.includes("answerAccepted"));
    const sequences = seen.map((frame) => frame.sequence).filter((sequence) => sequence > 0);
    assert.deepEqual(sequences, sequences.map((_, index) => index + 1));

    // An idempotent call, retried while the server is down until it is back.
    await server.kill();
    setTimeout(() => void server.start(), 1_000);
    assert.equal((await client.getRun(run.runId)).status, v1.RunStatus.RUN_STATUS_COMPLETED);
  } finally {
    client.close();
  }
});

test("the pending-calls feed reopens with a new snapshot after a server restart", async () => {
  const client = new AskUserClient(server.address);
  try {
    const run = client.startRun("pick", "deploy", {}, { timeoutMs: 60_000 });
    const question = toolCallId(await readUntil(run[Symbol.asyncIterator](), "toolCallSuspended", []));
    const feed = client.watchPendingCalls({ agentIds: ["pick"] });
    const events = feed[Symbol.asyncIterator]();
    const snapshot = async () => {
      const pending: string[] = [];
      for (let event = await events.next(); event.value?.event?.$case !== "snapshotDone"; event = await events.next()) {
        assert.ok(!event.done);
        if (event.value.event?.$case === "callPending") pending.push(event.value.event.value.call!.toolCallId);
      }
      return pending;
    };
    assert.ok((await snapshot()).includes(question));
    await server.restart(200);
    assert.ok((await snapshot()).includes(question));
    feed.close();
    run.close();
  } finally {
    client.close();
  }
});

test("a request survives restarts: asked while the server is down, and waited on across a restart", async () => {
  const client = new AskUserClient(server.address);
  const person = new AskUserClient(server.address);
  try {
    // Asked while the server is down: Ask is sent again, with the same request id, once it is back.
    await server.kill();
    setTimeout(() => void server.start(), 1_000);
    const request = await client.ask({ approval: { toolName: "deploy", arguments: { service: "api" } }, timeoutMs: 30_000 });
    const again = await client.ask({ approval: { toolName: "deploy", arguments: { service: "api" } }, requestId: request.requestId });
    assert.equal(again.runId, request.runId, "one request, however often Ask was sent");

    const outcome = request.wait({ timeoutMs: 60_000 });
    outcome.catch(() => {}); // awaited below; a failure before then must not go unhandled
    await server.restart(500);
    // resumeRun is not retried by itself: getRun is, until the channel is up again.
    assert.equal((await person.getRun(request.runId)).status, v1.RunStatus.RUN_STATUS_SUSPENDED);
    for await (const _ of person.resumeRun(request.runId, request.toolCallId, { edit: { service: "web" } })) {
      // The frames that follow the decision.
    }
    assert.deepEqual(await outcome, { kind: "edited", arguments: { service: "web" }, settledBy: "anonymous", content: (await again.wait()).content });
  } finally {
    client.close();
    person.close();
  }
});

test("with reconnect off, a restart fails the stream with UNAVAILABLE", async () => {
  const client = new AskUserClient(server.address, { reconnect: false });
  try {
    const run = client.startRun("pick", "deploy", {}, { timeoutMs: 60_000 });
    const frames = run[Symbol.asyncIterator]();
    await readUntil(frames, "toolCallSuspended", []);
    await server.restart(200);
    await assert.rejects(frames.next(), (error: unknown) => error instanceof AskUserError && error.codeName === "UNAVAILABLE");
  } finally {
    client.close();
  }
});

test("reattaching gives up after the policy's total", async () => {
  const client = new AskUserClient(server.address, { reconnect: { totalMs: 1_000 } });
  try {
    const run = client.startRun("pick", "deploy", {}, { timeoutMs: 60_000 });
    const frames = run[Symbol.asyncIterator]();
    await readUntil(frames, "toolCallSuspended", []);
    await server.kill();
    const started = Date.now();
    await assert.rejects(frames.next(), (error: unknown) => error instanceof AskUserError && error.codeName === "UNAVAILABLE");
    assert.ok(Date.now() - started < 5_000);
  } finally {
    client.close();
    await server.start();
  }
});
