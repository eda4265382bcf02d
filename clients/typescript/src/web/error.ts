import { Code, ConnectError } from "@connectrpc/connect";
import { AskUserErrorBase } from "../common/error.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

/**
 * A call failed with a gRPC status: the same shape as `AskUserError` of `@askuser/client` (code,
 * `codeName`, `details`, `reason`, `domain`, `fieldViolations`), with Connect's `Code` (its numbers
 * are the gRPC codes) and the response's headers and trailers as `metadata`.
 */
export class AskUserError extends AskUserErrorBase<Code, Headers> {
  constructor(error: ConnectError) {
    const errorInfo = error.findDetails(ErrorInfoSchema)[0];
    const fieldViolations = error
      .findDetails(BadRequestSchema)
      .flatMap((detail) => detail.fieldViolations.map(({ field, description }) => ({ field, description })));
    super(error.code, error.rawMessage, error.metadata, { reason: errorInfo?.reason, domain: errorInfo?.domain, fieldViolations }, { cause: error });
  }
}

/** Turns a Connect error into an AskUserError; anything else is returned unchanged. */
export function toAskUserError(error: unknown): unknown {
  return error instanceof ConnectError ? new AskUserError(error) : error;
}
