// The reasons the server sends, shared by both entries: this file imports no transport and no
// generated code, so the browser entry can share it with the Node one.

/**
 * Every reason the server sends, as `AskUserError.reason` (`google.rpc.ErrorInfo`) and
 * `AnswerRejected.reason` carry it: the names of the generated enum `ErrorReason` without the
 * `ERROR_REASON_` prefix (`v1.ErrorReason` of the Node entry; the web entry's `ErrorReason` names
 * them without it already), whose comments say when each is sent and with which code. A server may
 * add reasons: treat one you do not know by its code. E.g.
 * `if (error.reason === Reason.ALREADY_ANSWERED) ...`.
 */
export const Reason = {
  INVALID_ANSWER: "INVALID_ANSWER",
  TOOL_CALL_NOT_PENDING: "TOOL_CALL_NOT_PENDING",
  ALREADY_ANSWERED: "ALREADY_ANSWERED",
  QUESTION_EXPIRED: "QUESTION_EXPIRED",
  RUN_MISMATCH: "RUN_MISMATCH",
  RUN_NOT_SUSPENDED: "RUN_NOT_SUSPENDED",
  ALREADY_CLAIMED: "ALREADY_CLAIMED",
  ANSWER_ID_REUSED: "ANSWER_ID_REUSED",
  NOT_ASSIGNEE: "NOT_ASSIGNEE",
  MISSING_SCOPE: "MISSING_SCOPE",
  AGENT_NOT_FOUND: "AGENT_NOT_FOUND",
  RUN_NOT_FOUND: "RUN_NOT_FOUND",
  RUN_FINISHED: "RUN_FINISHED",
  WEBHOOK_SECRET_REQUIRED: "WEBHOOK_SECRET_REQUIRED",
  SHUTTING_DOWN: "SHUTTING_DOWN",
  TOO_MANY_STREAMS: "TOO_MANY_STREAMS",
  TOO_MANY_TENANT_STREAMS: "TOO_MANY_TENANT_STREAMS",
  TOO_MANY_PRINCIPAL_STREAMS: "TOO_MANY_PRINCIPAL_STREAMS",
  NO_FIRST_FRAME: "NO_FIRST_FRAME",
  MISSING_CREDENTIALS: "MISSING_CREDENTIALS",
  INVALID_CREDENTIALS: "INVALID_CREDENTIALS",
  HOST_NOT_ALLOWED: "HOST_NOT_ALLOWED",
  ORIGIN_NOT_ALLOWED: "ORIGIN_NOT_ALLOWED",
  NOT_GRPC: "NOT_GRPC",
  KEY_NOT_FOUND: "KEY_NOT_FOUND",
  DELIVERY_NOT_FOUND: "DELIVERY_NOT_FOUND",
  NOT_REDELIVERABLE: "NOT_REDELIVERABLE",
  NO_WEBHOOK_SECRETS_KEY: "NO_WEBHOOK_SECRETS_KEY",
  ANSWER_LINK_INVALID: "ANSWER_LINK_INVALID",
  ANSWER_LINK_EXPIRED: "ANSWER_LINK_EXPIRED",
  ANSWER_LINK_USED: "ANSWER_LINK_USED",
  ANSWER_LINK_OTHER_CALL: "ANSWER_LINK_OTHER_CALL",
} as const;

/** One of the `Reason` strings. */
export type Reason = (typeof Reason)[keyof typeof Reason];
