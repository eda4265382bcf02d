//! A call's rows and changes, and the events that settle calls, decided once for both stores.

use crate::domain::{Event, EventKind, RunStatus, SettledBy, SuspendKind, ToolResultKind};
use crate::store::records::{assignees_column, kind_name, payload_column, to_json};
use crate::store::{
    Approved, CallChange, CallStatus, Decision, ExecutedResult, NewCallState, NewToolCall,
    StoreResult, ToolCallRecord,
};

/// A run's state between turns: working while the server runs a call, waiting while a call waits
/// for someone, and working (the model's next turn) once every call has its result.
pub(in crate::store) fn between_turns(pending: i64, executing: i64) -> RunStatus {
    if executing > 0 {
        RunStatus::Running
    } else if pending > 0 {
        RunStatus::Suspended
    } else {
        RunStatus::Running
    }
}

/// A new turn's `tool_calls` row, decided once for both stores.
pub(in crate::store) struct CallRow<'a> {
    pub call: &'a NewToolCall,
    pub position: i64,
    pub status: CallStatus,
    pub payload: Option<String>,
    pub expire_ms: Option<i64>,
    pub suspend_kind: &'static str,
    pub run_arguments: &'a str,
    pub approval_reason: &'a str,
    pub assignees: Option<String>,
    pub content: Option<&'a str>,
    pub is_error: bool,
    pub kind: Option<String>,
    pub result_sequence: i64,
    /// When the call started waiting: the time of its `tool_call_suspended` event.
    pub suspended_ms: Option<i64>,
}

impl<'a> CallRow<'a> {
    /// The row of the call made at `position`; `events` are the turn's, which hold the result of
    /// a call settled at once.
    pub fn new(position: usize, call: &'a NewToolCall, events: &[Event]) -> StoreResult<Self> {
        let mut row = CallRow {
            call,
            position: position as i64,
            status: CallStatus::Pending,
            payload: None,
            expire_ms: None,
            suspend_kind: SuspendKind::Question.as_str(),
            run_arguments: "",
            approval_reason: "",
            assignees: None,
            content: None,
            is_error: false,
            kind: None,
            result_sequence: 0,
            suspended_ms: None,
        };
        match &call.state {
            NewCallState::Pending {
                suspension,
                expire_ms,
            } => {
                row.payload = payload_column(suspension)?;
                row.expire_ms = *expire_ms;
                row.suspend_kind = suspension.kind.as_str();
                row.run_arguments = &suspension.arguments_json;
                row.approval_reason = &suspension.approval_reason;
                row.assignees = assignees_column(&suspension.assignees)?;
                row.suspended_ms = events
                    .iter()
                    .find(|e| match &e.kind {
                        EventKind::ToolCallSuspended { tool_call_id, .. } => {
                            *tool_call_id == call.tool_call_id
                        }
                        _ => false,
                    })
                    .map(|e| e.time_ms);
            }
            NewCallState::Executing { arguments_json } => {
                row.status = CallStatus::Executing;
                row.run_arguments = arguments_json;
            }
            NewCallState::Settled {
                content,
                is_error,
                kind,
            } => {
                row.status = CallStatus::Invalid;
                row.content = Some(content);
                row.is_error = *is_error;
                row.kind = Some(kind_name(*kind)?);
                row.result_sequence = events
                    .iter()
                    .find(|e| match &e.kind {
                        EventKind::ToolResult { tool_call_id, .. } => {
                            *tool_call_id == call.tool_call_id
                        }
                        _ => false,
                    })
                    .map_or(0, |e| e.sequence as i64);
            }
        }
        Ok(row)
    }
}

/// What a [`CallChange`] writes, decided once for both stores: the call's new row values, the
/// event it appends, and how the run's counts of waiting and executing calls move.
pub(in crate::store) struct CallUpdate {
    pub status: CallStatus,
    pub suspend_kind: &'static str,
    pub run_arguments: String,
    pub expire_ms: Option<i64>,
    pub answer: Option<String>,
    pub answer_id: String,
    pub decision: Option<String>,
    pub result_content: Option<String>,
    pub result_is_error: bool,
    pub result_kind: Option<String>,
    pub result_sequence: i64,
    pub assignees: Option<String>,
    /// Who settled the call (JSON) and when, once it is settled.
    pub settled_by: Option<String>,
    pub settled_ms: Option<i64>,
    /// When the call (last) started waiting: now, when the change makes it wait again.
    pub suspended_ms: Option<i64>,
    pub continuation: Option<String>,
    pub event: Option<EventKind>,
    /// Change of the run's waiting calls (this one stops waiting: -1) and executing calls.
    pub pending_delta: i64,
    pub executing_delta: i64,
}

