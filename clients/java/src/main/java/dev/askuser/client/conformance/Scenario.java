package dev.askuser.client.conformance;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import com.google.rpc.BadRequest;
import dev.askuser.client.Answers;
import dev.askuser.client.AskUserClient;
import dev.askuser.client.AskUserException;
import dev.askuser.client.FrameStream;
import dev.askuser.client.PendingCallStream;
import dev.askuser.client.Run;
import dev.askuser.v1.AnswerRejected;
import dev.askuser.v1.Answer;
import dev.askuser.v1.ApprovalPolicy;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserOption;
import dev.askuser.v1.CallPending;
import dev.askuser.v1.CallSettled;
import dev.askuser.v1.PendingToolCall;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.SelectionMode;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.SuspendPayload;
import dev.askuser.v1.ToolCall;
import dev.askuser.v1.ToolCallSuspended;
import dev.askuser.v1.ToolDefinition;
import dev.askuser.v1.ToolResult;
import dev.askuser.v1.WatchPendingCallsResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** One conformance scenario, run step by step as tests/conformance/README.md describes. */
final class Scenario {
  /** Scripted agents answer in milliseconds; a frame this late is not coming. */
  private static final Duration FRAME_TIMEOUT = Duration.ofSeconds(15);

  private static final String DEFAULT_STREAM = "main";
  private static final String DEFAULT_FEED = "main";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The fields of an answer step that settle the call; exactly one is given. */
  private static final List<String> SETTLEMENTS =
      List.of("text", "selections", "decline", "tool_output", "approve", "reject", "edit");

  /** An open RunAgent stream and the run its frames must name. */
  private record OpenStream(Run run, String runId) {}

  private final Callers callers;
  private final JsonNode scenario;
  private final Map<String, String> saved = new HashMap<>();
  private final Map<String, OpenStream> streams = new HashMap<>();
  private final Map<String, PendingCallStream> feeds = new HashMap<>();

  Scenario(Callers callers, JsonNode scenario) {
    this.callers = callers;
    this.scenario = scenario;
  }

  void run() {
    JsonNode steps = scenario.path("steps");
    if (!steps.isArray() || steps.isEmpty()) {
      throw new ScenarioFailure("the scenario has no steps");
    }
    try {
      for (int i = 0; i < steps.size(); i++) {
        JsonNode step = steps.get(i);
        try {
          if (!step.isObject() || step.size() != 1) {
            throw new ScenarioFailure("a step has exactly one key naming its kind");
          }
          String kind = step.fieldNames().next();
          runStep(kind, step.get(kind));
        } catch (RuntimeException e) {
          String why = e instanceof ScenarioFailure ? e.getMessage() : e.toString();
          throw new ScenarioFailure("step " + (i + 1) + " " + step + ": " + why, e);
        }
      }
    } finally {
      streams.values().forEach(stream -> stream.run().close());
      feeds.values().forEach(PendingCallStream::close);
    }
  }

  private void runStep(String kind, JsonNode node) {
    switch (kind) {
      case "start" -> start(new Args(kind, node, "stream", "agent_id", "prompt", "metadata", "tools", "as"));
      case "attach" -> attach(new Args(kind, node, "stream", "run_id", "after_sequence", "as"));
      case "answer" -> answer(new Args(kind, node, answerFields("stream")));
      case "expect" -> expect(node);
      case "expect_end" -> expectEnd(stream(new Args(kind, node, "stream")).run());
      case "expect_stream_error" -> expectStreamError(new Args(kind, node, "stream", "code", "field"));
      case "close" -> close(new Args(kind, node, "stream"));
      case "resume" -> resume(new Args(kind, node, answerFields("expect", "expect_error", "as")));
      case "watch" -> watch(new Args(kind, node, "run_id", "after_sequence", "expect", "expect_error", "as"));
      case "get_run" -> getRun(
          new Args(kind, node, "run_id", "status", "pending", "output_text", "last_sequence", "expect_error", "as"));
      case "cancel" -> cancel(new Args(kind, node, "run_id", "reason", "expect_error", "as"));
      case "ask_user" -> askUser(new Args(kind, node, "input", "content", "expect_error"));
      case "watch_pending" -> watchPending(new Args(kind, node, "feed", "agent_ids", "tool_names", "kinds", "as"));
      case "expect_pending" -> expectPending(
          new Args(kind, node, "feed", "kind", "run_id", "agent_id", "tool_call_id", "tool_name", "suspend_kind",
              "arguments", "result_kind", "save", "absent"));
      case "close_pending" -> closePending(new Args(kind, node, "feed"));
      case "claim" -> claim(
          new Args(kind, node, "run_id", "tool_call_id", "claimant", "ttl_ms", "expect_error", "as"));
      default -> throw new ScenarioFailure("unknown step kind '" + kind + "'");
    }
  }

