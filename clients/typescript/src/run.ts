import { Metadata, status, type ClientDuplexStream } from "@grpc/grpc-js";
import { editedArguments, fieldValueCases, type AnswerValue, type FormValues } from "./common/options";
import { AskUserError, toAskUserError } from "./error";
import { Answer, RunAgentRequest, type RunAgentResponse } from "./gen/askuser/v1/agent";
import type { FieldValue, FormAnswer } from "./gen/askuser/v1/form";
import { retryWait, sleep, type Backoff } from "./reconnect";

/** Optional parts of an answer. */
export interface AnswerOptions {
  /** Idempotency key: a retry with the same key is acknowledged as a duplicate, not rejected. */
  answerId?: string;
  /** The run the question belongs to; empty (the default) means the run of the stream it is sent on. */
  runId?: string;
}

/** Options of a client tool's output. */
export interface ToolOutputOptions extends AnswerOptions {
  /** The tool failed: the model is told the result is an error. */
  isError?: boolean;
}

/** Builds the `Answer` message that both `RunAgent` frames and `ResumeRun` carry. */
export function buildAnswer(toolCallId: string, value: AnswerValue, options: AnswerOptions = {}): Answer {
  let answer: Answer["answer"];
  if ("text" in value) answer = { $case: "text", value: value.text };
  else if ("selections" in value) answer = { $case: "selections", value: { labels: value.selections } };
  else if ("decline" in value) answer = { $case: "decline", value: { reason: value.decline } };
  else if ("form" in value) answer = { $case: "form", value: formAnswer(value.form) };
  else if ("reply" in value) answer = { $case: "reply", value: value.reply };
  else if ("toolOutput" in value) {
    const { content, isError = false } = value.toolOutput;
    answer = { $case: "toolOutput", value: { content, isError } };
  } else if ("approve" in value) {
    answer = { $case: "approval", value: { decision: { $case: "approve", value: {} } } };
  } else if ("reject" in value) {
    answer = { $case: "approval", value: { decision: { $case: "reject", value: { reason: value.reject } } } };
  } else {
    answer = { $case: "approval", value: { decision: { $case: "edit", value: { argumentsJson: editedArguments(value.edit) } } } };
  }
  return { runId: options.runId ?? "", toolCallId, answer, answerId: options.answerId ?? "" };
}

/** A form's values as the contract's `FormAnswer` (see `FormFieldValue` for what each value may be). */
function formAnswer(values: FormValues): FormAnswer {
  const fieldValues: Record<string, FieldValue> = {};
  for (const [name, field] of Object.entries(fieldValueCases(values))) {
    // ts-proto names a oneof's case `$case`; the union is the same otherwise.
    fieldValues[name] = { value: { $case: field.case, value: field.value } as FieldValue["value"] };
  }
  return { values: fieldValues };
}

/**
 * Yields the frames of a server stream, leaving out heartbeats (they only keep idle connections
 * alive), and turns a failed status into an AskUserError. Leaving early (break, return, a throw in
 * the loop body) cancels the call, which grpc-js would otherwise keep open.
 */
export async function* runEvents<Frame extends { event?: { $case: string } | undefined }>(
  call: AsyncIterable<Frame> & { cancel(): void },
): AsyncGenerator<Frame> {
  try {
    for await (const frame of call) {
      if (frame.event?.$case !== "heartbeat") yield frame;
    }
  } catch (error) {
    throw toAskUserError(error);
  } finally {
    call.cancel(); // a no-op once the call has ended
  }
}

/**
 * The frames of a server stream (`watchRun`, `resumeRun`) as `runEvents` yields them. The stream's
 * error is kept from the start, so that a call failing before it is iterated (e.g. aborted, or past
 * its deadline) throws when iterated instead of crashing the process with an unhandled 'error' event.
 */
