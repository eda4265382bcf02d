"""AskUserError: a failed call, with the rich details askuser puts in its error statuses."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2, status_pb2

# The trailer in which gRPC carries a google.rpc.Status with typed details.
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class FieldViolation:
    """One thing wrong with a request, from `google.rpc.BadRequest`."""

    field: str
    """Path of the offending field, e.g. `answer.text` or `input.options[1].label`."""
    description: str
    """What is wrong with it, in plain words."""


class AskUserError(Exception):
    """A call to the askuser server failed.

    `code` is the gRPC status code. `reason` is the `google.rpc.ErrorInfo` reason, e.g.
    `ALREADY_ANSWERED` (FAILED_PRECONDITION), `RUN_NOT_FOUND` (NOT_FOUND), `MISSING_CREDENTIALS` or
    `INVALID_CREDENTIALS` (UNAUTHENTICATED), `MISSING_SCOPE` (PERMISSION_DENIED), and `metadata`
    its metadata (for MISSING_SCOPE, `metadata["scope"]` names the scope the call needs); for
    INVALID_ARGUMENT, `field_violations` lists the `google.rpc.BadRequest` violations.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str | None = None,
        domain: str | None = None,
        metadata: Mapping[str, str] | None = None,
        field_violations: tuple[FieldViolation, ...] = (),
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.domain = domain
        self.metadata = dict(metadata or {})
        self.field_violations = field_violations

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> AskUserError:
        """Decodes a grpcio error, details included."""
        if not isinstance(error, grpc.Call):
            # grpcio's call errors are grpc.Call objects; anything else carries no status.
            return cls(grpc.StatusCode.UNKNOWN, str(error))
        code, message, trailers = error.code(), error.details(), error.trailing_metadata()
        reason = domain = None
        metadata: dict[str, str] = {}
        violations: list[FieldViolation] = []
        for key, value in trailers or ():
            if key != _STATUS_DETAILS_KEY:
                continue
            for detail in status_pb2.Status.FromString(value).details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
                elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad_request = error_details_pb2.BadRequest()
                    detail.Unpack(bad_request)
                    violations += [
                        FieldViolation(v.field, v.description) for v in bad_request.field_violations
                    ]
        return cls(
            code or grpc.StatusCode.UNKNOWN,
            message or "",
            reason=reason,
            domain=domain,
            metadata=metadata,
            field_violations=tuple(violations),
        )


@contextmanager
def raising_ask_user_errors() -> Iterator[None]:
    """Turns the grpc.RpcError of a call made inside into an AskUserError."""
    try:
        yield
    except grpc.RpcError as error:
        raise AskUserError.from_rpc_error(error) from error
