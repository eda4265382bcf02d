// The TypeScript client under test of the conformance runner (tests/conformance/README.md, "Clients
// under test"): reads one JSON request per line on stdin, makes the call through the public API of
// @askuser/client, and writes one JSON response per line on stdout. It judges nothing.
import { createInterface } from "node:readline";
import {
  AskUserClient,
  AskUserError,
  VERSION,
  v1,
  type AnswerValue,
  type FormFieldValue,
  type FormValues,
  type FormInit,
  type HumanOutcome,
  type HumanRequest,
  type PendingCalls,
  type Run,
} from "@askuser/client";

/** An answer object of the protocol: exactly one of the values is given. */
interface AnswerRequest {
  run_id?: string;
  tool_call_id: string;
  answer_id?: string;
  text?: string;
  selections?: string[];
  decline?: string;
  form?: Record<string, FieldValueRequest>;
  reply?: string;
  tool_output?: { content: string; is_error?: boolean };
  approve?: true;
  reject?: string;
  edit?: string;
}

/** A form field's value in an answer object: exactly one of the kinds is given. */
interface FieldValueRequest {
  text?: string;
  number?: number;
  boolean?: boolean;
  choice?: { values?: string[]; other?: string };
}

/** A request line: `op` and the fields of that op (tests/conformance/README.md, "Clients under test"). */
interface Request {
  op: string;
  address: string;
  keys: Record<string, string>;
  stream: string;
  feed: string;
  as?: string;
  agent_id: string;
  prompt: string;
  metadata?: Record<string, string>;
  tools?: { name: string; description?: string; parameters_json_schema?: string; approval?: v1.ApprovalPolicy | "" }[];
  timeout_ms?: number;
  run_id: string;
  after_sequence?: number | string;
  answer: AnswerRequest;
  reason?: string;
  input: { question: string; options?: { label: string; description?: string }[]; selection_mode?: v1.SelectionMode };
  agent_ids?: string[];
  tool_names?: string[];
  kinds?: v1.SuspendKind[];
  tool_call_id: string;
  claimant: string;
  ttl_ms?: number;
  ask: string;
  request_id?: string;
  context?: string;
  question?: Request["input"];
  form?: Record<string, unknown>;
  approval?: { tool_name: string; arguments: Record<string, unknown>; reason?: string };
}

/** A ts-proto message in the proto3 JSON mapping: `{$case, value}` oneofs become `{[$case]: value}`. */
function toJson(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(toJson);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value).filter(([, item]) => item !== undefined);
  if (entries.length === 2 && "$case" in value && "value" in value) {
    const { $case, value: item } = value as { $case: string; value: unknown };
    return { [$case]: toJson(item) };
  }
  const json: Record<string, unknown> = {};
  for (const [key, item] of entries) {
    // A oneof field holds its union: its case replaces it, as in the JSON of the message.
    const converted = toJson(item);
    if (item !== null && typeof item === "object" && "$case" in item) Object.assign(json, converted);
    else json[key] = converted;
  }
  return json;
}

function statusJson(error: AskUserError): Record<string, unknown> {
  return {
    code: error.codeName,
    message: error.details,
    reason: error.reason ?? "",
    fields: error.fieldViolations.map((violation) => violation.field),
  };
}

/** The call options of a request: its `timeout_ms` as the deadline, 0 or absent for none. */
function callOptions(request: Request): { timeoutMs?: number } {
  return request.timeout_ms ? { timeoutMs: request.timeout_ms } : {};
}

/** An answer object of the protocol as the client's `AnswerValue`. */
function answerValue(answer: AnswerRequest): AnswerValue {
  if (answer.text !== undefined) return { text: answer.text };
  if (answer.selections !== undefined) return { selections: answer.selections };
  if (answer.decline !== undefined) return { decline: answer.decline };
  if (answer.form !== undefined) return { form: formValues(answer.form) };
  if (answer.reply !== undefined) return { reply: answer.reply };
  if (answer.tool_output !== undefined) return { toolOutput: { content: answer.tool_output.content, isError: answer.tool_output.is_error ?? false } };
  if (answer.approve !== undefined) return { approve: true };
  if (answer.reject !== undefined) return { reject: answer.reject };
  if (answer.edit !== undefined) return { edit: answer.edit };
  throw new Error(`an answer without a value: ${JSON.stringify(answer)}`);
}

/** A form of the protocol as the client's `FormValues`, each value in the shape a user writes it. */
function formValues(form: Record<string, FieldValueRequest>): FormValues {
  const values: FormValues = {};
  for (const [name, field] of Object.entries(form)) values[name] = formFieldValue(name, field);
  return values;
}

