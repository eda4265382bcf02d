"""AskUserError and one subclass per gRPC status code: a failed call, with the rich details askuser
puts in its error statuses. The sync and the asyncio clients raise the same classes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import grpc
from askuser.v1 import errors_pb2
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


_REASON_PREFIX = "ERROR_REASON_"


class Reason:
    """The reasons the server sends, as `AskUserError.reason` (`google.rpc.ErrorInfo`) and
    `AnswerRejected.reason` carry them: the names of the generated enum
    `askuser.v1.errors_pb2.ErrorReason` without the `ERROR_REASON_` prefix, whose comments say when
    each is sent and with which code. A server may add reasons: treat one you do not know by its
    code. E.g. `if error.reason == Reason.ALREADY_ANSWERED: ...`."""

    INVALID_ANSWER: Final = "INVALID_ANSWER"
    TOOL_CALL_NOT_PENDING: Final = "TOOL_CALL_NOT_PENDING"
    ALREADY_ANSWERED: Final = "ALREADY_ANSWERED"
    QUESTION_EXPIRED: Final = "QUESTION_EXPIRED"
    RUN_MISMATCH: Final = "RUN_MISMATCH"
    RUN_NOT_SUSPENDED: Final = "RUN_NOT_SUSPENDED"
    ALREADY_CLAIMED: Final = "ALREADY_CLAIMED"
    ANSWER_ID_REUSED: Final = "ANSWER_ID_REUSED"
    NOT_ASSIGNEE: Final = "NOT_ASSIGNEE"
    MISSING_SCOPE: Final = "MISSING_SCOPE"
    AGENT_NOT_FOUND: Final = "AGENT_NOT_FOUND"
    RUN_NOT_FOUND: Final = "RUN_NOT_FOUND"
    RUN_FINISHED: Final = "RUN_FINISHED"
    WEBHOOK_SECRET_REQUIRED: Final = "WEBHOOK_SECRET_REQUIRED"
    SHUTTING_DOWN: Final = "SHUTTING_DOWN"
    TOO_MANY_STREAMS: Final = "TOO_MANY_STREAMS"
    TOO_MANY_TENANT_STREAMS: Final = "TOO_MANY_TENANT_STREAMS"
    TOO_MANY_PRINCIPAL_STREAMS: Final = "TOO_MANY_PRINCIPAL_STREAMS"
    NO_FIRST_FRAME: Final = "NO_FIRST_FRAME"
    MISSING_CREDENTIALS: Final = "MISSING_CREDENTIALS"
    INVALID_CREDENTIALS: Final = "INVALID_CREDENTIALS"
    HOST_NOT_ALLOWED: Final = "HOST_NOT_ALLOWED"
    ORIGIN_NOT_ALLOWED: Final = "ORIGIN_NOT_ALLOWED"
    NOT_GRPC: Final = "NOT_GRPC"
    KEY_NOT_FOUND: Final = "KEY_NOT_FOUND"
    DELIVERY_NOT_FOUND: Final = "DELIVERY_NOT_FOUND"
    NOT_REDELIVERABLE: Final = "NOT_REDELIVERABLE"
    NO_WEBHOOK_SECRETS_KEY: Final = "NO_WEBHOOK_SECRETS_KEY"
    ANSWER_LINK_INVALID: Final = "ANSWER_LINK_INVALID"
    ANSWER_LINK_EXPIRED: Final = "ANSWER_LINK_EXPIRED"
    ANSWER_LINK_USED: Final = "ANSWER_LINK_USED"
    ANSWER_LINK_OTHER_CALL: Final = "ANSWER_LINK_OTHER_CALL"


def reason_name(reason: errors_pb2.ErrorReason) -> str:
    """The string the server sends for a value of `ErrorReason`, e.g. `ALREADY_ANSWERED` for
    `ERROR_REASON_ALREADY_ANSWERED`."""
    return errors_pb2.ErrorReason.Name(reason).removeprefix(_REASON_PREFIX)


class AskUserError(Exception):
    """A call to the askuser server failed.

    `code` is the gRPC status code. `reason` is the `google.rpc.ErrorInfo` reason (one of `Reason`), e.g.
    `ALREADY_ANSWERED` (FAILED_PRECONDITION), `RUN_NOT_FOUND` (NOT_FOUND), `MISSING_CREDENTIALS` or
    `INVALID_CREDENTIALS` (UNAUTHENTICATED), `MISSING_SCOPE` (PERMISSION_DENIED), and `metadata`
    its metadata (for MISSING_SCOPE, `metadata["scope"]` names the scope the call needs); for
    INVALID_ARGUMENT, `field_violations` (also `violations`) lists the `google.rpc.BadRequest`
    violations.

    Every error raised is an instance of the subclass for its code (`NotFound`, `InvalidArgument`,
    `DeadlineExceeded`, ...; `AskUserError.for_code` makes one), so `except NotFound:` works as
    well as `except AskUserError as e: if e.code == grpc.StatusCode.NOT_FOUND`.
    """

    status_code: ClassVar[grpc.StatusCode | None] = None
    """The code of a subclass's errors (None on the base class)."""

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

    @property
    def violations(self) -> tuple[FieldViolation, ...]:
        """The `google.rpc.BadRequest` field violations (same as `field_violations`)."""
        return self.field_violations

    @staticmethod
    def for_code(
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str | None = None,
        domain: str | None = None,
        metadata: Mapping[str, str] | None = None,
        field_violations: tuple[FieldViolation, ...] = (),
    ) -> AskUserError:
        """An error of the subclass for `code` (AskUserError itself for a code without one)."""
        cls = _BY_CODE.get(code, AskUserError)
        return cls(
            code,
            message,
            reason=reason,
            domain=domain,
            metadata=metadata,
            field_violations=field_violations,
        )

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> AskUserError:
        """Decodes a grpcio error (sync `grpc.Call` or `grpc.aio.AioRpcError`), details included,
        into the subclass for its code."""
        code_of: Any = getattr(error, "code", None)
        if not callable(code_of):
            # grpcio's call errors have code(); anything else carries no status.
            return AskUserError.for_code(grpc.StatusCode.UNKNOWN, str(error))
        call: Any = error
        return _decode(code_of(), call.details(), call.trailing_metadata())


