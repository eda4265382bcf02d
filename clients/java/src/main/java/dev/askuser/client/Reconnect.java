package dev.askuser.client;

import java.time.Duration;

/**
 * How a client rides out a dropped connection (a server restart, a reset): on {@code UNAVAILABLE},
 * a {@link Run} reattaches after the last sequence it delivered and resends the answers the server
 * has not acknowledged, a {@link AskUserClient#watchRun watch} reopens after its last sequence, the
 * pending-calls feed reopens with a new snapshot, and the idempotent unary calls ({@code getRun},
 * {@code listRuns}, {@code listAgents}, {@code cancelRun}) are retried. Each waits {@code
 * initialBackoff} before its first attempt again, doubling up to {@code maxBackoff}, for up to
 * {@code total} in all before the {@code UNAVAILABLE} {@link AskUserException} is thrown. A call's
 * deadline still bounds it; {@code DEADLINE_EXCEEDED} and {@code CANCELLED} are never retried.
 *
 * @param initialBackoff the wait before the first new attempt
 * @param maxBackoff the longest wait between two attempts
 * @param total how long one outage is ridden out at most; zero turns reconnection off
 */
public record Reconnect(Duration initialBackoff, Duration maxBackoff, Duration total) {
  /** 100 ms doubling to 2 s, for up to 30 s: what every client does unless told otherwise. */
  public static final Reconnect DEFAULT =
      new Reconnect(Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(30));

  /** No reconnection: an {@code UNAVAILABLE} failure is thrown at once. */
  public static final Reconnect OFF = new Reconnect(Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ZERO);

  public Reconnect {
    if (initialBackoff == null || initialBackoff.isNegative() || initialBackoff.isZero()) {
      throw new IllegalArgumentException("initialBackoff must be positive, got " + initialBackoff);
    }
    if (maxBackoff == null || maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException("maxBackoff must be at least initialBackoff, got " + maxBackoff);
    }
    if (total == null || total.isNegative()) {
      throw new IllegalArgumentException("total must not be negative, got " + total);
    }
  }

  /** Whether this policy reconnects at all ({@code total} is not zero). */
  public boolean enabled() {
    return !total.isZero();
  }
}
