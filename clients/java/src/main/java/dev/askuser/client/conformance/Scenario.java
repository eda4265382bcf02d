package dev.askuser.client.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import com.google.rpc.BadRequest;
import dev.askuser.client.AskUserClient;
import dev.askuser.client.AskUserException;
import dev.askuser.client.FrameStream;
import dev.askuser.client.Run;
import dev.askuser.v1.AnswerRejected;
import dev.askuser.v1.Answer;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserOption;
import dev.askuser.v1.Decline;
import dev.askuser.v1.PendingToolCall;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.SelectionMode;
import dev.askuser.v1.Selections;
import dev.askuser.v1.SuspendPayload;
import dev.askuser.v1.ToolCallSuspended;
import dev.askuser.v1.ToolResult;
import java.time.Duration;
import java.util.ArrayList;
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

  /** An open RunAgent stream and the run its frames must name. */
  private record OpenStream(Run run, String runId) {}

  private final AskUserClient client;
  private final JsonNode scenario;
  private final Map<String, String> saved = new HashMap<>();
  private final Map<String, OpenStream> streams = new HashMap<>();

  Scenario(AskUserClient client, JsonNode scenario) {
    this.client = client;
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
    }
  }

  private void runStep(String kind, JsonNode node) {
    switch (kind) {
      case "start" -> start(new Args(kind, node, "stream", "agent_id", "prompt", "metadata"));
      case "attach" -> attach(new Args(kind, node, "stream", "run_id", "after_sequence"));
      case "answer" -> answer(
          new Args(kind, node, "stream", "run_id", "tool_call_id", "text", "selections", "decline", "answer_id"));
      case "expect" -> expect(node);
      case "expect_end" -> expectEnd(stream(new Args(kind, node, "stream")).run());
      case "expect_stream_error" -> expectStreamError(new Args(kind, node, "stream", "code"));
      case "close" -> close(new Args(kind, node, "stream"));
      case "resume" -> resume(
          new Args(kind, node, "run_id", "tool_call_id", "text", "selections", "decline", "answer_id", "expect",
              "expect_error"));
      case "watch" -> watch(new Args(kind, node, "run_id", "after_sequence", "expect", "expect_error"));
      case "get_run" -> getRun(
          new Args(kind, node, "run_id", "status", "pending", "output_text", "last_sequence", "expect_error"));
      case "ask_user" -> askUser(new Args(kind, node, "input", "content", "expect_error"));
      default -> throw new ScenarioFailure("unknown step kind '" + kind + "'");
    }
  }

  // ---- steps ----

  private void start(Args args) {
    Map<String, String> metadata = new LinkedHashMap<>();
    if (args.has("metadata")) {
      args.node("metadata").fields().forEachRemaining(e -> metadata.put(e.getKey(), textOf(e.getValue())));
    }
    Run run = client.startRun(args.text("agent_id"), args.text("prompt", ""), metadata);
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
    open(args, client.attach(runId, args.number("after_sequence", 0)), runId);
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
    try (FrameStream frames = client.resumeRun(answer)) {
      expectFrames(frames, answer.getRunId(), args);
    }
  }

  private void watch(Args args) {
    String runId = args.text("run_id");
    try (FrameStream frames = client.watchRun(runId, args.number("after_sequence", 0))) {
      expectFrames(frames, runId, args);
    }
  }

  private void getRun(Args args) {
    String runId = args.text("run_id");
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
      expectError(() -> client.askUser(input), args.node("expect_error"));
    } else {
      same("AskUser", "content", client.askUser(input), args.text("content"));
    }
  }

  // ---- building requests ----

  private Answer answerOf(Args args) {
    Answer.Builder answer =
        Answer.newBuilder()
            .setRunId(args.text("run_id", ""))
            .setToolCallId(args.text("tool_call_id"))
            .setAnswerId(args.text("answer_id", ""));
    int kinds = 0;
    if (args.has("text")) {
      answer.setText(args.text("text"));
      kinds++;
    }
    if (args.has("selections")) {
      answer.setSelections(Selections.newBuilder().addAllLabels(args.texts("selections")));
      kinds++;
    }
    if (args.has("decline")) {
      answer.setDecline(Decline.newBuilder().setReason(args.text("decline")));
      kinds++;
    }
    if (kinds != 1) {
      throw new ScenarioFailure("an answer gives exactly one of text, selections and decline");
    }
    return answer.build();
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
