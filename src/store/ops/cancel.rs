//! Cancelling a run: its unsettled calls settled as cancelled, then `run_cancelled`, decided once
//! for both stores.

use super::calls::cancel_events;
use super::{Write, new_events};
use crate::domain::{Event, RunStatus, SettledBy, ToolResultKind};
use crate::store::records::{RunHead, kind_name, settled_by_column};
use crate::store::{CancelOutcome, Committed, StoreResult};

/// Ends the run as cancelled, and its lease with it.
pub(in crate::store) const UPDATE_RUN: &str = "UPDATE runs SET status = 'cancelled', error_message = $1, \
     last_sequence = $2, updated_ms = $3, lease_owner = NULL, lease_expires_ms = NULL \
     WHERE run_id = $4";

/// A cancellation to write.
pub(in crate::store) struct CancelPlan {
    /// The events to append (after the run's last): the calls' results, then `run_cancelled`.
    pub events: Vec<Event>,
    /// The calls it settles, in the order of their results.
    pub calls: CancelledCalls,
    pub run_update: Write,
    /// The run's webhook plan, for the deliveries the events make.
    pub webhooks: Option<String>,
    pub last_sequence: u64,
    agent_id: String,
}

/// The unsettled calls a cancellation settles, each with the sequence of its result; how they
/// are written is the store's (one statement per call, or one for all).
pub(in crate::store) struct CancelledCalls {
    pub tool_call_ids: Vec<String>,
    pub sequences: Vec<i64>,
    pub content: String,
    /// The result kind's stored name.
    pub kind: String,
    pub settled_by: Option<String>,
    pub settled_ms: i64,
}

/// Decides the cancellation of `run_id` at `now_ms` from its head (`None`: not found, or another
/// tenant's) and its unsettled calls: a plan, or an outcome that writes nothing.
pub(in crate::store) fn plan(
    run_id: &str,
    head: Option<RunHead>,
    unsettled: Vec<String>,
    reason: &str,
    call_content: &str,
    cancelled_by: &SettledBy,
    now_ms: i64,
) -> StoreResult<Result<CancelPlan, CancelOutcome>> {
    let Some(head) = head else {
        return Ok(Err(CancelOutcome::NotFound));
    };
    match head.status {
        RunStatus::Cancelled => return Ok(Err(CancelOutcome::AlreadyCancelled)),
        RunStatus::Completed | RunStatus::Failed => {
            return Ok(Err(CancelOutcome::Finished(head.status)));
        }
        RunStatus::Running | RunStatus::Suspended => {}
    }
    let kinds = cancel_events(&unsettled, call_content, reason, cancelled_by);
    let events = new_events(run_id, head.last_sequence, kinds, now_ms);
    let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
    // The calls' results are the first events, in the order of the calls.
    let sequences = events
        .iter()
        .take(unsettled.len())
        .map(|e| e.sequence as i64)
        .collect();
    Ok(Ok(CancelPlan {
        calls: CancelledCalls {
            tool_call_ids: unsettled,
            sequences,
            content: call_content.to_owned(),
            kind: kind_name(ToolResultKind::Cancelled)?,
            settled_by: settled_by_column(Some(cancelled_by))?,
            settled_ms: now_ms,
        },
        run_update: Write {
            sql: UPDATE_RUN,
            params: vec![
                reason.into(),
                (last_sequence as i64).into(),
                now_ms.into(),
                run_id.into(),
            ],
        },
        events,
        webhooks: head.webhooks,
        last_sequence,
        agent_id: head.agent_id,
    }))
}

impl CancelPlan {
    /// The outcome once written.
    pub fn outcome(self) -> CancelOutcome {
        CancelOutcome::Cancelled {
            committed: Committed {
                events: self.events,
                status: RunStatus::Cancelled,
            },
            agent_id: self.agent_id,
        }
    }
}
