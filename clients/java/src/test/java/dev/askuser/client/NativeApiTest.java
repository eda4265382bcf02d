package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.askuser.v1.Agent;
import dev.askuser.v1.ListRunsRequest;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.RunStatus;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Deadlines, closing, bounded buffering and the async calls, against the real server in
 * ASKUSER_ADDR (as {@link AskUserClientTest}).
 */
@Timeout(30)
class NativeApiTest {
  private static AskUserClient client;

  private static AskUserClient.Builder builder() {
    String address = System.getenv("ASKUSER_ADDR");
    assertNotNull(address, "set ASKUSER_ADDR to the HOST:PORT of askuser serving tests/conformance/agents.toml");
    AskUserClient.Builder builder = AskUserClient.builder(address);
    String apiKey = System.getenv("ASKUSER_API_KEY");
    if (apiKey != null && !apiKey.isEmpty()) {
      builder.apiKey(apiKey);
    }
    return builder;
  }

  @BeforeAll
  static void connect() {
    client = builder().build();
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  // Deadlines

  @Test
  void anExpiredDeadlineFailsAUnaryCallWithDeadlineExceeded() {
    AskUserException error =
        assertThrows(AskUserException.class, () -> client.withTimeout(Duration.ofNanos(1)).listAgents());
    assertEquals(Status.Code.DEADLINE_EXCEEDED, error.code());
    // A generous deadline lets the same call through.
    assertTrue(client.withTimeout(Duration.ofSeconds(10)).listAgents().size() > 0);
  }

  @Test
  void aDeadlineEndsAStreamThatWaitsForAnAnswerAndTheRunStaysSuspended() {
    long started = System.nanoTime();
    String runId;
    try (Run run = client.withTimeout(Duration.ofMillis(700)).startRun("free_text", "greet me", Map.of())) {
      runId = run.next().getRunId();
      while (!run.next().hasToolCallSuspended()) {
        // up to the question
      }
      AskUserException error = assertThrows(AskUserException.class, run::hasNext);
      assertEquals(Status.Code.DEADLINE_EXCEEDED, error.code());
    }
    long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertTrue(elapsedMs >= 600 && elapsedMs < 10_000, "the stream failed after " + elapsedMs + " ms");
    // The deadline ended this stream only: the run still waits for its answer.
    assertEquals(RunStatus.RUN_STATUS_SUSPENDED, client.getRun(runId).getStatus());
  }

  @Test
  void theClientWideDefaultAppliesToEveryCallUntilOverridden() {
    try (AskUserClient timed = builder().timeout(Duration.ofMillis(500)).build()) {
      assertEquals(Duration.ofMillis(500), timed.timeout().orElseThrow());
      assertTrue(timed.listAgents().size() > 0); // each call gets its own 500 ms
      String runId;
      try (Run run = timed.startRun("free_text", "greet me", Map.of())) {
        runId = run.next().getRunId();
        AskUserException error = assertThrows(AskUserException.class, () -> {
          while (run.hasNext()) {
            run.next();
          }
        });
        assertEquals(Status.Code.DEADLINE_EXCEEDED, error.code());
      }
      // withTimeout(null) lifts the deadline: attach, wait past 500 ms, then answer.
      try (Run run = timed.withTimeout(null).attach(runId, 0)) {
        RunAgentResponse frame;
        do {
          frame = run.next();
        } while (!frame.hasToolCallSuspended());
        sleep(800);
        run.answerText(frame.getToolCallSuspended().getToolCallId(), "Ada");
        RunAgentResponse last = frame;
        for (RunAgentResponse f : run) {
          last = f;
        }
        assertEquals("Hello, Ada!", last.getRunCompleted().getOutputText());
      }
    }
  }

  // Closing

  @Test
  void closingAViewKeepsTheChannelAndClosingTheOwnerShutsItDown() {
    AskUserClient owner = builder().build();
    try (AskUserClient view = owner.withTimeout(Duration.ofSeconds(5))) {
      assertTrue(view.listAgents().size() > 0);
    }
    assertTrue(owner.listAgents().size() > 0); // the view's close left the channel open
    owner.close();
    AskUserException error = assertThrows(AskUserException.class, owner::listAgents);
    assertEquals(Status.Code.UNAVAILABLE, error.code());
  }

  @Test
  void closingTheClientEndsItsOpenRunStreams() {
    Run run;
    try (AskUserClient owner = builder().build()) {
      run = owner.startRun("free_text", "greet me", Map.of());
      assertTrue(run.next().hasRunStarted());
    }
    assertThrows(AskUserException.class, () -> {
      while (run.hasNext()) {
        run.next();
      }
    });
    run.close(); // closing a run handle twice, or after its client, is harmless
  }

  // Following a stream asynchronously

  @Test
  void forEachAsyncHandsEveryFrameOverInOrderAndCompletesWhenTheRunEnds() throws Exception {
    List<RunAgentResponse.EventCase> kinds = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (Run run = client.startRun("free_text", "greet me", Map.of())) {
      CompletableFuture<Void> done = run.forEachAsync(frame -> {
        kinds.add(frame.getEventCase());
        if (frame.hasToolCallSuspended()) {
          run.answerText(frame.getToolCallSuspended().getToolCallId(), "Ada");
        }
      });
      done.get(10, TimeUnit.SECONDS);
    }
    assertEquals(RunAgentResponse.EventCase.RUN_STARTED, kinds.get(0));
    assertEquals(RunAgentResponse.EventCase.RUN_COMPLETED, kinds.get(kinds.size() - 1));
  }

  @Test
  void cancellingForEachAsyncClosesTheStreamAndTheRunGoesOn() throws Exception {
    Run run = client.startRun("free_text", "greet me", Map.of());
    String runId = run.runId();
    CompletableFuture<Void> done = run.forEachAsync(frame -> {});
    assertTrue(done.cancel(false));
    // The stream is over (the class's timeout catches a hang): ended by the half-close or cancelled.
    try {
      while (run.hasNext()) {
        run.next();
      }
    } catch (AskUserException e) {
      assertEquals(Status.Code.CANCELLED, e.code());
    }
    assertTrue(client.getRun(runId).getStatus() != RunStatus.RUN_STATUS_CANCELLED);
  }

  // Bounded buffering with back-pressure

  @Test
  void aSlowReaderWithABufferOfOneGetsEveryFrameInOrder() {
    AskUserClient oneFrame = client.withStreamBufferSize(1);
    assertEquals(1, oneFrame.streamBufferSize());
    List<RunAgentResponse> live = new ArrayList<>();
    try (Run run = oneFrame.startRun("two_step", "release", Map.of())) {
      assertEquals(1, run.bufferSize());
      answerSlowly(run, live, List.of("Apollo", "yes"));
    }
    RunAgentResponse last = live.get(live.size() - 1);
    assertTrue(last.hasRunCompleted(), last.toString());
    String runId = last.getRunId();
    // Live, the stored frames came in sequence order with no gap; answer_accepted frames
    // (live only, sequence 0) came once per answer.
    assertSequential(live.stream().filter(f -> f.getSequence() != 0).toList());
    assertEquals(2, live.stream().filter(RunAgentResponse::hasAnswerAccepted).count());

    // The replay through a buffer of one, read slowly, is the same frames as a normal read.
    List<RunAgentResponse> slow = new ArrayList<>();
    try (FrameStream replay = oneFrame.watchRun(runId, 0)) {
      for (RunAgentResponse frame : replay) {
        sleep(20);
        slow.add(frame);
      }
    }
    List<RunAgentResponse> fast = new ArrayList<>();
    client.watchRun(runId, 0).forEach(fast::add);
    assertEquals(fast, slow);
    assertSequential(slow);
    assertEquals(client.getRun(runId).getLastSequence(), slow.get(slow.size() - 1).getSequence());
  }

  @Test
  void aBufferMustHoldAFrame() {
    assertThrows(IllegalArgumentException.class, () -> client.withStreamBufferSize(0));
    assertThrows(IllegalArgumentException.class, () -> builder().streamBufferSize(0));
    assertThrows(IllegalArgumentException.class, () -> builder().timeout(Duration.ZERO));
  }

  // Async unary calls

  @Test
  void theAsyncCallsCompleteWithWhatTheBlockingOnesReturn() throws Exception {
    List<String> ids = client.listAgentsAsync().get(10, TimeUnit.SECONDS).stream().map(Agent::getAgentId).toList();
    assertEquals(client.listAgents().stream().map(Agent::getAgentId).toList(), ids);

    String runId;
    try (Run run = client.startRun("free_text", "greet me", Map.of("via", "async"))) {
      runId = run.next().getRunId();
    }
    dev.askuser.v1.Run got = client.getRunAsync(runId).get(10, TimeUnit.SECONDS);
    assertEquals(Map.of("via", "async"), got.getMetadataMap());

    CompletableFuture<List<String>> listed =
        client
            .listRunsAsync(ListRunsRequest.newBuilder().setAgentId("free_text").setPageSize(100).build())
            .thenApply(page -> page.getRunsList().stream().map(dev.askuser.v1.Run::getRunId).toList());
    assertTrue(listed.get(10, TimeUnit.SECONDS).contains(runId));

    dev.askuser.v1.Run cancelled = client.cancelRunAsync(runId, "async").get(10, TimeUnit.SECONDS);
    assertEquals(RunStatus.RUN_STATUS_CANCELLED, cancelled.getStatus());
  }

  @Test
  void anAsyncCallFailsItsFutureWithTheClientsException() {
    ExecutionException failure =
        assertThrows(ExecutionException.class, () -> client.getRunAsync("no-such-run").get(10, TimeUnit.SECONDS));
    AskUserException error = assertInstanceOf(AskUserException.class, failure.getCause());
    assertEquals(Status.Code.NOT_FOUND, error.code());

    ExecutionException late =
        assertThrows(
            ExecutionException.class,
            () -> client.withTimeout(Duration.ofNanos(1)).listAgentsAsync().get(10, TimeUnit.SECONDS));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, ((AskUserException) late.getCause()).code());
  }

  /** Reads every frame with a pause before each, answering each question with the next answer. */
  private static void answerSlowly(Run run, List<RunAgentResponse> frames, List<String> answers) {
    int next = 0;
    for (RunAgentResponse frame : run) {
      sleep(20);
      frames.add(frame);
      if (frame.hasToolCallSuspended()) {
        run.answerText(frame.getToolCallSuspended().getToolCallId(), answers.get(next++));
      }
    }
    assertEquals(answers.size(), next);
  }

  private static void assertSequential(List<RunAgentResponse> frames) {
    for (int i = 0; i < frames.size(); i++) {
      assertEquals(i + 1, frames.get(i).getSequence(), "frame " + i + " of " + frames);
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
