package dev.askuser.client;

import io.grpc.Deadline;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The waits of one outage under a {@link Reconnect} policy, for one call or stream: {@link
 * #next} is the wait before the next attempt after a failure, or empty when the failure is not a
 * lost connection ({@link AskUserException#connectionLost}) or the policy's total would be exceeded; {@link #reset()} after a success, so
 * that the next outage gets the whole budget again. Not thread-safe: one reader uses it.
 */
final class Backoff {
  private final Reconnect policy;
  private final ManagedChannel channel;
  /** System.nanoTime() of the first failure of this outage; null: no outage. */
  private Long since;
  private Duration wait;

  Backoff(Reconnect policy, ManagedChannel channel) {
    this.policy = policy;
    this.channel = channel;
    this.wait = policy.initialBackoff();
  }

  void reset() {
    since = null;
    wait = policy.initialBackoff();
  }

  /** The wait before trying again after {@code failure}, within {@code deadline} (null: none). */
  Optional<Duration> next(AskUserException failure, Deadline deadline) {
    // A channel shut down by close() fails every call with UNAVAILABLE for good.
    if (!failure.connectionLost() || !policy.enabled() || channel.isShutdown()) {
      return Optional.empty();
    }
    long now = System.nanoTime();
    if (since == null) {
      since = now;
    }
    Duration current = wait;
    if (Duration.ofNanos(now - since).plus(current).compareTo(policy.total()) > 0) {
      return Optional.empty();
    }
    Duration doubled = current.multipliedBy(2);
    wait = doubled.compareTo(policy.maxBackoff()) > 0 ? policy.maxBackoff() : doubled;
    if (deadline != null) {
      // Past the deadline the next attempt fails with DEADLINE_EXCEEDED at once, which ends it.
      Duration left = Duration.ofNanos(Math.max(deadline.timeRemaining(TimeUnit.NANOSECONDS), 0));
      current = current.compareTo(left) > 0 ? left : current;
    }
    return Optional.of(current);
  }

  /**
   * Blocks for the wait {@link #next} gives, then has the channel reconnect now: true when the
   * caller should try again, false (at once) when it should give {@code failure} up.
   */
  boolean await(AskUserException failure, Deadline deadline) {
    Optional<Duration> next = next(failure, deadline);
    if (next.isEmpty()) {
      return false;
    }
    try {
      Thread.sleep(next.get().toMillis(), next.get().toNanosPart() % 1_000_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    reconnectNow();
    return true;
  }

  /**
   * Has a channel that waits out gRPC's own reconnection backoff (1 s growing to 2 min) connect at
   * once, so that the next attempt does not fail fast while the server is already back.
   */
  void reconnectNow() {
    channel.resetConnectBackoff();
  }
}