  // ---- steps ----

  private void start(Args args) {
    Map<String, String> metadata = new LinkedHashMap<>();
    if (args.has("metadata")) {
      args.node("metadata").fields().forEachRemaining(e -> metadata.put(e.getKey(), textOf(e.getValue())));
    }
    List<ToolDefinition> tools = new ArrayList<>();
    if (args.has("tools")) {
      for (JsonNode tool : arrayOf(args.node("tools"))) {
        Args fields = new Args("tool", tool, "name", "description", "parameters_json_schema", "approval");
        tools.add(AskUserClient.clientTool(
            fields.text("name"),
            fields.text("description", ""),
            fields.text("parameters_json_schema", ""),
            fields.has("approval")
                ? ApprovalPolicy.valueOf(fields.text("approval"))
                : ApprovalPolicy.APPROVAL_POLICY_UNSPECIFIED));
      }
    }
    Run run = caller(args).startRun(args.text("agent_id"), args.text("prompt", ""), metadata, tools);
    String runId = null;
    try {
      Optional<RunAgentResponse> first = run.peekWithin(FRAME_TIMEOUT);
      if (first.isPresent()) {
        runId = first.get().getRunId();
        saved.put("run_id", runId);
      }
    } catch (AskUserException e) {
      // The stream failed before naming a run (e.g. an unknown agent); expect_stream_error checks that.
    } catch (TimeoutException e) {
      run.close();
      throw new ScenarioFailure("no run_started frame within " + FRAME_TIMEOUT, e);
    }
    open(args, run, runId);
  }

  private void attach(Args args) {
    String runId = args.text("run_id");
    open(args, caller(args).attach(runId, args.number("after_sequence", 0)), runId);
  }

  private void open(Args args, Run run, String runId) {
    OpenStream previous = streams.put(args.text("stream", DEFAULT_STREAM), new OpenStream(run, runId));
    if (previous != null) {
      previous.run().close();
    }
  }

  private void answer(Args args) {
    stream(args).run().answer(answerOf(args));
  }

  private void expect(JsonNode node) {
    if (!node.isObject()) {
      throw new ScenarioFailure("'expect' takes an object");
    }
    ObjectNode check = ((ObjectNode) node).deepCopy();
    JsonNode name = check.remove("stream");
    OpenStream stream = stream(name == null ? DEFAULT_STREAM : textOf(name));
    checkNext(stream.run(), stream.runId(), check);
  }

  private void expectStreamError(Args args) {
    OpenStream stream = stream(args);
    ObjectNode error = ((ObjectNode) args.node()).deepCopy();
    error.remove("stream");
    expectError(() -> readOrEnd(stream.run()), error);
  }

  private void close(Args args) {
    String name = args.text("stream", DEFAULT_STREAM);
    stream(name);
    streams.remove(name).run().close();
  }

  private void resume(Args args) {
    Answer answer = answerOf(args);
    try (FrameStream frames = caller(args).resumeRun(answer)) {
      expectFrames(frames, answer.getRunId(), args);
    }
  }

  private void watch(Args args) {
    String runId = args.text("run_id");
    try (FrameStream frames = caller(args).watchRun(runId, args.number("after_sequence", 0))) {
      expectFrames(frames, runId, args);
    }
  }

