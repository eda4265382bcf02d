import { status, type Metadata, type ServiceError } from "@grpc/grpc-js";
import { AskUserErrorBase, type StatusDetails } from "./common/error";
import { BadRequest, ErrorInfo } from "./gen/google/rpc/error_details";
import { Status } from "./gen/google/rpc/status";

/** The trailer in which the server sends a `google.rpc.Status` with typed error details. */
const STATUS_DETAILS_KEY = "grpc-status-details-bin";
const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest";

/**
 * A call failed with a gRPC status. Besides the code and message it carries the rich details the
 * askuser server attaches: the `google.rpc.ErrorInfo` reason (e.g. `ALREADY_ANSWERED`) and the
 * `google.rpc.BadRequest` field violations. `@askuser/client/web` throws its own `AskUserError` of
 * the same shape.
 */
export class AskUserError extends AskUserErrorBase<status, Metadata> {
  constructor(code: status, details: string, metadata: Metadata, options?: ErrorOptions) {
    super(code, details, metadata, decodeStatusDetails(metadata), options);
  }
}

function decodeStatusDetails(metadata: Metadata): StatusDetails {
  const decoded: StatusDetails = { fieldViolations: [] };
  for (const value of metadata.get(STATUS_DETAILS_KEY)) {
    if (typeof value === "string") continue; // `-bin` trailers always arrive as Buffers
    for (const detail of Status.decode(value).details) {
      if (detail.typeUrl === ERROR_INFO_TYPE) {
        const { reason, domain } = ErrorInfo.decode(detail.value);
        Object.assign(decoded, { reason, domain });
      } else if (detail.typeUrl === BAD_REQUEST_TYPE) {
        for (const { field, description } of BadRequest.decode(detail.value).fieldViolations) {
          decoded.fieldViolations.push({ field, description });
        }
      }
    }
  }
  return decoded;
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as ServiceError).code === "number" && "metadata" in error;
}

/** Turns a grpc-js call error into an AskUserError; anything else is returned unchanged. */
export function toAskUserError(error: unknown): unknown {
  if (!isServiceError(error)) return error;
  return new AskUserError(error.code, error.details, error.metadata, { cause: error });
}
