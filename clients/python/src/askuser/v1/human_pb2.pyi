import datetime

from askuser.v1 import agent_pb2 as _agent_pb2
from askuser.v1 import ask_user_pb2 as _ask_user_pb2
from askuser.v1 import form_pb2 as _form_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AskRequest(_message.Message):
    __slots__ = ("question", "form", "approval", "context", "assignees", "ttl", "metadata", "webhooks", "request_id")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    FORM_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    ASSIGNEES_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    question: _ask_user_pb2.AskUserInput
    form: _form_pb2.Form
    approval: ApprovalRequest
    context: str
    assignees: _containers.RepeatedScalarFieldContainer[str]
    ttl: _duration_pb2.Duration
    metadata: _containers.ScalarMap[str, str]
    webhooks: _containers.RepeatedCompositeFieldContainer[_agent_pb2.WebhookSubscription]
    request_id: str
    def __init__(self, question: _Optional[_Union[_ask_user_pb2.AskUserInput, _Mapping]] = ..., form: _Optional[_Union[_form_pb2.Form, _Mapping]] = ..., approval: _Optional[_Union[ApprovalRequest, _Mapping]] = ..., context: _Optional[str] = ..., assignees: _Optional[_Iterable[str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., webhooks: _Optional[_Iterable[_Union[_agent_pb2.WebhookSubscription, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class ApprovalRequest(_message.Message):
    __slots__ = ("tool_name", "arguments_json", "reason")
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    tool_name: str
    arguments_json: str
    reason: str
    def __init__(self, tool_name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
