import { Metadata, type CallOptions as GrpcCallOptions } from "@grpc/grpc-js";
import type { CallOptions } from "./common/options";

/** A grpc-js call of any kind: each can be cancelled, and each emits `status` when it ends. */
export interface OpenCall {
  cancel(): void;
  on(event: "status", listener: () => void): unknown;
}

/** When a call made now with `options` must end (milliseconds since the epoch); undefined: never. */
export function callDeadline(options: CallOptions): number | undefined {
  const { timeoutMs } = options;
  return timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
}

/**
 * The grpc-js metadata and call options of one call; `deadline` is given for a retry or a
 * reattachment, which keeps the deadline of the first attempt.
 */
export function grpcCallArguments(
  options: CallOptions,
  deadline = callDeadline(options),
): { metadata: Metadata; callOptions: Partial<GrpcCallOptions> } {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(options.headers ?? {})) {
    if (key.toLowerCase().endsWith("-bin")) metadata.add(key, Buffer.from(value));
    else metadata.add(key, value);
  }
  return { metadata, callOptions: deadline === undefined ? {} : { deadline } };
}

/** Cancels `call` when `signal` aborts (at once if it has), and stops listening once the call ends. */
export function cancelOnAbort(call: OpenCall, signal: AbortSignal | undefined): void {
  if (signal === undefined) return;
  if (signal.aborted) {
    // After the caller's code has run (e.g. the first frame of a stream written), like a later abort.
    queueMicrotask(() => call.cancel());
    return;
  }
  const abort = () => call.cancel();
  signal.addEventListener("abort", abort, { once: true });
  call.on("status", () => signal.removeEventListener("abort", abort));
}