impl CallUpdate {
    /// The update of `call` by `change` at `time_ms`, whose event (if any) gets `sequence`.
    pub fn new(
        call: &ToolCallRecord,
        change: CallChange,
        sequence: u64,
        time_ms: i64,
    ) -> StoreResult<Self> {
        let keep = CallUpdate {
            status: call.status,
            suspend_kind: call.suspension.kind.as_str(),
            run_arguments: call.suspension.arguments_json.clone(),
            expire_ms: call.expire_ms,
            answer: None,
            answer_id: String::new(),
            decision: call.decision.as_ref().map(to_json).transpose()?,
            result_content: None,
            result_is_error: false,
            result_kind: None,
            result_sequence: 0,
            assignees: assignees_column(&call.suspension.assignees)?,
            settled_by: None,
            settled_ms: None,
            suspended_ms: call.suspended_ms,
            continuation: call.continuation.clone(),
            event: None,
            pending_delta: 0,
            executing_delta: 0,
        };
        Ok(match change {
            // No event: the call's result comes when the server has run it on.
            CallChange::Continue {
                answer,
                answer_id,
                continuation,
            } => CallUpdate {
                status: CallStatus::Executing,
                answer: answer.as_ref().map(to_json).transpose()?,
                answer_id,
                expire_ms: None,
                continuation: Some(continuation),
                pending_delta: -1,
                executing_delta: 1,
                ..keep
            },
            CallChange::Settle(settlement) => CallUpdate {
                status: settlement.status,
                answer: settlement.answer.as_ref().map(to_json).transpose()?,
                answer_id: settlement.answer_id,
                result_kind: Some(kind_name(settlement.kind)?),
                result_is_error: settlement.is_error,
                result_sequence: sequence as i64,
                settled_by: settlement.settled_by.as_ref().map(to_json).transpose()?,
                settled_ms: Some(time_ms),
                event: Some(EventKind::ToolResult {
                    tool_call_id: call.tool_call_id.clone(),
                    content: settlement.content.clone(),
                    is_error: settlement.is_error,
                    kind: settlement.kind,
                    settled_by: settlement.settled_by,
                }),
                result_content: Some(settlement.content),
                pending_delta: -1,
                ..keep
            },
            CallChange::Approve {
                decision,
                answer_id,
                next,
                by,
            } => {
                let decision = Some(to_json(&Decision {
                    decision,
                    answer_id,
                    sequence,
                    by: Some(by.clone()),
                })?);
                match next {
                    Approved::Suspend {
                        suspension,
                        expire_ms,
                    } => CallUpdate {
                        status: CallStatus::Pending,
                        suspend_kind: suspension.kind.as_str(),
                        run_arguments: suspension.arguments_json.clone(),
                        expire_ms,
                        decision,
                        assignees: assignees_column(&suspension.assignees)?,
                        suspended_ms: Some(time_ms),
                        event: Some(EventKind::ToolCallSuspended {
                            tool_call_id: call.tool_call_id.clone(),
                            tool_name: call.tool_name.clone(),
                            payload: suspension.payload,
                            form: suspension.form,
                            expire_ms,
                            kind: suspension.kind,
                            arguments_json: suspension.arguments_json,
                            approval_reason: suspension.approval_reason,
                            assignees: suspension.assignees,
                        }),
                        ..keep
                    },
                    Approved::Settle { content } => CallUpdate {
                        status: CallStatus::Answered,
                        result_kind: Some(kind_name(ToolResultKind::Answered)?),
                        result_sequence: sequence as i64,
                        settled_by: Some(to_json(&by)?),
                        settled_ms: Some(time_ms),
                        event: Some(EventKind::ToolResult {
                            tool_call_id: call.tool_call_id.clone(),
                            content: content.clone(),
                            is_error: false,
                            kind: ToolResultKind::Answered,
                            settled_by: Some(by),
                        }),
                        result_content: Some(content),
                        expire_ms: None,
                        decision,
                        pending_delta: -1,
                        ..keep
                    },
                    Approved::Execute { arguments_json } => CallUpdate {
                        status: CallStatus::Executing,
                        run_arguments: arguments_json,
                        expire_ms: None,
                        decision,
                        pending_delta: -1,
                        executing_delta: 1,
                        ..keep
                    },
                }
            }
        })
    }
}

/// The `tool_result` events of calls the server ran, in the order of `results`.
pub(in crate::store) fn executed_events(results: &[ExecutedResult]) -> Vec<EventKind> {
    results
        .iter()
        .map(|r| EventKind::ToolResult {
            tool_call_id: r.tool_call_id.clone(),
            content: r.content.clone(),
            is_error: r.is_error,
            kind: ToolResultKind::Executed,
            settled_by: r.settled_by.clone(),
        })
        .collect()
}

/// The events of a cancellation: a `tool_result` for each call still unsettled (with
/// `call_content`), then `run_cancelled`.
pub(in crate::store) fn cancel_events(
    unsettled: &[String],
    call_content: &str,
    reason: &str,
    cancelled_by: &SettledBy,
) -> Vec<EventKind> {
    unsettled
        .iter()
        .map(|tool_call_id| EventKind::ToolResult {
            tool_call_id: tool_call_id.clone(),
            content: call_content.to_owned(),
            is_error: false,
            kind: ToolResultKind::Cancelled,
            settled_by: Some(cancelled_by.clone()),
        })
        .chain(std::iter::once(EventKind::RunCancelled {
            reason: reason.to_owned(),
        }))
        .collect()
}