export function serverStreamEvents<Frame extends { event?: { $case: string } | undefined }>(
  call: AsyncIterable<Frame> & { cancel(): void; on(event: "error", listener: (error: unknown) => void): unknown },
): AsyncGenerator<Frame> {
  let failure: unknown;
  call.on("error", (error) => {
    failure ??= error;
  });
  return (async function* () {
    yield* runEvents(call);
    if (failure !== undefined) throw toAskUserError(failure);
  })();
}

/**
 * A run followed over a `RunAgent` stream: iterate it for the run's events, and settle its pending
 * calls: questions with `answerText`, `answerSelections` or `decline`, forms with `answerForm` (or
 * `decline`), either with `reply` (prose instead of an answer), client tool calls with
 * `sendToolOutput`, approvals with `approve`, `reject` or `edit` (or any of them with `answer`). Answers are acknowledged
 * in-band by an `answerAccepted` or `answerRejected` event. Iteration ends when the run completes, fails or is
 * cancelled, and throws an AskUserError when the stream fails.
 *
 * `await run.started` gives the run's id once the server has started it, whether or not the frames
 * are being iterated yet (frames read meanwhile are kept for the iteration).
 *
 * Reattachment (under the client's `reconnect` policy): when the stream drops with `UNAVAILABLE` (a
 * server restart, a reset connection) after the run started, the iteration reopens it with an
 * `attach` after the last sequence it delivered and goes on, no stored frame lost or repeated. Answers
 * sent while the stream is down, or sent before the drop and not yet acknowledged, are sent again on
 * the new stream: give them an `answerId` so that a resent answer the server already had is
 * acknowledged as a duplicate instead of rejected.
 *
 * A Run can be iterated once: every iterator shares the one stream.
 */
export class Run implements AsyncIterable<RunAgentResponse> {
  /** Opens a `RunAgent` call (with the first call's deadline and signal). */
  readonly #open: () => ClientDuplexStream<RunAgentRequest, RunAgentResponse>;
  readonly #backoff: Backoff | undefined;
  readonly #deadline: number | undefined;
  readonly #signal: AbortSignal | undefined;
  /** The current call, and whether it is still open (answers are written to it only then). */
  #call: ClientDuplexStream<RunAgentRequest, RunAgentResponse>;
  #live = false;
  /** Answers sent and not acknowledged yet, resent on a reattached stream. */
  readonly #unacknowledged: RunAgentRequest[] = [];
  /** The sequence of the last stored frame delivered, where a reattachment picks up. */
  #lastSequence: number;
  /** The stream's frames, as read from the calls. */
  readonly #events: AsyncGenerator<RunAgentResponse>;
  /** The frames the caller iterates: those `started` read ahead first, then the rest of `#events`. */
  readonly #frames: AsyncGenerator<RunAgentResponse>;
  /** Reads of `#events` that `started` made ahead of the iteration, in order. */
  readonly #ahead: Promise<IteratorResult<RunAgentResponse>>[] = [];
  /** Aborted by `close()`, to cut a wait before reattaching short. */
  readonly #closing = new AbortController();
  #started: Promise<string> | undefined;
  #runId: string;
  #closed = false;

  /**
   * @internal Created by `AskUserClient.startRun` and `AskUserClient.attach`: `backoff` is undefined
   * when reconnection is off; `deadline` and `signal` are those of the call's options.
   */
  constructor(
    open: () => ClientDuplexStream<RunAgentRequest, RunAgentResponse>,
    first: RunAgentRequest,
    backoff: Backoff | undefined,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.#open = open;
    this.#backoff = backoff;
    this.#deadline = deadline;
    this.#signal = signal;
    const attach = first.frame?.$case === "attach" ? first.frame.value : undefined;
    this.#runId = attach?.runId ?? "";
    this.#lastSequence = attach?.afterSequence ?? 0;
    // Opened at once, not when first iterated: starting a run must not wait for its reader.
    this.#call = open();
    this.#events = this.#follow(this.#connect(this.#call, first));
    this.#frames = this.#iterate();
  }

