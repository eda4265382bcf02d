package dev.askuser.client;

import dev.askuser.v1.ErrorReason;

/**
 * Every reason the server sends, as {@link AskUserException#reason()} ({@code
 * google.rpc.ErrorInfo}) and {@code AnswerRejected.getReason()} carry it: the names of the
 * generated enum {@link ErrorReason} without the {@code ERROR_REASON_} prefix, whose comments say
 * when each is sent and with which code. Constants, so that a {@code switch} on a reason can use
 * them. A server may add reasons: treat one you do not know by its code.
 */
public final class Reasons {
  private static final String PREFIX = "ERROR_REASON_";

  /** {@link ErrorReason#ERROR_REASON_INVALID_ANSWER}. */
  public static final String INVALID_ANSWER = "INVALID_ANSWER";

  /** {@link ErrorReason#ERROR_REASON_TOOL_CALL_NOT_PENDING}. */
  public static final String TOOL_CALL_NOT_PENDING = "TOOL_CALL_NOT_PENDING";

  /** {@link ErrorReason#ERROR_REASON_ALREADY_ANSWERED}. */
  public static final String ALREADY_ANSWERED = "ALREADY_ANSWERED";

  /** {@link ErrorReason#ERROR_REASON_QUESTION_EXPIRED}. */
  public static final String QUESTION_EXPIRED = "QUESTION_EXPIRED";

  /** {@link ErrorReason#ERROR_REASON_RUN_MISMATCH}. */
  public static final String RUN_MISMATCH = "RUN_MISMATCH";

  /** {@link ErrorReason#ERROR_REASON_RUN_NOT_SUSPENDED}. */
  public static final String RUN_NOT_SUSPENDED = "RUN_NOT_SUSPENDED";

  /** {@link ErrorReason#ERROR_REASON_ALREADY_CLAIMED}. */
  public static final String ALREADY_CLAIMED = "ALREADY_CLAIMED";

  /** {@link ErrorReason#ERROR_REASON_ANSWER_ID_REUSED}. */
  public static final String ANSWER_ID_REUSED = "ANSWER_ID_REUSED";

  /** {@link ErrorReason#ERROR_REASON_NOT_ASSIGNEE}. */
  public static final String NOT_ASSIGNEE = "NOT_ASSIGNEE";

  /** {@link ErrorReason#ERROR_REASON_MISSING_SCOPE}. */
  public static final String MISSING_SCOPE = "MISSING_SCOPE";

  /** {@link ErrorReason#ERROR_REASON_AGENT_NOT_FOUND}. */
  public static final String AGENT_NOT_FOUND = "AGENT_NOT_FOUND";

  /** {@link ErrorReason#ERROR_REASON_RUN_NOT_FOUND}. */
  public static final String RUN_NOT_FOUND = "RUN_NOT_FOUND";

  /** {@link ErrorReason#ERROR_REASON_RUN_FINISHED}. */
  public static final String RUN_FINISHED = "RUN_FINISHED";

  /** {@link ErrorReason#ERROR_REASON_WEBHOOK_SECRET_REQUIRED}. */
  public static final String WEBHOOK_SECRET_REQUIRED = "WEBHOOK_SECRET_REQUIRED";

  /** {@link ErrorReason#ERROR_REASON_SHUTTING_DOWN}. */
  public static final String SHUTTING_DOWN = "SHUTTING_DOWN";

  /** {@link ErrorReason#ERROR_REASON_TOO_MANY_STREAMS}. */
  public static final String TOO_MANY_STREAMS = "TOO_MANY_STREAMS";

  /** {@link ErrorReason#ERROR_REASON_TOO_MANY_TENANT_STREAMS}. */
  public static final String TOO_MANY_TENANT_STREAMS = "TOO_MANY_TENANT_STREAMS";

  /** {@link ErrorReason#ERROR_REASON_TOO_MANY_PRINCIPAL_STREAMS}. */
  public static final String TOO_MANY_PRINCIPAL_STREAMS = "TOO_MANY_PRINCIPAL_STREAMS";

  /** {@link ErrorReason#ERROR_REASON_NO_FIRST_FRAME}. */
  public static final String NO_FIRST_FRAME = "NO_FIRST_FRAME";

  /** {@link ErrorReason#ERROR_REASON_MISSING_CREDENTIALS}. */
  public static final String MISSING_CREDENTIALS = "MISSING_CREDENTIALS";

  /** {@link ErrorReason#ERROR_REASON_INVALID_CREDENTIALS}. */
  public static final String INVALID_CREDENTIALS = "INVALID_CREDENTIALS";

  /** {@link ErrorReason#ERROR_REASON_HOST_NOT_ALLOWED}. */
  public static final String HOST_NOT_ALLOWED = "HOST_NOT_ALLOWED";

  /** {@link ErrorReason#ERROR_REASON_ORIGIN_NOT_ALLOWED}. */
  public static final String ORIGIN_NOT_ALLOWED = "ORIGIN_NOT_ALLOWED";

  /** {@link ErrorReason#ERROR_REASON_NOT_GRPC}. */
  public static final String NOT_GRPC = "NOT_GRPC";

  /** {@link ErrorReason#ERROR_REASON_KEY_NOT_FOUND}. */
  public static final String KEY_NOT_FOUND = "KEY_NOT_FOUND";

  /** {@link ErrorReason#ERROR_REASON_DELIVERY_NOT_FOUND}. */
  public static final String DELIVERY_NOT_FOUND = "DELIVERY_NOT_FOUND";

  /** {@link ErrorReason#ERROR_REASON_NOT_REDELIVERABLE}. */
  public static final String NOT_REDELIVERABLE = "NOT_REDELIVERABLE";

  /** {@link ErrorReason#ERROR_REASON_NO_WEBHOOK_SECRETS_KEY}. */
  public static final String NO_WEBHOOK_SECRETS_KEY = "NO_WEBHOOK_SECRETS_KEY";

  /** {@link ErrorReason#ERROR_REASON_ANSWER_LINK_INVALID}. */
  public static final String ANSWER_LINK_INVALID = "ANSWER_LINK_INVALID";

  /** {@link ErrorReason#ERROR_REASON_ANSWER_LINK_EXPIRED}. */
  public static final String ANSWER_LINK_EXPIRED = "ANSWER_LINK_EXPIRED";

  /** {@link ErrorReason#ERROR_REASON_ANSWER_LINK_USED}. */
  public static final String ANSWER_LINK_USED = "ANSWER_LINK_USED";

  /** {@link ErrorReason#ERROR_REASON_ANSWER_LINK_OTHER_CALL}. */
  public static final String ANSWER_LINK_OTHER_CALL = "ANSWER_LINK_OTHER_CALL";

  private Reasons() {}

  /**
   * The string the server sends for {@code reason}, e.g. {@code ALREADY_ANSWERED} for {@link
   * ErrorReason#ERROR_REASON_ALREADY_ANSWERED}.
   */
  public static String name(ErrorReason reason) {
    String name = reason.name();
    return name.startsWith(PREFIX) ? name.substring(PREFIX.length()) : name;
  }
}
