import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  argumentsJson,
  askedKind,
  newRequestId,
  settledOutcome,
  type AskApproval,
  type AskCommonOptions,
  type AskedKind,
  type AskForm,
  type AskQuestion,
  type FormOutcomeValue,
  type HumanOutcome,
  type SettledAnswer,
} from "../common/human.js";
import type { CallOptions } from "../common/options.js";
import { AskUserError } from "./error.js";
import { RunStatus, ToolResultKind, type Run, type RunAgentResponse, type SettledToolCall, type ToolCallSuspended, type WebhookSubscriptionSchema } from "./gen/askuser/v1/agent_pb.js";
import type { SelectionMode } from "./gen/askuser/v1/ask_user_pb.js";
import type { FormSchema } from "./gen/askuser/v1/form_pb.js";
import type { AskRequestSchema } from "./gen/askuser/v1/human_pb.js";

/** The parts of `ask`'s options besides the call (see the Node entry's `AskOptions`). */
export type AskOptions = AskCommonOptions<MessageInitShape<typeof WebhookSubscriptionSchema>>;
export type AskQuestionInit = AskOptions & AskQuestion<SelectionMode>;
export type AskFormInit = AskOptions & AskForm<MessageInitShape<typeof FormSchema>>;
export type AskApprovalInit = AskOptions & AskApproval;
export type AskInit = AskQuestionInit | AskFormInit | AskApprovalInit;

/** The `AskRequest` of `init`, with its request id (generated when `init` has none). */
export function buildAskRequest(init: AskInit): { request: MessageInitShape<typeof AskRequestSchema> & { requestId: string }; asked: AskedKind | undefined; argumentsJson: string } {
  const asked = askedKind(init);
  let call: MessageInitShape<typeof AskRequestSchema>["call"];
  let args = "";
  if (init.question !== undefined) {
    const options = (init.options ?? []).map((option) =>
      typeof option === "string" ? { label: option, description: "" } : { label: option.label, description: option.description ?? "" },
    );
    call = { case: "question", value: { question: init.question, options, selectionMode: init.selectionMode } };
  } else if (init.form !== undefined) {
    call = { case: "form", value: init.form };
  } else if (init.approval !== undefined) {
    const { toolName, arguments: given, reason = "" } = init.approval;
    args = argumentsJson(given);
    call = { case: "approval", value: { toolName, argumentsJson: args, reason } };
  }
  const request = {
    call,
    context: init.context ?? "",
    assignees: init.assignees ?? [],
    ttl: init.ttlMs === undefined ? undefined : durationFromMs(init.ttlMs),
    metadata: init.metadata ?? {},
    webhooks: init.webhooks ?? [],
    requestId: init.requestId || newRequestId(),
  };
  return { request, asked, argumentsJson: args };
}

/** What a `WebHumanRequest` needs of the client. */
export interface WebRunReader {
  watchRun(runId: string, afterSequence: number, options: CallOptions): AsyncIterable<RunAgentResponse>;
  getRun(runId: string, options: CallOptions): Promise<Run>;
}

/**
 * A request made with `AskUserWebClient.ask` whose call waits for a person: `wait()` for its typed
 * outcome (as the Node entry's `HumanRequest`, without reconnecting by itself).
 */
export class WebHumanRequest<Outcome extends HumanOutcome = HumanOutcome> {
  readonly runId: string;
  readonly toolCallId: string;
  readonly requestId: string;
  readonly suspended: ToolCallSuspended;
  readonly #reader: WebRunReader;
  readonly #asked: AskedKind;
  readonly #argumentsJson: string;
  readonly #afterSequence: number;

  /** @internal Made by `AskUserWebClient.ask`. */
  constructor(reader: WebRunReader, asked: AskedKind, args: string, requestId: string, runId: string, suspended: ToolCallSuspended, afterSequence: number) {
    this.#reader = reader;
    this.#asked = asked;
    this.#argumentsJson = args;
    this.requestId = requestId;
    this.runId = runId;
    this.toolCallId = suspended.toolCallId;
    this.suspended = suspended;
    this.#afterSequence = afterSequence;
  }

  /** Waits until the call is settled and returns how; `timeoutMs` and `signal` end the wait. */
  async wait(options: CallOptions = {}): Promise<Outcome> {
    const { timeoutMs } = options;
    const deadline = timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
    const remaining = (): CallOptions => ({ ...options, timeoutMs: deadline === undefined ? undefined : Math.max(1, deadline - Date.now()) });
    for await (const frame of this.#reader.watchRun(this.runId, this.#afterSequence, remaining())) {
      const kind = frame.event.case;
      if (kind === "runCompleted" || kind === "runFailed" || kind === "runCancelled") break;
    }
    return webOutcomeOf(await this.#reader.getRun(this.runId, remaining()), this.toolCallId, this.#asked, this.#argumentsJson) as Outcome;
  }
}

/** The typed outcome of a request's call, from its run after the end. */
export function webOutcomeOf(run: Run, toolCallId: string, asked: AskedKind, askedArguments: string): HumanOutcome {
  const settled = run.settledToolCalls.find((call) => call.toolCallId === toolCallId);
  if (settled === undefined) {
    if (run.status === RunStatus.CANCELLED) return { kind: "cancelled", settledBy: "", content: "" };
    throw new AskUserError(new ConnectError(`the request ended without its call settled${run.errorMessage ? `: ${run.errorMessage}` : ""}`, Code.FailedPrecondition));
  }
  return settledOutcome(
    asked,
    ToolResultKind[settled.kind] ?? "UNSPECIFIED",
    settledAnswer(settled),
    { settledBy: settled.settledBy?.subject ?? "", content: settled.content },
    askedArguments,
  );
}

function settledAnswer(settled: SettledToolCall): SettledAnswer | undefined {
  const answer = settled.answer?.answer;
  switch (answer?.case) {
    case undefined:
      return undefined;
    case "text":
    case "reply":
      return { case: answer.case, value: answer.value };
    case "selections":
      return { case: "selections", value: answer.value.labels };
    case "decline":
      return { case: "decline", value: answer.value.reason };
    case "form": {
      const values: Record<string, FormOutcomeValue> = {};
      for (const [name, { value }] of Object.entries(answer.value.values)) {
        if (value.case === "choice") values[name] = { values: value.value.values, other: value.value.other };
        else if (value.case !== undefined) values[name] = value.value;
      }
      return { case: "form", value: values };
    }
    case "approval": {
      const decision = answer.value.decision;
      if (decision.case === "approve") return { case: "approve" };
      if (decision.case === "reject") return { case: "reject", value: decision.value.reason };
      if (decision.case === "edit") return { case: "edit", value: decision.value.argumentsJson };
      return { case: "other" };
    }
    default:
      return { case: "other" };
  }
}
