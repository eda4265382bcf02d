import { Metadata, status, type CallOptions as GrpcCallOptions, type ChannelCredentials, type ChannelOptions, type ServiceError } from "@grpc/grpc-js";
import {
  AgentServiceClient,
  ApprovalPolicy,
  type Agent,
  type CancelRunResponse,
  type ClaimCallResponse,
  type GetRunResponse,
  type ListAgentsResponse,
  type ListRunsResponse,
  type Run as RunRecord,
  type RunAgentRequest,
  type RunAgentResponse,
  RunStatus,
  SuspendKind,
  type ToolDefinition,
  type WebhookSubscription,
} from "./gen/askuser/v1/agent";
import type { AskUserOption, SelectionMode } from "./gen/askuser/v1/ask_user";
import type { Duration } from "./gen/google/protobuf/duration";
import { ToolServiceClient, type AskUserResponse } from "./gen/askuser/v1/tool";
import { HumanServiceClient } from "./gen/askuser/v1/human";
import type { ApprovalOutcome, HumanOutcome, QuestionOutcome } from "./common/human";
import {
  buildAskRequest,
  HumanRequest,
  type AskApprovalInit,
  type AskFormInit,
  type AskInit,
  type AskOptions,
  type AskQuestionInit,
} from "./human";
import { callDeadline, cancelOnAbort, grpcCallArguments, type OpenCall } from "./call";
import type {
  AnswerValue,
  AskUserInput,
  CallOptions,
  ClaimCallOptions,
  ListRunsFilters,
  ResumeRunOptions,
  TokenProvider,
  WatchPendingCallsFilters,
} from "./common/options";
import { connection, type TlsOptions } from "./credentials";
import { AskUserError, toAskUserError } from "./error";
import { PendingCalls } from "./pending";
import { Backoff, DEFAULT_RECONNECT, retryWait, sleep, type Reconnect } from "./reconnect";
import { buildAnswer, Run, serverStreamEvents } from "./run";

/** How to connect, and who calls. */
export interface ClientOptions {
  /** TLS, verified against the system's roots or `tls.ca`, with a client certificate for mTLS; plaintext when absent. */
  tls?: TlsOptions;
  /** An API key (`ak_...`), sent as `authorization: Bearer <key>` on every call. */
  apiKey?: string;
  /** Called at the start of every call for the bearer token to send (e.g. a JWT that rotates); instead of `apiKey`. */
  tokenProvider?: TokenProvider;
  /** grpc-js channel credentials built by the caller, instead of `tls`. */
  credentials?: ChannelCredentials;
  /** grpc-js channel options, e.g. keepalive settings. */
  channelOptions?: ChannelOptions;
  /**
   * How calls ride out a dropped connection (see `Reconnect`): on by default (100 ms doubling to 2 s,
   * for up to 30 s per outage); `false` turns it off, so that `UNAVAILABLE` is thrown at once.
   */
  reconnect?: Reconnect | false;
}

/** Options of a new run, and of the `RunAgent` call that follows it. */
export interface StartRunOptions extends CallOptions {
  /** How long each question may wait for an answer, in milliseconds; the agent's default when absent. */
  questionTtlMs?: number;
  /** Client tools for this run only, offered to the model beside the agent's own tools. */
  tools?: ToolDefinitionInit[];
  /**
   * Idempotency key of this start (at most 256 bytes): a start that repeats the key of an earlier
   * one follows the run that one created instead of creating another.
   */
  requestId?: string;
  /**
   * Webhooks of this run only (e.g. `{ url, events: ["call.suspended"] }`): the server accepts a URL
   * only when it matches one of its `--webhook-allow` patterns.
   */
  webhooks?: WebhookSubscription[];
}

/** A client tool declared for one run: the caller runs it and settles its calls with `sendToolOutput`. */
export interface ToolDefinitionInit {
  /** The name the model calls it by: letters, digits, `_` and `-`, at most 64 characters. */
  name: string;
  /** What the tool does, as the model is told. */
  description?: string;
  /** JSON Schema of the arguments, as JSON text or as an object (sent as its JSON); any JSON object when absent. */
  parametersJsonSchema?: string | Record<string, unknown>;
  /** `ApprovalPolicy.APPROVAL_POLICY_ALWAYS` makes every call wait for approval; the default is never. */
  approval?: ApprovalPolicy;
}

