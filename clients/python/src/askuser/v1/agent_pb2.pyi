import datetime

from askuser.v1 import ask_user_pb2 as _ask_user_pb2
from askuser.v1 import form_pb2 as _form_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApprovalPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_POLICY_UNSPECIFIED: _ClassVar[ApprovalPolicy]
    APPROVAL_POLICY_NEVER: _ClassVar[ApprovalPolicy]
    APPROVAL_POLICY_ALWAYS: _ClassVar[ApprovalPolicy]
    APPROVAL_POLICY_CONDITIONAL: _ClassVar[ApprovalPolicy]

class SuspendKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUSPEND_KIND_UNSPECIFIED: _ClassVar[SuspendKind]
    SUSPEND_KIND_QUESTION: _ClassVar[SuspendKind]
    SUSPEND_KIND_APPROVAL: _ClassVar[SuspendKind]
    SUSPEND_KIND_CLIENT_TOOL: _ClassVar[SuspendKind]
    SUSPEND_KIND_FORM: _ClassVar[SuspendKind]

class ToolResultKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_RESULT_KIND_UNSPECIFIED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_ANSWERED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_DECLINED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_EXPIRED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_CANCELLED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_INVALID_CALL: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_OUTPUT: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_EXECUTED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_REJECTED: _ClassVar[ToolResultKind]
    TOOL_RESULT_KIND_REPLIED: _ClassVar[ToolResultKind]

class AuthMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUTH_METHOD_UNSPECIFIED: _ClassVar[AuthMethod]
    AUTH_METHOD_NONE: _ClassVar[AuthMethod]
    AUTH_METHOD_API_KEY: _ClassVar[AuthMethod]
    AUTH_METHOD_JWT: _ClassVar[AuthMethod]
    AUTH_METHOD_CERTIFICATE: _ClassVar[AuthMethod]
    AUTH_METHOD_SERVER: _ClassVar[AuthMethod]
    AUTH_METHOD_ANSWER_LINK: _ClassVar[AuthMethod]

class RunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATUS_UNSPECIFIED: _ClassVar[RunStatus]
    RUN_STATUS_RUNNING: _ClassVar[RunStatus]
    RUN_STATUS_SUSPENDED: _ClassVar[RunStatus]
    RUN_STATUS_COMPLETED: _ClassVar[RunStatus]
    RUN_STATUS_FAILED: _ClassVar[RunStatus]
    RUN_STATUS_CANCELLED: _ClassVar[RunStatus]

class ToolKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_KIND_UNSPECIFIED: _ClassVar[ToolKind]
    TOOL_KIND_ASK_USER: _ClassVar[ToolKind]
    TOOL_KIND_CLIENT: _ClassVar[ToolKind]
    TOOL_KIND_HTTP: _ClassVar[ToolKind]
    TOOL_KIND_FORM: _ClassVar[ToolKind]
    TOOL_KIND_MCP: _ClassVar[ToolKind]
