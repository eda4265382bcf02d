package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.rpc.BadRequest;
import dev.askuser.v1.Answer;
import dev.askuser.v1.BooleanField;
import dev.askuser.v1.Choice;
import dev.askuser.v1.ChoiceField;
import dev.askuser.v1.Form;
import dev.askuser.v1.FormField;
import dev.askuser.v1.NumberField;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.RunStatus;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.TextField;
import dev.askuser.v1.WatchPendingCallsResponse;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Asking a person from code outside any run ({@code HumanService.Ask}): {@code ask}, {@code
 * askHuman}, {@code requestApproval} against the server in ASKUSER_ADDR (with ASKUSER_API_KEY when
 * it checks keys). Each request is answered by a second client, as a person in the inbox would.
 */
@Timeout(30)
class AskTest {
  private static AskUserClient asker;
  /** Someone else: answers through ResumeRun, reads the pending-calls feed. */
  private static AskUserClient answerer;

  private static AskUserClient connect() {
    String address = System.getenv("ASKUSER_ADDR");
    assertNotNull(address, "set ASKUSER_ADDR to the HOST:PORT of askuser serving tests/conformance/agents.toml");
    AskUserClient.Builder builder = AskUserClient.builder(address);
    String apiKey = System.getenv("ASKUSER_API_KEY");
    if (apiKey != null && !apiKey.isEmpty()) {
      builder.apiKey(apiKey);
    }
    return builder.build();
  }

  @BeforeAll
  static void connectBoth() {
    asker = connect();
    answerer = connect();
  }

  @AfterAll
  static void disconnect() {
    asker.close();
    answerer.close();
  }

  /** Settles a call as a person would, from the other client; returns the frames that followed. */
  private static List<RunAgentResponse> settle(Answer answer) {
    List<RunAgentResponse> frames = new ArrayList<>();
    try (FrameStream stream = answerer.resumeRun(answer)) {
      stream.forEachRemaining(frames::add);
    }
    return frames;
  }