/** Filters of `watchPendingCalls` and the options of the call (see `WatchPendingCallsFilters`). */
export type WatchPendingCallsOptions = WatchPendingCallsFilters<SuspendKind>;

/** Filters and paging of `listRuns` and the options of the call (see `ListRunsFilters`). */
export type ListRunsOptions = ListRunsFilters<RunStatus, SuspendKind>;

/** The input of the `ask_user` tool. */
export type AskUserInputInit = AskUserInput<SelectionMode>;

function toolDefinition(tool: ToolDefinitionInit): ToolDefinition {
  const schema = tool.parametersJsonSchema ?? "";
  return {
    name: tool.name,
    description: tool.description ?? "",
    parametersJsonSchema: typeof schema === "string" ? schema : JSON.stringify(schema),
    approval: tool.approval ?? ApprovalPolicy.APPROVAL_POLICY_UNSPECIFIED,
  };
}

function millisToDuration(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1_000_000) };
}

/** Options of `askHuman` with a question given as text: its offered options, and the request's. */
export type AskHumanOptions = AskOptions & Omit<AskQuestionInit, keyof AskOptions | "question">;

/** Options of `requestApproval`: why approval is asked, and the request's. */
export interface RequestApprovalOptions extends AskOptions {
  /** Why approval is asked, shown to the approver. */
  reason?: string;
}

/** A client of an askuser server (`AgentService`, `HumanService` and `ToolService`). Call `close()` when done. */
export class AskUserClient {
  readonly #agents: AgentServiceClient;
  readonly #human: HumanServiceClient;
  readonly #tools: ToolServiceClient;
  /** Calls not ended yet, which `close()` cancels: grpc-js lets calls outlive a closed channel. */
  readonly #open = new Set<OpenCall>();
  /** The reconnection policy; undefined when off. */
  readonly #reconnect: Required<Reconnect> | undefined;

  /**
   * @param address `host:port` of the server.
   * @throws TypeError when options conflict (`apiKey` and `tokenProvider`, `tls` and `credentials`,
   * `tls.cert` without `tls.key`).
   */
  constructor(address: string, options: ClientOptions = {}) {
    const { reconnect } = options;
    this.#reconnect =
      reconnect === false
        ? undefined
        : {
            initialBackoffMs: reconnect?.initialBackoffMs ?? DEFAULT_RECONNECT.initialBackoffMs,
            maxBackoffMs: reconnect?.maxBackoffMs ?? DEFAULT_RECONNECT.maxBackoffMs,
            totalMs: reconnect?.totalMs ?? DEFAULT_RECONNECT.totalMs,
          };
    // grpc-js backs off reconnecting a channel up to 120 s, longer than a whole outage may last:
    // keep its attempts as frequent as the policy's (channel options given by the caller win).
    const channelOptions =
      this.#reconnect === undefined
        ? options.channelOptions
        : { "grpc.max_reconnect_backoff_ms": this.#reconnect.maxBackoffMs, ...options.channelOptions };
    const { channelCredentials, clientOptions } = connection({ ...options, channelOptions });
    this.#agents = new AgentServiceClient(address, channelCredentials, clientOptions);
    this.#human = new HumanServiceClient(address, channelCredentials, clientOptions);
    this.#tools = new ToolServiceClient(address, channelCredentials, clientOptions);
  }

  /**
   * Starts a run of an agent and follows it. `options.tools` adds client tools for this run only; a
   * bad definition fails the stream with INVALID_ARGUMENT naming the field (e.g.
   * `start.tools[0].parameters_json_schema`). `await run.started` for the run's id.
   */
  startRun(agentId: string, prompt: string, metadata: Record<string, string> = {}, options: StartRunOptions = {}): Run {
    const questionTtl = options.questionTtlMs === undefined ? undefined : millisToDuration(options.questionTtlMs);
    const tools = (options.tools ?? []).map(toolDefinition);
    return this.#runAgent(
      {
        frame: {
          $case: "start",
          value: {
            agentId,
            prompt,
            metadata,
            questionTtl,
            tools,
            requestId: options.requestId ?? "",
            webhooks: options.webhooks ?? [],
          },
        },
      },
      options,
    );
  }

