package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.rpc.BadRequest;
import dev.askuser.v1.Agent;
import dev.askuser.v1.Answer;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserOption;
import dev.askuser.v1.ListRunsRequest;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.RunAgentResponse.EventCase;
import dev.askuser.v1.RunStatus;
import dev.askuser.v1.ToolCallSuspended;
import dev.askuser.v1.ToolResultKind;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The wrapper against a real server serving tests/conformance/agents.toml, whose address is in
 * ASKUSER_ADDR (clients/java/conformance.sh sets it).
 */
@Timeout(30)
class AskUserClientTest {
  private static AskUserClient client;

  @BeforeAll
  static void connect() {
    String address = System.getenv("ASKUSER_ADDR");
    assertNotNull(address, "set ASKUSER_ADDR to the HOST:PORT of askuser serving tests/conformance/agents.toml");
    client = new AskUserClient(address);
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @Test
  void listAgentsReturnsTheConfiguredAgentsOrderedById() {
    List<String> ids = client.listAgents().stream().map(Agent::getAgentId).toList();
    assertTrue(ids.containsAll(List.of("checks", "free_text", "parallel", "pick", "two_step")), ids.toString());
    assertEquals(ids.stream().sorted().toList(), ids);
  }

  @Test
  void aTextAnswerResumesTheRunAndTheStreamEndsAfterTheResult() {
    List<RunAgentResponse> frames = new ArrayList<>();
    try (Run run = client.startRun("free_text", "greet me", Map.of("team", "core"))) {
      for (RunAgentResponse frame : run) {
        frames.add(frame);
        if (frame.hasToolCallSuspended()) {
          assertEquals("What is your name?", frame.getToolCallSuspended().getSuspendPayload().getQuestion());
          run.answerText(frame.getToolCallSuspended().getToolCallId(), "Ada");
        }
      }
      assertFalse(run.hasNext());
    }
    RunAgentResponse started = frames.get(0);
    assertEquals(EventCase.RUN_STARTED, started.getEventCase());
    assertEquals(Map.of("team", "core"), started.getRunStarted().getMetadataMap());
    RunAgentResponse completed = frames.get(frames.size() - 1);
    assertEquals("Hello, Ada!", completed.getRunCompleted().getOutputText());
    assertTrue(frames.stream().allMatch(f -> f.getRunId().equals(started.getRunId())));
    assertEquals(Map.of("team", "core"), client.getRun(started.getRunId()).getMetadataMap());
  }

  @Test
  void selectionsKeepTheOrderTheyWereChosenIn() {
    try (Run run = client.startRun("checks", "check", Map.of())) {
      run.answerSelections(nextQuestion(run).getToolCallId(), List.of("e2e", "lint"));
      assertEquals("Checks [e2e, lint]", last(drain(run)).getRunCompleted().getOutputText());
    }
  }

  @Test
  void aDeclineReachesTheModelAsADeclinedResult() {
    try (Run run = client.startRun("pick", "deploy", Map.of())) {
      run.decline(nextQuestion(run).getToolCallId(), "not now");
      RunAgentResponse result =
          drain(run).stream().filter(RunAgentResponse::hasToolResult).findFirst().orElseThrow();
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_DECLINED, result.getToolResult().getKind());
      assertEquals("User declined to answer: not now", result.getToolResult().getContent());
    }
  }

  @Test
  void aBadAnswerIsRejectedInBandAndTheQuestionStaysAnswerable() {
    try (Run run = client.startRun("pick", "deploy", Map.of())) {
      String toolCallId = nextQuestion(run).getToolCallId();
      run.answerText(toolCallId, "qa");
      RunAgentResponse rejected = run.next();
      assertEquals("INVALID_ANSWER", rejected.getAnswerRejected().getReason());
      assertEquals("answer.text", rejected.getAnswerRejected().getFieldViolations(0).getField());
      run.answerText(toolCallId, "staging");
      assertEquals(EventCase.ANSWER_ACCEPTED, run.next().getEventCase());
      assertEquals("Deploying to staging", last(drain(run)).getRunCompleted().getOutputText());
    }
  }

  @Test
  void attachReplaysTheRunAfterADisconnectAndTakesTheAnswer() {
    try (Run attached = client.attach(waitingRun("free_text").runId(), 0)) {
      assertEquals(1, attached.next().getSequence());
      attached.answerText(nextQuestion(attached).getToolCallId(), "Grace");
      assertEquals("Hello, Grace!", last(drain(attached)).getRunCompleted().getOutputText());
    }
  }

  @Test
  void resumeRunStreamsUntilTheRunWaitsAgainAndRefusesASecondAnswer() {
    Waiting run = waitingRun("two_step");
    List<RunAgentResponse> frames = drain(client.resumeRun(run.answer("Apollo")));
    assertEquals(
        List.of(EventCase.ANSWER_ACCEPTED, EventCase.TOOL_RESULT, EventCase.TOOL_CALL, EventCase.TOOL_CALL_SUSPENDED),
        frames.stream().map(RunAgentResponse::getEventCase).toList());
    assertEquals("Ship Apollo?", last(frames).getToolCallSuspended().getSuspendPayload().getQuestion());

    AskUserException error =
        assertThrows(AskUserException.class, () -> drain(client.resumeRun(run.answer("Hermes"))));
    assertEquals(Status.Code.FAILED_PRECONDITION, error.code());
    assertEquals("ALREADY_ANSWERED", error.reason());
  }

