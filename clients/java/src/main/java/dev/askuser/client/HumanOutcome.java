package dev.askuser.client;

import dev.askuser.v1.Answer;
import dev.askuser.v1.ApprovalDecision;
import dev.askuser.v1.ChoiceValue;
import dev.askuser.v1.FieldValue;
import dev.askuser.v1.RunStatus;
import dev.askuser.v1.SettledToolCall;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * How a person settled a request ({@link HumanRequest#await}, {@link AskUserClient#askHuman},
 * {@link AskUserClient#requestApproval}): its {@link #kind()} and the fields of that kind.
 *
 * <table>
 *   <caption>kinds and their fields</caption>
 *   <tr><th>kind</th><th>asked</th><th>fields</th></tr>
 *   <tr><td>{@code TEXT}</td><td>question</td><td>{@link #text()}: the answer, or the single option chosen</td></tr>
 *   <tr><td>{@code SELECTIONS}</td><td>question</td><td>{@link #selections()}: the labels chosen, in order</td></tr>
 *   <tr><td>{@code FORM}</td><td>form</td><td>{@link #values()}: each field's plain value by name</td></tr>
 *   <tr><td>{@code DECLINED}</td><td>question, form</td><td>{@link #reason()}</td></tr>
 *   <tr><td>{@code REPLIED}</td><td>question, form</td><td>{@link #text()}: the prose instead of an answer</td></tr>
 *   <tr><td>{@code APPROVED}</td><td>approval</td><td>{@link #arguments()}: the arguments asked about</td></tr>
 *   <tr><td>{@code EDITED}</td><td>approval</td><td>{@link #arguments()}: the approver's arguments</td></tr>
 *   <tr><td>{@code REJECTED}</td><td>approval</td><td>{@link #reason()}</td></tr>
 *   <tr><td>{@code EXPIRED}</td><td>any</td><td>nobody settled it within its ttl</td></tr>
 *   <tr><td>{@code CANCELLED}</td><td>any</td><td>the request was cancelled</td></tr>
 * </table>
 *
 * <p>Every outcome has {@link #settledBy()} (who settled it; empty when nobody did) and {@link
 * #content()} (the result as the request's stream carried it). An approved or edited call is for
 * the caller to run, with {@link #arguments()}: askuser never runs it.
 */
public final class HumanOutcome {
  /** What became of the request. */
  public enum Kind {
    TEXT,
    SELECTIONS,
    FORM,
    DECLINED,
    REPLIED,
    APPROVED,
    EDITED,
    REJECTED,
    EXPIRED,
    CANCELLED
  }

  /** A choice field's value: the selected choices' values, in order, and the person's own text ("" for none). */
  public record Choice(List<String> values, String other) {
    public Choice {
      values = List.copyOf(values);
      Objects.requireNonNull(other, "other");
    }
  }

  private final Kind kind;
  private final String runId;
  private final String toolCallId;
  private final String text;
  private final List<String> selections;
  private final Map<String, Object> values;
  private final String reason;
  private final Map<String, Object> arguments;
  private final String settledBy;
  private final String content;
  private final Answer answer;

  private HumanOutcome(
      Kind kind,
      SettledToolCall call,
      String runId,
      String text,
      List<String> selections,
      Map<String, Object> values,
      String reason,
      Map<String, Object> arguments) {
    this.kind = kind;
    this.runId = runId;
    this.toolCallId = call == null ? "" : call.getToolCallId();
    this.text = text;
    this.selections = selections;
    this.values = values;
    this.reason = reason;
    this.arguments = arguments;
    this.settledBy = call == null ? "" : call.getSettledBy().getSubject();
    this.content = call == null ? "" : call.getContent();
    this.answer = call != null && call.hasAnswer() ? call.getAnswer() : null;
  }

  private static HumanOutcome of(Kind kind, SettledToolCall call, String runId) {
    return new HumanOutcome(kind, call, runId, "", List.of(), Map.of(), "", Map.of());
  }

  /**
   * Reads the outcome of the request's call from its run ({@code GetRun}): the settled call's kind
   * and answer. {@code requestArgumentsJson} (the approval's own arguments) stands in when an
   * approval's result does not carry them.
   */
  static HumanOutcome from(dev.askuser.v1.Run run, String toolCallId, boolean approval, String requestArgumentsJson) {
    SettledToolCall call = null;
    for (SettledToolCall settled : run.getSettledToolCallsList()) {
      if (toolCallId.isEmpty() || settled.getToolCallId().equals(toolCallId)) {
        call = settled;
        break;
      }
    }
    String runId = run.getRunId();
    if (call == null) {
      if (run.getStatus() == RunStatus.RUN_STATUS_CANCELLED) {
        return of(Kind.CANCELLED, null, runId);
      }
      throw new IllegalStateException(
          "the request " + runId + " ended (" + run.getStatus() + ") without settling its call " + toolCallId);
    }
    switch (call.getKind()) {
      case TOOL_RESULT_KIND_EXPIRED -> {
        return of(Kind.EXPIRED, call, runId);
      }
      case TOOL_RESULT_KIND_CANCELLED -> {
        return of(Kind.CANCELLED, call, runId);
      }
      default -> {}
    }
    Answer answer = call.getAnswer();
    if (approval) {
      return approvalOutcome(call, runId, answer, requestArgumentsJson);
    }
    switch (answer.getAnswerCase()) {
      case TEXT -> {
        return new HumanOutcome(Kind.TEXT, call, runId, answer.getText(), List.of(), Map.of(), "", Map.of());
      }
      case SELECTIONS -> {
        return new HumanOutcome(Kind.SELECTIONS, call, runId, "",
            List.copyOf(answer.getSelections().getLabelsList()), Map.of(), "", Map.of());
      }
      case FORM -> {
        // Sorted by name: the map of the wire has no order of its own.
        Map<String, Object> values = new TreeMap<>();
        answer.getForm().getValuesMap().forEach((name, value) -> values.put(name, plain(value)));
        return new HumanOutcome(Kind.FORM, call, runId, "", List.of(),
            Collections.unmodifiableMap(new LinkedHashMap<>(values)), "", Map.of());
      }
      case DECLINE -> {
        return new HumanOutcome(Kind.DECLINED, call, runId, "", List.of(), Map.of(), answer.getDecline().getReason(), Map.of());
      }
      case REPLY -> {
        return new HumanOutcome(Kind.REPLIED, call, runId, answer.getReply(), List.of(), Map.of(), "", Map.of());
      }
      default -> {
        switch (call.getKind()) {
          case TOOL_RESULT_KIND_DECLINED -> {
            return of(Kind.DECLINED, call, runId);
          }
          case TOOL_RESULT_KIND_REJECTED -> {
            return new HumanOutcome(Kind.REJECTED, call, runId, "", List.of(), Map.of(), "", Map.of());
          }
          default -> throw new IllegalStateException(
              "the request " + runId + " was settled as " + call.getKind() + " with no answer this client reads");
        }
      }
    }
  }

  private static HumanOutcome approvalOutcome(SettledToolCall call, String runId, Answer answer, String requestArgumentsJson) {
    Map<String, Object> fromContent = contentArguments(call.getContent());
    if (answer.hasDecline()) {
      return new HumanOutcome(Kind.REJECTED, call, runId, "", List.of(), Map.of(), answer.getDecline().getReason(), Map.of());
    }
    if (answer.hasApproval()) {
      ApprovalDecision decision = answer.getApproval();
      switch (decision.getDecisionCase()) {
        case APPROVE -> {
          Map<String, Object> arguments = fromContent != null ? fromContent : objectOrEmpty(requestArgumentsJson);
          return new HumanOutcome(Kind.APPROVED, call, runId, "", List.of(), Map.of(), "", arguments);
        }
        case EDIT -> {
          Map<String, Object> arguments = objectOrNull(decision.getEdit().getArgumentsJson());
          return new HumanOutcome(Kind.EDITED, call, runId, "", List.of(), Map.of(), "",
              arguments != null ? arguments : fromContent != null ? fromContent : Map.of());
        }
        case REJECT -> {
          return new HumanOutcome(Kind.REJECTED, call, runId, "", List.of(), Map.of(), decision.getReject().getReason(), Map.of());
        }
        default -> {}
      }
    }
    // No answer this client reads: the result tells the decision.
    if (call.getKind() == dev.askuser.v1.ToolResultKind.TOOL_RESULT_KIND_REJECTED
        || call.getKind() == dev.askuser.v1.ToolResultKind.TOOL_RESULT_KIND_DECLINED) {
      return new HumanOutcome(Kind.REJECTED, call, runId, "", List.of(), Map.of(), "", Map.of());
    }
    if (fromContent != null) {
      Object decision = Json.parseObject(call.getContent()).get("decision");
      Kind kind = "edited".equals(decision) ? Kind.EDITED : Kind.APPROVED;
      return new HumanOutcome(kind, call, runId, "", List.of(), Map.of(), "", fromContent);
    }
    throw new IllegalStateException(
        "the approval " + runId + " was settled as " + call.getKind() + " with no decision this client reads");
  }

  /** The {@code arguments} of an approval's result ({@code {"decision": ..., "arguments": {...}}}), or null. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> contentArguments(String content) {
    Map<String, Object> result = objectOrNull(content);
    if (result != null && result.get("arguments") instanceof Map<?, ?> arguments) {
      return (Map<String, Object>) arguments;
    }
    return null;
  }

  private static Map<String, Object> objectOrNull(String json) {
    if (json == null || json.isBlank()) {
      return null;
    }
    try {
      return Json.parseObject(json);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static Map<String, Object> objectOrEmpty(String json) {
    Map<String, Object> object = objectOrNull(json);
    return object == null ? Map.of() : object;
  }

  /** A form field's value as a plain value: String, Double, Boolean or {@link Choice}. */
  private static Object plain(FieldValue value) {
    return switch (value.getValueCase()) {
      case TEXT -> value.getText();
      case NUMBER -> value.getNumber();
      case BOOLEAN -> value.getBoolean();
      case CHOICE -> {
        ChoiceValue choice = value.getChoice();
        yield new Choice(choice.getValuesList(), choice.getOther());
      }
      default -> null;
    };
  }

  /** What became of the request. */
  public Kind kind() {
    return kind;
  }

  /** True for {@code APPROVED} and {@code EDITED}: run the tool, with {@link #arguments()}. */
  public boolean isApproved() {
    return kind == Kind.APPROVED || kind == Kind.EDITED;
  }

  /** The request's run id. */
  public String runId() {
    return runId;
  }

  /** The request's call id; empty when a cancellation settled nothing. */
  public String toolCallId() {
    return toolCallId;
  }

  /** {@code TEXT}: the answer (for a single-select question, the label chosen); {@code REPLIED}: the prose; else "". */
  public String text() {
    return text;
  }

  /** {@code SELECTIONS}: the labels chosen, in the order chosen; else empty. */
  public List<String> selections() {
    return selections;
  }

  /**
   * {@code FORM}: each answered field's value by name, as a plain value: a {@link String} (text), a
   * {@link Double} (number), a {@link Boolean} (boolean) or a {@link Choice} (choice); else empty.
   */
  public Map<String, Object> values() {
    return values;
  }

  /** {@code DECLINED} and {@code REJECTED}: the reason given (may be empty); else "". */
  public String reason() {
    return reason;
  }

  /**
   * {@code APPROVED}: the arguments asked about; {@code EDITED}: the approver's arguments, to run
   * the tool with instead. A JSON object as plain values: {@link Map}, {@link List}, {@link String},
   * {@link Long} (whole numbers), {@link Double}, {@link Boolean}, null. Empty for other kinds.
   */
  public Map<String, Object> arguments() {
    return arguments;
  }

  /** {@link #arguments()} as JSON text ({@code "{}"} for other kinds). */
  public String argumentsJson() {
    return Json.write(arguments);
  }

  /** Who settled it (an API key's name, a token's subject; {@code askuser} for an expiry); empty when nobody did. */
  public String settledBy() {
    return settledBy;
  }

  /** The call's result as the request's stream carried it, e.g. {@code User answered: Apollo}. */
  public String content() {
    return content;
  }

  /** The answer or decision that settled it, as the settler gave it; empty for an expiry or a cancellation. */
  public Optional<Answer> answer() {
    return Optional.ofNullable(answer);
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder("HumanOutcome{").append(kind);
    switch (kind) {
      case TEXT, REPLIED -> out.append(", text=").append(text);
      case SELECTIONS -> out.append(", selections=").append(selections);
      case FORM -> out.append(", values=").append(values);
      case DECLINED, REJECTED -> out.append(", reason=").append(reason);
      case APPROVED, EDITED -> out.append(", arguments=").append(argumentsJson());
      default -> {}
    }
    if (!settledBy.isEmpty()) {
      out.append(", settledBy=").append(settledBy);
    }
    return out.append('}').toString();
  }
}