  /** Follows an existing run, e.g. after a dropped connection: replays its events after `afterSequence`, then live. */
  attach(runId: string, afterSequence = 0, options: CallOptions = {}): Run {
    return this.#runAgent({ frame: { $case: "attach", value: { runId, afterSequence } } }, options);
  }

  /**
   * Settles one pending call of a suspended run (an answer, a tool output or an approval decision)
   * without a bidirectional stream, then yields what follows (first `answerAccepted`) until the run
   * waits again or ends. A bad answer throws an AskUserError.
   */
  resumeRun(runId: string, toolCallId: string, answer: AnswerValue, options: ResumeRunOptions = {}): AsyncIterable<RunAgentResponse> {
    const request = { answer: buildAnswer(toolCallId, answer, { answerId: options.answerId, runId }) };
    const { metadata, callOptions } = grpcCallArguments(options);
    return serverStreamEvents(this.#track(this.#agents.resumeRun(request, metadata, callOptions), options.signal));
  }

  /**
   * Replays a run's events after `afterSequence`, then follows it live until it ends, without
   * answering. A stream dropped with `UNAVAILABLE` reopens after the last sequence it delivered.
   */
  watchRun(runId: string, afterSequence = 0, options: CallOptions = {}): AsyncIterable<RunAgentResponse> {
    const deadline = callDeadline(options);
    const backoff = this.#reconnect && new Backoff(this.#reconnect);
    const open = (after: number) => {
      const { metadata, callOptions } = grpcCallArguments(options, deadline);
      return serverStreamEvents(this.#track(this.#agents.watchRun({ runId, afterSequence: after }, metadata, callOptions), options.signal));
    };
    // The first call opens at once, as every call does: its failure is thrown when iterated.
    const first = open(afterSequence);
    return (async function* () {
      let events = first;
      let after = afterSequence;
      for (;;) {
        try {
          for await (const frame of events) {
            backoff?.reset();
            after = Math.max(after, frame.sequence);
            yield frame;
          }
          return;
        } catch (error) {
          const wait = retryWait(error, backoff, deadline);
          if (wait === undefined) throw error;
          await sleep(wait, options.signal);
          events = open(after);
        }
      }
    })();
  }

  /**
   * Follows the calls that wait for someone, across runs: every call pending now, `snapshotDone`,
   * then new pending calls and settlements live, until `close()`. Reconnecting replays the snapshot.
   */
  watchPendingCalls(filters: WatchPendingCallsOptions = {}): PendingCalls {
    const request = {
      agentIds: filters.agentIds ?? [],
      toolNames: filters.toolNames ?? [],
      kinds: filters.kinds ?? [],
      assignedToMe: filters.assignedToMe ?? false,
    };
    const deadline = callDeadline(filters);
    return new PendingCalls(() => {
      const { metadata, callOptions } = grpcCallArguments(filters, deadline);
      return this.#track(this.#agents.watchPendingCalls(request, metadata, callOptions), filters.signal);
    }, this.#reconnect && new Backoff(this.#reconnect), deadline, filters.signal);
  }

  /**
   * Claims a pending call for `claimant` (e.g. a worker's name), so that other workers on the feed
   * leave it alone; claiming again renews the claim. Resolves to when the claim lapses. Another
   * claimant's live claim rejects with FAILED_PRECONDITION, reason `ALREADY_CLAIMED`. A claim never
   * blocks settling: the first settlement wins.
   */
  async claimCall(runId: string, toolCallId: string, claimant: string, options: ClaimCallOptions = {}): Promise<Date> {
    const ttl = options.ttlMs === undefined ? undefined : millisToDuration(options.ttlMs);
    const { expireTime } = await this.#unary<ClaimCallResponse>(options, (metadata, callOptions, done) =>
      this.#agents.claimCall({ runId, toolCallId, claimant, ttl }, metadata, callOptions, done),
    );
    return expireTime!;
  }

  /** One run with its pending calls. Retried on `UNAVAILABLE` (see `Reconnect`), as are `listRuns`, `cancelRun` and `listAgents`. */
  async getRun(runId: string, options: CallOptions = {}): Promise<RunRecord> {
    const { run } = await this.#unary<GetRunResponse>(options, (metadata, callOptions, done) =>
      this.#agents.getRun({ runId }, metadata, callOptions, done),
      true,
    );
    return run!;
  }

  /** One page of runs, newest first. */
  listRuns(options: ListRunsOptions = {}): Promise<ListRunsResponse> {
    const request = {
      status: options.status ?? RunStatus.RUN_STATUS_UNSPECIFIED,
      agentId: options.agentId ?? "",
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
      metadata: options.metadata ?? {},
      createTimeAfter: options.createdAfter,
      createTimeBefore: options.createdBefore,
      pendingKind: options.pendingKind ?? SuspendKind.SUSPEND_KIND_UNSPECIFIED,
      requestsOnly: options.requestsOnly ?? false,
    };
    return this.#unary<ListRunsResponse>(options, (metadata, callOptions, done) =>
      this.#agents.listRuns(request, metadata, callOptions, done),
      true,
    );
  }

