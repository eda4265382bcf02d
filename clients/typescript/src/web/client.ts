import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, encodeBinaryHeader, type CallOptions as ConnectCallOptions, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  editedArguments,
  fieldValueCases,
  type AnswerValue,
  type AskUserInput,
  type CallOptions,
  type ClaimCallOptions,
  type ListRunsFilters,
  type ResumeRunOptions,
  type WatchPendingCallsFilters,
} from "../common/options.js";
import { AskUserError, toAskUserError } from "./error.js";
import {
  AgentService,
  RunStatus,
  SuspendKind,
  type Agent,
  type AnswerSchema,
  type ListRunsResponse,
  type Run,
  type RunAgentResponse,
  type WatchPendingCallsResponse,
} from "./gen/askuser/v1/agent_pb.js";
import type { SelectionMode } from "./gen/askuser/v1/ask_user_pb.js";
import { ToolService } from "./gen/askuser/v1/tool_pb.js";
import { HumanService } from "./gen/askuser/v1/human_pb.js";
import type { ApprovalOutcome, HumanOutcome, QuestionOutcome } from "../common/human.js";
import {
  buildAskRequest,
  WebHumanRequest,
  type AskApprovalInit,
  type AskFormInit,
  type AskInit,
  type AskOptions,
  type AskQuestionInit,
} from "./human.js";

/** Who calls, and how: the options of an `AskUserWebClient`. */
export interface WebClientOptions {
  /** An API key (`ak_...`), sent as `authorization: Bearer <key>` on every call. */
  apiKey?: string;
  /**
   * Called at the start of every call for the bearer token to send (e.g. a JWT that rotates); instead
   * of `apiKey`. Unlike the Node entry's, it may return undefined for no `authorization` header: a page
   * calls before its user has given a key, and learns from `UNAUTHENTICATED` that it needs one.
   */
  tokenProvider?: () => string | undefined | Promise<string | undefined>;
}

/** Filters of `watchPendingCalls` and the options of the call (see `WatchPendingCallsFilters`). */
export type WatchPendingCallsOptions = WatchPendingCallsFilters<SuspendKind>;

/** Filters and paging of `listRuns` and the options of the call (see `ListRunsFilters`). */
export type ListRunsOptions = ListRunsFilters<RunStatus, SuspendKind>;

/** The input of the `ask_user` tool. */
export type AskUserInputInit = AskUserInput<SelectionMode>;

/**
 * A client of an askuser server from a browser, over gRPC-Web (binary protobuf, on the server's gRPC
 * port): the verbs of the Node entry's `AskUserClient` that need no client stream. Browsers cannot
 * send one, so `startRun` and `attach` (`RunAgent`) are not here: a page answers with `resumeRun` and
 * follows a run with `watchRun`. Unlike the Node client it does not retry or reattach by itself
 * (a page decides how to show a lost connection); it holds no connection, so it has no `close()`.
 */
export class AskUserWebClient {
  readonly #agents: Client<typeof AgentService>;
  readonly #human: Client<typeof HumanService>;
  readonly #tools: Client<typeof ToolService>;

  /**
   * @param baseUrl the server's origin, e.g. `location.origin` for a page askuser serves itself.
   * @throws TypeError when both `apiKey` and `tokenProvider` are given.
   */
  constructor(baseUrl: string, options: WebClientOptions = {}) {
    const { apiKey, tokenProvider } = options;
    if (apiKey !== undefined && tokenProvider !== undefined) throw new TypeError("give either apiKey or tokenProvider, not both");
    const provider = apiKey !== undefined ? () => apiKey : tokenProvider;
    const transport = createGrpcWebTransport({
      baseUrl,
      useBinaryFormat: true,
      interceptors: provider === undefined ? [] : [bearerInterceptor(provider)],
    });
    this.#agents = createClient(AgentService, transport);
    this.#human = createClient(HumanService, transport);
    this.#tools = createClient(ToolService, transport);
  }