  private void getRun(Args args) {
    String runId = args.text("run_id");
    AskUserClient client = caller(args);
    if (args.has("expect_error")) {
      expectError(() -> client.getRun(runId), args.node("expect_error"));
      return;
    }
    dev.askuser.v1.Run run = client.getRun(runId);
    String where = "GetRun " + TextFormat.shortDebugString(run);
    if (args.has("status")) {
      same(where, "status", run.getStatus().name(), args.text("status"));
    }
    if (args.has("pending")) {
      List<String> pending = run.getPendingToolCallsList().stream().map(PendingToolCall::getToolCallId).toList();
      same(where, "pending", pending, args.texts("pending"));
    }
    if (args.has("output_text")) {
      same(where, "output_text", run.getOutputText(), args.text("output_text"));
    }
    if (args.has("last_sequence")) {
      same(where, "last_sequence", run.getLastSequence(), args.number("last_sequence", 0));
    }
  }

  private void askUser(Args args) {
    AskUserInput input = inputOf(new Args("input", args.node("input"), "question", "options", "selection_mode"));
    if (args.has("expect_error")) {
      expectError(() -> callers.main().askUser(input), args.node("expect_error"));
    } else {
      same("AskUser", "content", callers.main().askUser(input), args.text("content"));
    }
  }

  private void cancel(Args args) {
    String runId = args.text("run_id");
    String reason = args.text("reason", "");
    AskUserClient client = caller(args);
    if (args.has("expect_error")) {
      expectError(() -> client.cancelRun(runId, reason), args.node("expect_error"));
      return;
    }
    dev.askuser.v1.Run run = client.cancelRun(runId, reason);
    same("CancelRun " + TextFormat.shortDebugString(run), "status", run.getStatus().name(), "RUN_STATUS_CANCELLED");
  }

  /** The client the step calls through: its {@code "as"}, or the conformance tenant's. */
  private AskUserClient caller(Args args) {
    return args.has("as") ? callers.as(args.text("as")) : callers.main();
  }

  // ---- building requests ----

  /** The fields of an answer (as in an {@code answer} step) and those given. */
  private static String[] answerFields(String... more) {
    List<String> fields = new ArrayList<>(List.of("run_id", "tool_call_id", "answer_id"));
    fields.addAll(SETTLEMENTS);
    fields.addAll(List.of(more));
    return fields.toArray(String[]::new);
  }

  private Answer answerOf(Args args) {
    List<String> given = SETTLEMENTS.stream().filter(args::has).toList();
    if (given.size() != 1) {
      throw new ScenarioFailure("an answer gives exactly one of " + SETTLEMENTS + ", got " + given);
    }
    String runId = args.text("run_id", "");
    String toolCallId = args.text("tool_call_id");
    Answer answer = switch (given.get(0)) {
      case "text" -> Answers.text(runId, toolCallId, args.text("text"));
      case "selections" -> Answers.selections(runId, toolCallId, args.texts("selections"));
      case "decline" -> Answers.decline(runId, toolCallId, args.text("decline"));
      case "tool_output" -> {
        Args output = new Args("tool_output", args.node("tool_output"), "content", "is_error");
        boolean isError = output.has("is_error") && booleanOf(output.node("is_error"));
        yield Answers.toolOutput(runId, toolCallId, output.text("content"), isError);
      }
      case "approve" -> {
        if (!booleanOf(args.node("approve"))) {
          throw new ScenarioFailure("'approve' is written true");
        }
        yield Answers.approve(runId, toolCallId);
      }
      case "reject" -> Answers.reject(runId, toolCallId, args.text("reject"));
      default -> Answers.editArguments(runId, toolCallId, args.text("edit"));
    };
    return answer.toBuilder().setAnswerId(args.text("answer_id", "")).build();
  }