  @Test
  void resumeRunReportsAnInvalidAnswerWithItsFieldViolation() {
    Waiting run = waitingRun("pick");
    AskUserException error = assertThrows(AskUserException.class, () -> drain(client.resumeRun(run.answer("qa"))));
    assertEquals(Status.Code.INVALID_ARGUMENT, error.code());
    assertEquals("INVALID_ANSWER", error.reason());
    assertEquals(
        List.of("answer.text"), error.fieldViolations().stream().map(BadRequest.FieldViolation::getField).toList());
  }

  @Test
  void watchRunReplaysAFinishedRunAndEnds() {
    String runId;
    try (Run run = client.startRun("free_text", "greet me", Map.of())) {
      runId = run.next().getRunId();
      run.answerText(nextQuestion(run).getToolCallId(), "Ada");
      drain(run);
    }
    List<RunAgentResponse> replay = drain(client.watchRun(runId, 0));
    assertEquals(EventCase.RUN_STARTED, replay.get(0).getEventCase());
    assertEquals("Hello, Ada!", last(replay).getRunCompleted().getOutputText());
    assertEquals(client.getRun(runId).getLastSequence(), last(replay).getSequence());
  }

  @Test
  void closingAWatchCancelsIt() {
    FrameStream watch = client.watchRun(waitingRun("free_text").runId(), 0);
    nextQuestion(watch);
    watch.close();
    AskUserException error = assertThrows(AskUserException.class, watch::hasNext);
    assertEquals(Status.Code.CANCELLED, error.code());
  }

  @Test
  void cancelRunEndsASuspendedRunAndTellsItsStream() {
    try (Run run = client.startRun("pick", "deploy", Map.of())) {
      String runId = run.next().getRunId();
      nextQuestion(run);
      assertEquals(RunStatus.RUN_STATUS_CANCELLED, client.cancelRun(runId, "changed my mind").getStatus());
      RunAgentResponse cancelled = last(drain(run));
      assertEquals("changed my mind", cancelled.getRunCancelled().getReason());
      assertEquals(RunStatus.RUN_STATUS_CANCELLED, client.cancelRun(runId, "again").getStatus());
    }
  }

  @Test
  void listRunsFiltersByAgentAndStatus() {
    String runId = waitingRun("two_step").runId();
    ListRunsRequest suspended =
        ListRunsRequest.newBuilder().setAgentId("two_step").setStatus(RunStatus.RUN_STATUS_SUSPENDED).build();
    assertTrue(runIds(suspended).contains(runId));
    assertFalse(runIds(suspended.toBuilder().setStatus(RunStatus.RUN_STATUS_COMPLETED).build()).contains(runId));
    assertFalse(runIds(suspended.toBuilder().setAgentId("pick").build()).contains(runId));
  }

  @Test
  void unknownAgentsAndRunsAreNotFound() {
    try (Run run = client.startRun("no_such_agent", "hello", Map.of())) {
      AskUserException error = assertThrows(AskUserException.class, run::hasNext);
      assertEquals(Status.Code.NOT_FOUND, error.code());
      assertEquals("AGENT_NOT_FOUND", error.reason());
    }
    AskUserException error = assertThrows(AskUserException.class, () -> client.getRun("no-such-run"));
    assertEquals(Status.Code.NOT_FOUND, error.code());
    assertEquals("RUN_NOT_FOUND", error.reason());
  }

  @Test
  void askUserRendersTheFallbackText() {
    AskUserInput input =
        AskUserInput.newBuilder()
            .setQuestion("Which environment?")
            .addOptions(AskUserOption.newBuilder().setLabel("staging"))
            .addOptions(AskUserOption.newBuilder().setLabel("production"))
            .build();
    assertEquals(
        "[Question for user]: Which environment?\nOptions: staging, production\nSelection mode: single_select",
        client.askUser(input));
  }

  @Test
  void askUserRejectsInvalidInputFieldByField() {
    AskUserInput input =
        AskUserInput.newBuilder().setQuestion(" ").addOptions(AskUserOption.newBuilder().setLabel("")).build();
    AskUserException error = assertThrows(AskUserException.class, () -> client.askUser(input));
    assertEquals(Status.Code.INVALID_ARGUMENT, error.code());
    assertEquals(
        List.of("input.question", "input.options[0].label"),
        error.fieldViolations().stream().map(BadRequest.FieldViolation::getField).toList());
  }

  /** A run waiting on its first question, with no stream attached. */
  private record Waiting(String runId, String toolCallId) {
    Answer answer(String text) {
      return Answer.newBuilder().setRunId(runId).setToolCallId(toolCallId).setText(text).build();
    }
  }

  private static Waiting waitingRun(String agentId) {
    try (Run run = client.startRun(agentId, "test", Map.of())) {
      String runId = run.next().getRunId();
      return new Waiting(runId, nextQuestion(run).getToolCallId());
    }
  }

  private static ToolCallSuspended nextQuestion(FrameStream frames) {
    for (RunAgentResponse frame : frames) {
      if (frame.hasToolCallSuspended()) {
        return frame.getToolCallSuspended();
      }
    }
    throw new AssertionError("the stream ended without asking a question");
  }

  /** Every frame up to the end of the stream. */
  private static List<RunAgentResponse> drain(FrameStream frames) {
    List<RunAgentResponse> all = new ArrayList<>();
    frames.forEach(all::add);
    return all;
  }

  private static RunAgentResponse last(List<RunAgentResponse> frames) {
    assertFalse(frames.isEmpty(), "the stream had no frames");
    return frames.get(frames.size() - 1);
  }

  private static List<String> runIds(ListRunsRequest request) {
    return client.listRuns(request).getRunsList().stream().map(dev.askuser.v1.Run::getRunId).toList();
  }
}