  /**
   * Asks a person (`HumanService.Ask`): as the Node client's `ask`, resolving once the call waits to
   * a handle whose `wait()` gives the typed outcome; without retries or reattachment of its own.
   */
  ask(init: AskApprovalInit): Promise<WebHumanRequest<ApprovalOutcome>>;
  ask(init: AskQuestionInit | AskFormInit): Promise<WebHumanRequest<QuestionOutcome>>;
  ask(init: AskInit): Promise<WebHumanRequest>;
  async ask(init: AskInit): Promise<WebHumanRequest> {
    const { request, asked, argumentsJson } = buildAskRequest(init);
    const reader = { watchRun: this.watchRun.bind(this), getRun: this.getRun.bind(this) };
    for await (const frame of stream(this.#human.ask(request, connectOptions(init)))) {
      if (frame.event.case === "toolCallSuspended") {
        return new WebHumanRequest(reader, asked ?? "question", argumentsJson, request.requestId, frame.runId, frame.event.value, Number(frame.sequence));
      }
    }
    throw new AskUserError(new ConnectError("the request's stream ended before its call waited", Code.Internal));
  }

  /** Asks a question or a form and waits for the answer (`ask` then `wait`). */
  askHuman(question: string, options?: AskOptions & Omit<AskQuestionInit, keyof AskOptions | "question">): Promise<QuestionOutcome>;
  askHuman(init: AskQuestionInit | AskFormInit): Promise<QuestionOutcome>;
  async askHuman(
    question: string | AskQuestionInit | AskFormInit,
    options: AskOptions & Omit<AskQuestionInit, keyof AskOptions | "question"> = {},
  ): Promise<QuestionOutcome> {
    const init: AskQuestionInit | AskFormInit = typeof question === "string" ? { ...options, question } : question;
    return this.#askAndWait(init) as Promise<QuestionOutcome>;
  }

  /** Asks a person to approve a tool call and waits for the decision (see the Node client's `requestApproval`). */
  async requestApproval(toolName: string, args: Record<string, unknown> | string, options: AskOptions & { reason?: string } = {}): Promise<ApprovalOutcome> {
    const { reason = "", ...rest } = options;
    return this.#askAndWait({ ...rest, approval: { toolName, arguments: args, reason } }) as Promise<ApprovalOutcome>;
  }

  async #askAndWait(init: AskInit): Promise<HumanOutcome> {
    const deadline = init.timeoutMs !== undefined && init.timeoutMs > 0 ? Date.now() + init.timeoutMs : undefined;
    const request = await this.ask(init);
    const timeoutMs = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
    return request.wait({ timeoutMs, signal: init.signal, headers: init.headers });
  }

