//! One info line per thing a person watching the server cares about: a run (or request) starts,
//! a call waits for someone, a call is settled (and by whom), a run ends. Logged where every
//! committed batch passes on this replica (`Hub::publish`), under the target `askuser::runs`, so
//! an operator can quiet it alone (`RUST_LOG=info,askuser::runs=warn`).

use tracing::info;

use crate::domain::{Event, EventKind};

/// Logs what in `events` of `run_id` is worth a line.
pub(super) fn log_events(run_id: &str, events: &[Event]) {
    for event in events {
        match &event.kind {
            EventKind::RunStarted { agent_id, .. } => match agent_id.is_empty() {
                true => info!(target: "askuser::runs", run_id, "request started"),
                false => info!(target: "askuser::runs", run_id, agent = %agent_id, "run started"),
            },
            EventKind::ToolCallSuspended {
                tool_call_id,
                tool_name,
                kind,
                ..
            } => info!(
                target: "askuser::runs",
                run_id,
                tool_call_id,
                tool = %tool_name,
                kind = kind.as_str(),
                "waiting for a person"
            ),
            EventKind::ToolResult {
                tool_call_id,
                kind,
                settled_by,
                ..
            } => match settled_by {
                Some(by) => info!(
                    target: "askuser::runs",
                    run_id,
                    tool_call_id,
                    outcome = ?kind,
                    by = %by.subject,
                    "settled"
                ),
                None => {
                    info!(target: "askuser::runs", run_id, tool_call_id, outcome = ?kind, "settled")
                }
            },
            EventKind::RunCompleted { .. } => info!(target: "askuser::runs", run_id, "completed"),
            EventKind::RunFailed { message } => {
                info!(target: "askuser::runs", run_id, error = %message, "failed")
            }
            EventKind::RunCancelled { reason } => {
                info!(target: "askuser::runs", run_id, reason = %reason, "cancelled")
            }
            EventKind::TextDelta { .. }
            | EventKind::ToolCall { .. }
            | EventKind::StepRestarted { .. } => {}
        }
    }
}
