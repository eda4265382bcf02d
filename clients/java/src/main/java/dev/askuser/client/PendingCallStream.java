package dev.askuser.client;

import dev.askuser.v1.WatchPendingCallsResponse;

/**
 * The pending-calls feed ({@code WatchPendingCalls}): every call pending at connect ({@code
 * call_pending}), then {@code snapshot_done}, then each new pending call and each settlement
 * ({@code call_settled}) live. Heartbeats are dropped. The feed never ends by itself: {@link
 * #close()} cancels it. Reconnecting replays the snapshot, so nothing is missed.
 *
 * <pre>{@code
 * try (PendingCallStream feed = client.watchPendingCalls(
 *     List.of("status_check"), List.of(), List.of(SuspendKind.SUSPEND_KIND_CLIENT_TOOL))) {
 *   for (WatchPendingCallsResponse event : feed) {
 *     if (event.hasCallPending()) { ... client.claimCall(runId, toolCallId, "worker-1", null) ... }
 *   }
 * }
 * }</pre>
 */
public final class PendingCallStream extends EventStream<WatchPendingCallsResponse> {
  PendingCallStream(int bufferSize) {
    super(event -> event.getEventCase() == WatchPendingCallsResponse.EventCase.HEARTBEAT, bufferSize);
  }
}