  /** The run's id: known from the start for an attached run, from the `runStarted` event for a new one; `""` until then. */
  get runId(): string {
    return this.#runId;
  }

  /**
   * The run's id, once known: at once for an attached run, at the `runStarted` event for a new one
   * (reading the stream up to it if the iteration has not). Rejects with the stream's AskUserError
   * when it fails first (e.g. an unknown agent, an abort or an expired deadline), or with `CANCELLED`
   * when the stream is closed first.
   */
  get started(): Promise<string> {
    this.#started ??= this.#readUntilStarted();
    return this.#started;
  }

  [Symbol.asyncIterator](): AsyncGenerator<RunAgentResponse> {
    return this.#frames;
  }

  /** Settles a pending call with any `AnswerValue`, e.g. `{ text }` or `{ toolOutput: { content } }`. */
  answer(toolCallId: string, value: AnswerValue, options?: AnswerOptions): void {
    const request: RunAgentRequest = { frame: { $case: "answer", value: buildAnswer(toolCallId, value, options) } };
    if (this.#backoff !== undefined) this.#unacknowledged.push(request);
    if (this.#live) this.#call.write(request);
  }
  /** Answers a free-text question, or a single-select question with the chosen label. */
  answerText(toolCallId: string, text: string, options?: AnswerOptions): void {
    this.answer(toolCallId, { text }, options);
  }

  /** Answers a select question with the chosen labels. */
  answerSelections(toolCallId: string, labels: string[], options?: AnswerOptions): void {
    this.answer(toolCallId, { selections: labels }, options);
  }

  /** Declines to answer a question, optionally saying why. */
  decline(toolCallId: string, reason = "", options?: AnswerOptions): void {
    this.answer(toolCallId, { decline: reason }, options);
  }

  /**
   * Answers a form (`SUSPEND_KIND_FORM`) with its fields' values by field name, e.g.
   * `{ version: "1.4.2", replicas: 3, announce: true, checks: ["unit"], zone: { other: "asia" } }`.
   * The server checks every value against its field; a wrong one is rejected in-band
   * (`answerRejected`, a violation per field, e.g. `answer.form.values["replicas"]`) and the form stays
   * pending.
   * @throws TypeError for a value of none of the `FormFieldValue` shapes.
   */
  answerForm(toolCallId: string, values: FormValues, options?: AnswerOptions): void {
    this.answer(toolCallId, { form: values }, options);
  }

  /**
   * Replies in prose instead of answering a question or a form: the call settles
   * (`TOOL_RESULT_KIND_REPLIED`) and the model is told the person replied, and what they wrote.
   */
  reply(toolCallId: string, text: string, options?: AnswerOptions): void {
    this.answer(toolCallId, { reply: text }, options);
  }

  /** Sends the output of a client tool call (`SUSPEND_KIND_CLIENT_TOOL`) that the caller ran. */
  sendToolOutput(toolCallId: string, content: string, options: ToolOutputOptions = {}): void {
    const { isError = false, ...answerOptions } = options;
    this.answer(toolCallId, { toolOutput: { content, isError } }, answerOptions);
  }

  /**
   * Approves a call that waits for approval (`SUSPEND_KIND_APPROVAL`). A client tool call is then
   * suspended again, with the same id, as `SUSPEND_KIND_CLIENT_TOOL`, for its output.
   */
  approve(toolCallId: string, options?: AnswerOptions): void {
    this.answer(toolCallId, { approve: true }, options);
  }

  /** Rejects a call that waits for approval: the tool never runs, and the model gets the reason. */
  reject(toolCallId: string, reason = "", options?: AnswerOptions): void {
    this.answer(toolCallId, { reject: reason }, options);
  }

  /**
   * Approves a call with other arguments: JSON text, or an object sent as its JSON. They are checked
   * against the tool's schema (a bad edit is rejected in-band and the approval stays pending).
   */
  edit(toolCallId: string, args: string | Record<string, unknown>, options?: AnswerOptions): void {
    this.answer(toolCallId, { edit: args }, options);
  }

  /**
   * Stops following the run: half-closes and drops the stream. The run goes on on the server; attach
   * to it again with `AskUserClient.attach`. Iteration then ends without an error.
   */
  close(): void {
    this.#closed = true;
    this.#closing.abort();
    this.#call.end();
    this.#call.cancel();
  }

  /** Makes `call` the current one and sends `first` on it, then every unacknowledged answer. */
  #connect(
    call: ClientDuplexStream<RunAgentRequest, RunAgentResponse>,
    first: RunAgentRequest,
  ): AsyncGenerator<RunAgentResponse> {
    this.#call = call;
    this.#live = true;
    call.on("status", () => {
      if (this.#call === call) this.#live = false;
    });
    const events = serverStreamEvents(call);
    call.write(first);
    for (const answer of this.#unacknowledged) call.write(answer);
    return events;
  }

  async #readUntilStarted(): Promise<string> {
    while (this.#runId === "") {
      // The iteration takes the frames read here first, so none is lost to it.
      const read = this.#events.next();
      this.#ahead.push(read);
      const result = await read;
      if (result.done && this.#runId === "") {
        throw new AskUserError(status.CANCELLED, "the run's stream ended before the run started", new Metadata());
      }
    }
    return this.#runId;
  }

  async *#iterate(): AsyncGenerator<RunAgentResponse> {
    let ended = false;
    try {
      for (;;) {
        const result = await (this.#ahead.shift() ?? this.#events.next());
        if (result.done) {
          ended = true;
          return;
        }
        yield result.value;
      }
    } catch (error) {
      ended = true;
      throw error;
    } finally {
      // Leaving a loop early (break, return, a throw in its body) drops the stream.
      if (!ended) {
        this.close();
        this.#events.return(undefined).catch(() => {});
      }
    }
  }

  async *#follow(events: AsyncGenerator<RunAgentResponse>): AsyncGenerator<RunAgentResponse> {
    for (;;) {
      try {
        for await (const frame of events) {
          this.#backoff?.reset();
          // A reattached stream replays nothing before the last sequence delivered; this guards anyway.
          if (frame.sequence > 0 && frame.sequence <= this.#lastSequence) continue;
          this.#lastSequence = Math.max(this.#lastSequence, frame.sequence);
          const event = frame.event;
          if (event?.$case === "runStarted") this.#runId = frame.runId;
          else if (event?.$case === "answerAccepted" || event?.$case === "answerRejected") this.#acknowledge(event.value.toolCallId);
          yield frame;
        }
        return;
      } catch (error) {
        // Dropping the stream with close() cancels the call; that is the end the caller asked for.
        if (this.#closed && error instanceof AskUserError && error.code === status.CANCELLED) return;
        // A run not started yet has nothing to attach to.
        const wait = this.#runId === "" ? undefined : retryWait(error, this.#backoff, this.#deadline);
        if (wait === undefined || this.#closed) throw error;
        // An abort meanwhile cancels the next call at once, which ends the iteration with CANCELLED.
        await sleep(wait, this.#closing.signal, this.#signal);
        if (this.#closed) return;
        const attach: RunAgentRequest = { frame: { $case: "attach", value: { runId: this.#runId, afterSequence: this.#lastSequence } } };
        events = this.#connect(this.#open(), attach);
      }
    }
  }

  /** Forgets the unacknowledged answer to `toolCallId`: the server has it. */
  #acknowledge(toolCallId: string): void {
    const index = this.#unacknowledged.findIndex((request) => request.frame?.$case === "answer" && request.frame.value.toolCallId === toolCallId);
    if (index >= 0) this.#unacknowledged.splice(index, 1);
  }
}
