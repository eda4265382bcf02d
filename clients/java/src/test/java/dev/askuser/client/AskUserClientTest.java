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
import dev.askuser.v1.ApprovalPolicy;
import dev.askuser.v1.FormField;
import dev.askuser.v1.ListRunsRequest;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.RunAgentResponse.EventCase;
import dev.askuser.v1.RunStatus;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.ToolCallSuspended;
import dev.askuser.v1.ToolResult;
import dev.askuser.v1.ToolResultKind;
import dev.askuser.v1.WatchPendingCallsResponse;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The wrapper against a real server serving tests/conformance/agents.toml, whose address is in
 * ASKUSER_ADDR (clients/java/test.sh sets it), with a key of it in ASKUSER_API_KEY when it
 * checks keys.
 */
@Timeout(30)
class AskUserClientTest {
  private static AskUserClient client;

  @BeforeAll
  static void connect() {
    String address = System.getenv("ASKUSER_ADDR");
    assertNotNull(address, "set ASKUSER_ADDR to the HOST:PORT of askuser serving tests/conformance/agents.toml");
    AskUserClient.Builder builder = AskUserClient.builder(address);
    String apiKey = System.getenv("ASKUSER_API_KEY");
    if (apiKey != null && !apiKey.isEmpty()) {
      builder.apiKey(apiKey);
    }
    client = builder.build();
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
      run.answerSelections(nextSuspended(run).getToolCallId(), List.of("e2e", "lint"));
      assertEquals("Checks [e2e, lint]", last(drain(run)).getRunCompleted().getOutputText());
    }
  }

  @Test
  void aDeclineReachesTheModelAsADeclinedResult() {
    try (Run run = client.startRun("pick", "deploy", Map.of())) {
      run.decline(nextSuspended(run).getToolCallId(), "not now");
      RunAgentResponse result =
          drain(run).stream().filter(RunAgentResponse::hasToolResult).findFirst().orElseThrow();
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_DECLINED, result.getToolResult().getKind());
      assertEquals("User declined to answer: not now", result.getToolResult().getContent());
    }
  }

  @Test
  void aBadAnswerIsRejectedInBandAndTheQuestionStaysAnswerable() {
    try (Run run = client.startRun("pick", "deploy", Map.of())) {
      String toolCallId = nextSuspended(run).getToolCallId();
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
  void answerFormAnswersTheFieldsTogetherAndAWrongValueIsRejectedInBandNamingTheField() {
    try (Run run = client.startRun("form", "release", Map.of())) {
      ToolCallSuspended form = nextSuspended(run);
      assertEquals(SuspendKind.SUSPEND_KIND_FORM, form.getKind());
      assertEquals(List.of("version", "replicas", "announce"),
          form.getForm().getFieldsList().stream().map(FormField::getName).toList());
      run.answerForm(form.getToolCallId(), Map.of("version", FieldValues.text("1.2.3"), "replicas", FieldValues.number(2.5)));
      RunAgentResponse rejected = run.next();
      assertEquals("INVALID_ANSWER", rejected.getAnswerRejected().getReason());
      assertEquals(List.of("answer.form.values[\"replicas\"]"),
          rejected.getAnswerRejected().getFieldViolationsList().stream().map(dev.askuser.v1.FieldViolation::getField).toList());
      run.answerForm(form.getToolCallId(), Map.of(
          "version", FieldValues.text("1.2.3"), "replicas", FieldValues.number(3), "announce", FieldValues.bool(true)));
      assertEquals(EventCase.ANSWER_ACCEPTED, run.next().getEventCase());
      ToolResult result = toolResult(drain(run));
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_ANSWERED, result.getKind());
      assertEquals("{\"action\":\"accept\",\"content\":{\"announce\":true,\"replicas\":3,\"version\":\"1.2.3\"}}",
          result.getContent());
    }
  }

  @Test
  void aReplySettlesAQuestionInsteadOfAnAnswerAndTheModelIsToldSo() {
    try (Run run = client.startRun("free_text", "greet me", Map.of())) {
      run.reply(nextSuspended(run).getToolCallId(), "why?");
      List<RunAgentResponse> frames = drain(run);
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_REPLIED, toolResult(frames).getKind());
      assertEquals("User replied instead of answering: why?", toolResult(frames).getContent());
      assertEquals("Hello, User replied instead of answering: why?!", last(frames).getRunCompleted().getOutputText());
    }
  }

  @Test
  void attachReplaysTheRunAfterADisconnectAndTakesTheAnswer() {
    try (Run attached = client.attach(waitingRun("free_text").runId(), 0)) {
      assertEquals(1, attached.next().getSequence());
      attached.answerText(nextSuspended(attached).getToolCallId(), "Grace");
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
      run.answerText(nextSuspended(run).getToolCallId(), "Ada");
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
    nextSuspended(watch);
    watch.close();
    AskUserException error = assertThrows(AskUserException.class, watch::hasNext);
    assertEquals(Status.Code.CANCELLED, error.code());
  }

  @Test
  void cancelRunEndsASuspendedRunAndTellsItsStream() {
    try (Run run = client.startRun("pick", "deploy", Map.of())) {
      String runId = run.next().getRunId();
      nextSuspended(run);
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

  @Test
  void aClientToolOutputBecomesTheResultTheModelSees() {
    try (Run run = client.startRun("status_check", "check", Map.of())) {
      ToolCallSuspended call = nextSuspended(run);
      assertEquals(SuspendKind.SUSPEND_KIND_CLIENT_TOOL, call.getKind());
      assertEquals("service_status", call.getToolName());
      assertEquals("{\"service\":\"api\"}", call.getArgumentsJson().replace(" ", ""));
      run.sendToolOutput(call.getToolCallId(), "healthy");
      List<RunAgentResponse> frames = drain(run);
      ToolResult result = toolResult(frames);
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_OUTPUT, result.getKind());
      assertEquals("healthy", result.getContent());
      assertFalse(result.getIsError());
      assertEquals("api is healthy", last(frames).getRunCompleted().getOutputText());
    }
  }

  @Test
  void aClientToolErrorOutputIsMarkedAsAnError() {
    try (Run run = client.startRun("status_check", "check", Map.of())) {
      run.sendToolOutput(nextSuspended(run).getToolCallId(), "connection refused", true);
      List<RunAgentResponse> frames = drain(run);
      assertTrue(toolResult(frames).getIsError());
      assertEquals("api is connection refused", last(frames).getRunCompleted().getOutputText());
    }
  }

  @Test
  void anApprovedCallIsSuspendedAgainForItsOutput() {
    try (Run run = deployToProduction()) {
      ToolCallSuspended approval = nextSuspended(run);
      assertEquals(SuspendKind.SUSPEND_KIND_APPROVAL, approval.getKind());
      assertEquals("args.environment == \"production\"", approval.getApprovalReason());
      run.approve(approval.getToolCallId());
      ToolCallSuspended call = nextSuspended(run);
      assertEquals(approval.getToolCallId(), call.getToolCallId());
      assertEquals(SuspendKind.SUSPEND_KIND_CLIENT_TOOL, call.getKind());
      run.sendToolOutput(call.getToolCallId(), "deployed v42");
      assertEquals(
          "Deploy of api to production (status healthy): deployed v42",
          last(drain(run)).getRunCompleted().getOutputText());
    }
  }

  @Test
  void aRejectedCallNeverRunsAndTheModelGetsTheReason() {
    try (Run run = deployToProduction()) {
      run.reject(nextSuspended(run).getToolCallId(), "not today");
      ToolResult result = toolResult(drain(run));
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_REJECTED, result.getKind());
      assertEquals("User rejected the call: not today", result.getContent());
    }
  }

  @Test
  void editedArgumentsAreCheckedThenRunInstead() {
    try (Run run = deployToProduction()) {
      String toolCallId = nextSuspended(run).getToolCallId();
      run.editArguments(toolCallId, "{\"service\": \"api\", \"environment\": \"moon\"}");
      RunAgentResponse rejected = run.next();
      assertEquals(
          "answer.approval.edit.arguments_json", rejected.getAnswerRejected().getFieldViolations(0).getField());
      run.editArguments(toolCallId, "{\"service\": \"api\", \"environment\": \"staging\"}");
      ToolCallSuspended call = nextSuspended(run);
      assertEquals(SuspendKind.SUSPEND_KIND_CLIENT_TOOL, call.getKind());
      assertTrue(call.getArgumentsJson().contains("staging"), call.getArgumentsJson());
      run.sendToolOutput(toolCallId, "deployed v42");
      assertTrue(toolResult(drain(run)).getContent().startsWith("User edited the arguments to "));
    }
  }

  @Test
  void aPerRunToolIsOfferedForThatRunWithItsApprovalPolicy() {
    String schema = "{\"type\": \"object\", \"properties\": {\"key\": {\"type\": \"string\"}}}";
    try (Run run = client.startRun("per_run", "look up a", Map.of(),
        List.of(AskUserClient.clientTool("lookup", "Looks a key up", schema, ApprovalPolicy.APPROVAL_POLICY_ALWAYS)))) {
      ToolCallSuspended approval = nextSuspended(run);
      assertEquals(SuspendKind.SUSPEND_KIND_APPROVAL, approval.getKind());
      assertEquals("always", approval.getApprovalReason());
      run.approve(approval.getToolCallId());
      run.sendToolOutput(nextSuspended(run).getToolCallId(), "42");
      assertEquals("lookup: 42", last(drain(run)).getRunCompleted().getOutputText());
    }
  }

  @Test
  void aPerRunToolWithABadSchemaFailsTheStreamNamingTheField() {
    List<dev.askuser.v1.ToolDefinition> tools =
        List.of(AskUserClient.clientTool("lookup", "", "{\"type\": 12}", ApprovalPolicy.APPROVAL_POLICY_NEVER));
    try (Run run = client.startRun("per_run", "look up a", Map.of(), tools)) {
      AskUserException error = assertThrows(AskUserException.class, run::hasNext);
      assertEquals(Status.Code.INVALID_ARGUMENT, error.code());
      assertTrue(
          error.fieldViolations().stream()
              .anyMatch(v -> v.getField().equals("start.tools[0].parameters_json_schema")),
          error.fieldViolations().toString());
    }
  }

  @Test
  void thePendingCallsFeedShowsACallUntilItIsSettledAndClaimsKeepOtherWorkersOff() {
    try (PendingCallStream feed = client.watchPendingCalls(
        List.of("status_check"), List.of(), List.of(SuspendKind.SUSPEND_KIND_CLIENT_TOOL))) {
      while (!feed.next().hasSnapshotDone()) {
        // calls other tests left pending
      }
      String runId;
      String toolCallId;
      try (Run run = client.startRun("status_check", "check", Map.of())) {
        runId = run.next().getRunId();
        toolCallId = nextSuspended(run).getToolCallId();
      }
      WatchPendingCallsResponse pending = nextEventOf(feed, runId);
      assertEquals(toolCallId, pending.getCallPending().getCall().getToolCallId());
      assertEquals("status_check", pending.getCallPending().getAgentId());
      assertEquals(SuspendKind.SUSPEND_KIND_CLIENT_TOOL, pending.getCallPending().getCall().getKind());

      Instant expires = client.claimCall(runId, toolCallId, "worker-1", Duration.ofSeconds(30));
      assertTrue(expires.isAfter(Instant.now().plusSeconds(20)), expires.toString());
      AskUserException claimed =
          assertThrows(AskUserException.class, () -> client.claimCall(runId, toolCallId, "worker-2", null));
      assertEquals(Status.Code.FAILED_PRECONDITION, claimed.code());
      assertEquals("ALREADY_CLAIMED", claimed.reason());
      client.claimCall(runId, toolCallId, "worker-1", null);
      assertEquals("worker-1", client.getRun(runId).getPendingToolCalls(0).getClaimant());

      List<RunAgentResponse> frames = drain(client.resumeRun(Answers.toolOutput(runId, toolCallId, "up", false)));
      assertEquals(EventCase.RUN_COMPLETED, last(frames).getEventCase());
      WatchPendingCallsResponse settled = nextEventOf(feed, runId);
      assertEquals(toolCallId, settled.getCallSettled().getToolCallId());
      assertEquals(ToolResultKind.TOOL_RESULT_KIND_OUTPUT, settled.getCallSettled().getKind());

      AskUserException notPending =
          assertThrows(AskUserException.class, () -> client.claimCall(runId, toolCallId, "worker-2", null));
      assertEquals("TOOL_CALL_NOT_PENDING", notPending.reason());
    }
  }

  /** A deployer run to production, waiting for the deploy's approval. */
  private static Run deployToProduction() {
    Run run = client.startRun("deployer", "ship api", Map.of());
    run.answerText(nextSuspended(run).getToolCallId(), "production");
    run.sendToolOutput(nextSuspended(run).getToolCallId(), "healthy");
    return run;
  }

  /** The next event of this run on the feed, skipping other runs' events. */
  private static WatchPendingCallsResponse nextEventOf(PendingCallStream feed, String runId) {
    for (WatchPendingCallsResponse event : feed) {
      String eventRun = event.hasCallPending() ? event.getCallPending().getRunId() : event.getCallSettled().getRunId();
      if (eventRun.equals(runId)) {
        return event;
      }
    }
    throw new AssertionError("the feed ended");
  }

  private static ToolResult toolResult(List<RunAgentResponse> frames) {
    return frames.stream().filter(RunAgentResponse::hasToolResult).findFirst().orElseThrow().getToolResult();
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
      return new Waiting(runId, nextSuspended(run).getToolCallId());
    }
  }

  private static ToolCallSuspended nextSuspended(FrameStream frames) {
    for (RunAgentResponse frame : frames) {
      if (frame.hasToolCallSuspended()) {
        return frame.getToolCallSuspended();
      }
    }
    throw new AssertionError("the stream ended without suspending a tool call");
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
