package dev.askuser.client.conformance;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import dev.askuser.client.Answers;
import dev.askuser.client.AskOptions;
import dev.askuser.client.AskUserClient;
import dev.askuser.client.AskUserException;
import dev.askuser.client.EventStream;
import dev.askuser.client.FieldValues;
import dev.askuser.client.HumanOutcome;
import dev.askuser.client.HumanRequest;
import dev.askuser.client.PendingCallStream;
import dev.askuser.client.Run;
import dev.askuser.v1.Answer;
import dev.askuser.v1.ApprovalPolicy;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserOption;
import dev.askuser.v1.FieldValue;
import dev.askuser.v1.Form;
import dev.askuser.v1.SelectionMode;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.ToolDefinition;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The Java client under test of the one conformance runner (tests/conformance/README.md, "Clients
 * under test"): reads one request per line on stdin, turns it into calls on the client's public
 * API and writes one response per line on stdout. It judges nothing.
 */
public final class ClientUnderTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

  private final Map<String, AskUserClient> clients = new HashMap<>();
  private final Map<String, Run> streams = new HashMap<>();
  private final Map<String, PendingCallStream> feeds = new HashMap<>();
  private final Map<String, HumanRequest> asks = new HashMap<>();

  public static void main(String[] args) throws IOException {
    ClientUnderTest cut = new ClientUnderTest();
    // stdout carries the responses only; anything else a library prints goes to stderr.
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        out.println(JSON.writeValueAsString(cut.respond(JSON.readTree(line))));
      }
    } finally {
      cut.asks.values().forEach(HumanRequest::close);
      cut.clients.values().forEach(AskUserClient::close);
    }
  }

  private ObjectNode respond(JsonNode request) {
    try {
      ObjectNode response = JSON.createObjectNode();
      response.set("ok", perform(request.path("op").asText(), request));
      return response;
    } catch (AskUserException e) {
      ObjectNode response = JSON.createObjectNode();
      response.set("error", status(e));
      return response;
    } catch (Exception e) {
      e.printStackTrace();
      return JSON.createObjectNode().put("failure", e.toString());
    }
  }

  private JsonNode perform(String op, JsonNode r) throws Exception {
    ObjectNode ok = JSON.createObjectNode();
    switch (op) {
      case "connect" -> {
        for (String who : List.of("own", "other")) {
          clients.put(who, AskUserClient.builder(r.get("address").asText()).apiKey(r.get("keys").get(who).asText()).build());
        }
        ok.put("client", "askuser-client-java " + AskUserClient.VERSION);
      }
      case "start" -> {
        Map<String, String> metadata = new HashMap<>();
        r.path("metadata").fields().forEachRemaining(e -> metadata.put(e.getKey(), e.getValue().asText()));
        List<ToolDefinition> tools = new ArrayList<>();
        for (JsonNode tool : r.path("tools")) {
          String approval = tool.path("approval").asText("");
          tools.add(AskUserClient.clientTool(
              tool.path("name").asText(),
              tool.path("description").asText(""),
              tool.path("parameters_json_schema").asText(""),
              approval.isEmpty() ? ApprovalPolicy.APPROVAL_POLICY_UNSPECIFIED : ApprovalPolicy.valueOf(approval)));
        }
        Run run = client(r).startRun(r.get("agent_id").asText(), r.get("prompt").asText(), metadata, tools);
        streams.put(r.get("stream").asText(), run);
        ok.put("run_id", run.runId());
      }
      case "attach" ->
          streams.put(r.get("stream").asText(), client(r).attach(r.get("run_id").asText(), r.get("after_sequence").asLong()));
      case "send" -> streams.get(r.get("stream").asText()).answer(answer(r.get("answer")));
      case "next" -> next(streams.get(r.get("stream").asText()), ok, "frame");
      case "close" -> streams.get(r.get("stream").asText()).close();
      case "resume" -> drain(client(r).resumeRun(answer(r.get("answer"))), ok);
      case "watch" -> drain(client(r).watchRun(r.get("run_id").asText(), r.get("after_sequence").asLong()), ok);
      case "get_run" -> ok.set("run", message(client(r).getRun(r.get("run_id").asText())));
      case "cancel" -> ok.set("run", message(client(r).cancelRun(r.get("run_id").asText(), r.path("reason").asText(""))));
      case "ask_user" -> ok.put("content", client(r).askUser(input(r.get("input"))));
      case "watch_pending" -> {
        List<SuspendKind> kinds = new ArrayList<>();
        r.path("kinds").forEach(kind -> kinds.add(SuspendKind.valueOf(kind.asText())));
        feeds.put(r.get("feed").asText(), client(r).watchPendingCalls(strings(r.path("agent_ids")), strings(r.path("tool_names")), kinds));
      }
      case "next_pending" -> next(feeds.get(r.get("feed").asText()), ok, "event");
      case "close_pending" -> feeds.get(r.get("feed").asText()).close();
      case "claim" -> {
        long ttl = r.path("ttl_ms").asLong(0);
        client(r).claimCall(r.get("run_id").asText(), r.get("tool_call_id").asText(), r.get("claimant").asText(),
            ttl == 0 ? null : Duration.ofMillis(ttl));
      }
      case "ask" -> {
        HumanRequest request = client(r).ask(askOptions(r));
        asks.put(r.get("ask").asText(), request);
        ok.put("run_id", request.runId());
        ok.put("tool_call_id", request.toolCallId());
      }
      case "ask_result" -> {
        HumanRequest request = asks.get(r.get("ask").asText());
        if (request == null) {
          throw new IllegalArgumentException("no ask named " + r.get("ask"));
        }
        long timeout = r.path("timeout_ms").asLong(0);
        ok.set("outcome", outcome(request.await(timeout == 0 ? null : Duration.ofMillis(timeout))));
      }
      default -> throw new IllegalArgumentException("unknown op " + op);
    }
    return ok;
  }

  /** The options of an `ask` op, through the builders a user would call. */
  private static AskOptions askOptions(JsonNode r) throws InvalidProtocolBufferException {
    AskOptions options;
    if (r.has("question")) {
      options = AskOptions.question(input(r.get("question")));
    } else if (r.has("form")) {
      Form.Builder form = Form.newBuilder();
      JsonFormat.parser().merge(r.get("form").toString(), form);
      options = AskOptions.form(form.build());
    } else if (r.has("approval")) {
      JsonNode approval = r.get("approval");
      Map<String, Object> arguments = JSON.convertValue(approval.path("arguments"), new TypeReference<Map<String, Object>>() {});
      options = AskOptions.approval(
          approval.path("tool_name").asText(""), arguments == null ? Map.of() : arguments, approval.path("reason").asText(""));
    } else {
      throw new IllegalArgumentException("an ask without a question, form or approval");
    }
    options = options.context(r.path("context").asText("")).requestId(r.path("request_id").asText(""));
    long ttl = r.path("ttl_ms").asLong(0);
    return ttl == 0 ? options : options.ttl(Duration.ofMillis(ttl));
  }

  /** An outcome as tests/conformance/README.md writes it. */
  private static ObjectNode outcome(HumanOutcome outcome) {
    ObjectNode json = JSON.createObjectNode();
    json.put("kind", outcome.kind().name().toLowerCase(Locale.ROOT));
    switch (outcome.kind()) {
      case TEXT, REPLIED -> json.put("text", outcome.text());
      case SELECTIONS -> outcome.selections().forEach(json.putArray("selections")::add);
      case FORM -> {
        ObjectNode values = json.putObject("values");
        outcome.values().forEach((name, value) -> values.set(name, plain(value)));
      }
      case DECLINED, REJECTED -> json.put("reason", outcome.reason());
      case APPROVED, EDITED -> json.set("arguments", JSON.valueToTree(outcome.arguments()));
      default -> {}
    }
    if (!outcome.settledBy().isEmpty()) {
      json.put("settled_by", outcome.settledBy());
    }
    return json;
  }

  private static JsonNode plain(Object value) {
    if (value instanceof HumanOutcome.Choice choice) {
      ObjectNode json = JSON.createObjectNode();
      choice.values().forEach(json.putArray("values")::add);
      return json.put("other", choice.other());
    }
    if (value instanceof Double number && number == Math.rint(number) && Math.abs(number) < 1e15) {
      return JSON.getNodeFactory().numberNode(number.longValue());
    }
    return JSON.valueToTree(value);
  }

  /** The client of the key `as` names, with the call's deadline (`timeout_ms`, 0 or absent: none). */
  private AskUserClient client(JsonNode r) {
    AskUserClient client = clients.get(r.path("as").asText("own"));
    long timeout = r.path("timeout_ms").asLong(0);
    return timeout == 0 ? client : client.withTimeout(Duration.ofMillis(timeout));
  }

  private static void next(EventStream<? extends MessageOrBuilder> stream, ObjectNode ok, String field)
      throws InvalidProtocolBufferException, IOException {
    if (stream.hasNext()) {
      ok.set(field, message(stream.next()));
    } else {
      ok.put("end", true);
    }
  }

  /** Every frame of a server stream, then how it ended. */
  private static void drain(EventStream<? extends MessageOrBuilder> stream, ObjectNode ok) throws IOException {
    ArrayNode frames = ok.putArray("frames");
    try (stream) {
      while (stream.hasNext()) {
        frames.add(message(stream.next()));
      }
      ok.putNull("error");
    } catch (AskUserException e) {
      ok.set("error", status(e));
    }
  }

  private static Answer answer(JsonNode a) {
    String runId = a.path("run_id").asText("");
    String id = a.get("tool_call_id").asText();
    Answer answer;
    if (a.has("text")) {
      answer = Answers.text(runId, id, a.get("text").asText());
    } else if (a.has("selections")) {
      answer = Answers.selections(runId, id, strings(a.get("selections")));
    } else if (a.has("decline")) {
      answer = Answers.decline(runId, id, a.get("decline").asText());
    } else if (a.has("form")) {
      Map<String, FieldValue> values = new HashMap<>();
      a.get("form").fields().forEachRemaining(field -> values.put(field.getKey(), fieldValue(field.getValue())));
      answer = Answers.form(runId, id, values);
    } else if (a.has("reply")) {
      answer = Answers.reply(runId, id, a.get("reply").asText());
    } else if (a.has("tool_output")) {
      JsonNode output = a.get("tool_output");
      answer = Answers.toolOutput(runId, id, output.path("content").asText(), output.path("is_error").asBoolean(false));
    } else if (a.has("approve")) {
      answer = Answers.approve(runId, id);
    } else if (a.has("reject")) {
      answer = Answers.reject(runId, id, a.get("reject").asText());
    } else if (a.has("edit")) {
      answer = Answers.editArguments(runId, id, a.get("edit").asText());
    } else {
      throw new IllegalArgumentException("an answer without a kind: " + a);
    }
    return answer.toBuilder().setAnswerId(a.path("answer_id").asText("")).build();
  }

  /** A form field's value of the protocol, through the builder a user would call for it. */
  private static FieldValue fieldValue(JsonNode v) {
    if (v.has("text")) {
      return FieldValues.text(v.get("text").asText());
    } else if (v.has("number")) {
      return FieldValues.number(v.get("number").asDouble());
    } else if (v.has("boolean")) {
      return FieldValues.bool(v.get("boolean").asBoolean());
    } else if (v.has("choice")) {
      JsonNode choice = v.get("choice");
      return FieldValues.choice(strings(choice.path("values")), choice.path("other").asText(""));
    }
    throw new IllegalArgumentException("a form field without a value: " + v);
  }

  private static AskUserInput input(JsonNode i) {
    AskUserInput.Builder input = AskUserInput.newBuilder().setQuestion(i.path("question").asText(""));
    for (JsonNode option : i.path("options")) {
      input.addOptions(AskUserOption.newBuilder()
          .setLabel(option.path("label").asText(""))
          .setDescription(option.path("description").asText("")));
    }
    if (i.hasNonNull("selection_mode")) {
      input.setSelectionMode(SelectionMode.valueOf(i.get("selection_mode").asText()));
    }
    return input.build();
  }

  private static List<String> strings(JsonNode array) {
    List<String> strings = new ArrayList<>();
    array.forEach(element -> strings.add(element.asText()));
    return strings;
  }

  private static JsonNode message(MessageOrBuilder message) throws IOException {
    return JSON.readTree(PRINTER.print(message));
  }

  private static ObjectNode status(AskUserException e) {
    ObjectNode status = JSON.createObjectNode()
        .put("code", e.code().name())
        .put("message", e.statusMessage())
        .put("reason", e.reason());
    ArrayNode fields = status.putArray("fields");
    e.fieldViolations().forEach(violation -> fields.add(violation.getField()));
    return status;
  }
}