function formFieldValue(name: string, field: FieldValueRequest): FormFieldValue {
  if (field.text !== undefined) return field.text;
  if (field.number !== undefined) return field.number;
  if (field.boolean !== undefined) return field.boolean;
  if (field.choice !== undefined) {
    const { values = [], other } = field.choice;
    // Selected values alone are an array, as users write them; "Other" text needs the object form.
    return other === undefined ? values : { values, other };
  }
  throw new Error(`form field ${JSON.stringify(name)} without a value: ${JSON.stringify(field)}`);
}

/** Sends an answer on a run's stream through the verb a user would call for it. */
function send(run: Run, answer: AnswerRequest): void {
  const options = { runId: answer.run_id ?? "", answerId: answer.answer_id ?? "" };
  const value = answerValue(answer);
  const id = answer.tool_call_id;
  if ("text" in value) run.answerText(id, value.text, options);
  else if ("selections" in value) run.answerSelections(id, value.selections, options);
  else if ("decline" in value) run.decline(id, value.decline, options);
  else if ("form" in value) run.answerForm(id, value.form, options);
  else if ("reply" in value) run.reply(id, value.reply, options);
  else if ("toolOutput" in value) run.sendToolOutput(id, value.toolOutput.content, { ...options, isError: value.toolOutput.isError });
  else if ("approve" in value) run.approve(id, options);
  else if ("reject" in value) run.reject(id, value.reject, options);
  else run.edit(id, value.edit, options);
}

/** Reads a whole server stream: its frames, then how it ended. */
async function collect(frames: AsyncIterable<v1.RunAgentResponse>): Promise<Record<string, unknown>> {
  const read: unknown[] = [];
  try {
    for await (const frame of frames) read.push(toJson(frame));
    return { frames: read, error: null };
  } catch (error) {
    if (error instanceof AskUserError) return { frames: read, error: statusJson(error) };
    throw error;
  }
}

/** The next item of an iterator: `{[key]: item}`, or `{end: true}` when it ended. */
async function next<T>(iterator: AsyncIterator<T> | undefined, key: string): Promise<Record<string, unknown>> {
  if (iterator === undefined) throw new Error("no such stream or feed");
  const result = await iterator.next();
  return result.done ? { end: true } : { [key]: toJson(result.value) };
}

/**
 * A message in the proto3 JSON mapping (snake_case or lowerCamelCase names) as ts-proto's partial
 * message: names in lowerCamelCase, and the field named by `oneofs` (a form field's `kind`) holding
 * the `{$case, value}` of whichever of its cases is present.
 */
function fromJson(value: unknown, oneofs: Record<string, string[]> = { kind: ["text", "number", "boolean", "choice"] }): unknown {
  if (Array.isArray(value)) return value.map((item) => fromJson(item, oneofs));
  if (value === null || typeof value !== "object") return value;
  const message: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const name = key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
    const oneof = Object.entries(oneofs).find(([, cases]) => cases.includes(name))?.[0];
    // A form field's kind is an object ({} for a text field without constraints); a form's `message` is text.
    if (oneof !== undefined && item !== null && typeof item === "object" && !Array.isArray(item)) {
      message[oneof] = { $case: name, value: fromJson(item, oneofs) };
    } else message[name] = fromJson(item, oneofs);
  }
  return message;
}

/** A request's outcome as the protocol writes it (tests/conformance/README.md, "An outcome"). */
function outcomeJson(outcome: HumanOutcome): Record<string, unknown> {
  const { settledBy, content: _content, ...fields } = outcome;
  const json: Record<string, unknown> = { ...fields };
  if (settledBy !== "") json.settled_by = settledBy;
  return json;
}

const clients = new Map<string, AskUserClient>();
const asks = new Map<string, HumanRequest>();
const streams = new Map<string, { run: Run; frames: AsyncIterator<v1.RunAgentResponse> }>();
const feeds = new Map<string, { feed: PendingCalls; events: AsyncIterator<v1.WatchPendingCallsResponse> }>();

function client(request: Request): AskUserClient {
  const found = clients.get(request.as ?? "own");
  if (found === undefined) throw new Error(`no client for ${JSON.stringify(request.as)}: connect first`);
  return found;
}

function stream(request: Request): Run {
  const found = streams.get(request.stream);
  if (found === undefined) throw new Error(`no stream ${JSON.stringify(request.stream)}`);
  return found.run;
}

