import { credentials as grpcCredentials, type ChannelCredentials, type ChannelOptions, type ServiceError } from "@grpc/grpc-js";
import {
  AgentServiceClient,
  type Agent,
  type CancelRunResponse,
  type GetRunResponse,
  type ListAgentsResponse,
  type ListRunsResponse,
  type Run as RunRecord,
  type RunAgentResponse,
  RunStatus,
} from "./gen/askuser/v1/agent";
import type { AskUserOption, SelectionMode } from "./gen/askuser/v1/ask_user";
import type { Duration } from "./gen/google/protobuf/duration";
import { ToolServiceClient, type AskUserResponse } from "./gen/askuser/v1/tool";
import { toAskUserError } from "./error";
import { buildAnswer, Run, runEvents, type AnswerOptions, type AnswerValue } from "./run";

/** How to connect. */
export interface ClientOptions {
  /** Channel credentials; plaintext (`credentials.createInsecure()`) when not given. */
  credentials?: ChannelCredentials;
  /** grpc-js channel options, e.g. keepalive settings. */
  channelOptions?: ChannelOptions;
}

/** Options of a new run. */
export interface StartRunOptions {
  /** How long each question may wait for an answer, in milliseconds; the agent's default when absent. */
  questionTtlMs?: number;
}

/** Filters and paging of `listRuns`. */
export interface ListRunsOptions {
  /** Only runs in this status. */
  status?: RunStatus;
  /** Only runs of this agent. */
  agentId?: string;
  /** Runs per page, 1 to 1000; the server's default (50) when absent. */
  pageSize?: number;
  /** The `nextPageToken` of the previous page. */
  pageToken?: string;
}

/** The input of the `ask_user` tool. */
export interface AskUserInputInit {
  question: string;
  options?: { label: string; description?: string }[];
  selectionMode?: SelectionMode;
}

/** Runs one unary call, given a function that starts it with a callback, as a promise. */
function callUnary<Response>(start: (callback: (error: ServiceError | null, response: Response) => void) => unknown): Promise<Response> {
  return new Promise((resolve, reject) => {
    start((error, response) => (error ? reject(toAskUserError(error)) : resolve(response)));
  });
}

function millisToDuration(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1_000_000) };
}

/** A client of an askuser server (`AgentService` and `ToolService`). Call `close()` when done. */
export class AskUserClient {
  readonly #agents: AgentServiceClient;
  readonly #tools: ToolServiceClient;

  /** @param address `host:port` of the server. */
  constructor(address: string, options: ClientOptions = {}) {
    const credentials = options.credentials ?? grpcCredentials.createInsecure();
    this.#agents = new AgentServiceClient(address, credentials, options.channelOptions);
    this.#tools = new ToolServiceClient(address, credentials, options.channelOptions);
  }

  /** Starts a run of an agent and follows it. */
  startRun(agentId: string, prompt: string, metadata: Record<string, string> = {}, options: StartRunOptions = {}): Run {
    const questionTtl = options.questionTtlMs === undefined ? undefined : millisToDuration(options.questionTtlMs);
    return new Run(
      this.#agents.runAgent(),
      { frame: { $case: "start", value: { agentId, prompt, metadata, questionTtl } } },
      "",
    );
  }

  /** Follows an existing run, e.g. after a dropped connection: replays its events after `afterSequence`, then live. */
  attach(runId: string, afterSequence = 0): Run {
    return new Run(this.#agents.runAgent(), { frame: { $case: "attach", value: { runId, afterSequence } } }, runId);
  }

  /**
   * Answers one question of a suspended run without a bidirectional stream, then yields what follows
   * (first `answerAccepted`) until the run waits again or ends. A bad answer throws an AskUserError.
   */
  resumeRun(runId: string, toolCallId: string, answer: AnswerValue, options: Omit<AnswerOptions, "runId"> = {}): AsyncIterable<RunAgentResponse> {
    return runEvents(this.#agents.resumeRun({ answer: buildAnswer(toolCallId, answer, { ...options, runId }) }));
  }

  /** Replays a run's events after `afterSequence`, then follows it live until it ends, without answering. */
  watchRun(runId: string, afterSequence = 0): AsyncIterable<RunAgentResponse> {
    return runEvents(this.#agents.watchRun({ runId, afterSequence }));
  }

  /** One run with its pending questions. */
  async getRun(runId: string): Promise<RunRecord> {
    const { run } = await callUnary<GetRunResponse>((done) => this.#agents.getRun({ runId }, done));
    return run!;
  }

  /** One page of runs, newest first. */
  listRuns(options: ListRunsOptions = {}): Promise<ListRunsResponse> {
    const request = {
      status: options.status ?? RunStatus.RUN_STATUS_UNSPECIFIED,
      agentId: options.agentId ?? "",
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
    };
    return callUnary<ListRunsResponse>((done) => this.#agents.listRuns(request, done));
  }

  /** Cancels a run and returns it; a no-op for a run already cancelled. */
  async cancelRun(runId: string, reason = ""): Promise<RunRecord> {
    const { run } = await callUnary<CancelRunResponse>((done) => this.#agents.cancelRun({ runId, reason }, done));
    return run!;
  }

  /** The agents the server runs, ordered by id. */
  async listAgents(): Promise<Agent[]> {
    const { agents } = await callUnary<ListAgentsResponse>((done) => this.#agents.listAgents({}, done));
    return agents;
  }

  /** Validates an `ask_user` input outside any run and returns the tool's readable fallback text. */
  async askUser(input: AskUserInputInit): Promise<string> {
    const options: AskUserOption[] = (input.options ?? []).map(({ label, description = "" }) => ({ label, description }));
    const request = { input: { question: input.question, options, selectionMode: input.selectionMode } };
    const { content } = await callUnary<AskUserResponse>((done) => this.#tools.askUser(request, done));
    return content;
  }

  /** Closes the connection; calls in flight fail with CANCELLED. */
  close(): void {
    this.#agents.close();
    this.#tools.close();
  }
}