APPROVAL_POLICY_UNSPECIFIED: ApprovalPolicy
APPROVAL_POLICY_NEVER: ApprovalPolicy
APPROVAL_POLICY_ALWAYS: ApprovalPolicy
APPROVAL_POLICY_CONDITIONAL: ApprovalPolicy
SUSPEND_KIND_UNSPECIFIED: SuspendKind
SUSPEND_KIND_QUESTION: SuspendKind
SUSPEND_KIND_APPROVAL: SuspendKind
SUSPEND_KIND_CLIENT_TOOL: SuspendKind
SUSPEND_KIND_FORM: SuspendKind
TOOL_RESULT_KIND_UNSPECIFIED: ToolResultKind
TOOL_RESULT_KIND_ANSWERED: ToolResultKind
TOOL_RESULT_KIND_DECLINED: ToolResultKind
TOOL_RESULT_KIND_EXPIRED: ToolResultKind
TOOL_RESULT_KIND_CANCELLED: ToolResultKind
TOOL_RESULT_KIND_INVALID_CALL: ToolResultKind
TOOL_RESULT_KIND_OUTPUT: ToolResultKind
TOOL_RESULT_KIND_EXECUTED: ToolResultKind
TOOL_RESULT_KIND_REJECTED: ToolResultKind
TOOL_RESULT_KIND_REPLIED: ToolResultKind
AUTH_METHOD_UNSPECIFIED: AuthMethod
AUTH_METHOD_NONE: AuthMethod
AUTH_METHOD_API_KEY: AuthMethod
AUTH_METHOD_JWT: AuthMethod
AUTH_METHOD_CERTIFICATE: AuthMethod
AUTH_METHOD_SERVER: AuthMethod
AUTH_METHOD_ANSWER_LINK: AuthMethod
RUN_STATUS_UNSPECIFIED: RunStatus
RUN_STATUS_RUNNING: RunStatus
RUN_STATUS_SUSPENDED: RunStatus
RUN_STATUS_COMPLETED: RunStatus
RUN_STATUS_FAILED: RunStatus
RUN_STATUS_CANCELLED: RunStatus
TOOL_KIND_UNSPECIFIED: ToolKind
TOOL_KIND_ASK_USER: ToolKind
TOOL_KIND_CLIENT: ToolKind
TOOL_KIND_HTTP: ToolKind
TOOL_KIND_FORM: ToolKind
TOOL_KIND_MCP: ToolKind

class RunAgentRequest(_message.Message):
    __slots__ = ("start", "answer", "attach")
    START_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    ATTACH_FIELD_NUMBER: _ClassVar[int]
    start: StartRun
    answer: Answer
    attach: AttachRun
    def __init__(self, start: _Optional[_Union[StartRun, _Mapping]] = ..., answer: _Optional[_Union[Answer, _Mapping]] = ..., attach: _Optional[_Union[AttachRun, _Mapping]] = ...) -> None: ...

class StartRun(_message.Message):
    __slots__ = ("agent_id", "prompt", "metadata", "question_ttl", "tools", "request_id", "webhooks")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    QUESTION_TTL_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    prompt: str
    metadata: _containers.ScalarMap[str, str]
    question_ttl: _duration_pb2.Duration
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    request_id: str
    webhooks: _containers.RepeatedCompositeFieldContainer[WebhookSubscription]
    def __init__(self, agent_id: _Optional[str] = ..., prompt: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., question_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., request_id: _Optional[str] = ..., webhooks: _Optional[_Iterable[_Union[WebhookSubscription, _Mapping]]] = ...) -> None: ...

class WebhookSubscription(_message.Message):
    __slots__ = ("url", "events")
    URL_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    url: str
    events: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, url: _Optional[str] = ..., events: _Optional[_Iterable[str]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "parameters_json_schema", "approval")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters_json_schema: str
    approval: ApprovalPolicy
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters_json_schema: _Optional[str] = ..., approval: _Optional[_Union[ApprovalPolicy, str]] = ...) -> None: ...

