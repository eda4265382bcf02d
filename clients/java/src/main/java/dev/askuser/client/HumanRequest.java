package dev.askuser.client;

import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.ToolCallSuspended;
import io.grpc.Status;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * A request made by {@link AskUserClient#ask} whose call waits for a person: its ids, and {@link
 * #await()} for the {@link HumanOutcome} once someone settles it (or it expires, or it is
 * cancelled).
 *
 * <p>The client keeps following the request from {@code ask} on. Waiting survives dropped
 * connections and server restarts: on {@code UNAVAILABLE} the request is followed again with
 * {@code WatchRun} after the last sequence seen, under the client's {@link Reconnect} policy. The
 * deadline of the client that asked (its {@code timeout}, counted from {@code ask}) bounds the
 * whole wait; {@link #await(Duration)} bounds one wait. A deadline, a cancellation or {@link
 * #close()} ends waiting with an {@link AskUserException} ({@code DEADLINE_EXCEEDED}, {@code
 * CANCELLED}); the request itself stays on the server, answerable, and can be followed again with
 * another {@code ask} with the same {@link #requestId()}.
 */
public final class HumanRequest implements AutoCloseable {
  private final AskUserClient client;
  private final AskStream stream;
  private final String runId;
  private final String toolCallId;
  private final String requestId;
  private final ToolCallSuspended suspended;
  private final boolean approval;
  private final String argumentsJson;
  private HumanOutcome outcome;

  HumanRequest(
      AskUserClient client,
      AskStream stream,
      String runId,
      String toolCallId,
      String requestId,
      ToolCallSuspended suspended,
      boolean approval,
      String argumentsJson) {
    this.client = client;
    this.stream = stream;
    this.runId = runId;
    this.toolCallId = toolCallId;
    this.requestId = requestId;
    this.suspended = suspended;
    this.approval = approval;
    this.argumentsJson = argumentsJson;
  }

  /** The request's run id (a run of no agent): {@code getRun}, {@code watchRun}, {@code cancelRun} take it. */
  public String runId() {
    return runId;
  }

  /** The id of the request's one call, which an answer names. */
  public String toolCallId() {
    return toolCallId;
  }

  /** The request's idempotency key, given or generated. */
  public String requestId() {
    return requestId;
  }

  /** The call as it waits (its question, form or approval as the server shows it); empty if it never waited. */
  public Optional<ToolCallSuspended> suspended() {
    return Optional.ofNullable(suspended);
  }

  /** Whether it asks for an approval (its outcome is approved, edited, rejected, expired or cancelled). */
  public boolean isApproval() {
    return approval;
  }

  /**
   * Waits until the request is settled, with no limit but the asking client's deadline.
   *
   * @throws AskUserException when following fails for good: {@code DEADLINE_EXCEEDED}, {@code
   *     CANCELLED} (closed), {@code UNAVAILABLE} past the reconnection policy, ...
   */
  public HumanOutcome await() {
    return await(null);
  }

  /**
   * Waits at most {@code timeout} (null: no limit) until the request is settled. Past it, throws
   * an {@link AskUserException} with code {@code DEADLINE_EXCEEDED}; the request stays pending, and
   * waiting again goes on where this wait stopped.
   */
  public synchronized HumanOutcome await(Duration timeout) {
    if (outcome != null) {
      return outcome;
    }
    long started = System.nanoTime();
    Duration limit = timeout == null ? Duration.ofNanos(Long.MAX_VALUE) : timeout;
    while (true) {
      Duration left = limit.minusNanos(System.nanoTime() - started);
      if (left.isNegative() || left.isZero()) {
        throw AskUserException.local(Status.DEADLINE_EXCEEDED, "the request " + runId + " was not settled within " + timeout);
      }
      Optional<RunAgentResponse> frame;
      try {
        frame = stream.nextWithin(left);
      } catch (TimeoutException e) {
        throw AskUserException.local(Status.DEADLINE_EXCEEDED, "the request " + runId + " was not settled within " + timeout);
      }
      if (frame.isEmpty()) {
        break; // the request ended
      }
    }
    AskUserClient reader = client;
    if (timeout != null) {
      Duration left = limit.minusNanos(System.nanoTime() - started);
      reader = client.withTimeout(left.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : left);
    }
    outcome = HumanOutcome.from(reader.getRun(runId), toolCallId, approval, argumentsJson);
    return outcome;
  }

  /**
   * {@link #await()} without blocking, on a thread of its own (a daemon): the future completes with
   * the outcome, or fails with the {@link AskUserException}. Cancelling it closes the request's
   * stream (see {@link #close()}).
   */
  public CompletableFuture<HumanOutcome> awaitAsync() {
    return AskUserClient.onThread(this::await, this::close);
  }

  /**
   * Stops following the request: a wait in progress (or later) fails with {@code CANCELLED}. The
   * request stays on the server, answerable; cancel it with {@code client.cancelRun(runId(), ...)}.
   */
  @Override
  public void close() {
    stream.close();
  }

  @Override
  public String toString() {
    return "HumanRequest{runId=" + runId + ", toolCallId=" + toolCallId + ", requestId=" + requestId + "}";
  }
}
