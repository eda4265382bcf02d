package dev.askuser.client;

import dev.askuser.v1.Answer;
import dev.askuser.v1.ApprovalDecision;
import dev.askuser.v1.Decline;
import dev.askuser.v1.FieldValue;
import dev.askuser.v1.FormAnswer;
import dev.askuser.v1.Selections;
import dev.askuser.v1.ToolOutput;
import java.util.List;
import java.util.Map;

/**
 * Builds the {@link Answer} that settles a suspended tool call, for {@link
 * AskUserClient#resumeRun} or {@link Run#answer}. Which one fits depends on the call's {@code
 * kind}: a question ({@code SUSPEND_KIND_QUESTION}) takes {@link #text}, {@link #selections} or
 * {@link #decline}; a form ({@code SUSPEND_KIND_FORM}) takes {@link #form} or {@link #decline}; either
 * takes {@link #reply} (prose instead of an answer); an approval ({@code SUSPEND_KIND_APPROVAL}) takes {@link #approve}, {@link
 * #reject}, {@link #editArguments} (or {@link #decline}, which rejects); a client tool call ({@code
 * SUSPEND_KIND_CLIENT_TOOL}) takes {@link #toolOutput}.
 *
 * <p>An empty {@code runId} means the run of the stream the answer is sent on. Add an idempotency
 * key with {@code answer.toBuilder().setAnswerId("...").build()}.
 */
public final class Answers {
  private Answers() {}

  /** A free-text answer, or a single-select one with the exact label chosen. */
  public static Answer text(String runId, String toolCallId, String text) {
    return base(runId, toolCallId).setText(text).build();
  }

  /** The chosen labels of a select question, in the order they were chosen. */
  public static Answer selections(String runId, String toolCallId, List<String> labels) {
    return base(runId, toolCallId).setSelections(Selections.newBuilder().addAllLabels(labels)).build();
  }

  /** Declines a question (or rejects an approval); {@code reason} may be empty. */
  public static Answer decline(String runId, String toolCallId, String reason) {
    return base(runId, toolCallId).setDecline(Decline.newBuilder().setReason(reason)).build();
  }

  /**
   * A form's answer: each field's value ({@link FieldValues}) by the field's name; optional fields
   * may be left out. The server checks every value against its field and refuses a wrong one with a
   * violation naming it, e.g. {@code answer.form.values["replicas"]}; the form stays pending.
   */
  public static Answer form(String runId, String toolCallId, Map<String, FieldValue> values) {
    return base(runId, toolCallId).setForm(FormAnswer.newBuilder().putAllValues(values)).build();
  }

  /**
   * A reply in prose instead of an answer, to a question or a form: the call settles ({@code
   * TOOL_RESULT_KIND_REPLIED}) and the model is told the person replied, and what they wrote.
   */
  public static Answer reply(String runId, String toolCallId, String text) {
    return base(runId, toolCallId).setReply(text).build();
  }

  /** The output of a client tool the caller ran; {@code isError} tells the model the tool failed. */
  public static Answer toolOutput(String runId, String toolCallId, String content, boolean isError) {
    return base(runId, toolCallId)
        .setToolOutput(ToolOutput.newBuilder().setContent(content).setIsError(isError))
        .build();
  }

  /** Approves a call that waits for approval: the tool runs with the arguments the model gave. */
  public static Answer approve(String runId, String toolCallId) {
    return approval(runId, toolCallId,
        ApprovalDecision.newBuilder().setApprove(ApprovalDecision.Approve.getDefaultInstance()));
  }

  /** Rejects a call that waits for approval: the tool never runs; {@code reason} (may be empty) goes to the model. */
  public static Answer reject(String runId, String toolCallId, String reason) {
    return approval(runId, toolCallId,
        ApprovalDecision.newBuilder().setReject(ApprovalDecision.Reject.newBuilder().setReason(reason)));
  }

  /**
   * Approves a call with other arguments, a JSON object checked against the tool's schema; the
   * model is told they were changed, and to what.
   */
  public static Answer editArguments(String runId, String toolCallId, String argumentsJson) {
    return approval(runId, toolCallId,
        ApprovalDecision.newBuilder().setEdit(ApprovalDecision.Edit.newBuilder().setArgumentsJson(argumentsJson)));
  }

  private static Answer approval(String runId, String toolCallId, ApprovalDecision.Builder decision) {
    return base(runId, toolCallId).setApproval(decision).build();
  }

  private static Answer.Builder base(String runId, String toolCallId) {
    return Answer.newBuilder().setRunId(runId).setToolCallId(toolCallId);
  }
}
