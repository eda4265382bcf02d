"""Python client of askuser: start agent runs, follow their events, settle their tool calls.

`AskUserClient` is the sync client, `AsyncAskUserClient` (also `askuser_client.aio`) the asyncio
one, with the same calls. Failures raise `AskUserError`, as the subclass for the gRPC status code
(`NotFound`, `InvalidArgument`, `DeadlineExceeded`, ...).

`ask_human`, `request_approval` and `ask` (both clients) ask a person from any code, outside any
run, and return a typed `HumanAnswer` or `ApprovalOutcome`; `requires_approval` is a decorator
that has each call of a function approved first (see `askuser_client.human`).

The messages are the generated askuser.v1 modules, re-exported here as `agent_pb2`,
`ask_user_pb2`, `errors_pb2`, `form_pb2`, `human_pb2` and `tool_pb2`. `Reason` names every error
reason the server sends. A form's values are plain Python values or `Choice` (see `FormValue`).
"""

from importlib.metadata import version as _version

from askuser.v1 import agent_pb2, ask_user_pb2, errors_pb2, form_pb2, human_pb2, tool_pb2

from .aio import AsyncAskUserClient, AsyncHumanRequest, AsyncPendingCalls, AsyncRun
from .auth import TLS, TokenProvider
from .client import (
    AskUserClient,
    Choice,
    FormValue,
    Frame,
    HumanRequest,
    PendingCallEvent,
    PendingCalls,
    Reconnect,
    Run,
    build_answer,
    tool_definition,
)
from .errors import (
    ERROR_CLASSES,
    Aborted,
    AlreadyExists,
    AskUserError,
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    FailedPrecondition,
    FieldViolation,
    Internal,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    Reason,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
    reason_name,
)
from .human import (
    AnswerKind,
    Approval,
    ApprovalKind,
    ApprovalOutcome,
    ApprovalRejected,
    FormFieldValue,
    HumanAnswer,
    requires_approval,
)

__version__: str = _version("askuser-client")
"""The installed package's version: pyproject.toml's, the one place it is written."""

__all__ = [
    "ERROR_CLASSES",
    "Aborted",
    "AlreadyExists",
    "AnswerKind",
    "Approval",
    "ApprovalKind",
    "ApprovalOutcome",
    "ApprovalRejected",
    "AskUserClient",
    "AskUserError",
    "AsyncAskUserClient",
    "AsyncHumanRequest",
    "AsyncPendingCalls",
    "AsyncRun",
    "Cancelled",
    "Choice",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "FieldViolation",
    "FormFieldValue",
    "FormValue",
    "Frame",
    "HumanAnswer",
    "HumanRequest",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "PendingCallEvent",
    "PendingCalls",
    "PermissionDenied",
    "Reason",
    "Reconnect",
    "ResourceExhausted",
    "Run",
    "TLS",
    "TokenProvider",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Unknown",
    "__version__",
    "agent_pb2",
    "ask_user_pb2",
    "build_answer",
    "errors_pb2",
    "form_pb2",
    "human_pb2",
    "reason_name",
    "requires_approval",
    "tool_definition",
    "tool_pb2",
]
