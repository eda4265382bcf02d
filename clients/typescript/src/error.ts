import { status, type Metadata, type ServiceError } from "@grpc/grpc-js";
import type { FieldViolation } from "./gen/askuser/v1/ask_user";
import { BadRequest, ErrorInfo } from "./gen/google/rpc/error_details";
import { Status } from "./gen/google/rpc/status";

/** The trailer in which the server sends a `google.rpc.Status` with typed error details. */
const STATUS_DETAILS_KEY = "grpc-status-details-bin";
const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest";

/**
 * A call failed with a gRPC status. Besides the code and message it carries the rich details the
 * askuser server attaches: the `google.rpc.ErrorInfo` reason (e.g. `ALREADY_ANSWERED`) and the
 * `google.rpc.BadRequest` field violations.
 */
export class AskUserError extends Error {
  /** The gRPC status code, e.g. `status.NOT_FOUND` (5). */
  readonly code: status;
  /** The status code's name as the gRPC spec spells it, e.g. `NOT_FOUND`. */
  readonly codeName: string;
  /** The server's status message. */
  readonly details: string;
  /** `ErrorInfo.reason`, e.g. `ALREADY_ANSWERED`; undefined when the status carries no ErrorInfo. */
  readonly reason: string | undefined;
  /** `ErrorInfo.domain` (`askuser.dev` for the server's own errors). */
  readonly domain: string | undefined;
  /** The `google.rpc.BadRequest` field violations, in the server's order; empty when there are none. */
  readonly fieldViolations: FieldViolation[];
  /** The response trailers of the failed call. */
  readonly metadata: Metadata;

  constructor(code: status, details: string, metadata: Metadata, options?: ErrorOptions) {
    const codeName = status[code] ?? `CODE_${code}`;
    super(`${codeName}: ${details}`, options);
    this.name = "AskUserError";
    this.code = code;
    this.codeName = codeName;
    this.details = details;
    this.metadata = metadata;
    const { errorInfo, fieldViolations } = decodeStatusDetails(metadata);
    this.reason = errorInfo?.reason;
    this.domain = errorInfo?.domain;
    this.fieldViolations = fieldViolations;
  }
}

function decodeStatusDetails(metadata: Metadata): {
  errorInfo: ErrorInfo | undefined;
  fieldViolations: FieldViolation[];
} {
  let errorInfo: ErrorInfo | undefined;
  const fieldViolations: FieldViolation[] = [];
  for (const value of metadata.get(STATUS_DETAILS_KEY)) {
    if (typeof value === "string") continue; // `-bin` trailers always arrive as Buffers
    for (const detail of Status.decode(value).details) {
      if (detail.typeUrl === ERROR_INFO_TYPE) {
        errorInfo = ErrorInfo.decode(detail.value);
      } else if (detail.typeUrl === BAD_REQUEST_TYPE) {
        for (const { field, description } of BadRequest.decode(detail.value).fieldViolations) {
          fieldViolations.push({ field, description });
        }
      }
    }
  }
  return { errorInfo, fieldViolations };
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as ServiceError).code === "number" && "metadata" in error;
}

/** Turns a grpc-js call error into an AskUserError; anything else is returned unchanged. */
export function toAskUserError(error: unknown): unknown {
  if (!isServiceError(error)) return error;
  return new AskUserError(error.code, error.details, error.metadata, { cause: error });
}