  /** A tool name of this test only, so that the feed shows this test's call alone. */
  private static String toolName(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Waits on the feed for the call of a request of {@code toolName}, and settles it with {@code answer}. */
  private static CompletableFuture<Void> settleFromFeed(String toolName, java.util.function.BiFunction<String, String, Answer> answer) {
    PendingCallStream feed = answerer.watchPendingCalls(List.of(), List.of(toolName), List.of());
    return CompletableFuture.runAsync(() -> {
      try (feed) {
        for (WatchPendingCallsResponse event : feed) {
          if (event.hasCallPending()) {
            assertEquals(SuspendKind.SUSPEND_KIND_APPROVAL, event.getCallPending().getCall().getKind());
            settle(answer.apply(event.getCallPending().getRunId(), event.getCallPending().getCall().getToolCallId()));
            return;
          }
        }
      }
    });
  }

  @Test
  void aQuestionAnsweredByAnotherClientComesBackAsText() {
    try (HumanRequest request = asker.ask(
        AskOptions.question("Release name?").context("The nightly build is **green**."))) {
      assertFalse(request.runId().isEmpty());
      assertFalse(request.toolCallId().isEmpty());
      assertFalse(request.requestId().isEmpty(), "a request id is generated");
      assertEquals("Release name?", request.suspended().orElseThrow().getSuspendPayload().getQuestion());
      dev.askuser.v1.Run run = answerer.getRun(request.runId());
      assertEquals("", run.getAgentId());
      assertEquals(RunStatus.RUN_STATUS_SUSPENDED, run.getStatus());

      settle(Answers.text(request.runId(), request.toolCallId(), "Apollo"));
      HumanOutcome outcome = request.await();
      assertEquals(HumanOutcome.Kind.TEXT, outcome.kind());
      assertEquals("Apollo", outcome.text());
      assertEquals("User answered: Apollo", outcome.content());
      assertFalse(outcome.settledBy().isEmpty(), outcome.toString());
      assertEquals(request.runId(), outcome.runId());
      assertEquals("Apollo", outcome.answer().orElseThrow().getText());
      assertEquals(outcome, request.await(), "the outcome is kept");
    }
  }

  @Test
  void aMultiSelectQuestionComesBackAsSelectionsInOrder() {
    try (HumanRequest request = asker.ask(
        AskOptions.question("Which checks?").options("unit", "load, soak").option("e2e", "the slow ones").multiSelect())) {
      assertEquals(3, request.suspended().orElseThrow().getSuspendPayload().getOptionsCount());
      settle(Answers.selections(request.runId(), request.toolCallId(), List.of("e2e", "unit")));
      HumanOutcome outcome = request.await(Duration.ofSeconds(10));
      assertEquals(HumanOutcome.Kind.SELECTIONS, outcome.kind());
      assertEquals(List.of("e2e", "unit"), outcome.selections());
    }
  }

  @Test
  void aFormComesBackAsPlainValues() {
    Form form = Form.newBuilder()
        .setTitle("Release")
        .addFields(FormField.newBuilder().setName("name").setQuestion("Release name?").setRequired(true)
            .setText(TextField.getDefaultInstance()))
        .addFields(FormField.newBuilder().setName("replicas").setQuestion("How many replicas?")
            .setNumber(NumberField.newBuilder().setInteger(true).setMinimum(1).setMaximum(9)))
        .addFields(FormField.newBuilder().setName("canary").setQuestion("Canary first?")
            .setBoolean(BooleanField.getDefaultInstance()))
        .addFields(FormField.newBuilder().setName("zone").setQuestion("Where?")
            .setChoice(ChoiceField.newBuilder()
                .addChoices(Choice.newBuilder().setValue("eu").setLabel("Europe"))
                .addChoices(Choice.newBuilder().setValue("us").setLabel("America"))))
        .build();
    try (HumanRequest request = asker.ask(AskOptions.form(form))) {
      assertEquals(SuspendKind.SUSPEND_KIND_FORM, request.suspended().orElseThrow().getKind());
      settle(Answers.form(request.runId(), request.toolCallId(), Map.of(
          "name", FieldValues.text("Apollo"),
          "replicas", FieldValues.number(3),
          "canary", FieldValues.bool(true),
          "zone", FieldValues.choice("eu"))));
      HumanOutcome outcome = request.await();
      assertEquals(HumanOutcome.Kind.FORM, outcome.kind());
      assertEquals(Map.of(
          "name", "Apollo",
          "replicas", 3.0,
          "canary", true,
          "zone", new HumanOutcome.Choice(List.of("eu"), "")), outcome.values());
    }
  }

  @Test
  void aDeclineAndAReplyComeBackAsSuch() {
    try (HumanRequest request = asker.ask(AskOptions.question("Your phone number?"))) {
      settle(Answers.decline(request.runId(), request.toolCallId(), "prefer not"));
      HumanOutcome outcome = request.await();
      assertEquals(HumanOutcome.Kind.DECLINED, outcome.kind());
      assertEquals("prefer not", outcome.reason());
    }
    try (HumanRequest request = asker.ask(AskOptions.question("Which region?").options("eu", "us"))) {
      settle(Answers.reply(request.runId(), request.toolCallId(), "ask Dana, she owns it"));
      HumanOutcome outcome = request.await();
      assertEquals(HumanOutcome.Kind.REPLIED, outcome.kind());
      assertEquals("ask Dana, she owns it", outcome.text());
    }
  }

  @Test
  void askHumanWaitsForTheAnswer() throws Exception {
    String tool = "ask_user";
    String question = "Ship it? " + UUID.randomUUID();
    // Someone answers from the feed of questions; askHuman blocks until then.
    PendingCallStream feed = answerer.watchPendingCalls(List.of(), List.of(tool), List.of());
    CompletableFuture<Void> answered = CompletableFuture.runAsync(() -> {
      try (feed) {
        for (WatchPendingCallsResponse event : feed) {
          if (event.hasCallPending()
              && event.getCallPending().getCall().getSuspendPayload().getQuestion().equals(question)) {
            settle(Answers.text(event.getCallPending().getRunId(), event.getCallPending().getCall().getToolCallId(), "yes"));
            return;
          }
        }
      }
    });
    HumanOutcome outcome = asker.askHuman(question);
    assertEquals(HumanOutcome.Kind.TEXT, outcome.kind());
    assertEquals("yes", outcome.text());
    answered.get(10, TimeUnit.SECONDS);
  }

  @Test
  void requestApprovalApprovedGivesTheArgumentsAskedAbout() throws Exception {
    String tool = toolName("deploy");
    CompletableFuture<Void> approved = settleFromFeed(tool, (runId, id) -> Answers.approve(runId, id));
    Map<String, Object> arguments = Map.of("service", "api", "environment", "staging", "replicas", 3, "canary", true);
    HumanOutcome outcome = asker.requestApproval(tool, arguments, "a deploy");
    approved.get(10, TimeUnit.SECONDS);
    assertEquals(HumanOutcome.Kind.APPROVED, outcome.kind());
    assertTrue(outcome.isApproved());
    assertEquals(Map.of("service", "api", "environment", "staging", "replicas", 3L, "canary", true), outcome.arguments());
    assertFalse(outcome.settledBy().isEmpty());
  }

  @Test
  void requestApprovalEditedGivesTheApproversArguments() throws Exception {
    String tool = toolName("deploy");
    CompletableFuture<Void> edited = settleFromFeed(
        tool, (runId, id) -> Answers.editArguments(runId, id, "{\"service\":\"api\",\"environment\":\"staging\"}"));
    HumanOutcome outcome = asker
        .requestApprovalAsync(tool, Map.of("service", "api", "environment", "production"), "production")
        .get(20, TimeUnit.SECONDS);
    edited.get(10, TimeUnit.SECONDS);
    assertEquals(HumanOutcome.Kind.EDITED, outcome.kind());
    assertTrue(outcome.isApproved());
    assertEquals(Map.of("service", "api", "environment", "staging"), outcome.arguments());
  }

  @Test
  void requestApprovalRejectedOrDeclinedGivesTheReason() {
    String tool = toolName("drop_table");
    try (HumanRequest request = asker.ask(AskOptions.approval(tool, Map.of("table", "users"), "").context("cleanup"))) {
      assertTrue(request.isApproval());
      assertEquals(SuspendKind.SUSPEND_KIND_APPROVAL, request.suspended().orElseThrow().getKind());
      settle(Answers.reject(request.runId(), request.toolCallId(), "not on a Friday"));
      HumanOutcome outcome = request.await();
      assertEquals(HumanOutcome.Kind.REJECTED, outcome.kind());
      assertFalse(outcome.isApproved());
      assertEquals("not on a Friday", outcome.reason());
      assertEquals("User rejected the call: not on a Friday", outcome.content());
    }
    try (HumanRequest request = asker.ask(AskOptions.approvalJson(tool, "{\"table\": \"orders\"}", "why not"))) {
      settle(Answers.decline(request.runId(), request.toolCallId(), "no"));
      HumanOutcome outcome = request.await();
      assertEquals(HumanOutcome.Kind.REJECTED, outcome.kind());
      assertEquals("no", outcome.reason());
    }
  }

  @Test
  void anAskRetriedWithTheSameRequestIdFollowsTheSameRequest() {
    String requestId = "java-retry-" + UUID.randomUUID();
    AskOptions options = AskOptions.question("Release name?").requestId(requestId);
    try (HumanRequest first = asker.ask(options);
        HumanRequest again = asker.ask(options)) {
      assertEquals(requestId, first.requestId());
      assertEquals(first.runId(), again.runId());
      assertEquals(first.toolCallId(), again.toolCallId());
      settle(Answers.text(first.runId(), first.toolCallId(), "Apollo"));
      assertEquals("Apollo", first.await().text());
      assertEquals("Apollo", again.await().text());
    }
    // Asked again once settled: the same request, its outcome at once.
    try (HumanRequest late = asker.ask(options)) {
      assertEquals("Apollo", late.await(Duration.ofSeconds(5)).text());
    }
  }

  @Test
  void badInputFailsWithTheFieldItNames() {
    AskUserException question = assertThrows(AskUserException.class, () -> asker.ask(AskOptions.question("")));
    assertEquals(Status.Code.INVALID_ARGUMENT, question.code());
    assertTrue(question.fieldViolations().stream().map(BadRequest.FieldViolation::getField).toList().contains("question.question"),
        question.fieldViolations().toString());

    AskUserException approval = assertThrows(AskUserException.class,
        () -> asker.requestApproval("not a tool name!", Map.of(), ""));
    assertEquals(Status.Code.INVALID_ARGUMENT, approval.code());
    assertTrue(approval.fieldViolations().stream().map(BadRequest.FieldViolation::getField).toList().contains("approval.tool_name"),
        approval.fieldViolations().toString());

    assertThrows(IllegalArgumentException.class, () -> AskOptions.approval("deploy", Map.of("when", new Object()), ""));
    assertThrows(IllegalStateException.class, () -> AskOptions.approval("deploy", Map.of(), "").options("a"));
  }

  @Test
  void aWaitPastItsTimeoutFailsAndTheRequestStaysAnswerable() {
    try (HumanRequest request = asker.ask(AskOptions.question("Still there?"))) {
      AskUserException timedOut = assertThrows(AskUserException.class, () -> request.await(Duration.ofMillis(300)));
      assertEquals(Status.Code.DEADLINE_EXCEEDED, timedOut.code());
      assertEquals(RunStatus.RUN_STATUS_SUSPENDED, answerer.getRun(request.runId()).getStatus());
      settle(Answers.text(request.runId(), request.toolCallId(), "yes"));
      assertEquals("yes", request.await(Duration.ofSeconds(10)).text());
    }
  }

  @Test
  void theClientsDeadlineEndsTheWaitForGood() {
    HumanRequest request = asker.withTimeout(Duration.ofMillis(800)).ask(AskOptions.question("Quick?"));
    try (request) {
      AskUserException timedOut = assertThrows(AskUserException.class, request::await);
      assertEquals(Status.Code.DEADLINE_EXCEEDED, timedOut.code());
      assertEquals(RunStatus.RUN_STATUS_SUSPENDED, answerer.getRun(request.runId()).getStatus());
      answerer.cancelRun(request.runId(), "test over");
    }
  }

  @Test
  void anUnansweredRequestExpiresAndACancelledOneIsCancelled() {
    try (HumanRequest request = asker.ask(AskOptions.question("Anyone?").ttl(Duration.ofSeconds(1)))) {
      assertEquals(HumanOutcome.Kind.EXPIRED, request.await(Duration.ofSeconds(20)).kind());
    }
    try (HumanRequest request = asker.ask(AskOptions.approval("deploy", Map.of(), "").ttl(Duration.ofMinutes(5)))) {
      answerer.cancelRun(request.runId(), "not needed");
      assertEquals(HumanOutcome.Kind.CANCELLED, request.await(Duration.ofSeconds(10)).kind());
    }
  }

  @Test
  void closingAHandleOrCancellingTheFutureEndsTheWait() throws Exception {
    HumanRequest request = asker.ask(AskOptions.question("Closed?"));
    CompletableFuture<HumanOutcome> waiting = request.awaitAsync();
    request.close();
    ExecutionException closed = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
    assertEquals(Status.Code.CANCELLED, ((AskUserException) closed.getCause()).code());
    assertEquals(RunStatus.RUN_STATUS_SUSPENDED, answerer.getRun(request.runId()).getStatus());
    answerer.cancelRun(request.runId(), "test over");

    AskOptions options = AskOptions.question("Cancelled?").requestId("java-cancelled-" + UUID.randomUUID());
    CompletableFuture<HumanOutcome> cancelled = asker.askHumanAsync(options);
    assertTrue(cancelled.cancel(true));
    assertTrue(cancelled.isCancelled());
    // The request (made or not by then) stays for someone to settle: here, a cancellation.
    try (HumanRequest again = asker.ask(options)) {
      answerer.cancelRun(again.runId(), "test over");
      assertEquals(HumanOutcome.Kind.CANCELLED, again.await(Duration.ofSeconds(10)).kind());
    }
  }
}
