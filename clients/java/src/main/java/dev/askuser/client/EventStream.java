package dev.askuser.client;

import io.grpc.Deadline;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The messages of a server-streaming call, read one at a time with blocking calls: the base of
 * {@link FrameStream} (a run's frames) and {@link PendingCallStream} (the pending-calls feed).
 *
 * <p>Heartbeats are dropped: they only keep idle connections alive and say nothing. When the stream
 * fails, {@link #hasNext()} and {@link #next()} throw the {@link AskUserException}. {@link #close()}
 * cancels the call; use try-with-resources when a loop may stop before the stream ends.
 *
 * <p>Buffering is bounded, with back-pressure: the stream asks the server for at most {@link
 * #bufferSize()} messages ahead of the reader (gRPC manual flow control), and asks for one more
 * each time the reader takes one. A slow reader therefore slows the server's sending down (HTTP/2
 * flow control) instead of filling memory, and still gets every message in order.
 *
 * @param <T> the message type the server streams
 */
public abstract class EventStream<T> implements Iterator<T>, Iterable<T>, AutoCloseable {
  /** What the gRPC thread hands to the reader: a message, or how the stream ended. */
  private sealed interface Item<T> permits Message, Ended, Failed {}

  private record Message<T>(T message) implements Item<T> {}

  private record Ended<T>() implements Item<T> {}

  private record Failed<T>(AskUserException error) implements Item<T> {}

  /** How many messages a stream buffers ahead of its reader unless the client says otherwise. */
  public static final int DEFAULT_BUFFER_SIZE = 64;

  /** Messages received but not read yet (at most bufferSize), then how the stream ended. */
  private final BlockingQueue<Item<T>> items;
  private final int bufferSize;
  private final Predicate<T> isHeartbeat;
  /** The item a look-ahead took from the queue; the end of a stream stays here for good. */
  private Item<T> head;

  private volatile ClientCallStreamObserver<?> call;
  /** Guards {@link #closed} and the opening of calls, so that no call opens after {@link #close()}. */
  final Object lock = new Object();
  private boolean closed;

  EventStream(Predicate<T> isHeartbeat, int bufferSize) {
    if (bufferSize < 1) {
      throw new IllegalArgumentException("bufferSize must be at least 1, got " + bufferSize);
    }
    this.isHeartbeat = isHeartbeat;
    this.bufferSize = bufferSize;
    // Room for every message requested and not read, plus the end of the stream.
    this.items = new ArrayBlockingQueue<>(bufferSize + 1);
  }

  /** How many messages this stream buffers at most ahead of its reader. */
  public int bufferSize() {
    return bufferSize;
  }

  /** The observer to pass to the async stub; it feeds this stream. */
  <ReqT> ClientResponseObserver<ReqT, T> receiver() {
    return new ClientResponseObserver<>() {
      @Override
      public void beforeStart(ClientCallStreamObserver<ReqT> requestStream) {
        call = requestStream;
        // Manual flow control: the server may send bufferSize messages, then one per message read.
        requestStream.disableAutoRequestWithInitial(bufferSize);
      }

      @Override
      public void onNext(T message) {
        if (isHeartbeat.test(message)) {
          call.request(1); // dropped, so it frees its place at once
        } else if (items.size() >= bufferSize) {
          // Cannot happen: the server sends only what was requested. The place kept free for the
          // end of the stream takes the failure this cancel reports.
          call.cancel("the server sent more than the client requested", null);
        } else {
          items.add(new Message<>(message));
        }
      }

      @Override
      public void onError(Throwable failure) {
        items.add(new Failed<>(AskUserException.from(failure)));
      }

      @Override
      public void onCompleted() {
        items.add(new Ended<>());
      }
    };
  }

  /**
   * Waits at most {@code timeout} for the next message.
   *
   * @return the message, or empty when the stream ended with status OK
   * @throws AskUserException when the stream failed
   * @throws TimeoutException when nothing arrived in time; the stream stays usable
   */
  public synchronized Optional<T> nextWithin(Duration timeout) throws TimeoutException {
    Optional<T> message = peekWithin(timeout);
    if (message.isPresent()) {
      head = null;
    }
    return message;
  }

  /** Like {@link #nextWithin} but leaves the message to be read next. */
  public synchronized Optional<T> peekWithin(Duration timeout) throws TimeoutException {
    long started = System.nanoTime();
    long budget = timeout.toNanos();
    while (head == null) {
      Item<T> item;
      try {
        // Counted from the start, so that a reopening (and its backoff) spends the same budget.
        item = items.poll(budget - (System.nanoTime() - started), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for a message", e);
      }
      if (item == null) {
        throw new TimeoutException("nothing within " + timeout);
      }
      if (item instanceof Message<T> message) {
        call.request(1); // its place in the buffer is free again
        if (!accept(message.message())) {
          continue;
        }
      } else if (item instanceof Failed<T> failed && reopen(failed.error())) {
        continue;
      }
      head = item;
    }
    if (head instanceof Failed<T> failed) {
      throw failed.error();
    }
    return head instanceof Message<T> message ? Optional.of(message.message()) : Optional.empty();
  }

  /**
   * Sees each message, on the reader's thread, before it is handed out (once, in order); false
   * drops it (e.g. a frame already delivered before a reattachment).
   */
  boolean accept(T message) {
    return true;
  }

  /**
   * Called on the reader's thread with the failure that ended the call, when every message before
   * it has been read: true when it opened a new call (with {@link #receiver()}) whose messages
   * follow, false to hand the failure to the reader. May block (a backoff).
   */
  boolean reopen(AskUserException failure) {
    return false;
  }

  /**
   * How every reconnecting stream reopens: waits out {@code backoff} (false when there is none, it
   * gives up, or {@code deadline} passes), then, unless the stream was closed meanwhile, opens the
   * new call with {@code open} under {@link #lock}.
   */
  final boolean reopenAfter(Backoff backoff, AskUserException failure, Deadline deadline, Runnable open) {
    if (backoff == null || !backoff.await(failure, deadline)) {
      return false;
    }
    synchronized (lock) {
      if (isClosed()) {
        return false;
      }
      open.run();
    }
    return true;
  }

  private Optional<T> peekWithoutLimit() {
    try {
      // About 292 years: a wait with no limit that still goes through the one timed code path.
      return peekWithin(Duration.ofNanos(Long.MAX_VALUE));
    } catch (TimeoutException e) {
      throw new IllegalStateException("waited forever for a message", e);
    }
  }

  /** Blocks until the next message arrives or the stream ends. */
  @Override
  public synchronized boolean hasNext() {
    return peekWithoutLimit().isPresent();
  }

  /** Blocks until the next message arrives. */
  @Override
  public synchronized T next() {
    T message = peekWithoutLimit().orElseThrow(NoSuchElementException::new);
    head = null;
    return message;
  }

  @Override
  public Iterator<T> iterator() {
    return this;
  }

  /**
   * Follows the stream without blocking the caller: reads every message on {@code executor} and
   * hands each to {@code action}, in order, on that thread. Back-pressure holds: the next message
   * is read when {@code action} returns. The future completes when the stream ends with OK, and
   * fails with the {@link AskUserException} that ended it (or whatever {@code action} threw).
   * Cancelling the future closes the stream. Reconnection works as for a blocking reader.
   *
   * <pre>{@code
   * run.forEachAsync(frame -> {
   *   if (frame.hasToolCallSuspended()) run.answerText(frame.getToolCallSuspended().getToolCallId(), "yes");
   * }, executor).thenRun(() -> System.out.println("the run ended"));
   * }</pre>
   */
  public CompletableFuture<Void> forEachAsync(Consumer<? super T> action, Executor executor) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    done.whenComplete((ignored, failure) -> {
      if (done.isCancelled()) {
        close();
      }
    });
    executor.execute(() -> {
      try {
        while (!done.isDone() && hasNext()) {
          action.accept(next());
        }
        done.complete(null);
      } catch (RuntimeException e) {
        done.completeExceptionally(e);
      }
    });
    return done;
  }

  /** {@link #forEachAsync(Consumer, Executor)} on a thread of its own (a daemon), for this stream only. */
  public CompletableFuture<Void> forEachAsync(Consumer<? super T> action) {
    return forEachAsync(action, task -> {
      Thread reader = new Thread(task, "askuser-stream-reader");
      reader.setDaemon(true);
      reader.start();
    });
  }

  /** Cancels the call if it is still open; messages already received can still be read. */
  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
    }
    ClientCallStreamObserver<?> open = call;
    if (open != null) {
      open.cancel("closed by the client", null);
    }
  }

  /** Whether {@link #close()} was called; hold {@link #lock} to open a call only while it is not. */
  boolean isClosed() {
    synchronized (lock) {
      return closed;
    }
  }
}
