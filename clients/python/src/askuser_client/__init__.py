"""Python client of askuser: start agent runs, follow their events, answer their questions.

The messages are the generated askuser.v1 modules, re-exported here as `agent_pb2`,
`ask_user_pb2` and `tool_pb2`.
"""

from askuser.v1 import agent_pb2, ask_user_pb2, tool_pb2

from .client import AskUserClient, Frame, Run, build_answer
from .errors import AskUserError, FieldViolation

__all__ = [
    "AskUserClient",
    "AskUserError",
    "FieldViolation",
    "Frame",
    "Run",
    "agent_pb2",
    "ask_user_pb2",
    "build_answer",
    "tool_pb2",
]
