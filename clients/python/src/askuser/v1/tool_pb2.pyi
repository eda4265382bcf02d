from askuser.v1 import ask_user_pb2 as _ask_user_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AskUserRequest(_message.Message):
    __slots__ = ("input",)
    INPUT_FIELD_NUMBER: _ClassVar[int]
    input: _ask_user_pb2.AskUserInput
    def __init__(self, input: _Optional[_Union[_ask_user_pb2.AskUserInput, _Mapping]] = ...) -> None: ...

class AskUserResponse(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    def __init__(self, content: _Optional[str] = ...) -> None: ...

class RenderQuestionRequest(_message.Message):
    __slots__ = ("tool_name", "arguments_json")
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    tool_name: str
    arguments_json: str
    def __init__(self, tool_name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class RenderQuestionResponse(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    def __init__(self, content: _Optional[str] = ...) -> None: ...