  private AskUserInput inputOf(Args args) {
    AskUserInput.Builder input = AskUserInput.newBuilder().setQuestion(args.text("question", ""));
    if (args.has("options")) {
      for (JsonNode option : args.node("options")) {
        Args fields = new Args("option", option, "label", "description");
        input.addOptions(
            AskUserOption.newBuilder()
                .setLabel(fields.text("label", ""))
                .setDescription(fields.text("description", "")));
      }
    }
    if (args.has("selection_mode")) {
      input.setSelectionMode(SelectionMode.valueOf(args.text("selection_mode")));
    }
    return input.build();
  }

  // ---- reading and checking frames ----

  /** Reads the next frame or the end of the stream; a frame must name the stream's run. */
  private Optional<RunAgentResponse> readOrEnd(FrameStream frames) {
    try {
      return frames.nextWithin(FRAME_TIMEOUT);
    } catch (TimeoutException e) {
      throw new ScenarioFailure("no frame and no end within " + FRAME_TIMEOUT, e);
    }
  }

  private RunAgentResponse read(FrameStream frames, String runId) {
    RunAgentResponse frame;
    try {
      frame = readOrEnd(frames).orElseThrow(() -> new ScenarioFailure("the stream ended; a frame was expected"));
    } catch (AskUserException e) {
      throw new ScenarioFailure("the stream failed (" + e.getMessage() + "); a frame was expected", e);
    }
    if (!frame.getRunId().equals(runId)) {
      throw new ScenarioFailure(
          "frame " + TextFormat.shortDebugString(frame) + " names run '" + frame.getRunId() + "', want '" + runId + "'");
    }
    return frame;
  }

  private void expectEnd(FrameStream frames) {
    Optional<RunAgentResponse> frame;
    try {
      frame = readOrEnd(frames);
    } catch (AskUserException e) {
      throw new ScenarioFailure("the stream failed (" + e.getMessage() + "); an OK end was expected", e);
    }
    frame.ifPresent(f -> {
      throw new ScenarioFailure("frame " + TextFormat.shortDebugString(f) + " came; the end was expected");
    });
  }

  /** The {@code expect} frames of a resume or watch, then an OK end; or its {@code expect_error}. */
  private void expectFrames(FrameStream frames, String runId, Args args) {
    if (args.has("expect_error") == args.has("expect")) {
      throw new ScenarioFailure("give exactly one of 'expect' and 'expect_error'");
    }
    if (args.has("expect_error")) {
      expectError(() -> readOrEnd(frames), args.node("expect_error"));
      return;
    }
    for (JsonNode check : args.node("expect")) {
      checkNext(frames, runId, check);
    }
    expectEnd(frames);
  }

