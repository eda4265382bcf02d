package dev.askuser.client;

import dev.askuser.v1.ApprovalRequest;
import dev.askuser.v1.AskRequest;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserOption;
import dev.askuser.v1.Form;
import dev.askuser.v1.SelectionMode;
import dev.askuser.v1.WebhookSubscription;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What to ask a person from code outside any run ({@link AskUserClient#ask}, {@link
 * AskUserClient#askHuman}, {@link AskUserClient#requestApproval}): one question, form or approval,
 * and how it is asked. Immutable: every method returns a new {@code AskOptions}.
 *
 * <pre>{@code
 * AskOptions.question("Which environment?")
 *     .options("staging", "production")
 *     .context("The nightly build is **green**.")   // markdown shown with the call
 *     .assignees("group:release")
 *     .ttl(Duration.ofHours(4))
 *     .requestId("deploy-api-4417");                // retry safely: the same id follows the same request
 *
 * AskOptions.approval("deploy", Map.of("service", "api", "environment", "production"), "a production deploy");
 * AskOptions.form(Form.newBuilder().setTitle("Release").addFields(...).build());
 * }</pre>
 *
 * <p>Without a {@link #requestId}, {@link AskUserClient#ask} generates one (a UUID) and uses it for
 * every retry of the same call.
 */
public final class AskOptions {
  private final AskRequest request;

  private AskOptions(AskRequest request) {
    this.request = request;
  }

  /** A free-text question (add {@link #options} for a select question). */
  public static AskOptions question(String question) {
    return question(AskUserInput.newBuilder().setQuestion(Objects.requireNonNull(question, "question")).build());
  }

  /** A question as the {@code ask_user} tool takes it: its text, its options, single or multi select. */
  public static AskOptions question(AskUserInput input) {
    return new AskOptions(AskRequest.newBuilder().setQuestion(input).build());
  }

  /** A form of typed fields (text, number, boolean, choice), answered at once. */
  public static AskOptions form(Form form) {
    return new AskOptions(AskRequest.newBuilder().setForm(form).build());
  }

  /**
   * A tool call to approve, edit or reject before the caller runs it: its name, its arguments (a
   * map of plain values: maps, lists, strings, numbers, booleans, null; written as a JSON object)
   * and why approval is asked (may be empty).
   *
   * @throws IllegalArgumentException when an argument cannot be written as JSON
   */
  public static AskOptions approval(String toolName, Map<String, ?> arguments, String reason) {
    return approvalJson(toolName, Json.write(Objects.requireNonNull(arguments, "arguments")), reason);
  }

  /** {@link #approval(String, Map, String)} with the arguments as JSON text (an object). */
  public static AskOptions approvalJson(String toolName, String argumentsJson, String reason) {
    return new AskOptions(AskRequest.newBuilder()
        .setApproval(ApprovalRequest.newBuilder()
            .setToolName(Objects.requireNonNull(toolName, "toolName"))
            .setArgumentsJson(Objects.requireNonNull(argumentsJson, "argumentsJson"))
            .setReason(reason == null ? "" : reason))
        .build());
  }

  /** The request as given, e.g. with webhooks or every field set at once. */
  public static AskOptions of(AskRequest request) {
    return new AskOptions(Objects.requireNonNull(request, "request"));
  }

  /** A question's options, by label, offered in this order (single select unless {@link #multiSelect}). */
  public AskOptions options(String... labels) {
    AskUserInput.Builder input = questionInput();
    for (String label : labels) {
      input.addOptions(AskUserOption.newBuilder().setLabel(label));
    }
    return new AskOptions(request.toBuilder().setQuestion(input).build());
  }

  /** One more option of a question, with a description shown beside its label. */
  public AskOptions option(String label, String description) {
    AskUserInput.Builder input = questionInput()
        .addOptions(AskUserOption.newBuilder().setLabel(label).setDescription(description));
    return new AskOptions(request.toBuilder().setQuestion(input).build());
  }

  /** A question whose options may be chosen several at once (the answer is {@code SELECTIONS}). */
  public AskOptions multiSelect() {
    return selectionMode(SelectionMode.SELECTION_MODE_MULTI_SELECT);
  }

  /** How a question's options are chosen. */
  public AskOptions selectionMode(SelectionMode mode) {
    return new AskOptions(request.toBuilder().setQuestion(questionInput().setSelectionMode(mode)).build());
  }

  private AskUserInput.Builder questionInput() {
    if (!request.hasQuestion()) {
      throw new IllegalStateException("options and selection modes belong to a question, not to a " + request.getCallCase());
    }
    return request.getQuestion().toBuilder();
  }

  /** What is going on and why it is asked (markdown), shown with the call. */
  public AskOptions context(String context) {
    return new AskOptions(request.toBuilder().setContext(Objects.requireNonNull(context, "context")).build());
  }

  /** Who may settle it (subjects, and groups as {@code group:NAME}); none: anyone with the scope to. */
  public AskOptions assignees(String... assignees) {
    return assignees(List.of(assignees));
  }

  /** Who may settle it (subjects, and groups as {@code group:NAME}). */
  public AskOptions assignees(List<String> assignees) {
    return new AskOptions(request.toBuilder().clearAssignees().addAllAssignees(assignees).build());
  }

  /**
   * How long it may wait before it expires ({@link HumanOutcome.Kind#EXPIRED}); {@code null}: until
   * settled (capped by the server's maximum).
   */
  public AskOptions ttl(Duration ttl) {
    AskRequest.Builder builder = request.toBuilder();
    if (ttl == null) {
      builder.clearTtl();
    } else {
      builder.setTtl(com.google.protobuf.Duration.newBuilder().setSeconds(ttl.getSeconds()).setNanos(ttl.getNano()));
    }
    return new AskOptions(builder.build());
  }

  /** Free-form labels kept with the request. */
  public AskOptions metadata(Map<String, String> metadata) {
    return new AskOptions(request.toBuilder().clearMetadata().putAllMetadata(metadata).build());
  }

  /** Webhooks for this request, as a run's. */
  public AskOptions webhooks(List<WebhookSubscription> webhooks) {
    return new AskOptions(request.toBuilder().clearWebhooks().addAllWebhooks(webhooks).build());
  }

  /**
   * The idempotency key (at most 256 bytes): an ask with a key an earlier one had creates nothing
   * and follows that request. Empty: {@link AskUserClient#ask} generates one.
   */
  public AskOptions requestId(String requestId) {
    return new AskOptions(request.toBuilder().setRequestId(Objects.requireNonNull(requestId, "requestId")).build());
  }

  /** The {@code AskRequest} these options make. */
  public AskRequest toRequest() {
    return request;
  }

  @Override
  public String toString() {
    return "AskOptions{" + request.toString().replace('\n', ' ').trim() + "}";
  }
}
