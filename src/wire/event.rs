//! A stored event as an askuser.v1 `RunAgentResponse`, and the values inside one.

use prost_types::Timestamp;

use crate::domain::{
    self, AuthMethod, Event, EventKind, SelectionMode, SettledBy, SuspendKind, ToolResultKind,
    Usage,
};
use crate::proto::v1 as pb;

pub fn timestamp(ms: i64) -> Timestamp {
    Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

pub fn usage_to_proto(usage: Usage) -> pb::Usage {
    pb::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
    }
}

fn mode_to_proto(mode: SelectionMode) -> pb::SelectionMode {
    match mode {
        SelectionMode::SingleSelect => pb::SelectionMode::SingleSelect,
        SelectionMode::MultiSelect => pb::SelectionMode::MultiSelect,
    }
}

pub fn payload_to_proto(payload: &domain::SuspendPayload) -> pb::SuspendPayload {
    payload_into_proto(payload.clone())
}

/// [`payload_to_proto`] of a payload no longer needed: its strings move, not copied.
pub fn payload_into_proto(payload: domain::SuspendPayload) -> pb::SuspendPayload {
    pb::SuspendPayload {
        question: payload.question,
        options: payload
            .options
            .into_iter()
            .map(|o| pb::AskUserOption {
                label: o.label,
                description: o.description,
            })
            .collect(),
        selection_mode: payload.selection_mode.map(|m| mode_to_proto(m) as i32),
    }
}

pub fn kind_to_proto(kind: ToolResultKind) -> pb::ToolResultKind {
    match kind {
        ToolResultKind::Answered => pb::ToolResultKind::Answered,
        ToolResultKind::Declined => pb::ToolResultKind::Declined,
        ToolResultKind::Expired => pb::ToolResultKind::Expired,
        ToolResultKind::Cancelled => pb::ToolResultKind::Cancelled,
        ToolResultKind::InvalidCall => pb::ToolResultKind::InvalidCall,
        ToolResultKind::Output => pb::ToolResultKind::Output,
        ToolResultKind::Executed => pb::ToolResultKind::Executed,
        ToolResultKind::Rejected => pb::ToolResultKind::Rejected,
        ToolResultKind::Replied => pb::ToolResultKind::Replied,
    }
}

pub fn suspend_kind_to_proto(kind: SuspendKind) -> pb::SuspendKind {
    match kind {
        SuspendKind::Question => pb::SuspendKind::Question,
        SuspendKind::Approval => pb::SuspendKind::Approval,
        SuspendKind::ClientTool => pb::SuspendKind::ClientTool,
        SuspendKind::Form => pb::SuspendKind::Form,
    }
}

pub fn event_to_proto(event: Event) -> pb::RunAgentResponse {
    use pb::run_agent_response::Event as E;
    let body = match event.kind {
        EventKind::RunStarted {
            agent_id,
            prompt,
            metadata,
        } => E::RunStarted(pb::RunStarted {
            agent_id,
            prompt,
            metadata: metadata.into_iter().collect(),
        }),
        EventKind::TextDelta { text } => E::TextDelta(pb::TextDelta { text }),
        EventKind::ToolCall {
            tool_call_id,
            tool_name,
            arguments_json,
        } => E::ToolCall(pb::ToolCall {
            tool_call_id,
            tool_name,
            arguments_json,
        }),
        EventKind::ToolCallSuspended {
            tool_call_id,
            tool_name,
            payload,
            form,
            expire_ms,
            kind,
            arguments_json,
            approval_reason,
            assignees,
        } => E::ToolCallSuspended(pb::ToolCallSuspended {
            form: form.as_deref().map(super::form_to_proto),
            tool_call_id,
            tool_name,
            suspend_payload: payload.as_ref().map(payload_to_proto),
            expire_time: expire_ms.map(timestamp),
            kind: suspend_kind_to_proto(kind) as i32,
            arguments_json,
            approval_reason,
            assignees,
        }),
        EventKind::ToolResult {
            tool_call_id,
            content,
            is_error,
            kind,
            settled_by,
        } => E::ToolResult(pb::ToolResult {
            tool_call_id,
            content,
            is_error,
            kind: kind_to_proto(kind) as i32,
            settled_by: settled_by.map(settled_by_to_proto),
        }),
        EventKind::RunCompleted { output_text, usage } => E::RunCompleted(pb::RunCompleted {
            output_text,
            usage: usage.map(usage_to_proto),
        }),
        EventKind::RunFailed { message } => E::RunFailed(pb::RunFailed { message }),
        EventKind::RunCancelled { reason } => E::RunCancelled(pb::RunCancelled { reason }),
        EventKind::StepRestarted { reason, attempt } => {
            E::StepRestarted(pb::StepRestarted { reason, attempt })
        }
    };
    pb::RunAgentResponse {
        run_id: event.run_id,
        sequence: event.sequence,
        time: Some(timestamp(event.time_ms)),
        event: Some(body),
    }
}

pub fn settled_by_to_proto(settled_by: SettledBy) -> pb::SettledBy {
    let method = match settled_by.method {
        AuthMethod::None => pb::AuthMethod::None,
        AuthMethod::ApiKey => pb::AuthMethod::ApiKey,
        AuthMethod::Jwt => pb::AuthMethod::Jwt,
        AuthMethod::Certificate => pb::AuthMethod::Certificate,
        AuthMethod::Server => pb::AuthMethod::Server,
        AuthMethod::AnswerLink => pb::AuthMethod::AnswerLink,
    };
    pb::SettledBy {
        tenant: settled_by.tenant,
        subject: settled_by.subject,
        method: method as i32,
    }
}
