import { Metadata, status } from "@grpc/grpc-js";
import {
  argumentsJson,
  askedKind,
  newRequestId,
  settledOutcome,
  type AskCommonOptions,
  type AskApproval,
  type AskedKind,
  type AskForm,
  type AskQuestion,
  type FormOutcomeValue,
  type HumanOutcome,
  type SettledAnswer,
} from "./common/human";
import type { CallOptions } from "./common/options";
import { AskUserError } from "./error";
import { RunStatus, type Answer, type Run as RunRecord, type RunAgentResponse, type SettledToolCall, type ToolCallSuspended, type WebhookSubscription } from "./gen/askuser/v1/agent";
import type { SelectionMode } from "./gen/askuser/v1/ask_user";
import { Form, type FieldValue } from "./gen/askuser/v1/form";
import type { AskRequest } from "./gen/askuser/v1/human";
import type { Duration } from "./gen/google/protobuf/duration";

/** A form as `ask` takes it: any part of the `Form` message (the rest takes its default), e.g. `{ title, fields: [...] }`. */
export type FormInit = DeepPartial<Form>;

type Builtin = Date | Function | Uint8Array | string | number | boolean | undefined;
/** ts-proto's `DeepPartial` (which its generated files keep to themselves). */
type DeepPartial<T> = T extends Builtin
  ? T
  : T extends Array<infer U>
    ? Array<DeepPartial<U>>
    : T extends { $case: string; value: unknown }
      ? { $case: T["$case"]; value?: DeepPartial<T["value"]> }
      : T extends object
        ? { [K in keyof T]?: DeepPartial<T[K]> }
        : Partial<T>;

/** The parts of `ask`'s options besides the call: context, assignees, TTL, metadata, webhooks, request id, deadline, signal. */
export type AskOptions = AskCommonOptions<WebhookSubscription>;
/** A question asked with `ask` or `askHuman`. */
export type AskQuestionInit = AskOptions & AskQuestion<SelectionMode>;
/** A form asked with `ask` or `askHuman`. */
export type AskFormInit = AskOptions & AskForm<FormInit>;
/** An approval asked with `ask` (`requestApproval` asks one in one call). */
export type AskApprovalInit = AskOptions & AskApproval;
/** Whatever `ask` may ask. */
export type AskInit = AskQuestionInit | AskFormInit | AskApprovalInit;

/** The `AskRequest` message of `init`, with its request id (generated when `init` has none). */
export function buildAskRequest(init: AskInit): { request: AskRequest; asked: AskedKind | undefined; argumentsJson: string } {
  const asked = askedKind(init);
  let call: AskRequest["call"];
  let args = "";
  if (init.question !== undefined) {
    const options = (init.options ?? []).map((option) =>
      typeof option === "string" ? { label: option, description: "" } : { label: option.label, description: option.description ?? "" },
    );
    call = { $case: "question", value: { question: init.question, options, selectionMode: init.selectionMode } };
  } else if (init.form !== undefined) {
    // fromPartial fills in what the caller left out; its type insists on an exact literal.
    call = { $case: "form", value: Form.fromPartial(init.form as Form) };
  } else if (init.approval !== undefined) {
    const { toolName, arguments: given, reason = "" } = init.approval;
    args = argumentsJson(given);
    call = { $case: "approval", value: { toolName, argumentsJson: args, reason } };
  }
  const request: AskRequest = {
    call,
    context: init.context ?? "",
    assignees: init.assignees ?? [],
    ttl: init.ttlMs === undefined ? undefined : millisToDuration(init.ttlMs),
    metadata: init.metadata ?? {},
    webhooks: init.webhooks ?? [],
    requestId: init.requestId || newRequestId(),
  };
  return { request, asked, argumentsJson: args };
}

function millisToDuration(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1_000_000) };
}

/** What a `HumanRequest` needs of the client: following a run from a sequence, and reading it. */
export interface RunReader {
  watchRun(runId: string, afterSequence: number, options: CallOptions): AsyncIterable<RunAgentResponse>;
  getRun(runId: string, options: CallOptions): Promise<RunRecord>;
}

/**
 * A request made with `AskUserClient.ask` whose call waits for a person: `wait()` for its typed
 * outcome. The request lives on the server, not here: `wait()` may be called again, from another
 * handle (`ask` with the same `requestId`), or after the process restarted.
 */
