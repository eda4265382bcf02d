// What a failed call looks like in both entries: this file imports no transport (no grpc-js, no
// Connect, no Node built-ins), so the browser entry can share it with the Node one.

/** The gRPC status codes' names, by code, as the gRPC spec spells them. */
const CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** One field a call's request got wrong, from the `google.rpc.BadRequest` detail of its status. */
export interface Violation {
  /** The field's path in the request, e.g. `answer.text`. */
  field: string;
  description: string;
}

/** The rich details of a status, decoded by each transport from its `grpc-status-details-bin` trailer. */
export interface StatusDetails {
  /** From `google.rpc.ErrorInfo`. */
  reason?: string;
  domain?: string;
  /** From `google.rpc.BadRequest`. */
  fieldViolations: Violation[];
}

/**
 * The shape of `AskUserError` in both entries: the gRPC status code and its name, the server's
 * message, and the rich details the askuser server attaches, the `google.rpc.ErrorInfo` reason (e.g.
 * `ALREADY_ANSWERED`) and the `google.rpc.BadRequest` field violations. Each entry's subclass adds
 * its transport's type of code and of trailers (`metadata`).
 */
export abstract class AskUserErrorBase<Code extends number, Trailers> extends Error {
  /** The gRPC status code, e.g. 5 for `NOT_FOUND`. */
  readonly code: Code;
  /** The status code's name as the gRPC spec spells it, e.g. `NOT_FOUND`. */
  readonly codeName: string;
  /** The server's status message. */
  readonly details: string;
  /** `ErrorInfo.reason`, e.g. `ALREADY_ANSWERED`; undefined when the status carries no ErrorInfo. */
  readonly reason: string | undefined;
  /** `ErrorInfo.domain` (`askuser.dev` for the server's own errors). */
  readonly domain: string | undefined;
  /** The `google.rpc.BadRequest` field violations, in the server's order; empty when there are none. */
  readonly fieldViolations: Violation[];
  /** The response trailers of the failed call. */
  readonly metadata: Trailers;

  protected constructor(code: Code, details: string, metadata: Trailers, statusDetails: StatusDetails, options?: ErrorOptions) {
    const codeName = CODE_NAMES[code] ?? `CODE_${code}`;
    super(`${codeName}: ${details}`, options);
    this.name = "AskUserError";
    this.code = code;
    this.codeName = codeName;
    this.details = details;
    this.metadata = metadata;
    this.reason = statusDetails.reason;
    this.domain = statusDetails.domain;
    this.fieldViolations = statusDetails.fieldViolations;
  }
}