  /** Cancels a run and returns it; a no-op for a run already cancelled. */
  async cancelRun(runId: string, reason = "", options: CallOptions = {}): Promise<RunRecord> {
    const { run } = await this.#unary<CancelRunResponse>(options, (metadata, callOptions, done) =>
      this.#agents.cancelRun({ runId, reason }, metadata, callOptions, done),
      true,
    );
    return run!;
  }

  /** The agents the server runs, ordered by id. */
  async listAgents(options: CallOptions = {}): Promise<Agent[]> {
    const { agents } = await this.#unary<ListAgentsResponse>(options, (metadata, callOptions, done) =>
      this.#agents.listAgents({}, metadata, callOptions, done),
      true,
    );
    return agents;
  }

  /** Validates an `ask_user` input outside any run and returns the tool's readable fallback text. */
  async askUser(input: AskUserInputInit, options: CallOptions = {}): Promise<string> {
    const askOptions: AskUserOption[] = (input.options ?? []).map(({ label, description = "" }) => ({ label, description }));
    const request = { input: { question: input.question, options: askOptions, selectionMode: input.selectionMode } };
    const { content } = await this.#unary<AskUserResponse>(options, (metadata, callOptions, done) =>
      this.#tools.askUser(request, metadata, callOptions, done),
    );
    return content;
  }

  /**
   * Asks a person from any code (`HumanService.Ask`): a `question` (free text, or `options` to
   * select), a `form` or an `approval` of a tool call, with `context` shown beside it. Resolves once
   * the request's call waits for someone (through the inbox, the terminal, the pending-calls feed and
   * webhooks, as a run's call does), to a handle whose `wait()` gives the typed outcome.
   *
   * The request is made once whatever the connection does: it carries `requestId` (a random UUID
   * unless given), and a dropped connection (`UNAVAILABLE`) asks again with it under the client's
   * `reconnect` policy, which follows the same request. `timeoutMs` and `signal` bound this call
   * only (`wait` takes its own). Bad input rejects with an AskUserError, `INVALID_ARGUMENT`, whose
   * `fieldViolations` name the field (e.g. `question.question`, `approval.tool_name`).
   * @throws TypeError when `init` asks more than one thing.
   */
  ask(init: AskApprovalInit): Promise<HumanRequest<ApprovalOutcome>>;
  ask(init: AskQuestionInit | AskFormInit): Promise<HumanRequest<QuestionOutcome>>;
  ask(init: AskInit): Promise<HumanRequest>;
  async ask(init: AskInit): Promise<HumanRequest> {
    const { request, asked, argumentsJson } = buildAskRequest(init);
    const deadline = callDeadline(init);
    const backoff = this.#reconnect && new Backoff(this.#reconnect);
    const reader = { watchRun: this.watchRun.bind(this), getRun: this.getRun.bind(this) };
    for (;;) {
      const { metadata, callOptions } = grpcCallArguments(init, deadline);
      const frames = serverStreamEvents(this.#track(this.#human.ask(request, metadata, callOptions), init.signal));
      try {
        // A retry follows the same request from its first event, so every attempt reads it anew.
        for await (const frame of frames) {
          backoff?.reset();
          if (frame.event?.$case === "toolCallSuspended") {
            // Leaving the loop drops this stream; `wait` follows the run from here.
            return new HumanRequest(reader, asked ?? "question", argumentsJson, request.requestId, frame.runId, frame.event.value, frame.sequence);
          }
        }
        throw new AskUserError(status.INTERNAL, "the request's stream ended before its call waited", new Metadata());
      } catch (error) {
        const wait = retryWait(error, backoff, deadline);
        if (wait === undefined) throw error;
        await sleep(wait, init.signal);
      }
    }
  }

  /**
   * Asks a question (or a form) and waits for the answer: `ask(...)` then `wait()`, under one
   * `timeoutMs` and `signal`. Resolves to a `QuestionOutcome`: `text`, `selections`, `form` (its
   * values), `declined`, `replied`, `expired` or `cancelled`, with who settled it.
   */
  askHuman(question: string, options?: AskHumanOptions): Promise<QuestionOutcome>;
  askHuman(init: AskQuestionInit | AskFormInit): Promise<QuestionOutcome>;
  async askHuman(question: string | AskQuestionInit | AskFormInit, options: AskHumanOptions = {}): Promise<QuestionOutcome> {
    const init: AskQuestionInit | AskFormInit = typeof question === "string" ? { ...options, question } : question;
    return this.#askAndWait(init) as Promise<QuestionOutcome>;
  }

  /**
   * Asks a person to approve a tool call before the caller runs it, and waits for the decision:
   * `approved` (run it with `arguments`, the ones asked with), `edited` (run it with the approver's
   * `arguments` instead), `rejected` (with the `reason`), `expired` or `cancelled`. askuser never runs
   * the tool. `args` is an object (sent as its JSON) or JSON text of one.
   */
  async requestApproval(toolName: string, args: Record<string, unknown> | string, options: RequestApprovalOptions = {}): Promise<ApprovalOutcome> {
    const { reason = "", ...rest } = options;
    return this.#askAndWait({ ...rest, approval: { toolName, arguments: args, reason } }) as Promise<ApprovalOutcome>;
  }

  /** `ask` then `wait`, both within the one deadline of `init`. */
  async #askAndWait(init: AskInit): Promise<HumanOutcome> {
    const deadline = callDeadline(init);
    const request = await this.ask(init);
    const timeoutMs = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
    return request.wait({ timeoutMs, signal: init.signal, headers: init.headers });
  }

  /** Closes the connection; calls in flight fail with CANCELLED. */
  close(): void {
    for (const call of this.#open) call.cancel();
    this.#agents.close();
    this.#human.close();
    this.#tools.close();
  }

  /** A `RunAgent` stream whose first frame is `first`; a reattachment keeps the deadline and signal of `options`. */
  #runAgent(first: RunAgentRequest, options: CallOptions): Run {
    const deadline = callDeadline(options);
    const open = () => {
      const { metadata, callOptions } = grpcCallArguments(options, deadline);
      return this.#track(this.#agents.runAgent(metadata, callOptions), options.signal);
    };
    return new Run(open, first, this.#reconnect && new Backoff(this.#reconnect), deadline, options.signal);
  }

  /** Keeps `call` among the open calls until it ends, and cancels it when `signal` aborts. */
  #track<Call extends OpenCall>(call: Call, signal: AbortSignal | undefined): Call {
    this.#open.add(call);
    call.on("status", () => this.#open.delete(call));
    cancelOnAbort(call, signal);
    return call;
  }

  /**
   * Runs one unary call as a promise, given its call options and a function that starts it with
   * grpc-js metadata, call options and a callback. An `idempotent` call is retried on `UNAVAILABLE`
   * under the reconnection policy, within the call's deadline.
   */
  async #unary<Response>(
    options: CallOptions,
    start: (
      metadata: Metadata,
      callOptions: Partial<GrpcCallOptions>,
      callback: (error: ServiceError | null, response: Response) => void,
    ) => OpenCall,
    idempotent = false,
  ): Promise<Response> {
    const deadline = callDeadline(options);
    const backoff = idempotent && this.#reconnect ? new Backoff(this.#reconnect) : undefined;
    for (;;) {
      const { metadata, callOptions } = grpcCallArguments(options, deadline);
      try {
        return await new Promise<Response>((resolve, reject) => {
          const done = (error: ServiceError | null, response: Response) => (error ? reject(toAskUserError(error)) : resolve(response));
          this.#track(start(metadata, callOptions, done), options.signal);
        });
      } catch (error) {
        const wait = retryWait(error, backoff, deadline);
        if (wait === undefined) throw error;
        await sleep(wait, options.signal);
      }
    }
  }
}