  /** One run with its pending calls. */
  async getRun(runId: string, options: CallOptions = {}): Promise<Run> {
    const { run } = await unary(() => this.#agents.getRun({ runId }, connectOptions(options)));
    return run!;
  }

  /** One page of runs, newest first. */
  listRuns(options: ListRunsOptions = {}): Promise<ListRunsResponse> {
    const request = {
      status: options.status ?? RunStatus.UNSPECIFIED,
      agentId: options.agentId ?? "",
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
      metadata: options.metadata ?? {},
      createTimeAfter: options.createdAfter && timestampFromDate(options.createdAfter),
      createTimeBefore: options.createdBefore && timestampFromDate(options.createdBefore),
      pendingKind: options.pendingKind ?? SuspendKind.UNSPECIFIED,
      requestsOnly: options.requestsOnly ?? false,
    };
    return unary(() => this.#agents.listRuns(request, connectOptions(options)));
  }

  /** Cancels a run and returns it; a no-op for a run already cancelled. */
  async cancelRun(runId: string, reason = "", options: CallOptions = {}): Promise<Run> {
    const { run } = await unary(() => this.#agents.cancelRun({ runId, reason }, connectOptions(options)));
    return run!;
  }

  /** The agents the server runs, ordered by id. */
  async listAgents(options: CallOptions = {}): Promise<Agent[]> {
    const { agents } = await unary(() => this.#agents.listAgents({}, connectOptions(options)));
    return agents;
  }

  /**
   * Settles one pending call of a suspended run (an answer, a tool output or an approval decision),
   * then yields what follows (first `answerAccepted`) until the run waits again or ends. A bad answer
   * throws an AskUserError when iterated.
   */
  resumeRun(runId: string, toolCallId: string, answer: AnswerValue, options: ResumeRunOptions = {}): AsyncIterable<RunAgentResponse> {
    const request = { answer: buildAnswer(runId, toolCallId, answer, options.answerId ?? "") };
    return stream(this.#agents.resumeRun(request, connectOptions(options)));
  }

  /** Replays a run's events after `afterSequence`, then follows it live until it ends, without answering. */
  watchRun(runId: string, afterSequence = 0, options: CallOptions = {}): AsyncIterable<RunAgentResponse> {
    return stream(this.#agents.watchRun({ runId, afterSequence: BigInt(afterSequence) }, connectOptions(options)));
  }

  /**
   * Follows the calls that wait for someone, across runs: every call pending now, `snapshotDone`,
   * then new pending calls and settlements live. It does not end by itself: leave the loop, or abort
   * `filters.signal` (which throws CANCELLED).
   */
  watchPendingCalls(filters: WatchPendingCallsOptions = {}): AsyncIterable<WatchPendingCallsResponse> {
    const request = {
      agentIds: filters.agentIds ?? [],
      toolNames: filters.toolNames ?? [],
      kinds: filters.kinds ?? [],
      assignedToMe: filters.assignedToMe ?? false,
    };
    return stream(this.#agents.watchPendingCalls(request, connectOptions(filters)));
  }

  /**
   * Claims a pending call for `claimant`, so that other workers on the feed leave it alone; claiming
   * again renews the claim. Resolves to when the claim lapses. Another claimant's live claim rejects
   * with FAILED_PRECONDITION, reason `ALREADY_CLAIMED`.
   */
  async claimCall(runId: string, toolCallId: string, claimant: string, options: ClaimCallOptions = {}): Promise<Date> {
    const ttl = options.ttlMs === undefined ? undefined : durationFromMs(options.ttlMs);
    const { expireTime } = await unary(() => this.#agents.claimCall({ runId, toolCallId, claimant, ttl }, connectOptions(options)));
    return timestampDate(expireTime!);
  }

  /** Validates an `ask_user` input outside any run and returns the tool's readable fallback text. */
  async askUser(input: AskUserInputInit, options: CallOptions = {}): Promise<string> {
    const askOptions = (input.options ?? []).map(({ label, description = "" }) => ({ label, description }));
    const request = { input: { question: input.question, options: askOptions, selectionMode: input.selectionMode } };
    const { content } = await unary(() => this.#tools.askUser(request, connectOptions(options)));
    return content;
  }
}

/**
 * Sends `authorization: Bearer <token>` on every call, unless the call's own `headers` carry an
 * `authorization` (which then replaces the client's credentials, as on the Node client).
 */
function bearerInterceptor(provider: NonNullable<WebClientOptions["tokenProvider"]>): Interceptor {
  return (next) => async (request) => {
    if (!request.header.has("authorization")) {
      let token: string | undefined;
      try {
        token = await provider();
      } catch (error) {
        // UNAUTHENTICATED, as the Node client says: the call failed for want of credentials.
        throw new ConnectError(`the token provider failed: ${String(error)}`, Code.Unauthenticated, undefined, undefined, error);
      }
      if (token) request.header.set("authorization", `Bearer ${token}`);
    }
    return next(request);
  };
}

/** Connect's options of one call: no deadline for `timeoutMs <= 0`, and `-bin` headers base64-encoded as gRPC-Web sends them. */
function connectOptions({ timeoutMs, signal, headers = {} }: CallOptions): ConnectCallOptions {
  const header = new Headers();
  for (const [key, value] of Object.entries(headers)) {
    header.append(key, key.toLowerCase().endsWith("-bin") ? encodeBinaryHeader(value) : value);
  }
  return { timeoutMs: timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined, signal, headers: header };
}

/** One unary call, its failure as an AskUserError. */
async function unary<Response>(call: () => Promise<Response>): Promise<Response> {
  try {
    return await call();
  } catch (error) {
    throw toAskUserError(error);
  }
}

/**
 * The frames of a server stream without heartbeats (they only keep idle connections alive), its
 * failure as an AskUserError. Leaving the loop early ends the call (Connect aborts the request).
 */
async function* stream<Frame extends { event: { case: string | undefined } }>(frames: AsyncIterable<Frame>): AsyncGenerator<Frame> {
  try {
    for await (const frame of frames) {
      if (frame.event.case !== "heartbeat") yield frame;
    }
  } catch (error) {
    throw toAskUserError(error);
  }
}

/**
 * The `Answer` message `ResumeRun` carries, from the same `AnswerValue` the Node client takes.
 * @internal Exported for the tests, which check both entries build the same message; not in index.ts.
 */
export function buildAnswer(runId: string, toolCallId: string, value: AnswerValue, answerId: string): MessageInitShape<typeof AnswerSchema> {
  let answer: MessageInitShape<typeof AnswerSchema>["answer"];
  if ("text" in value) answer = { case: "text", value: value.text };
  else if ("selections" in value) answer = { case: "selections", value: { labels: value.selections } };
  else if ("decline" in value) answer = { case: "decline", value: { reason: value.decline } };
  else if ("form" in value) {
    // fieldValueCases gives each value in protobuf-es's own oneof shape, `{ case, value }`.
    const values = Object.fromEntries(Object.entries(fieldValueCases(value.form)).map(([name, field]) => [name, { value: field }]));
    answer = { case: "form", value: { values } };
  } else if ("reply" in value) answer = { case: "reply", value: value.reply };
  else if ("toolOutput" in value) {
    const { content, isError = false } = value.toolOutput;
    answer = { case: "toolOutput", value: { content, isError } };
  } else if ("approve" in value) {
    answer = { case: "approval", value: { decision: { case: "approve", value: {} } } };
  } else if ("reject" in value) {
    answer = { case: "approval", value: { decision: { case: "reject", value: { reason: value.reject } } } };
  } else {
    answer = { case: "approval", value: { decision: { case: "edit", value: { argumentsJson: editedArguments(value.edit) } } } };
  }
  return { runId, toolCallId, answerId, answer };
}
