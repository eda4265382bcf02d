package dev.askuser.client;

import dev.askuser.v1.RunAgentResponse;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The frames of a run as the server streams them ({@code RunAgent}, {@code ResumeRun}, {@code
 * WatchRun}), read one at a time with blocking calls.
 *
 * <p>Heartbeat frames are dropped: they only keep idle connections alive and say nothing about the
 * run. When the stream fails, {@link #hasNext()} and {@link #next()} throw the {@link
 * AskUserException}. {@link #close()} cancels the call; use try-with-resources when a loop may stop
 * before the run ends.
 */
public class FrameStream implements Iterator<RunAgentResponse>, Iterable<RunAgentResponse>, AutoCloseable {
  /** What the gRPC thread hands to the reader: a frame, or how the stream ended. */
  private sealed interface Item permits Frame, Ended, Failed {}

  private record Frame(RunAgentResponse frame) implements Item {}

  private record Ended() implements Item {}

  private record Failed(AskUserException error) implements Item {}

  private final BlockingQueue<Item> items = new LinkedBlockingQueue<>();
  /** The item a look-ahead took from the queue; the end of a stream stays here for good. */
  private Item head;

  private volatile ClientCallStreamObserver<?> call;

  FrameStream() {}

  /** The observer to pass to the async stub; it feeds this stream. */
  <ReqT> ClientResponseObserver<ReqT, RunAgentResponse> receiver() {
    return new ClientResponseObserver<>() {
      @Override
      public void beforeStart(ClientCallStreamObserver<ReqT> requestStream) {
        call = requestStream;
      }

      @Override
      public void onNext(RunAgentResponse frame) {
        if (frame.getEventCase() != RunAgentResponse.EventCase.HEARTBEAT) {
          items.add(new Frame(frame));
        }
      }

      @Override
      public void onError(Throwable failure) {
        items.add(new Failed(AskUserException.from(failure)));
      }

      @Override
      public void onCompleted() {
        items.add(new Ended());
      }
    };
  }

  /**
   * Waits at most {@code timeout} for the next frame.
   *
   * @return the frame, or empty when the stream ended with status OK
   * @throws AskUserException when the stream failed
   * @throws TimeoutException when nothing arrived in time; the stream stays usable
   */
  public synchronized Optional<RunAgentResponse> nextWithin(Duration timeout) throws TimeoutException {
    Optional<RunAgentResponse> frame = peekWithin(timeout);
    if (frame.isPresent()) {
      head = null;
    }
    return frame;
  }

  /** Like {@link #nextWithin} but leaves the frame to be read next. */
  public synchronized Optional<RunAgentResponse> peekWithin(Duration timeout) throws TimeoutException {
    if (head == null) {
      try {
        head = items.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for a frame", e);
      }
      if (head == null) {
        throw new TimeoutException("no frame within " + timeout);
      }
    }
    if (head instanceof Failed failed) {
      throw failed.error();
    }
    return head instanceof Frame frame ? Optional.of(frame.frame()) : Optional.empty();
  }

  private Optional<RunAgentResponse> peekWithoutLimit() {
    try {
      // About 292 years: a wait with no limit that still goes through the one timed code path.
      return peekWithin(Duration.ofNanos(Long.MAX_VALUE));
    } catch (TimeoutException e) {
      throw new IllegalStateException("waited forever for a frame", e);
    }
  }

  /** Blocks until the next frame arrives or the stream ends. */
  @Override
  public synchronized boolean hasNext() {
    return peekWithoutLimit().isPresent();
  }

  /** Blocks until the next frame arrives. */
  @Override
  public synchronized RunAgentResponse next() {
    RunAgentResponse frame = peekWithoutLimit().orElseThrow(NoSuchElementException::new);
    head = null;
    return frame;
  }

  @Override
  public Iterator<RunAgentResponse> iterator() {
    return this;
  }

  /** Cancels the call if it is still open; frames already received can still be read. */
  @Override
  public void close() {
    ClientCallStreamObserver<?> open = call;
    if (open != null) {
      open.cancel("closed by the client", null);
    }
  }
}