  private void checkNext(FrameStream frames, String runId, JsonNode check) {
    if (!check.isObject() || !check.path("kind").isTextual()) {
      throw new ScenarioFailure("a frame check is an object with a 'kind'");
    }
    String kind = check.get("kind").textValue();
    if (kind.equals("text_deltas")) {
      checkTextDeltas(frames, runId, new Args(kind, check, "kind", "text").text("text"));
      return;
    }
    RunAgentResponse frame = read(frames, runId);
    String where = "frame " + TextFormat.shortDebugString(frame);
    FieldDescriptor eventField = frame.getOneofFieldDescriptor(RunAgentResponse.getDescriptor().getOneofs().get(0));
    String actualKind = eventField == null ? "(none)" : eventField.getName();
    same(where, "kind", actualKind, kind);
    Message event = (Message) frame.getField(eventField);

    Map<String, String> saves = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = check.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      String field = entry.getKey();
      JsonNode want = entry.getValue();
      switch (field) {
        case "kind" -> {}
        case "sequence" -> same(where, field, frame.getSequence(), numberOf(want));
        case "save_sequence" -> saves.put(textOf(want), Long.toString(frame.getSequence()));
        case "save" -> saves.put(textOf(want), (String) event.getField(scalar(event, "tool_call_id", kind)));
        case "question", "options", "selection_mode" -> checkPayload(where, event, kind, field, want);
        case "suspend_kind" -> same(
            where, field, as(ToolCallSuspended.class, event, kind, field).getKind().name(), textOf(want));
        case "approval_reason" -> same(
            where, field, as(ToolCallSuspended.class, event, kind, field).getApprovalReason(), textOf(want));
        case "arguments" -> {
          String arguments;
          if (event instanceof ToolCall call) {
            arguments = call.getArgumentsJson();
          } else {
            arguments = as(ToolCallSuspended.class, event, kind, field).getArgumentsJson();
          }
          sameJson(where, field, arguments, want);
        }
        case "result_kind" -> same(where, field, as(ToolResult.class, event, kind, field).getKind().name(), textOf(want));
        case "fields" -> same(
            where,
            field,
            as(AnswerRejected.class, event, kind, field).getFieldViolationsList().stream()
                .map(dev.askuser.v1.FieldViolation::getField)
                .toList(),
            textsOf(want));
        default -> {
          FieldDescriptor descriptor = scalar(event, field, kind);
          Object expected = descriptor.getJavaType() == FieldDescriptor.JavaType.BOOLEAN ? booleanOf(want) : textOf(want);
          same(where, field, event.getField(descriptor), expected);
        }
      }
    }
    saved.putAll(saves);
  }

  private void checkPayload(String where, Message event, String kind, String field, JsonNode want) {
    SuspendPayload payload = as(ToolCallSuspended.class, event, kind, field).getSuspendPayload();
    switch (field) {
      case "question" -> same(where, field, payload.getQuestion(), textOf(want));
      case "options" -> same(
          where, field, payload.getOptionsList().stream().map(AskUserOption::getLabel).toList(), textsOf(want));
      default -> same(
          where,
          field,
          payload.hasSelectionMode() ? payload.getSelectionMode().name() : null,
          want.isNull() ? null : textOf(want));
    }
  }

  private void checkTextDeltas(FrameStream frames, String runId, String text) {
    StringBuilder joined = new StringBuilder();
    while (!joined.toString().equals(text)) {
      RunAgentResponse frame = read(frames, runId);
      if (frame.getEventCase() != RunAgentResponse.EventCase.TEXT_DELTA) {
        throw new ScenarioFailure(
            "frame " + TextFormat.shortDebugString(frame) + " came after text '" + joined + "'; want text '" + text + "'");
      }
      joined.append(frame.getTextDelta().getText());
      if (!text.startsWith(joined.toString())) {
        throw new ScenarioFailure("text deltas make '" + joined + "', which does not lead to '" + text + "'");
      }
    }
  }

  /** A string or bool field of the event named {@code field}; a check naming anything else cannot run. */
  private static FieldDescriptor scalar(Message event, String field, String kind) {
    FieldDescriptor descriptor = event.getDescriptorForType().findFieldByName(field);
    if (descriptor == null
        || descriptor.isRepeated()
        || (descriptor.getJavaType() != FieldDescriptor.JavaType.STRING
            && descriptor.getJavaType() != FieldDescriptor.JavaType.BOOLEAN)) {
      throw notApplicable(field, kind);
    }
    return descriptor;
  }

  private static <T extends Message> T as(Class<T> type, Message event, String kind, String field) {
    if (!type.isInstance(event)) {
      throw notApplicable(field, kind);
    }
    return type.cast(event);
  }

  private static ScenarioFailure notApplicable(String field, String kind) {
    return new ScenarioFailure("the check field '" + field + "' does not apply to kind '" + kind + "'");
  }

  // ---- the pending-calls feed and claims ----

  private void watchPending(Args args) {
    List<SuspendKind> kinds = new ArrayList<>();
    if (args.has("kinds")) {
      args.texts("kinds").forEach(kind -> kinds.add(SuspendKind.valueOf(kind)));
    }
    PendingCallStream feed = caller(args).watchPendingCalls(
        args.has("agent_ids") ? args.texts("agent_ids") : List.of(),
        args.has("tool_names") ? args.texts("tool_names") : List.of(),
        kinds);
    PendingCallStream previous = feeds.put(args.text("feed", DEFAULT_FEED), feed);
    if (previous != null) {
      previous.close();
    }
  }

  private void closePending(Args args) {
    String name = args.text("feed", DEFAULT_FEED);
    feed(name);
    feeds.remove(name).close();
  }

  /**
   * Reads the feed until an event of the check's kind (and run, when the check names one) comes,
   * skipping the others, and checks it. An event of the named run that is not the one checked fails,
   * and so does, for a {@code snapshot_done} check, a {@code call_pending} on the way whose tool call
   * id its {@code absent} lists.
   */
  private void expectPending(Args args) {
    PendingCallStream feed = feed(args.text("feed", DEFAULT_FEED));
    String kind = args.text("kind");
    if (!List.of("call_pending", "call_settled", "snapshot_done").contains(kind)) {
      throw new ScenarioFailure("unknown pending-calls event kind '" + kind + "'");
    }
    if (args.has("absent") && !kind.equals("snapshot_done")) {
      throw notApplicable("absent", kind);
    }
    List<String> absent = args.has("absent") ? args.texts("absent") : List.of();
    String runId = args.text("run_id", null);
    long deadline = System.nanoTime() + FRAME_TIMEOUT.toNanos();
    List<String> skipped = new ArrayList<>();
    while (true) {
      WatchPendingCallsResponse event = readEvent(feed, deadline, kind, skipped);
      if (event.hasCallPending() && absent.contains(event.getCallPending().getCall().getToolCallId())) {
        throw new ScenarioFailure(
            "the snapshot has " + TextFormat.shortDebugString(event) + ", whose tool call id must be absent");
      }
      String eventKind = eventKind(event);
      String eventRun = switch (event.getEventCase()) {
        case CALL_PENDING -> event.getCallPending().getRunId();
        case CALL_SETTLED -> event.getCallSettled().getRunId();
        default -> null;
      };
      if (eventKind.equals(kind) && (runId == null || runId.equals(eventRun))) {
        checkPending(event, kind, args);
        return;
      }
      if (runId != null && runId.equals(eventRun)) {
        throw new ScenarioFailure(
            "event " + TextFormat.shortDebugString(event) + " of run '" + runId + "' came; want a " + kind);
      }
      skipped.add(TextFormat.shortDebugString(event));
    }
  }

  private static WatchPendingCallsResponse readEvent(
      PendingCallStream feed, long deadline, String kind, List<String> skipped) {
    try {
      return feed.nextWithin(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())))
          .orElseThrow(() -> new ScenarioFailure("the feed ended; a " + kind + " event was expected"));
    } catch (AskUserException e) {
      throw new ScenarioFailure("the feed failed (" + e.getMessage() + "); a " + kind + " event was expected", e);
    } catch (TimeoutException e) {
      throw new ScenarioFailure("no " + kind + " event within " + FRAME_TIMEOUT + " (skipped: " + skipped + ")", e);
    }
  }

  private static String eventKind(WatchPendingCallsResponse event) {
    FieldDescriptor field =
        event.getOneofFieldDescriptor(WatchPendingCallsResponse.getDescriptor().getOneofs().get(0));
    return field == null ? "(none)" : field.getName();
  }

  private void checkPending(WatchPendingCallsResponse event, String kind, Args args) {
    String where = "event " + TextFormat.shortDebugString(event);
    CallPending pending = event.getCallPending();
    CallSettled settled = event.getCallSettled();
    boolean isPending = event.hasCallPending();
    String toolCallId = isPending ? pending.getCall().getToolCallId() : settled.getToolCallId();
    for (Iterator<String> it = args.node().fieldNames(); it.hasNext(); ) {
      String field = it.next();
      JsonNode want = args.node(field);
      switch (field) {
        case "feed", "kind", "absent" -> {}
        case "run_id" -> same(where, field, isPending ? pending.getRunId() : settled.getRunId(), textOf(want));
        case "tool_call_id" -> same(where, field, callOnly(toolCallId, kind, field), textOf(want));
        case "save" -> saved.put(textOf(want), callOnly(toolCallId, kind, field));
        case "agent_id" -> same(where, field, pendingOnly(pending, event, kind, field).getAgentId(), textOf(want));
        case "tool_name" -> same(
            where, field, pendingOnly(pending, event, kind, field).getCall().getToolName(), textOf(want));
        case "suspend_kind" -> same(
            where, field, pendingOnly(pending, event, kind, field).getCall().getKind().name(), textOf(want));
        case "arguments" -> sameJson(
            where, field, pendingOnly(pending, event, kind, field).getCall().getArgumentsJson(), want);
        case "result_kind" -> {
          if (!event.hasCallSettled()) {
            throw notApplicable(field, kind);
          }
          same(where, field, settled.getKind().name(), textOf(want));
        }
        default -> throw notApplicable(field, kind);
      }
    }
  }

  private static String callOnly(String toolCallId, String kind, String field) {
    if (kind.equals("snapshot_done")) {
      throw notApplicable(field, kind);
    }
    return toolCallId;
  }

  private static CallPending pendingOnly(CallPending pending, WatchPendingCallsResponse event, String kind, String field) {
    if (!event.hasCallPending()) {
      throw notApplicable(field, kind);
    }
    return pending;
  }

  private void claim(Args args) {
    String runId = args.text("run_id");
    String toolCallId = args.text("tool_call_id");
    String claimant = args.text("claimant", "");
    Duration ttl = args.has("ttl_ms") ? Duration.ofMillis(args.number("ttl_ms", 0)) : null;
    AskUserClient client = caller(args);
    Supplier<?> call = () -> client.claimCall(runId, toolCallId, claimant, ttl);
    if (args.has("expect_error")) {
      expectError(call, args.node("expect_error"));
    } else {
      call.get();
    }
  }

  private PendingCallStream feed(String name) {
    PendingCallStream feed = feeds.get(name);
    if (feed == null) {
      throw new ScenarioFailure("no open feed '" + name + "'");
    }
    return feed;
  }

  // ---- errors ----

  /** The call must fail with the code, and the reason and field violations given. */
  private void expectError(Supplier<?> call, JsonNode expected) {
    Args want = new Args("expect_error", expected, "code", "reason", "field", "fields");
    Object result;
    try {
      result = call.get();
    } catch (AskUserException e) {
      String where = "error " + e.getMessage();
      same(where, "code", e.code().name(), want.text("code"));
      if (want.has("reason")) {
        same(where, "reason", e.reason(), want.text("reason"));
      }
      List<String> fields = e.fieldViolations().stream().map(BadRequest.FieldViolation::getField).toList();
      if (want.has("field") && !fields.contains(want.text("field"))) {
        throw new ScenarioFailure(where + ": no field violation names '" + want.text("field") + "' in " + fields);
      }
      if (want.has("fields")) {
        same(where, "fields", fields, want.texts("fields"));
      }
      return;
    }
    throw new ScenarioFailure("got " + describe(result) + "; want an error " + want.text("code"));
  }

  /** What a call that was expected to fail gave instead: a frame, the end of a stream, or a value. */
  private static String describe(Object result) {
    if (result instanceof Optional<?> frame) {
      return frame.map(f -> "frame " + TextFormat.shortDebugString((Message) f)).orElse("an OK end of the stream");
    }
    return result instanceof Message message ? TextFormat.shortDebugString(message) : show(result);
  }

  // ---- values ----

  private static void same(String where, String field, Object actual, Object expected) {
    if (!Objects.equals(actual, expected)) {
      throw new ScenarioFailure(where + ": " + field + " is " + show(actual) + ", want " + show(expected));
    }
  }

  private static String show(Object value) {
    return value instanceof String ? "'" + value + "'" : String.valueOf(value);
  }

  /** A JSON string, with {@code "$name"} replaced by what was saved under that name. */
  private String textOf(JsonNode value) {
    if (!value.isTextual()) {
      throw new ScenarioFailure("expected a string, got " + value);
    }
    String text = value.textValue();
    if (!text.startsWith("$")) {
      return text;
    }
    String found = saved.get(text.substring(1));
    if (found == null) {
      throw new ScenarioFailure("nothing was saved as " + text);
    }
    return found;
  }

  /** {@code actual}, JSON text, parsed equals {@code want} (objects by keys, numbers by value). */
  private void sameJson(String where, String field, String actual, JsonNode want) {
    JsonNode parsed;
    try {
      parsed = JSON.readTree(actual);
    } catch (JsonProcessingException e) {
      throw new ScenarioFailure(where + ": " + field + " is not JSON: '" + actual + "'", e);
    }
    JsonNode expected = substituted(want);
    Comparator<JsonNode> numbersByValue = (a, b) -> {
      if (a.isNumber() && b.isNumber()) {
        return a.decimalValue().compareTo(b.decimalValue());
      }
      return a.equals(b) ? 0 : 1;
    };
    if (parsed == null || !parsed.equals(numbersByValue, expected)) {
      throw new ScenarioFailure(where + ": " + field + " is " + actual + ", want " + expected);
    }
  }

  /** A JSON value with every {@code "$name"} string replaced by what was saved under that name. */
  private JsonNode substituted(JsonNode value) {
    if (value.isTextual()) {
      return JsonNodeFactory.instance.textNode(textOf(value));
    }
    if (value.isContainerNode()) {
      JsonNode copy = value.deepCopy();
      if (copy.isObject()) {
        ObjectNode object = (ObjectNode) copy;
        List<String> names = new ArrayList<>();
        object.fieldNames().forEachRemaining(names::add);
        names.forEach(name -> object.set(name, substituted(object.get(name))));
      } else {
        ArrayNode array = (ArrayNode) copy;
        for (int i = 0; i < array.size(); i++) {
          array.set(i, substituted(array.get(i)));
        }
      }
      return copy;
    }
    return value;
  }

  private static JsonNode arrayOf(JsonNode values) {
    if (!values.isArray()) {
      throw new ScenarioFailure("expected an array, got " + values);
    }
    return values;
  }

  private List<String> textsOf(JsonNode values) {
    if (!values.isArray()) {
      throw new ScenarioFailure("expected an array of strings, got " + values);
    }
    List<String> texts = new ArrayList<>();
    values.forEach(value -> texts.add(textOf(value)));
    return texts;
  }

  private long numberOf(JsonNode value) {
    if (value.isIntegralNumber()) {
      return value.asLong();
    }
    return Long.parseLong(textOf(value));
  }

  private static boolean booleanOf(JsonNode value) {
    if (!value.isBoolean()) {
      throw new ScenarioFailure("expected true or false, got " + value);
    }
    return value.booleanValue();
  }

  private OpenStream stream(Args args) {
    return stream(args.text("stream", DEFAULT_STREAM));
  }

  private OpenStream stream(String name) {
    OpenStream stream = streams.get(name);
    if (stream == null) {
      throw new ScenarioFailure("no open stream '" + name + "'");
    }
    return stream;
  }

  /** The fields of one step (or part of one); a field the runner does not know fails the scenario. */
  private final class Args {
    private final JsonNode node;

    Args(String what, JsonNode node, String... known) {
      if (!node.isObject()) {
        throw new ScenarioFailure("'" + what + "' takes an object, got " + node);
      }
      Set<String> allowed = Set.of(known);
      node.fieldNames().forEachRemaining(name -> {
        if (!allowed.contains(name)) {
          throw new ScenarioFailure("'" + what + "' has a field the runner does not know: '" + name + "'");
        }
      });
      this.node = node;
    }

    boolean has(String key) {
      return node.has(key);
    }

    JsonNode node() {
      return node;
    }

    JsonNode node(String key) {
      if (!node.has(key)) {
        throw new ScenarioFailure("missing field '" + key + "'");
      }
      return node.get(key);
    }

    String text(String key) {
      return textOf(node(key));
    }

    String text(String key, String fallback) {
      return has(key) ? text(key) : fallback;
    }

    List<String> texts(String key) {
      return textsOf(node(key));
    }

    long number(String key, long fallback) {
      return has(key) ? numberOf(node(key)) : fallback;
    }
  }
}
