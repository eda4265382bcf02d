import { status, type ClientDuplexStream } from "@grpc/grpc-js";
import { AskUserError, toAskUserError } from "./error";
import { Answer, RunAgentRequest, type RunAgentResponse } from "./gen/askuser/v1/agent";

/** What a person answers: free text (or a single-select label), selected labels, or a decline. */
export type AnswerValue = { text: string } | { selections: string[] } | { decline: string };

/** Optional parts of an answer. */
export interface AnswerOptions {
  /** Idempotency key: a retry with the same key is acknowledged as a duplicate, not rejected. */
  answerId?: string;
  /** The run the question belongs to; empty (the default) means the run of the stream it is sent on. */
  runId?: string;
}

/** Builds the `Answer` message that both `RunAgent` frames and `ResumeRun` carry. */
export function buildAnswer(toolCallId: string, value: AnswerValue, options: AnswerOptions = {}): Answer {
  let answer: Answer["answer"];
  if ("text" in value) answer = { $case: "text", value: value.text };
  else if ("selections" in value) answer = { $case: "selections", value: { labels: value.selections } };
  else answer = { $case: "decline", value: { reason: value.decline } };
  return { runId: options.runId ?? "", toolCallId, answer, answerId: options.answerId ?? "" };
}

/**
 * Yields the frames of a server stream, leaving out heartbeats (they only keep idle connections
 * alive), and turns a failed status into an AskUserError. Leaving early (break, return, a throw in
 * the loop body) cancels the call, which grpc-js would otherwise keep open.
 */
export async function* runEvents(
  call: AsyncIterable<RunAgentResponse> & { cancel(): void },
): AsyncGenerator<RunAgentResponse> {
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
 * A run followed over a `RunAgent` stream: iterate it for the run's events, and answer its
 * questions with `answerText`, `answerSelections`, `decline` or `answer`. Answers are acknowledged
 * in-band by an `answerAccepted` or `answerRejected` event. Iteration ends when the run completes, fails or is
 * cancelled, and throws an AskUserError when the stream fails.
 *
 * A Run can be iterated once: every iterator shares the one stream.
 */
export class Run implements AsyncIterable<RunAgentResponse> {
  readonly #call: ClientDuplexStream<RunAgentRequest, RunAgentResponse>;
  readonly #events: AsyncGenerator<RunAgentResponse>;
  #runId: string;
  #closed = false;

  /** @internal Created by `AskUserClient.startRun` and `AskUserClient.attach`. */
  constructor(call: ClientDuplexStream<RunAgentRequest, RunAgentResponse>, firstFrame: RunAgentRequest, runId: string) {
    this.#call = call;
    this.#runId = runId;
    this.#events = this.#follow();
    call.write(firstFrame);
  }

  /** The run's id: known from the start for an attached run, from the `runStarted` event for a new one. */
  get runId(): string {
    return this.#runId;
  }

  [Symbol.asyncIterator](): AsyncGenerator<RunAgentResponse> {
    return this.#events;
  }

  /** Answers a question: `{ text }`, `{ selections }` or `{ decline }`. */
  answer(toolCallId: string, value: AnswerValue, options?: AnswerOptions): void {
    this.#call.write({ frame: { $case: "answer", value: buildAnswer(toolCallId, value, options) } });
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
   * Stops following the run: half-closes and drops the stream. The run goes on on the server; attach
   * to it again with `AskUserClient.attach`. Iteration then ends without an error.
   */
  close(): void {
    this.#closed = true;
    this.#call.end();
    this.#call.cancel();
  }

  async *#follow(): AsyncGenerator<RunAgentResponse> {
    try {
      for await (const frame of runEvents(this.#call)) {
        if (frame.event?.$case === "runStarted") this.#runId = frame.runId;
        yield frame;
      }
    } catch (error) {
      // Dropping the stream with close() cancels the call; that is the end the caller asked for.
      if (this.#closed && error instanceof AskUserError && error.code === status.CANCELLED) return;
      throw error;
    }
  }
}
