import type { CallOptions as GrpcCallOptions, ChannelCredentials, ChannelOptions, Metadata, ServiceError } from "@grpc/grpc-js";
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
  type RunAgentResponse,
  RunStatus,
  SuspendKind,
  type ToolDefinition,
  type WebhookSubscription,
} from "./gen/askuser/v1/agent";
import type { AskUserOption, SelectionMode } from "./gen/askuser/v1/ask_user";
import type { Duration } from "./gen/google/protobuf/duration";
import { ToolServiceClient, type AskUserResponse } from "./gen/askuser/v1/tool";
import { cancelOnAbort, grpcCallArguments, type CallOptions, type OpenCall } from "./call";
import { connection, type TlsOptions, type TokenProvider } from "./credentials";
import { toAskUserError } from "./error";
import { PendingCalls } from "./pending";
import { buildAnswer, Run, serverStreamEvents, type AnswerValue } from "./run";

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

/**
 * Filters of `watchPendingCalls`, which combine with AND (an absent or empty one matches everything),
 * and the options of the call.
 */
export interface WatchPendingCallsOptions extends CallOptions {
  /** Only calls of runs of these agents. */
  agentIds?: string[];
  /** Only calls of these tools. */
  toolNames?: string[];
  /** Only calls waiting for these kinds of settlement, e.g. `SuspendKind.SUSPEND_KIND_CLIENT_TOOL`. */
  kinds?: SuspendKind[];
  /** Only calls whose assignees name the caller (its subject, or one of its groups). */
  assignedToMe?: boolean;
}

/** Options of `claimCall`. */
export interface ClaimCallOptions extends CallOptions {
  /** How long the claim lasts unless renewed, in milliseconds (1 s to 1 h); the server's default (60 s) when absent. */
  ttlMs?: number;
}

/** Filters and paging of `listRuns`, and the options of the call. */
export interface ListRunsOptions extends CallOptions {
  /** Only runs in this status. */
  status?: RunStatus;
  /** Only runs of this agent. */
  agentId?: string;
  /** Runs per page, 1 to 1000; the server's default (50) when absent. */
  pageSize?: number;
  /** The `nextPageToken` of the previous page. */
  pageToken?: string;
  /** Only runs whose metadata has every one of these entries, with exactly these values. */
  metadata?: Record<string, string>;
  /** Only runs created at or after this time. */
  createdAfter?: Date;
  /** Only runs created before this time. */
  createdBefore?: Date;
  /** Only runs with a call waiting for this kind of settlement. */
  pendingKind?: SuspendKind;
}

/** Options of `resumeRun`. */
export interface ResumeRunOptions extends CallOptions {
  /** Idempotency key: a retry with the same key is acknowledged as a duplicate, not rejected. */
  answerId?: string;
}

/** The input of the `ask_user` tool. */
export interface AskUserInputInit {
  question: string;
  options?: { label: string; description?: string }[];
  selectionMode?: SelectionMode;
}

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

/** A client of an askuser server (`AgentService` and `ToolService`). Call `close()` when done. */
export class AskUserClient {
  readonly #agents: AgentServiceClient;
  readonly #tools: ToolServiceClient;
  /** Calls not ended yet, which `close()` cancels: grpc-js lets calls outlive a closed channel. */
  readonly #open = new Set<OpenCall>();

  /**
   * @param address `host:port` of the server.
   * @throws TypeError when options conflict (`apiKey` and `tokenProvider`, `tls` and `credentials`,
   * `tls.cert` without `tls.key`).
   */
  constructor(address: string, options: ClientOptions = {}) {
    const { channelCredentials, clientOptions } = connection(options);
    this.#agents = new AgentServiceClient(address, channelCredentials, clientOptions);
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
    const { metadata: headers, callOptions } = grpcCallArguments(options);
    return new Run(
      this.#track(this.#agents.runAgent(headers, callOptions), options.signal),
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
      "",
    );
  }

  /** Follows an existing run, e.g. after a dropped connection: replays its events after `afterSequence`, then live. */
  attach(runId: string, afterSequence = 0, options: CallOptions = {}): Run {
    const { metadata, callOptions } = grpcCallArguments(options);
    const call = this.#track(this.#agents.runAgent(metadata, callOptions), options.signal);
    return new Run(call, { frame: { $case: "attach", value: { runId, afterSequence } } }, runId);
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

  /** Replays a run's events after `afterSequence`, then follows it live until it ends, without answering. */
  watchRun(runId: string, afterSequence = 0, options: CallOptions = {}): AsyncIterable<RunAgentResponse> {
    const { metadata, callOptions } = grpcCallArguments(options);
    return serverStreamEvents(this.#track(this.#agents.watchRun({ runId, afterSequence }, metadata, callOptions), options.signal));
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
    const { metadata, callOptions } = grpcCallArguments(filters);
    return new PendingCalls(this.#track(this.#agents.watchPendingCalls(request, metadata, callOptions), filters.signal));
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

  /** One run with its pending calls. */
  async getRun(runId: string, options: CallOptions = {}): Promise<RunRecord> {
    const { run } = await this.#unary<GetRunResponse>(options, (metadata, callOptions, done) =>
      this.#agents.getRun({ runId }, metadata, callOptions, done),
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
    };
    return this.#unary<ListRunsResponse>(options, (metadata, callOptions, done) =>
      this.#agents.listRuns(request, metadata, callOptions, done),
    );
  }

  /** Cancels a run and returns it; a no-op for a run already cancelled. */
  async cancelRun(runId: string, reason = "", options: CallOptions = {}): Promise<RunRecord> {
    const { run } = await this.#unary<CancelRunResponse>(options, (metadata, callOptions, done) =>
      this.#agents.cancelRun({ runId, reason }, metadata, callOptions, done),
    );
    return run!;
  }

  /** The agents the server runs, ordered by id. */
  async listAgents(options: CallOptions = {}): Promise<Agent[]> {
    const { agents } = await this.#unary<ListAgentsResponse>(options, (metadata, callOptions, done) =>
      this.#agents.listAgents({}, metadata, callOptions, done),
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

  /** Closes the connection; calls in flight fail with CANCELLED. */
  close(): void {
    for (const call of this.#open) call.cancel();
    this.#agents.close();
    this.#tools.close();
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
   * grpc-js metadata, call options and a callback.
   */
  #unary<Response>(
    options: CallOptions,
    start: (
      metadata: Metadata,
      callOptions: Partial<GrpcCallOptions>,
      callback: (error: ServiceError | null, response: Response) => void,
    ) => OpenCall,
  ): Promise<Response> {
    const { metadata, callOptions } = grpcCallArguments(options);
    return new Promise((resolve, reject) => {
      const done = (error: ServiceError | null, response: Response) => (error ? reject(toAskUserError(error)) : resolve(response));
      this.#track(start(metadata, callOptions, done), options.signal);
    });
  }
}
