package dev.askuser.client;

import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.WatchPendingCallsRequest;
import dev.askuser.v1.WatchPendingCallsResponse;
import io.grpc.Deadline;

/**
 * The pending-calls feed ({@code WatchPendingCalls}): every call pending at connect ({@code
 * call_pending}), then {@code snapshot_done}, then each new pending call and each settlement
 * ({@code call_settled}) live. Heartbeats are dropped. The feed never ends by itself: {@link
 * #close()} cancels it. Reconnecting replays the snapshot, so nothing is missed.
 *
 * <p>When the feed drops with {@code UNAVAILABLE} (a server restart), it reopens under the client's
 * {@link Reconnect} policy and starts over with a new snapshot: the calls pending then ({@code
 * call_pending}, possibly seen before), then {@code snapshot_done}.
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
  private final AgentServiceGrpc.AgentServiceStub stub;
  private final WatchPendingCallsRequest request;
  /** Null when the client's policy does not reconnect. */
  private final Backoff backoff;

  PendingCallStream(
      AgentServiceGrpc.AgentServiceStub stub, WatchPendingCallsRequest request, int bufferSize, Backoff backoff) {
    super(event -> event.getEventCase() == WatchPendingCallsResponse.EventCase.HEARTBEAT, bufferSize);
    this.stub = stub;
    this.request = request;
    this.backoff = backoff;
    synchronized (lock) {
      stub.watchPendingCalls(request, receiver());
    }
  }

  @Override
  boolean accept(WatchPendingCallsResponse event) {
    if (backoff != null) {
      backoff.reset();
    }
    return true;
  }

  @Override
  boolean reopen(AskUserException failure) {
    Deadline deadline = stub.getCallOptions().getDeadline();
    return reopenAfter(backoff, failure, deadline, () -> stub.watchPendingCalls(request, receiver()));
  }
}
