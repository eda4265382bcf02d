// Runs the conformance scenarios of tests/conformance/ (format: tests/conformance/README.md) against
// a server, through the @askuser/client wrapper.
//
//   node dist/conformance/runner.js HOST:PORT
//
// Prints one line per scenario, then `N passed, N failed` as the last line; exits 1 when any failed.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { AskUserClient, AskUserError, type AnswerValue, type PendingCalls, type Run, type ToolDefinitionInit, v1 } from "@askuser/client";

const SCENARIO_DIR = path.resolve(__dirname, "../../../../tests/conformance");
/** Longest wait for one frame or call; a scripted run answers in milliseconds, so this only catches hangs. */
const TIMEOUT_MS = 10_000;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Args = { [key: string]: Json };
type Frame = v1.RunAgentResponse;
type FeedEvent = v1.WatchPendingCallsResponse;

/** A scenario step the server did not satisfy, or one the runner cannot run. */
class StepFailure extends Error {}

function fail(message: string): never {
  throw new StepFailure(message);
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StepFailure(`no ${what} within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ---- step arguments ----

/** Rejects keys the format does not define for a step, so a misspelt check cannot pass silently. */
function allowOnly(args: Args, allowed: string[]): void {
  for (const key of Object.keys(args)) {
    if (!allowed.includes(key)) fail(`unknown key ${show(key)}`);
  }
}

function stringArg(args: Args, key: string, fallback?: string): string {
  const value = args[key] ?? fallback;
  if (typeof value !== "string") fail(`${key} must be a string, got ${show(value)}`);
  return value;
}

/** A sequence number, written as a number or as a saved `$name` (a decimal string). */
function sequenceArg(args: Args, key: string): number {
  const value = args[key] ?? 0;
  const sequence = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof sequence !== "number" || !Number.isSafeInteger(sequence) || sequence < 0) {
    fail(`${key} must be a sequence number, got ${show(value)}`);
  }
  return sequence;
}

function stringListArg(value: Json, key: string): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
    fail(`${key} must be an array of strings, got ${show(value)}`);
  }
  return value as string[];
}

function objectArg(value: Json, key: string): Args {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail(`${key} must be an object, got ${show(value)}`);
  return value;
}

/** A name of a generated string enum, e.g. `SUSPEND_KIND_APPROVAL`. */
function enumArg<E extends string>(enumObject: Record<string, E>, value: Json, key: string): E {
  if (typeof value !== "string" || !Object.values<string>(enumObject).includes(value)) fail(`unknown ${key} ${show(value)}`);
  return value as E;
}

const ANSWER_KINDS = ["text", "selections", "decline", "tool_output", "approve", "reject", "edit"] as const;

/** The answer of an `answer` or `resume` step: exactly one of the answer kinds. */
function answerArg(args: Args): AnswerValue {
  const given = ANSWER_KINDS.filter((kind) => kind in args);
  if (given.length !== 1) fail(`exactly one of ${ANSWER_KINDS.join(", ")} must be given, got ${show(given)}`);
  switch (given[0]) {
    case "text":
      return { text: stringArg(args, "text") };
    case "selections":
      return { selections: stringListArg(args.selections, "selections") };
    case "decline":
      return { decline: stringArg(args, "decline") };
    case "tool_output": {
      const output = objectArg(args.tool_output, "tool_output");
      allowOnly(output, ["content", "is_error"]);
      const isError = output.is_error ?? false;
      if (typeof isError !== "boolean") fail(`tool_output.is_error must be a boolean, got ${show(isError)}`);
      return { toolOutput: { content: stringArg(output, "content"), isError } };
    }
    case "approve":
      if (args.approve !== true) fail(`approve must be true, got ${show(args.approve)}`);
      return { approve: true };
    case "reject":
      return { reject: stringArg(args, "reject") };
    default:
      return { edit: stringArg(args, "edit") };
  }
}

/** The per-run tools of a `start` step. */
function toolsArg(value: Json): ToolDefinitionInit[] {
  if (!Array.isArray(value)) fail(`tools must be an array, got ${show(value)}`);
  return value.map((item) => {
    const tool = objectArg(item, "a tool");
    allowOnly(tool, ["name", "description", "parameters_json_schema", "approval"]);
    return {
      name: stringArg(tool, "name"),
      description: stringArg(tool, "description", ""),
      parametersJsonSchema: stringArg(tool, "parameters_json_schema", ""),
      approval: "approval" in tool ? enumArg(v1.ApprovalPolicy, tool.approval, "approval") : undefined,
    };
  });
}

/**
 * Replaces every `"$name"` string with what was saved under that name. A list of frame checks
 * (`expect` of `resume` and `watch`) is left as it is: it is substituted check by check as frames are
 * read, because an earlier check of the list may save a name a later one uses.
 */
function substitute(value: Json, saved: Map<string, string>): Json {
  if (typeof value === "string" && /^\$[A-Za-z_]\w*$/.test(value)) {
    const name = value.slice(1);
    return saved.get(name) ?? fail(`nothing saved as ${value}`);
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, saved));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, key === "expect" && Array.isArray(item) ? item : substitute(item, saved)]),
    );
  }
  return value;
}

// ---- frame checks ----

/** `runStarted` → `run_started`: frame kinds as the format names them. */
function kindOf(frame: Frame): string {
  return (frame.event?.$case ?? "(no event)").replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

const TOOL_CALL_KINDS = ["tool_call", "tool_call_suspended", "tool_result", "answer_rejected", "answer_accepted"];

/** How a check field compares: `matches`, or for `arguments` JSON text parsed and compared as a JSON value. */
type Compare = (expected: Json, actual: unknown) => boolean;

/**
 * `arguments`: the actual JSON text parsed equals the expected JSON value (deep equality, so object
 * keys compare whatever their order); text that is not JSON matches nothing.
 */
function sameJson(expected: Json, actual: unknown): boolean {
  if (typeof actual !== "string") return false;
  try {
    return isDeepStrictEqual(JSON.parse(actual), expected);
  } catch {
    return false;
  }
}

/** What each check field reads from a frame, and the frame kinds it applies to ("all" for every kind). */
const FRAME_FIELDS: Record<string, { kinds: string[] | "all"; read: (event: any, frame: Frame) => unknown; compare?: Compare }> = {
  sequence: { kinds: "all", read: (_, frame) => frame.sequence },
  tool_call_id: { kinds: TOOL_CALL_KINDS, read: (event) => event.toolCallId },
  tool_name: { kinds: ["tool_call", "tool_call_suspended"], read: (event) => event.toolName },
  suspend_kind: { kinds: ["tool_call_suspended"], read: (event) => event.kind },
  arguments: { kinds: ["tool_call", "tool_call_suspended"], read: (event) => event.argumentsJson, compare: sameJson },
  approval_reason: { kinds: ["tool_call_suspended"], read: (event) => event.approvalReason },
  question: { kinds: ["tool_call_suspended"], read: (event) => event.suspendPayload?.question },
  options: {
    kinds: ["tool_call_suspended"],
    read: (event) => (event.suspendPayload?.options ?? []).map((option: v1.AskUserOption) => option.label),
  },
  selection_mode: { kinds: ["tool_call_suspended"], read: (event) => event.suspendPayload?.selectionMode ?? null },
  content: { kinds: ["tool_result"], read: (event) => event.content },
  is_error: { kinds: ["tool_result"], read: (event) => event.isError },
  result_kind: { kinds: ["tool_result"], read: (event) => event.kind },
  reason: { kinds: ["answer_rejected"], read: (event) => event.reason },
  fields: {
    kinds: ["answer_rejected"],
    read: (event) => event.fieldViolations.map((violation: v1.FieldViolation) => violation.field),
  },
  duplicate: { kinds: ["answer_accepted"], read: (event) => event.duplicate },
  text: { kinds: ["text_delta"], read: (event) => event.text },
  output_text: { kinds: ["run_completed"], read: (event) => event.outputText },
  message: { kinds: ["run_failed"], read: (event) => event.message },
  agent_id: { kinds: ["run_started"], read: (event) => event.agentId },
  prompt: { kinds: ["run_started"], read: (event) => event.prompt },
};

/** Equality of an expected JSON value and an actual one; a saved sequence (a string) matches its number. */
function matches(expected: Json, actual: unknown): boolean {
  if (typeof expected === "string" && typeof actual === "number") return expected === String(actual);
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => matches(item, actual[i]));
  }
  return expected === actual;
}

/** Reads the frames of one stream, one at a time, each within the timeout. */
class FrameReader {
  readonly #frames: AsyncIterator<Frame>;
  #peeked: Promise<IteratorResult<Frame>> | undefined;
  /** The run every frame must belong to. */
  runId: string;

  constructor(frames: AsyncIterable<Frame>, runId: string) {
    this.#frames = frames[Symbol.asyncIterator]();
    this.runId = runId;
  }

  /** The next result without consuming it (the heartbeat-free frames come from the wrapper). */
  peek(): Promise<IteratorResult<Frame>> {
    this.#peeked ??= this.#frames.next();
    return withTimeout(this.#peeked, "frame");
  }

  next(): Promise<IteratorResult<Frame>> {
    const result = this.peek();
    this.#peeked = undefined;
    return result;
  }

  async frame(expectedKind: string): Promise<Frame> {
    const result = await this.next().catch(streamFailed(`expected ${expectedKind}`));
    if (result.done) fail(`expected ${expectedKind}, the stream ended`);
    const frame = result.value;
    if (frame.runId !== this.runId) fail(`${kindOf(frame)} frame has run_id ${show(frame.runId)}, expected ${show(this.runId)}`);
    return frame;
  }
}

function describeError(error: unknown): string {
  return error instanceof AskUserError ? `${error.codeName} ${show(error.details)}` : String(error);
}

/** A rejection handler for reading a frame: a timeout stays as it is, a failed stream fails the step. */
function streamFailed(expected: string): (error: unknown) => never {
  return (error) => {
    if (error instanceof StepFailure) throw error;
    fail(`${expected}, the stream failed: ${describeError(error)}`);
  };
}

/** Reads the frame(s) a check describes from the stream and checks them; runs its `save`s. */
async function expectFrame(reader: FrameReader, check: Args, saved: Map<string, string>): Promise<void> {
  const kind = stringArg(check, "kind");
  if (kind === "text_deltas") {
    allowOnly(check, ["kind", "text"]);
    const text = stringArg(check, "text");
    let received = "";
    while (received !== text) {
      const frame = await reader.frame("text_delta");
      if (kindOf(frame) !== "text_delta") fail(`expected text deltas ${show(text)}, got ${kindOf(frame)} after ${show(received)}`);
      received += (frame.event!.value as v1.TextDelta).text;
      if (!text.startsWith(received)) fail(`text deltas ${show(received)} do not spell ${show(text)}`);
    }
    return;
  }
  const frame = await reader.frame(kind);
  if (kindOf(frame) !== kind) fail(`expected ${kind}, got ${kindOf(frame)}: ${show(frame.event?.value)}`);
  const event = frame.event!.value;
  for (const [field, expected] of Object.entries(check)) {
    if (field === "kind") continue;
    if (field === "save_sequence") {
      saved.set(stringArg(check, field), String(frame.sequence));
      continue;
    }
    const spec = field === "save" ? FRAME_FIELDS.tool_call_id : FRAME_FIELDS[field];
    if (spec === undefined) fail(`unknown check field ${show(field)}`);
    if (spec.kinds !== "all" && !spec.kinds.includes(kind)) fail(`check field ${show(field)} does not apply to ${kind}`);
    const actual = spec.read(event, frame);
    if (field === "save") saved.set(stringArg(check, field), String(actual));
    else if (!(spec.compare ?? matches)(expected, actual)) fail(`${kind}.${field}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

// ---- the pending-calls feed ----

/** `callPending` → `call_pending`: feed event kinds as the format names them. */
function feedKindOf(event: FeedEvent): string {
  return (event.event?.$case ?? "(no event)").replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** The run a feed event belongs to; undefined for `snapshot_done`. */
function feedRunId(event: FeedEvent): string | undefined {
  const value = event.event?.value as { runId?: string } | undefined;
  return value?.runId;
}

/** What each `expect_pending` field reads from a feed event, and the event kinds it applies to. */
const FEED_FIELDS: Record<string, { kinds: string[]; read: (event: any) => unknown; compare?: Compare }> = {
  run_id: { kinds: ["call_pending", "call_settled"], read: (event) => event.runId },
  agent_id: { kinds: ["call_pending"], read: (event) => event.agentId },
  tool_call_id: {
    kinds: ["call_pending", "call_settled"],
    read: (event) => ("call" in event ? event.call?.toolCallId : event.toolCallId),
  },
  tool_name: { kinds: ["call_pending"], read: (event) => event.call?.toolName },
  suspend_kind: { kinds: ["call_pending"], read: (event) => event.call?.kind },
  arguments: { kinds: ["call_pending"], read: (event) => event.call?.argumentsJson, compare: sameJson },
  result_kind: { kinds: ["call_settled"], read: (event) => event.kind },
};

/** Reads a pending-calls feed, one event at a time, each within the timeout. */
class FeedReader {
  readonly feed: PendingCalls;
  readonly #events: AsyncIterator<FeedEvent>;

  constructor(feed: PendingCalls) {
    this.feed = feed;
    this.#events = feed[Symbol.asyncIterator]();
  }

  async event(expectedKind: string): Promise<FeedEvent> {
    const result = await withTimeout(this.#events.next(), `${expectedKind} event`).catch(streamFailed(`expected ${expectedKind}`));
    if (result.done) fail(`expected ${expectedKind}, the feed ended`);
    return result.value;
  }
}

/**
 * Reads feed events until one of the check's kind (and, when given, `run_id`) comes, and checks it.
 * Events of other runs are skipped, and so is an event of another kind before it, except that an
 * event of the checked run that does not match fails the check. A `snapshot_done` check's `absent`
 * fails it when a `call_pending` read on the way has one of those tool call ids.
 */
async function expectPending(reader: FeedReader, check: Args, saved: Map<string, string>): Promise<void> {
  const kind = stringArg(check, "kind");
  if (!["call_pending", "call_settled", "snapshot_done"].includes(kind)) fail(`unknown feed event kind ${show(kind)}`);
  for (const field of Object.keys(check)) {
    if (field === "kind" || field === "save" || field === "absent") continue;
    const spec = FEED_FIELDS[field] ?? fail(`unknown check field ${show(field)}`);
    if (!spec.kinds.includes(kind)) fail(`check field ${show(field)} does not apply to ${kind}`);
  }
  if ("save" in check && kind === "snapshot_done") fail(`check field "save" does not apply to ${kind}`);
  if ("absent" in check && kind !== "snapshot_done") fail(`check field "absent" does not apply to ${kind}`);
  const absent = stringListArg(check.absent ?? [], "absent");
  const runId = "run_id" in check ? stringArg(check, "run_id") : undefined;
  for (;;) {
    const event = await reader.event(kind);
    const eventKind = feedKindOf(event);
    if (eventKind === "heartbeat") continue;
    const toolCallId = eventKind === "call_pending" ? String(FEED_FIELDS.tool_call_id.read(event.event!.value)) : undefined;
    if (toolCallId !== undefined && absent.includes(toolCallId)) {
      fail(`the snapshot has ${show(toolCallId)}, which must be absent: ${show(event.event?.value)}`);
    }
    if (runId !== undefined && feedRunId(event) !== runId) continue; // another run's call, or the snapshot marker
    if (eventKind !== kind) {
      if (runId !== undefined) fail(`expected ${kind} of run ${show(runId)}, got ${eventKind}: ${show(event.event?.value)}`);
      continue;
    }
    const value = event.event!.value;
    for (const [field, expected] of Object.entries(check)) {
      if (field === "kind" || field === "absent") continue;
      if (field === "save") {
        saved.set(stringArg(check, field), String(FEED_FIELDS.tool_call_id.read(value)));
        continue;
      }
      const spec = FEED_FIELDS[field];
      const actual = spec.read(value);
      if (!(spec.compare ?? matches)(expected, actual)) fail(`${kind}.${field}: expected ${show(expected)}, got ${show(actual)}`);
    }
    return;
  }
}

/** Checks every remaining frame of a stream against `checks`, in order, then that it ends with OK. */
async function expectFrames(reader: FrameReader, checks: Json, saved: Map<string, string>): Promise<void> {
  if (!Array.isArray(checks)) fail(`expect must be an array of frame checks, got ${show(checks)}`);
  for (const check of checks) await expectFrame(reader, substitute(check, saved) as Args, saved);
  await expectEnd(reader);
}

async function expectEnd(reader: FrameReader): Promise<void> {
  const result = await reader.next().catch(streamFailed("expected the end"));
  if (!result.done) fail(`expected the end, got ${kindOf(result.value)}: ${show(result.value.event?.value)}`);
}

/** Checks an error against `{code, reason?, field?, fields?}`. */
function checkError(error: unknown, expected: Json): void {
  if (expected === null || typeof expected !== "object" || Array.isArray(expected)) fail(`expect_error must be an object`);
  allowOnly(expected, ["code", "reason", "field", "fields"]);
  if (!(error instanceof AskUserError)) fail(`expected a gRPC error, got ${String(error)}`);
  const code = stringArg(expected, "code");
  if (error.codeName !== code) fail(`expected ${code}, got ${describeError(error)}`);
  if ("reason" in expected && error.reason !== stringArg(expected, "reason")) {
    fail(`expected ErrorInfo reason ${show(expected.reason)}, got ${show(error.reason)}`);
  }
  const fields = error.fieldViolations.map((violation) => violation.field);
  if ("field" in expected && !fields.includes(stringArg(expected, "field"))) {
    fail(`expected a BadRequest violation of ${show(expected.field)}, got ${show(fields)}`);
  }
  if ("fields" in expected && !matches(stringListArg(expected.fields, "fields"), fields)) {
    fail(`expected BadRequest violations of ${show(expected.fields)}, got ${show(fields)}`);
  }
}

/** Runs `call`, which must fail with the expected error. */
async function expectError(call: () => Promise<unknown>, expected: Json): Promise<void> {
  let result: unknown;
  try {
    result = await call();
  } catch (error) {
    if (error instanceof StepFailure) throw error;
    checkError(error, expected);
    return;
  }
  fail(`expected an error, got ${show(result)}`);
}

/** The next frame, or a note that the stream ended: what a stream gave instead of an expected error. */
async function nextOrEnd(reader: FrameReader): Promise<unknown> {
  const result = await reader.next();
  return result.done ? "the end of the stream" : result.value;
}

// ---- scenarios ----

/** The steps that may name their caller with `"as"`; the others act on what such a step opened. */
const STEPS_WITH_CALLER = ["start", "attach", "resume", "watch", "get_run", "watch_pending", "claim", "cancel"];

/**
 * The clients a scenario's steps call through: the conformance tenant's key (`ASKUSER_API_KEY`; no
 * credentials when unset) by default, and `ASKUSER_OTHER_API_KEY` for a step with `"as": "other"`.
 */
class Callers {
  readonly #address: string;
  readonly main: AskUserClient;
  #other: AskUserClient | undefined;

  constructor(address: string) {
    this.#address = address;
    this.main = new AskUserClient(address, { apiKey: process.env.ASKUSER_API_KEY || undefined });
  }

  /** The client of the step's `as`; a scenario that asks for another tenant without its key fails. */
  of(args: Args): AskUserClient {
    if (!("as" in args)) return this.main;
    const caller = stringArg(args, "as");
    if (caller !== "other") fail(`unknown caller ${show(caller)} (only "other" is defined)`);
    const key = process.env.ASKUSER_OTHER_API_KEY || fail(`"as": "other" needs ASKUSER_OTHER_API_KEY`);
    this.#other ??= new AskUserClient(this.#address, { apiKey: key });
    return this.#other;
  }

  close(): void {
    this.main.close();
    this.#other?.close();
  }
}

class Scenario {
  readonly #callers: Callers;
  readonly #saved = new Map<string, string>();
  readonly #streams = new Map<string, { run: Run; reader: FrameReader }>();
  readonly #feeds = new Map<string, FeedReader>();

  constructor(callers: Callers) {
    this.#callers = callers;
  }

  async run(steps: Json): Promise<void> {
    if (!Array.isArray(steps) || steps.length === 0) fail("steps must be a non-empty array");
    try {
      for (const [index, step] of steps.entries()) {
        if (step === null || typeof step !== "object" || Array.isArray(step) || Object.keys(step).length !== 1) {
          throw new StepFailure(`step ${index + 1}: a step is an object with exactly one key`);
        }
        const [kind, args] = Object.entries(step)[0];
        try {
          if (args === null || typeof args !== "object" || Array.isArray(args)) fail("arguments must be an object");
          await this.#step(kind, substitute(args, this.#saved) as Args);
        } catch (error) {
          const message = error instanceof StepFailure ? error.message : `unexpected error: ${describeError(error)}`;
          throw new StepFailure(`step ${index + 1} (${kind}): ${message}`);
        }
      }
    } finally {
      for (const { run } of this.#streams.values()) run.close();
      for (const reader of this.#feeds.values()) reader.feed.close();
    }
  }

  #feed(args: Args): FeedReader {
    const name = stringArg(args, "feed", "main");
    return this.#feeds.get(name) ?? fail(`no open feed ${show(name)}`);
  }

  #stream(args: Args): { run: Run; reader: FrameReader } {
    const name = stringArg(args, "stream", "main");
    return this.#streams.get(name) ?? fail(`no open stream ${show(name)}`);
  }

  /** Names a new stream; one opened earlier under the same name is dropped. */
  #open(args: Args, run: Run, runId: string): FrameReader {
    const name = stringArg(args, "stream", "main");
    this.#streams.get(name)?.run.close();
    const reader = new FrameReader(run, runId);
    this.#streams.set(name, { run, reader });
    return reader;
  }

  async #step(kind: string, args: Args): Promise<void> {
    if ("as" in args && !STEPS_WITH_CALLER.includes(kind)) fail(`a ${kind} step takes no "as"`);
    const client = this.#callers.of(args);
    switch (kind) {
      case "start": {
        allowOnly(args, ["stream", "agent_id", "prompt", "metadata", "tools", "as"]);
        const metadata = (args.metadata ?? {}) as Record<string, string>;
        const tools = toolsArg(args.tools ?? []);
        const run = client.startRun(stringArg(args, "agent_id"), stringArg(args, "prompt"), metadata, { tools });
        const reader = this.#open(args, run, "");
        // The run id comes from the first frame, which stays unread for the next `expect`; a stream
        // that fails instead (e.g. an unknown agent) is left for `expect_stream_error`.
        const first = await reader.peek().catch(() => undefined);
        if (first !== undefined && !first.done && first.value.event?.$case === "runStarted") {
          reader.runId = first.value.runId;
          this.#saved.set("run_id", first.value.runId);
        }
        return;
      }
      case "attach": {
        allowOnly(args, ["stream", "run_id", "after_sequence", "as"]);
        const runId = stringArg(args, "run_id");
        this.#open(args, client.attach(runId, sequenceArg(args, "after_sequence")), runId);
        return;
      }
      case "answer": {
        allowOnly(args, ["stream", "run_id", "tool_call_id", "answer_id", ...ANSWER_KINDS]);
        this.#stream(args).run.answer(stringArg(args, "tool_call_id"), answerArg(args), {
          runId: stringArg(args, "run_id", ""),
          answerId: stringArg(args, "answer_id", ""),
        });
        return;
      }
      case "expect": {
        const { stream, ...check } = args;
        return expectFrame(this.#stream({ stream }).reader, check, this.#saved);
      }
      case "expect_end":
        allowOnly(args, ["stream"]);
        return expectEnd(this.#stream(args).reader);
      case "expect_stream_error": {
        const { stream, ...expected } = args;
        return expectError(() => nextOrEnd(this.#stream({ stream }).reader), expected);
      }
      case "close":
        allowOnly(args, ["stream"]);
        this.#stream(args).run.close();
        this.#streams.delete(stringArg(args, "stream", "main"));
        return;
      case "resume": {
        allowOnly(args, ["run_id", "tool_call_id", "answer_id", "expect", "expect_error", "as", ...ANSWER_KINDS]);
        const runId = stringArg(args, "run_id");
        const frames = client.resumeRun(runId, stringArg(args, "tool_call_id"), answerArg(args), {
          answerId: stringArg(args, "answer_id", ""),
        });
        const reader = new FrameReader(frames, runId);
        if ("expect_error" in args) {
          return expectError(() => nextOrEnd(reader), args.expect_error);
        }
        return expectFrames(reader, args.expect ?? fail("resume needs expect or expect_error"), this.#saved);
      }
      case "watch": {
        allowOnly(args, ["run_id", "after_sequence", "expect", "expect_error", "as"]);
        const runId = stringArg(args, "run_id");
        const reader = new FrameReader(client.watchRun(runId, sequenceArg(args, "after_sequence")), runId);
        if ("expect_error" in args) {
          return expectError(() => nextOrEnd(reader), args.expect_error);
        }
        return expectFrames(reader, args.expect ?? fail("watch needs expect or expect_error"), this.#saved);
      }
      case "watch_pending": {
        allowOnly(args, ["feed", "agent_ids", "tool_names", "kinds", "as"]);
        const name = stringArg(args, "feed", "main");
        const feed = client.watchPendingCalls({
          agentIds: stringListArg(args.agent_ids ?? [], "agent_ids"),
          toolNames: stringListArg(args.tool_names ?? [], "tool_names"),
          kinds: stringListArg(args.kinds ?? [], "kinds").map((kind) => enumArg(v1.SuspendKind, kind, "kind")),
        });
        this.#feeds.get(name)?.feed.close();
        this.#feeds.set(name, new FeedReader(feed));
        return;
      }
      case "expect_pending": {
        const { feed, ...check } = args;
        return expectPending(this.#feed({ feed }), check, this.#saved);
      }
      case "close_pending":
        allowOnly(args, ["feed"]);
        this.#feed(args).feed.close();
        this.#feeds.delete(stringArg(args, "feed", "main"));
        return;
      case "claim":
        return this.#claim(client, args);
      case "cancel":
        return this.#cancel(client, args);
      case "get_run":
        return this.#getRun(client, args);
      case "ask_user":
        return this.#askUser(client, args);
      default:
        fail(`unknown step kind ${show(kind)}`);
    }
  }

  async #claim(client: AskUserClient, args: Args): Promise<void> {
    allowOnly(args, ["run_id", "tool_call_id", "claimant", "ttl_ms", "expect_error", "as"]);
    let ttlMs: number | undefined;
    if ("ttl_ms" in args) {
      const value = args.ttl_ms;
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) fail(`ttl_ms must be milliseconds, got ${show(value)}`);
      ttlMs = value;
    }
    const call = () =>
      withTimeout(
        client.claimCall(stringArg(args, "run_id"), stringArg(args, "tool_call_id"), stringArg(args, "claimant"), { ttlMs }),
        "ClaimCall response",
      );
    if ("expect_error" in args) return expectError(call, args.expect_error);
    const expires = await call();
    if (!(expires instanceof Date)) fail(`ClaimCall returned no expire_time`);
  }

  async #cancel(client: AskUserClient, args: Args): Promise<void> {
    allowOnly(args, ["run_id", "reason", "expect_error", "as"]);
    const call = () => withTimeout(client.cancelRun(stringArg(args, "run_id"), stringArg(args, "reason", "")), "CancelRun response");
    if ("expect_error" in args) return expectError(call, args.expect_error);
    const run = await call();
    if (run.status !== v1.RunStatus.RUN_STATUS_CANCELLED) fail(`run.status: expected "RUN_STATUS_CANCELLED", got ${show(run.status)}`);
  }

  async #getRun(client: AskUserClient, args: Args): Promise<void> {
    allowOnly(args, ["run_id", "status", "pending", "output_text", "last_sequence", "expect_error", "as"]);
    const call = () => withTimeout(client.getRun(stringArg(args, "run_id")), "GetRun response");
    if ("expect_error" in args) return expectError(call, args.expect_error);
    const run = await call();
    const actual: Record<string, unknown> = {
      status: run.status,
      pending: run.pendingToolCalls.map((pending) => pending.toolCallId),
      output_text: run.outputText,
      last_sequence: run.lastSequence,
    };
    for (const [field, value] of Object.entries(actual)) {
      if (field in args && !matches(args[field], value)) fail(`run.${field}: expected ${show(args[field])}, got ${show(value)}`);
    }
  }

  async #askUser(client: AskUserClient, args: Args): Promise<void> {
    allowOnly(args, ["input", "content", "expect_error"]);
    const input = args.input;
    if (input === null || typeof input !== "object" || Array.isArray(input)) fail("input must be an object");
    allowOnly(input, ["question", "options", "selection_mode"]);
    const options = ((input.options ?? []) as Json[]).map((option) => {
      if (option === null || typeof option !== "object" || Array.isArray(option)) fail("an option must be an object");
      allowOnly(option, ["label", "description"]);
      return { label: stringArg(option, "label"), description: stringArg(option, "description", "") };
    });
    let selectionMode: v1.SelectionMode | undefined;
    if ("selection_mode" in input) {
      const name = stringArg(input, "selection_mode");
      if (!Object.values<string>(v1.SelectionMode).includes(name)) fail(`unknown selection_mode ${show(name)}`);
      selectionMode = name as v1.SelectionMode;
    }
    const call = () =>
      withTimeout(client.askUser({ question: stringArg(input, "question"), options, selectionMode }), "AskUser response");
    if ("expect_error" in args) return expectError(call, args.expect_error);
    const content = await call();
    const expected = stringArg(args, "content");
    if (content !== expected) fail(`content: expected ${show(expected)}, got ${show(content)}`);
  }
}

async function main(): Promise<number> {
  const address = process.argv[2];
  if (address === undefined) {
    console.error("usage: node dist/conformance/runner.js HOST:PORT");
    return 2;
  }
  const files = readdirSync(SCENARIO_DIR).filter((file) => file.endsWith(".json")).sort();
  if (files.length === 0) console.log(`no scenarios in ${SCENARIO_DIR}`);
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    let name = file;
    try {
      const scenario = JSON.parse(readFileSync(path.join(SCENARIO_DIR, file), "utf8")) as Args;
      name = typeof scenario.name === "string" ? scenario.name : file;
      // Clients of its own, whose closing cancels any call a failed scenario left open.
      const callers = new Callers(address);
      try {
        await new Scenario(callers).run(scenario.steps);
      } finally {
        callers.close();
      }
      console.log(`PASS ${name}`);
      passed += 1;
    } catch (error) {
      console.log(`FAIL ${name} (${file}): ${error instanceof Error ? error.message : String(error)}`);
      failed += 1;
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed > 0 || passed === 0 ? 1 : 0;
}

main().then((code) => {
  process.exitCode = code;
});