function open(name: string, run: Run): void {
  streams.set(name, { run, frames: run[Symbol.asyncIterator]() });
}

async function handle(request: Request): Promise<Record<string, unknown>> {
  switch (request.op) {
    case "connect":
      for (const [as, apiKey] of Object.entries(request.keys)) clients.set(as, new AskUserClient(request.address, { apiKey }));
      return { client: `@askuser/client ${VERSION}` };
    case "start": {
      const tools = (request.tools ?? []).map((tool) => ({
        name: tool.name,
        description: tool.description ?? "",
        parametersJsonSchema: tool.parameters_json_schema ?? "",
        approval: tool.approval || undefined,
      }));
      const run = client(request).startRun(request.agent_id, request.prompt, request.metadata ?? {}, { tools, ...callOptions(request) });
      open(request.stream, run);
      return { run_id: await run.started };
    }
    case "attach":
      open(request.stream, client(request).attach(request.run_id, Number(request.after_sequence ?? 0), callOptions(request)));
      return {};
    case "send":
      send(stream(request), request.answer);
      return {};
    case "next":
      return next(streams.get(request.stream)?.frames, "frame");
    case "close":
      stream(request).close();
      return {};
    case "resume": {
      const { answer } = request;
      return collect(
        client(request).resumeRun(answer.run_id ?? "", answer.tool_call_id, answerValue(answer), {
          answerId: answer.answer_id ?? "",
          ...callOptions(request),
        }),
      );
    }
    case "watch":
      return collect(client(request).watchRun(request.run_id, Number(request.after_sequence ?? 0), callOptions(request)));
    case "get_run":
      return { run: toJson(await client(request).getRun(request.run_id, callOptions(request))) };
    case "cancel":
      return { run: toJson(await client(request).cancelRun(request.run_id, request.reason ?? "", callOptions(request))) };
    case "ask_user": {
      const { question, options, selection_mode: selectionMode } = request.input;
      return { content: await client(request).askUser({ question, options, selectionMode }, callOptions(request)) };
    }
    case "watch_pending": {
      const feed = client(request).watchPendingCalls({ agentIds: request.agent_ids, toolNames: request.tool_names, kinds: request.kinds });
      feeds.set(request.feed, { feed, events: feed[Symbol.asyncIterator]() });
      return {};
    }
    case "next_pending":
      return next(feeds.get(request.feed)?.events, "event");
    case "close_pending":
      feeds.get(request.feed)?.feed.close();
      return {};
    case "claim":
      await client(request).claimCall(request.run_id, request.tool_call_id, request.claimant, {
        ttlMs: request.ttl_ms || undefined,
        ...callOptions(request),
      });
      return {};
    case "ask": {
      const common = {
        requestId: request.request_id,
        context: request.context ?? "",
        ttlMs: request.ttl_ms || undefined,
        ...callOptions(request),
      };
      let handle: HumanRequest;
      if (request.question !== undefined) {
        const { question, options, selection_mode: selectionMode } = request.question;
        handle = await client(request).ask({ ...common, question, options, selectionMode });
      } else if (request.form !== undefined) {
        handle = await client(request).ask({ ...common, form: fromJson(request.form) as FormInit });
      } else if (request.approval !== undefined) {
        const { tool_name: toolName, arguments: args, reason } = request.approval;
        handle = await client(request).ask({ ...common, approval: { toolName, arguments: args, reason } });
      } else {
        throw new Error("an ask without a question, a form or an approval");
      }
      asks.set(request.ask, handle);
      return { run_id: handle.runId, tool_call_id: handle.toolCallId };
    }
    case "ask_result": {
      const handle = asks.get(request.ask);
      if (handle === undefined) throw new Error(`no ask ${JSON.stringify(request.ask)}`);
      return { outcome: outcomeJson(await handle.wait(callOptions(request))) };
    }
    default:
      throw new Error(`unknown op ${JSON.stringify(request.op)}`);
  }
}

async function main(): Promise<void> {
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    let response: Record<string, unknown>;
    try {
      response = { ok: await handle(JSON.parse(line)) };
    } catch (error) {
      if (error instanceof AskUserError) response = { error: statusJson(error) };
      else response = { failure: error instanceof Error ? (error.stack ?? error.message) : String(error) };
    }
    process.stdout.write(`${JSON.stringify(response)}\n`);
  }
  for (const each of clients.values()) each.close();
  // Streams and feeds the runner left open end with the process.
  process.exit(0);
}

void main();