export class HumanRequest<Outcome extends HumanOutcome = HumanOutcome> {
  /** The request's run (a run of no agent): `getRun`, `watchRun`, `cancelRun` and answering work on it. */
  readonly runId: string;
  /** Its one call, as it waits: what `resumeRun` and the other ways of answering name. */
  readonly toolCallId: string;
  /** Its idempotency key: `ask` with it again follows this request. */
  readonly requestId: string;
  /** The call as it waits (`tool_call_suspended`): its question, form or approval. */
  readonly suspended: ToolCallSuspended;
  readonly #reader: RunReader;
  readonly #asked: AskedKind;
  readonly #argumentsJson: string;
  /** The sequence of the `tool_call_suspended` event: waiting follows the run from there. */
  readonly #afterSequence: number;
  #outcome: Outcome | undefined;

  /** @internal Made by `AskUserClient.ask`. */
  constructor(
    reader: RunReader,
    asked: AskedKind,
    argumentsJson: string,
    requestId: string,
    runId: string,
    suspended: ToolCallSuspended,
    afterSequence: number,
  ) {
    this.#reader = reader;
    this.#asked = asked;
    this.#argumentsJson = argumentsJson;
    this.requestId = requestId;
    this.runId = runId;
    this.toolCallId = suspended.toolCallId;
    this.suspended = suspended;
    this.#afterSequence = afterSequence;
  }

  /**
   * Waits until the call is settled (answered, decided, expired, or cancelled with its request) and
   * returns how. The wait rides out dropped connections and server restarts under the client's
   * `reconnect` policy (following the run again from where it was); `timeoutMs` ends it with
   * `DEADLINE_EXCEEDED` and `signal` with `CANCELLED`, for good, while the request goes on waiting
   * on the server.
   */
  async wait(options: CallOptions = {}): Promise<Outcome> {
    if (this.#outcome !== undefined) return this.#outcome;
    const { timeoutMs } = options;
    const deadline = timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
    const remaining = (): CallOptions => ({
      ...options,
      // A deadline already past still goes as one (the call then fails with DEADLINE_EXCEEDED at once).
      timeoutMs: deadline === undefined ? undefined : Math.max(1, deadline - Date.now()),
    });
    for await (const frame of this.#reader.watchRun(this.runId, this.#afterSequence, remaining())) {
      const kind = frame.event?.$case;
      if (kind === "runCompleted" || kind === "runFailed" || kind === "runCancelled") break;
    }
    const run = await this.#reader.getRun(this.runId, remaining());
    this.#outcome = outcomeOf(run, this.toolCallId, this.#asked, this.#argumentsJson) as Outcome;
    return this.#outcome;
  }
}

/** The typed outcome of a request's call, from its run as `GetRun` returns it after the end. */
export function outcomeOf(run: RunRecord, toolCallId: string, asked: AskedKind, askedArguments: string): HumanOutcome {
  const settled = run.settledToolCalls.find((call) => call.toolCallId === toolCallId);
  if (settled === undefined) {
    if (run.status === RunStatus.RUN_STATUS_CANCELLED) return { kind: "cancelled", settledBy: "", content: "" };
    throw new AskUserError(
      status.FAILED_PRECONDITION,
      `the request ended (${run.status}) without its call settled${run.errorMessage ? `: ${run.errorMessage}` : ""}`,
      new Metadata(),
    );
  }
  const resultKind = settled.kind.replace(/^TOOL_RESULT_KIND_/, "");
  return settledOutcome(asked, resultKind, settledAnswer(settled), { settledBy: settled.settledBy?.subject ?? "", content: settled.content }, askedArguments);
}

function settledAnswer(settled: SettledToolCall): SettledAnswer | undefined {
  const answer: Answer["answer"] = settled.answer?.answer;
  switch (answer?.$case) {
    case undefined:
      return undefined;
    case "text":
    case "reply":
      return { case: answer.$case, value: answer.value };
    case "selections":
      return { case: "selections", value: answer.value.labels };
    case "decline":
      return { case: "decline", value: answer.value.reason };
    case "form": {
      const values: Record<string, FormOutcomeValue> = {};
      for (const [name, value] of Object.entries(answer.value.values)) {
        const plain = fieldValue(value);
        if (plain !== undefined) values[name] = plain;
      }
      return { case: "form", value: values };
    }
    case "approval": {
      const decision = answer.value.decision;
      if (decision?.$case === "approve") return { case: "approve" };
      if (decision?.$case === "reject") return { case: "reject", value: decision.value.reason };
      if (decision?.$case === "edit") return { case: "edit", value: decision.value.argumentsJson };
      return { case: "other" };
    }
    default:
      return { case: "other" };
  }
}

function fieldValue(value: FieldValue): FormOutcomeValue | undefined {
  const field = value.value;
  if (field?.$case === "choice") return { values: field.value.values, other: field.value.other };
  return field?.value;
}
