import { status, type ClientReadableStream } from "@grpc/grpc-js";
import { AskUserError, toAskUserError } from "./error";
import type { WatchPendingCallsResponse } from "./gen/askuser/v1/agent";
import { runEvents } from "./run";

/**
 * The pending-calls feed of `AskUserClient.watchPendingCalls`: iterate it for its events, a
 * `callPending` for every call that waits now (the snapshot), then `snapshotDone`, then each new
 * pending call and each `callSettled` live. Heartbeats are left out. The feed does not end by itself:
 * `close()` (or leaving a `for await` loop) cancels it and ends the iteration quietly; a failed call
 * throws an AskUserError while iterated.
 *
 * A feed can be iterated once: every iterator shares the one stream.
 */
export class PendingCalls implements AsyncIterable<WatchPendingCallsResponse> {
  readonly #call: ClientReadableStream<WatchPendingCallsResponse>;
  readonly #events: AsyncGenerator<WatchPendingCallsResponse>;
  #closed = false;
  #error: unknown;

  /** @internal Created by `AskUserClient.watchPendingCalls`. */
  constructor(call: ClientReadableStream<WatchPendingCallsResponse>) {
    this.#call = call;
    // grpc-js emits a failed status as an 'error' event, which would be thrown if nobody listened (a
    // feed closed or failing before it is iterated); keep it for the iteration instead.
    call.on("error", (error) => {
      this.#error ??= error;
    });
    this.#events = this.#follow();
  }

  [Symbol.asyncIterator](): AsyncGenerator<WatchPendingCallsResponse> {
    return this.#events;
  }

  /** Cancels the feed; iteration then ends without an error. */
  close(): void {
    this.#closed = true;
    this.#call.cancel();
  }

  async *#follow(): AsyncGenerator<WatchPendingCallsResponse> {
    try {
      yield* runEvents(this.#call);
      if (this.#error !== undefined) throw toAskUserError(this.#error);
    } catch (error) {
      if (this.#closed && error instanceof AskUserError && error.code === status.CANCELLED) return;
      throw error;
    }
  }
}
