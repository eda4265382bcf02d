import { status, type ClientReadableStream } from "@grpc/grpc-js";
import { AskUserError } from "./error";
import type { WatchPendingCallsResponse } from "./gen/askuser/v1/agent";
import { retryWait, sleep, type Backoff } from "./reconnect";
import { serverStreamEvents } from "./run";

/**
 * The pending-calls feed of `AskUserClient.watchPendingCalls`: iterate it for its events, a
 * `callPending` for every call that waits now (the snapshot), then `snapshotDone`, then each new
 * pending call and each `callSettled` live. Heartbeats are left out. The feed does not end by itself:
 * `close()` (or leaving a `for await` loop) cancels it and ends the iteration quietly; a failed call
 * throws an AskUserError while iterated.
 *
 * A feed dropped with `UNAVAILABLE` reopens under the client's `reconnect` policy and starts over
 * with a new snapshot (calls settled meanwhile are simply absent from it).
 *
 * A feed can be iterated once: every iterator shares the one stream.
 */
export class PendingCalls implements AsyncIterable<WatchPendingCallsResponse> {
  readonly #open: () => ClientReadableStream<WatchPendingCallsResponse>;
  readonly #backoff: Backoff | undefined;
  readonly #deadline: number | undefined;
  readonly #signal: AbortSignal | undefined;
  #call: ClientReadableStream<WatchPendingCallsResponse>;
  readonly #events: AsyncGenerator<WatchPendingCallsResponse>;
  /** Aborted by `close()`, to cut a wait before reopening short. */
  readonly #closing = new AbortController();
  #closed = false;

  /**
   * @internal Created by `AskUserClient.watchPendingCalls`: `open` opens the call (with the first
   * one's deadline and signal); `backoff` is undefined when reconnection is off.
   */
  constructor(
    open: () => ClientReadableStream<WatchPendingCallsResponse>,
    backoff: Backoff | undefined,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.#open = open;
    this.#backoff = backoff;
    this.#deadline = deadline;
    this.#signal = signal;
    this.#call = open();
    this.#events = this.#follow(serverStreamEvents(this.#call));
  }

  [Symbol.asyncIterator](): AsyncGenerator<WatchPendingCallsResponse> {
    return this.#events;
  }

  /** Cancels the feed; iteration then ends without an error. */
  close(): void {
    this.#closed = true;
    this.#closing.abort();
    this.#call.cancel();
  }

  async *#follow(events: AsyncGenerator<WatchPendingCallsResponse>): AsyncGenerator<WatchPendingCallsResponse> {
    for (;;) {
      try {
        for await (const event of events) {
          this.#backoff?.reset();
          yield event;
        }
        return;
      } catch (error) {
        if (this.#closed && error instanceof AskUserError && error.code === status.CANCELLED) return;
        const wait = retryWait(error, this.#backoff, this.#deadline);
        if (wait === undefined || this.#closed) throw error;
        // An abort meanwhile cancels the next call at once, which ends the iteration with CANCELLED.
        await sleep(wait, this.#closing.signal, this.#signal);
        if (this.#closed) return;
        this.#call = this.#open();
        events = serverStreamEvents(this.#call);
      }
    }
  }
}
