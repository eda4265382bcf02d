import { status } from "@grpc/grpc-js";
import { AskUserError } from "./error";

/**
 * How a client rides out a dropped connection (a server restart, a reset): on `UNAVAILABLE`, a run's
 * stream reattaches after the last sequence it delivered, watch streams and the pending-calls feed
 * reopen, and the idempotent unary calls (`getRun`, `listRuns`, `listAgents`, `cancelRun`) are
 * retried; each waits `initialBackoffMs`, doubling up to `maxBackoffMs`, for up to `totalMs` in all
 * per outage before the `UNAVAILABLE` error is thrown.
 */
export interface Reconnect {
  /** The first wait, in milliseconds (100 when absent). */
  initialBackoffMs?: number;
  /** The longest wait, in milliseconds (2000 when absent). */
  maxBackoffMs?: number;
  /** How long one outage may last in all, in milliseconds (30000 when absent). */
  totalMs?: number;
}

export const DEFAULT_RECONNECT: Required<Reconnect> = { initialBackoffMs: 100, maxBackoffMs: 2_000, totalMs: 30_000 };

/**
 * The waits of one outage under a `Reconnect` policy: `nextWait()` is the time to wait before the
 * next attempt, or undefined once the policy's total would be exceeded; `reset()` after a success.
 */
export class Backoff {
  readonly #policy: Required<Reconnect>;
  #since: number | undefined;
  #wait: number;

  constructor(policy: Required<Reconnect>) {
    this.#policy = policy;
    this.#wait = policy.initialBackoffMs;
  }

  reset(): void {
    this.#since = undefined;
    this.#wait = this.#policy.initialBackoffMs;
  }

  nextWait(): number | undefined {
    const now = Date.now();
    this.#since ??= now;
    const wait = this.#wait;
    if (now - this.#since + wait > this.#policy.totalMs) return undefined;
    this.#wait = Math.min(wait * 2, this.#policy.maxBackoffMs);
    return wait;
  }
}

/**
 * How long to wait before trying `error`'s call again, or undefined to give up: only `UNAVAILABLE`
 * is retried (a deadline or a cancellation ends a call for good), never past the call's deadline.
 */
export function retryWait(error: unknown, backoff: Backoff | undefined, deadline: number | undefined): number | undefined {
  if (backoff === undefined || !(error instanceof AskUserError) || error.code !== status.UNAVAILABLE) return undefined;
  const wait = backoff.nextWait();
  if (wait === undefined || (deadline !== undefined && Date.now() + wait >= deadline)) return undefined;
  return wait;
}

/** Waits `ms` milliseconds, or less when one of `signals` aborts first. */
export function sleep(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const signal of signals) signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const signal of signals) signal?.addEventListener("abort", done, { once: true });
  });
}
