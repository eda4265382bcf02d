from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TextFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEXT_FORMAT_UNSPECIFIED: _ClassVar[TextFormat]
    TEXT_FORMAT_EMAIL: _ClassVar[TextFormat]
    TEXT_FORMAT_URI: _ClassVar[TextFormat]
    TEXT_FORMAT_DATE: _ClassVar[TextFormat]
    TEXT_FORMAT_DATE_TIME: _ClassVar[TextFormat]
TEXT_FORMAT_UNSPECIFIED: TextFormat
TEXT_FORMAT_EMAIL: TextFormat
TEXT_FORMAT_URI: TextFormat
TEXT_FORMAT_DATE: TextFormat
TEXT_FORMAT_DATE_TIME: TextFormat

class Form(_message.Message):
    __slots__ = ("title", "message", "fields", "url")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    title: str
    message: str
    fields: _containers.RepeatedCompositeFieldContainer[FormField]
    url: str
    def __init__(self, title: _Optional[str] = ..., message: _Optional[str] = ..., fields: _Optional[_Iterable[_Union[FormField, _Mapping]]] = ..., url: _Optional[str] = ...) -> None: ...

class FormField(_message.Message):
    __slots__ = ("name", "header", "question", "required", "text", "number", "boolean", "choice")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    BOOLEAN_FIELD_NUMBER: _ClassVar[int]
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    name: str
    header: str
    question: str
    required: bool
    text: TextField
    number: NumberField
    boolean: BooleanField
    choice: ChoiceField
    def __init__(self, name: _Optional[str] = ..., header: _Optional[str] = ..., question: _Optional[str] = ..., required: _Optional[bool] = ..., text: _Optional[_Union[TextField, _Mapping]] = ..., number: _Optional[_Union[NumberField, _Mapping]] = ..., boolean: _Optional[_Union[BooleanField, _Mapping]] = ..., choice: _Optional[_Union[ChoiceField, _Mapping]] = ...) -> None: ...

class TextField(_message.Message):
    __slots__ = ("min_length", "max_length", "format", "pattern", "multiline", "default_value")
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MULTILINE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    min_length: int
    max_length: int
    format: TextFormat
    pattern: str
    multiline: bool
    default_value: str
    def __init__(self, min_length: _Optional[int] = ..., max_length: _Optional[int] = ..., format: _Optional[_Union[TextFormat, str]] = ..., pattern: _Optional[str] = ..., multiline: _Optional[bool] = ..., default_value: _Optional[str] = ...) -> None: ...

class NumberField(_message.Message):
    __slots__ = ("integer", "minimum", "maximum", "default_value")
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    integer: bool
    minimum: float
    maximum: float
    default_value: float
    def __init__(self, integer: _Optional[bool] = ..., minimum: _Optional[float] = ..., maximum: _Optional[float] = ..., default_value: _Optional[float] = ...) -> None: ...

class BooleanField(_message.Message):
    __slots__ = ("default_value",)
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    default_value: bool
    def __init__(self, default_value: _Optional[bool] = ...) -> None: ...

class ChoiceField(_message.Message):
    __slots__ = ("choices", "multiple", "min_selected", "max_selected", "allow_other", "default_values")
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    MIN_SELECTED_FIELD_NUMBER: _ClassVar[int]
    MAX_SELECTED_FIELD_NUMBER: _ClassVar[int]
    ALLOW_OTHER_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUES_FIELD_NUMBER: _ClassVar[int]
    choices: _containers.RepeatedCompositeFieldContainer[Choice]
    multiple: bool
    min_selected: int
    max_selected: int
    allow_other: bool
    default_values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, choices: _Optional[_Iterable[_Union[Choice, _Mapping]]] = ..., multiple: _Optional[bool] = ..., min_selected: _Optional[int] = ..., max_selected: _Optional[int] = ..., allow_other: _Optional[bool] = ..., default_values: _Optional[_Iterable[str]] = ...) -> None: ...

class Choice(_message.Message):
    __slots__ = ("value", "label", "description", "preview", "recommended")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDED_FIELD_NUMBER: _ClassVar[int]
    value: str
    label: str
    description: str
    preview: str
    recommended: bool
    def __init__(self, value: _Optional[str] = ..., label: _Optional[str] = ..., description: _Optional[str] = ..., preview: _Optional[str] = ..., recommended: _Optional[bool] = ...) -> None: ...

class FormAnswer(_message.Message):
    __slots__ = ("values",)
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: FieldValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[FieldValue, _Mapping]] = ...) -> None: ...
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.MessageMap[str, FieldValue]
    def __init__(self, values: _Optional[_Mapping[str, FieldValue]] = ...) -> None: ...

class FieldValue(_message.Message):
    __slots__ = ("text", "number", "boolean", "choice")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    BOOLEAN_FIELD_NUMBER: _ClassVar[int]
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    text: str
    number: float
    boolean: bool
    choice: ChoiceValue
    def __init__(self, text: _Optional[str] = ..., number: _Optional[float] = ..., boolean: _Optional[bool] = ..., choice: _Optional[_Union[ChoiceValue, _Mapping]] = ...) -> None: ...

class ChoiceValue(_message.Message):
    __slots__ = ("values", "other")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    OTHER_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    other: str
    def __init__(self, values: _Optional[_Iterable[str]] = ..., other: _Optional[str] = ...) -> None: ...
