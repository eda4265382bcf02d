"""Python client of askuser: start agent runs, follow their events, settle their tool calls.

The messages are the generated askuser.v1 modules, re-exported here as `agent_pb2`,
`ask_user_pb2` and `tool_pb2`.
"""

from askuser.v1 import agent_pb2, ask_user_pb2, tool_pb2

from .auth import TLS, TokenProvider
from .client import (
    AskUserClient,
    Frame,
    PendingCallEvent,
    PendingCalls,
    Run,
    build_answer,
    tool_definition,
)
from .errors import AskUserError, FieldViolation

__all__ = [
    "AskUserClient",
    "AskUserError",
    "FieldViolation",
    "Frame",
    "PendingCallEvent",
    "PendingCalls",
    "Run",
    "TLS",
    "TokenProvider",
    "agent_pb2",
    "ask_user_pb2",
    "build_answer",
    "tool_definition",
    "tool_pb2",
]