def _decode(
    code: grpc.StatusCode | None,
    message: str | None,
    trailers: Iterable[tuple[str, str | bytes]] | None,
) -> AskUserError:
    reason = domain = None
    metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    for key, value in trailers or ():
        if key != _STATUS_DETAILS_KEY or not isinstance(value, bytes):
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
    return AskUserError.for_code(
        code or grpc.StatusCode.UNKNOWN,
        message or "",
        reason=reason,
        domain=domain,
        metadata=metadata,
        field_violations=tuple(violations),
    )


class Cancelled(AskUserError):
    """CANCELLED: the call was cancelled, usually by the caller."""

    status_code = grpc.StatusCode.CANCELLED


class Unknown(AskUserError):
    """UNKNOWN: an error without a better code (also: a stream that broke its contract)."""

    status_code = grpc.StatusCode.UNKNOWN


class InvalidArgument(AskUserError):
    """INVALID_ARGUMENT: a bad request; `violations` says which fields and why."""

    status_code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(AskUserError):
    """DEADLINE_EXCEEDED: the call's `timeout=` passed before it finished."""

    status_code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(AskUserError):
    """NOT_FOUND: no such agent, run or call (`reason` e.g. `AGENT_NOT_FOUND`, `RUN_NOT_FOUND`)."""

    status_code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(AskUserError):
    """ALREADY_EXISTS."""

    status_code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(AskUserError):
    """PERMISSION_DENIED: the credential lacks a scope (`reason` `MISSING_SCOPE`)."""

    status_code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(AskUserError):
    """RESOURCE_EXHAUSTED: a limit was hit."""

    status_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(AskUserError):
    """FAILED_PRECONDITION: the run or call is not in a state for this (`reason` e.g.
    `ALREADY_ANSWERED`, `ALREADY_CLAIMED`, `TOOL_CALL_NOT_PENDING`)."""

    status_code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(AskUserError):
    """ABORTED: a conflict; retrying may succeed."""

    status_code = grpc.StatusCode.ABORTED


class OutOfRange(AskUserError):
    """OUT_OF_RANGE."""

    status_code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(AskUserError):
    """UNIMPLEMENTED: the server does not serve this call."""

    status_code = grpc.StatusCode.UNIMPLEMENTED


class Internal(AskUserError):
    """INTERNAL: a bug or broken invariant on the server."""

    status_code = grpc.StatusCode.INTERNAL


class Unavailable(AskUserError):
    """UNAVAILABLE: the server cannot be reached (or refused the TLS handshake); retry later."""

    status_code = grpc.StatusCode.UNAVAILABLE


class DataLoss(AskUserError):
    """DATA_LOSS."""

    status_code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(AskUserError):
    """UNAUTHENTICATED: missing or invalid credentials (`reason` `MISSING_CREDENTIALS` or
    `INVALID_CREDENTIALS`)."""

    status_code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: dict[grpc.StatusCode, type[AskUserError]] = {
    cls.status_code: cls
    for cls in (
        Cancelled,
        Unknown,
        InvalidArgument,
        DeadlineExceeded,
        NotFound,
        AlreadyExists,
        PermissionDenied,
        ResourceExhausted,
        FailedPrecondition,
        Aborted,
        OutOfRange,
        Unimplemented,
        Internal,
        Unavailable,
        DataLoss,
        Unauthenticated,
    )
    if cls.status_code is not None
}

ERROR_CLASSES: tuple[type[AskUserError], ...] = tuple(_BY_CODE.values())
"""The subclasses, one per gRPC status code but OK."""


@contextmanager
def raising_ask_user_errors() -> Iterator[None]:
    """Turns the grpc.RpcError of a call made inside into an AskUserError."""
    try:
        yield
    except grpc.RpcError as error:
        raise AskUserError.from_rpc_error(error) from error