class AttachRun(_message.Message):
    __slots__ = ("run_id", "after_sequence")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    after_sequence: int
    def __init__(self, run_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class Answer(_message.Message):
    __slots__ = ("run_id", "tool_call_id", "text", "selections", "decline", "tool_output", "approval", "form", "reply", "answer_id")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SELECTIONS_FIELD_NUMBER: _ClassVar[int]
    DECLINE_FIELD_NUMBER: _ClassVar[int]
    TOOL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    FORM_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    ANSWER_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_call_id: str
    text: str
    selections: _ask_user_pb2.Selections
    decline: _ask_user_pb2.Decline
    tool_output: ToolOutput
    approval: ApprovalDecision
    form: _form_pb2.FormAnswer
    reply: str
    answer_id: str
    def __init__(self, run_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., text: _Optional[str] = ..., selections: _Optional[_Union[_ask_user_pb2.Selections, _Mapping]] = ..., decline: _Optional[_Union[_ask_user_pb2.Decline, _Mapping]] = ..., tool_output: _Optional[_Union[ToolOutput, _Mapping]] = ..., approval: _Optional[_Union[ApprovalDecision, _Mapping]] = ..., form: _Optional[_Union[_form_pb2.FormAnswer, _Mapping]] = ..., reply: _Optional[str] = ..., answer_id: _Optional[str] = ...) -> None: ...

class ToolOutput(_message.Message):
    __slots__ = ("content", "is_error")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    content: str
    is_error: bool
    def __init__(self, content: _Optional[str] = ..., is_error: _Optional[bool] = ...) -> None: ...

class ApprovalDecision(_message.Message):
    __slots__ = ("approve", "reject", "edit")
    class Approve(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class Reject(_message.Message):
        __slots__ = ("reason",)
        REASON_FIELD_NUMBER: _ClassVar[int]
        reason: str
        def __init__(self, reason: _Optional[str] = ...) -> None: ...
    class Edit(_message.Message):
        __slots__ = ("arguments_json",)
        ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
        arguments_json: str
        def __init__(self, arguments_json: _Optional[str] = ...) -> None: ...
    APPROVE_FIELD_NUMBER: _ClassVar[int]
    REJECT_FIELD_NUMBER: _ClassVar[int]
    EDIT_FIELD_NUMBER: _ClassVar[int]
    approve: ApprovalDecision.Approve
    reject: ApprovalDecision.Reject
    edit: ApprovalDecision.Edit
    def __init__(self, approve: _Optional[_Union[ApprovalDecision.Approve, _Mapping]] = ..., reject: _Optional[_Union[ApprovalDecision.Reject, _Mapping]] = ..., edit: _Optional[_Union[ApprovalDecision.Edit, _Mapping]] = ...) -> None: ...

class RunAgentResponse(_message.Message):
    __slots__ = ("run_id", "sequence", "time", "run_started", "text_delta", "tool_call", "tool_call_suspended", "tool_result", "answer_rejected", "run_completed", "run_failed", "run_cancelled", "heartbeat", "answer_accepted", "step_restarted")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    RUN_STARTED_FIELD_NUMBER: _ClassVar[int]
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_SUSPENDED_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_REJECTED_FIELD_NUMBER: _ClassVar[int]
    RUN_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    RUN_FAILED_FIELD_NUMBER: _ClassVar[int]
    RUN_CANCELLED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    STEP_RESTARTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    sequence: int
    time: _timestamp_pb2.Timestamp
    run_started: RunStarted
    text_delta: TextDelta
    tool_call: ToolCall
    tool_call_suspended: ToolCallSuspended
    tool_result: ToolResult
    answer_rejected: AnswerRejected
    run_completed: RunCompleted
    run_failed: RunFailed
    run_cancelled: RunCancelled
    heartbeat: Heartbeat
    answer_accepted: AnswerAccepted
    step_restarted: StepRestarted
    def __init__(self, run_id: _Optional[str] = ..., sequence: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., run_started: _Optional[_Union[RunStarted, _Mapping]] = ..., text_delta: _Optional[_Union[TextDelta, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_call_suspended: _Optional[_Union[ToolCallSuspended, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., answer_rejected: _Optional[_Union[AnswerRejected, _Mapping]] = ..., run_completed: _Optional[_Union[RunCompleted, _Mapping]] = ..., run_failed: _Optional[_Union[RunFailed, _Mapping]] = ..., run_cancelled: _Optional[_Union[RunCancelled, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., answer_accepted: _Optional[_Union[AnswerAccepted, _Mapping]] = ..., step_restarted: _Optional[_Union[StepRestarted, _Mapping]] = ...) -> None: ...

class RunStarted(_message.Message):
    __slots__ = ("agent_id", "prompt", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    prompt: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, agent_id: _Optional[str] = ..., prompt: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TextDelta(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("tool_call_id", "tool_name", "arguments_json")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    tool_name: str
    arguments_json: str
    def __init__(self, tool_call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class ToolCallSuspended(_message.Message):
    __slots__ = ("tool_call_id", "tool_name", "suspend_payload", "expire_time", "kind", "arguments_json", "approval_reason", "assignees", "form")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REASON_FIELD_NUMBER: _ClassVar[int]
    ASSIGNEES_FIELD_NUMBER: _ClassVar[int]
    FORM_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    tool_name: str
    suspend_payload: _ask_user_pb2.SuspendPayload
    expire_time: _timestamp_pb2.Timestamp
    kind: SuspendKind
    arguments_json: str
    approval_reason: str
    assignees: _containers.RepeatedScalarFieldContainer[str]
    form: _form_pb2.Form
    def __init__(self, tool_call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., suspend_payload: _Optional[_Union[_ask_user_pb2.SuspendPayload, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[SuspendKind, str]] = ..., arguments_json: _Optional[str] = ..., approval_reason: _Optional[str] = ..., assignees: _Optional[_Iterable[str]] = ..., form: _Optional[_Union[_form_pb2.Form, _Mapping]] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("tool_call_id", "content", "is_error", "kind", "settled_by")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SETTLED_BY_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    content: str
    is_error: bool
    kind: ToolResultKind
    settled_by: SettledBy
    def __init__(self, tool_call_id: _Optional[str] = ..., content: _Optional[str] = ..., is_error: _Optional[bool] = ..., kind: _Optional[_Union[ToolResultKind, str]] = ..., settled_by: _Optional[_Union[SettledBy, _Mapping]] = ...) -> None: ...

class SettledBy(_message.Message):
    __slots__ = ("tenant", "subject", "method")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    subject: str
    method: AuthMethod
    def __init__(self, tenant: _Optional[str] = ..., subject: _Optional[str] = ..., method: _Optional[_Union[AuthMethod, str]] = ...) -> None: ...

class AnswerRejected(_message.Message):
    __slots__ = ("tool_call_id", "reason", "message", "field_violations", "answer_id")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELD_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    ANSWER_ID_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    reason: str
    message: str
    field_violations: _containers.RepeatedCompositeFieldContainer[_ask_user_pb2.FieldViolation]
    answer_id: str
    def __init__(self, tool_call_id: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., field_violations: _Optional[_Iterable[_Union[_ask_user_pb2.FieldViolation, _Mapping]]] = ..., answer_id: _Optional[str] = ...) -> None: ...

class AnswerAccepted(_message.Message):
    __slots__ = ("tool_call_id", "answer_id", "duplicate")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_ID_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    answer_id: str
    duplicate: bool
    def __init__(self, tool_call_id: _Optional[str] = ..., answer_id: _Optional[str] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ...) -> None: ...

class RunCompleted(_message.Message):
    __slots__ = ("output_text", "usage")
    OUTPUT_TEXT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    output_text: str
    usage: Usage
    def __init__(self, output_text: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class RunFailed(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class RunCancelled(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StepRestarted(_message.Message):
    __slots__ = ("reason", "attempt")
    REASON_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    reason: str
    attempt: int
    def __init__(self, reason: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class ResumeRunRequest(_message.Message):
    __slots__ = ("answer",)
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    answer: Answer
    def __init__(self, answer: _Optional[_Union[Answer, _Mapping]] = ...) -> None: ...

class WatchRunRequest(_message.Message):
    __slots__ = ("run_id", "after_sequence")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    after_sequence: int
    def __init__(self, run_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class PendingToolCall(_message.Message):
    __slots__ = ("tool_call_id", "tool_name", "suspend_payload", "expire_time", "kind", "arguments_json", "approval_reason", "claimant", "claim_expire_time", "assignees", "suspend_time", "form")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REASON_FIELD_NUMBER: _ClassVar[int]
    CLAIMANT_FIELD_NUMBER: _ClassVar[int]
    CLAIM_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    ASSIGNEES_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_TIME_FIELD_NUMBER: _ClassVar[int]
    FORM_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    tool_name: str
    suspend_payload: _ask_user_pb2.SuspendPayload
    expire_time: _timestamp_pb2.Timestamp
    kind: SuspendKind
    arguments_json: str
    approval_reason: str
    claimant: str
    claim_expire_time: _timestamp_pb2.Timestamp
    assignees: _containers.RepeatedScalarFieldContainer[str]
    suspend_time: _timestamp_pb2.Timestamp
    form: _form_pb2.Form
    def __init__(self, tool_call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., suspend_payload: _Optional[_Union[_ask_user_pb2.SuspendPayload, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[SuspendKind, str]] = ..., arguments_json: _Optional[str] = ..., approval_reason: _Optional[str] = ..., claimant: _Optional[str] = ..., claim_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., assignees: _Optional[_Iterable[str]] = ..., suspend_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., form: _Optional[_Union[_form_pb2.Form, _Mapping]] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("run_id", "agent_id", "status", "pending_tool_calls", "output_text", "last_sequence", "create_time", "update_time", "metadata", "prompt", "error_message", "settled_tool_calls", "usage")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PENDING_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TEXT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SETTLED_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    agent_id: str
    status: RunStatus
    pending_tool_calls: _containers.RepeatedCompositeFieldContainer[PendingToolCall]
    output_text: str
    last_sequence: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    metadata: _containers.ScalarMap[str, str]
    prompt: str
    error_message: str
    settled_tool_calls: _containers.RepeatedCompositeFieldContainer[SettledToolCall]
    usage: Usage
    def __init__(self, run_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., status: _Optional[_Union[RunStatus, str]] = ..., pending_tool_calls: _Optional[_Iterable[_Union[PendingToolCall, _Mapping]]] = ..., output_text: _Optional[str] = ..., last_sequence: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., prompt: _Optional[str] = ..., error_message: _Optional[str] = ..., settled_tool_calls: _Optional[_Iterable[_Union[SettledToolCall, _Mapping]]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class SettledToolCall(_message.Message):
    __slots__ = ("tool_call_id", "tool_name", "kind", "settled_by", "settle_time", "result_sequence", "suspend_time", "content", "answer")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SETTLED_BY_FIELD_NUMBER: _ClassVar[int]
    SETTLE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESULT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_TIME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    tool_name: str
    kind: ToolResultKind
    settled_by: SettledBy
    settle_time: _timestamp_pb2.Timestamp
    result_sequence: int
    suspend_time: _timestamp_pb2.Timestamp
    content: str
    answer: Answer
    def __init__(self, tool_call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., kind: _Optional[_Union[ToolResultKind, str]] = ..., settled_by: _Optional[_Union[SettledBy, _Mapping]] = ..., settle_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., result_sequence: _Optional[int] = ..., suspend_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., content: _Optional[str] = ..., answer: _Optional[_Union[Answer, _Mapping]] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: Run
    def __init__(self, run: _Optional[_Union[Run, _Mapping]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("status", "agent_id", "page_size", "page_token", "metadata", "create_time_after", "create_time_before", "pending_kind", "requests_only")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_BEFORE_FIELD_NUMBER: _ClassVar[int]
    PENDING_KIND_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_ONLY_FIELD_NUMBER: _ClassVar[int]
    status: RunStatus
    agent_id: str
    page_size: int
    page_token: str
    metadata: _containers.ScalarMap[str, str]
    create_time_after: _timestamp_pb2.Timestamp
    create_time_before: _timestamp_pb2.Timestamp
    pending_kind: SuspendKind
    requests_only: bool
    def __init__(self, status: _Optional[_Union[RunStatus, str]] = ..., agent_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., create_time_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pending_kind: _Optional[_Union[SuspendKind, str]] = ..., requests_only: _Optional[bool] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelRunRequest(_message.Message):
    __slots__ = ("run_id", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: Run
    def __init__(self, run: _Optional[_Union[Run, _Mapping]] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Agent(_message.Message):
    __slots__ = ("agent_id", "name", "instructions", "tools", "model_provider", "max_steps", "question_ttl", "agent_tools", "mcp_servers")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    MODEL_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    QUESTION_TTL_FIELD_NUMBER: _ClassVar[int]
    AGENT_TOOLS_FIELD_NUMBER: _ClassVar[int]
    MCP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    name: str
    instructions: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    model_provider: str
    max_steps: int
    question_ttl: _duration_pb2.Duration
    agent_tools: _containers.RepeatedCompositeFieldContainer[AgentTool]
    mcp_servers: _containers.RepeatedCompositeFieldContainer[McpServerStatus]
    def __init__(self, agent_id: _Optional[str] = ..., name: _Optional[str] = ..., instructions: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., model_provider: _Optional[str] = ..., max_steps: _Optional[int] = ..., question_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., agent_tools: _Optional[_Iterable[_Union[AgentTool, _Mapping]]] = ..., mcp_servers: _Optional[_Iterable[_Union[McpServerStatus, _Mapping]]] = ...) -> None: ...

class McpServerStatus(_message.Message):
    __slots__ = ("name", "up", "tool_count", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    TOOL_COUNT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    up: bool
    tool_count: int
    error: str
    def __init__(self, name: _Optional[str] = ..., up: _Optional[bool] = ..., tool_count: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class AgentTool(_message.Message):
    __slots__ = ("name", "description", "kind", "parameters_json_schema", "approval", "approval_condition")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_CONDITION_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    kind: ToolKind
    parameters_json_schema: str
    approval: ApprovalPolicy
    approval_condition: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., kind: _Optional[_Union[ToolKind, str]] = ..., parameters_json_schema: _Optional[str] = ..., approval: _Optional[_Union[ApprovalPolicy, str]] = ..., approval_condition: _Optional[str] = ...) -> None: ...

class WatchPendingCallsRequest(_message.Message):
    __slots__ = ("agent_ids", "tool_names", "kinds", "assigned_to_me")
    AGENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_TO_ME_FIELD_NUMBER: _ClassVar[int]
    agent_ids: _containers.RepeatedScalarFieldContainer[str]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    kinds: _containers.RepeatedScalarFieldContainer[SuspendKind]
    assigned_to_me: bool
    def __init__(self, agent_ids: _Optional[_Iterable[str]] = ..., tool_names: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[_Union[SuspendKind, str]]] = ..., assigned_to_me: _Optional[bool] = ...) -> None: ...

class WatchPendingCallsResponse(_message.Message):
    __slots__ = ("call_pending", "call_settled", "snapshot_done", "heartbeat")
    CALL_PENDING_FIELD_NUMBER: _ClassVar[int]
    CALL_SETTLED_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_DONE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    call_pending: CallPending
    call_settled: CallSettled
    snapshot_done: SnapshotDone
    heartbeat: Heartbeat
    def __init__(self, call_pending: _Optional[_Union[CallPending, _Mapping]] = ..., call_settled: _Optional[_Union[CallSettled, _Mapping]] = ..., snapshot_done: _Optional[_Union[SnapshotDone, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class CallPending(_message.Message):
    __slots__ = ("run_id", "agent_id", "call")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    agent_id: str
    call: PendingToolCall
    def __init__(self, run_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., call: _Optional[_Union[PendingToolCall, _Mapping]] = ...) -> None: ...

class CallSettled(_message.Message):
    __slots__ = ("run_id", "tool_call_id", "kind", "settled_by")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SETTLED_BY_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_call_id: str
    kind: ToolResultKind
    settled_by: SettledBy
    def __init__(self, run_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., kind: _Optional[_Union[ToolResultKind, str]] = ..., settled_by: _Optional[_Union[SettledBy, _Mapping]] = ...) -> None: ...

class SnapshotDone(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClaimCallRequest(_message.Message):
    __slots__ = ("run_id", "tool_call_id", "ttl", "claimant")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    CLAIMANT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_call_id: str
    ttl: _duration_pb2.Duration
    claimant: str
    def __init__(self, run_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., claimant: _Optional[str] = ...) -> None: ...

class ClaimCallResponse(_message.Message):
    __slots__ = ("expire_time",)
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    def __init__(self, agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ...) -> None: ...
