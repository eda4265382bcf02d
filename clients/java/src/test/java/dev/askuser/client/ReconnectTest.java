package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.RunStatus;
import io.grpc.Status;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reattachment and retries against a server of the test's own that it kills (SIGKILL) and starts
 * again on the same port and data dir: {@code ASKUSER_BIN} (default {@code target/debug/askuser}
 * under the repository root) serving tests/conformance/agents.toml, anonymous.
 */
@Timeout(60)
class ReconnectTest {
  private static final Path ROOT = Path.of("../..").toAbsolutePath().normalize();

  /** The server's data and log: removed after a test that passed, kept for one that failed. */
  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  private int port;
  private Process server;

  @BeforeEach
  void startServer() throws IOException {
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    start();
  }

  @AfterEach
  void stopServer() throws InterruptedException {
    // Gone before its directory is removed.
    server.destroyForcibly().waitFor();
  }

  private void start() throws IOException {
    String binary = System.getenv().getOrDefault("ASKUSER_BIN", ROOT.resolve("target/debug/askuser").toString());
    server = new ProcessBuilder(binary, "serve", "--listen", "127.0.0.1:" + port,
            "--data-dir", dir.resolve("data").toString(),
            "--config", ROOT.resolve("tests/conformance/agents.toml").toString())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()))
        .start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      if (!server.isAlive()) {
        fail("the server exited; see " + dir.resolve("server.log"));
      }
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
        return;
      } catch (IOException notYet) {
        sleep(50);
      }
    }
    fail("the server did not start listening");
  }

  /** Kills the server at once (nothing flushed, no goodbye) and starts it again after {@code downMs}, in the background. */
  private CompletableFuture<Void> restart(long downMs) throws InterruptedException {
    server.destroyForcibly().waitFor();
    return CompletableFuture.runAsync(() -> {
      sleep(downMs);
      try {
        start();
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void aWaitingRunSurvivesTwoRestartsWithEveryFrameDeliveredOnce() throws Exception {
    List<Long> sequences = new ArrayList<>();
    try (AskUserClient client = new AskUserClient("127.0.0.1:" + port);
        Run run = client.startRun("two_step", "release", Map.of())) {
      String runId = run.runId();
      int restarts = 0;
      for (RunAgentResponse frame : run) {
        assertEquals(runId, frame.getRunId());
        if (frame.getSequence() > 0) {
          sequences.add(frame.getSequence());
        }
        if (frame.hasToolCallSuspended()) {
          CompletableFuture<Void> back = restart(restarts == 0 ? 1000 : 0);
          restarts++;
          String id = frame.getToolCallSuspended().getToolCallId();
          if (restarts == 1) {
            // Sent while the server is down: kept, and sent on the reattached stream.
            run.answer(Answers.text("", id, "Apollo").toBuilder().setAnswerId("restart-1").build());
            // Retried until the server is back.
            assertEquals(RunStatus.RUN_STATUS_SUSPENDED, client.getRun(runId).getStatus());
          } else {
            run.answer(Answers.selections("", id, List.of("yes")).toBuilder().setAnswerId("restart-2").build());
          }
          back.get(30, TimeUnit.SECONDS);
        }
        if (frame.hasRunCompleted()) {
          assertEquals("Apollo: yes", frame.getRunCompleted().getOutputText());
        }
      }
      assertEquals(2, restarts);
      assertEquals(RunStatus.RUN_STATUS_COMPLETED, client.getRun(runId).getStatus());
    }
    for (int i = 0; i < sequences.size(); i++) {
      assertEquals(i + 1, sequences.get(i), "sequences " + sequences);
    }
  }

  @Test
  void watchRunAndThePendingFeedOpenAgainAfterARestart() throws Exception {
    try (AskUserClient client = new AskUserClient("127.0.0.1:" + port);
        Run run = client.startRun("free_text", "greet me", Map.of())) {
      while (!run.next().hasToolCallSuspended()) {
        // up to the question
      }
      try (FrameStream watch = client.watchRun(run.runId(), 0);
          PendingCallStream feed = client.watchPendingCalls(List.of("free_text"), List.of(), List.of())) {
        assertEquals(1, watch.next().getSequence());
        while (!feed.next().hasSnapshotDone()) {
          // the calls pending at connect
        }
        restart(300).get(30, TimeUnit.SECONDS);
        // The watch goes on after sequence 1; the feed starts over with a new snapshot, which has the question.
        assertEquals(2, watch.next().getSequence());
        List<String> pendingRuns = new ArrayList<>();
        for (var event = feed.next(); !event.hasSnapshotDone(); event = feed.next()) {
          pendingRuns.add(event.getCallPending().getRunId());
        }
        assertTrue(pendingRuns.contains(run.runId()), "the new snapshot: " + pendingRuns);
      }
    }
  }

  @Test
  void aRequestsAnswerReachesTheAskerAcrossARestart() throws Exception {
    try (AskUserClient client = new AskUserClient("127.0.0.1:" + port);
        HumanRequest request = client.ask(AskOptions.approval("deploy", Map.of("environment", "production"), ""))) {
      CompletableFuture<HumanOutcome> waiting = request.awaitAsync();
      restart(1000).get(30, TimeUnit.SECONDS);
      // Retried until the channel is connected again (resumeRun is not retried).
      assertEquals(RunStatus.RUN_STATUS_SUSPENDED, client.getRun(request.runId()).getStatus());
      try (FrameStream frames = client.resumeRun(
          Answers.editArguments(request.runId(), request.toolCallId(), "{\"environment\":\"staging\"}"))) {
        frames.forEachRemaining(frame -> {});
      }
      HumanOutcome outcome = waiting.get(30, TimeUnit.SECONDS);
      assertEquals(HumanOutcome.Kind.EDITED, outcome.kind());
      assertEquals(Map.of("environment", "staging"), outcome.arguments());
    }
  }

  @Test
  void anAskMadeWhileTheServerIsDownIsMadeOnceItIsBack() throws Exception {
    try (AskUserClient client = new AskUserClient("127.0.0.1:" + port)) {
      CompletableFuture<Void> back = restart(800);
      AskOptions options = AskOptions.question("Release name?").requestId("down-" + port);
      try (HumanRequest request = client.ask(options)) {
        back.get(30, TimeUnit.SECONDS);
        // One request: asking again follows it.
        try (HumanRequest again = client.ask(options)) {
          assertEquals(request.runId(), again.runId());
        }
        try (FrameStream frames = client.resumeRun(Answers.text(request.runId(), request.toolCallId(), "Apollo"))) {
          frames.forEachRemaining(frame -> {});
        }
        assertEquals("Apollo", request.await(Duration.ofSeconds(20)).text());
      }
    }
  }

  @Test
  void withReconnectOffADroppedStreamAndAUnaryCallFailWithUnavailable() throws Exception {
    try (AskUserClient client = AskUserClient.builder("127.0.0.1:" + port).reconnect(Reconnect.OFF).build();
        Run run = client.startRun("free_text", "greet me", Map.of())) {
      String runId = run.runId();
      server.destroyForcibly().waitFor();
      AskUserException dropped = assertThrows(AskUserException.class, () -> {
        while (run.hasNext()) {
          run.next();
        }
      });
      assertEquals(Status.Code.UNAVAILABLE, dropped.code());
      AskUserException error = assertThrows(AskUserException.class, () -> client.getRun(runId));
      assertEquals(Status.Code.UNAVAILABLE, error.code());
    }
  }
}
