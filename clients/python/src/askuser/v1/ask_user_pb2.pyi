from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SelectionMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SELECTION_MODE_UNSPECIFIED: _ClassVar[SelectionMode]
    SELECTION_MODE_SINGLE_SELECT: _ClassVar[SelectionMode]
    SELECTION_MODE_MULTI_SELECT: _ClassVar[SelectionMode]
SELECTION_MODE_UNSPECIFIED: SelectionMode
SELECTION_MODE_SINGLE_SELECT: SelectionMode
SELECTION_MODE_MULTI_SELECT: SelectionMode

class AskUserOption(_message.Message):
    __slots__ = ("label", "description")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    label: str
    description: str
    def __init__(self, label: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class AskUserInput(_message.Message):
    __slots__ = ("question", "options", "selection_mode")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SELECTION_MODE_FIELD_NUMBER: _ClassVar[int]
    question: str
    options: _containers.RepeatedCompositeFieldContainer[AskUserOption]
    selection_mode: SelectionMode
    def __init__(self, question: _Optional[str] = ..., options: _Optional[_Iterable[_Union[AskUserOption, _Mapping]]] = ..., selection_mode: _Optional[_Union[SelectionMode, str]] = ...) -> None: ...

class SuspendPayload(_message.Message):
    __slots__ = ("question", "options", "selection_mode")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SELECTION_MODE_FIELD_NUMBER: _ClassVar[int]
    question: str
    options: _containers.RepeatedCompositeFieldContainer[AskUserOption]
    selection_mode: SelectionMode
    def __init__(self, question: _Optional[str] = ..., options: _Optional[_Iterable[_Union[AskUserOption, _Mapping]]] = ..., selection_mode: _Optional[_Union[SelectionMode, str]] = ...) -> None: ...

class Selections(_message.Message):
    __slots__ = ("labels",)
    LABELS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, labels: _Optional[_Iterable[str]] = ...) -> None: ...

class Decline(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ("field", "description")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    field: str
    description: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...
