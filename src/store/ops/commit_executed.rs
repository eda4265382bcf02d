//! Committing the results of calls the server ran, decided once for both stores.

use super::calls::{between_turns, executed_events};
use super::{Write, new_events};
use crate::domain::{Event, EventKind, RunStatus};
use crate::store::records::{
    EXECUTED_UPDATE, RunHead, SUSPEND_EXECUTING_UPDATE, assignees_column, payload_column,
    settled_by_column,
};
use crate::store::{Committed, ExecutedResult, StoreResult, SuspendedCall, TurnOutcome};

/// The run after its calls ran: waiting if calls still wait for someone, else working on (a run
/// that no longer runs ends its lease).
pub(in crate::store) const UPDATE_RUN: &str = "UPDATE runs SET status = $1, last_sequence = $2, \
     updated_ms = $3, step_starts = 0, \
     lease_owner = CASE WHEN $1 = 'running' THEN lease_owner END, \
     lease_expires_ms = CASE WHEN $1 = 'running' THEN lease_expires_ms END WHERE run_id = $4";

/// What a commit of executed calls reads, under the run's lock: the run's head, and how many of
/// its calls wait for someone and how many the server runs.
pub(in crate::store) struct ExecutedReads {
    pub head: Option<RunHead>,
    pub counts: (i64, i64),
}

/// Results to write.
pub(in crate::store) struct ExecutedPlan {
    /// In this order: the events, then the calls (each changes exactly one executing call unless
    /// the store is corrupt), then the run.
    pub events: Vec<Event>,
    pub call_updates: Vec<Write>,
    /// Then the calls that wait for a person now (each changes exactly one executing call).
    pub suspend_updates: Vec<Write>,
    pub run_update: Write,
    /// The run's webhook plan, for the deliveries the events make.
    pub webhooks: Option<String>,
    pub status: RunStatus,
    pub last_sequence: u64,
}

/// Decides the commit of `results` at `now_ms`: `None` when the step that ran them may no
/// longer write (see [`RunHead::admits_step`]).
pub(in crate::store) fn plan(
    run_id: &str,
    reads: ExecutedReads,
    (owner, expected_turns): (&str, u32),
    (results, suspended, step_goes_on): (&[ExecutedResult], &[SuspendedCall], bool),
    now_ms: i64,
) -> StoreResult<Option<ExecutedPlan>> {
    let Some(head) = reads
        .head
        .filter(|head| head.admits_step(owner, expected_turns))
    else {
        return Ok(None);
    };
    let kinds = executed_events(results)
        .into_iter()
        .chain(suspended.iter().map(|call| EventKind::ToolCallSuspended {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            payload: call.suspension.payload.clone(),
            form: call.suspension.form.clone(),
            expire_ms: call.expire_ms,
            kind: call.suspension.kind,
            arguments_json: call.suspension.arguments_json.clone(),
            approval_reason: call.suspension.approval_reason.clone(),
            assignees: call.suspension.assignees.clone(),
        }))
        .collect();
    let events = new_events(run_id, head.last_sequence, kinds, now_ms);
    let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
    let (pending, executing) = reads.counts;
    let (finished, waiting) = (results.len() as i64, suspended.len() as i64);
    let status = if step_goes_on {
        RunStatus::Running
    } else {
        between_turns(pending + waiting, executing - finished - waiting)
    };
    let call_updates = results
        .iter()
        .zip(&events)
        .map(|(result, event)| {
            Ok(Write {
                sql: EXECUTED_UPDATE,
                params: vec![
                    result.content.as_str().into(),
                    result.is_error.into(),
                    (event.sequence as i64).into(),
                    settled_by_column(result.settled_by.as_ref())?.into(),
                    event.time_ms.into(),
                    run_id.into(),
                    result.tool_call_id.as_str().into(),
                ],
            })
        })
        .collect::<StoreResult<_>>()?;
    let suspend_updates = suspended
        .iter()
        .zip(&events[results.len()..])
        .map(|(call, event)| {
            Ok(Write {
                sql: SUSPEND_EXECUTING_UPDATE,
                params: vec![
                    call.suspension.kind.as_str().into(),
                    payload_column(&call.suspension)?.into(),
                    call.expire_ms.into(),
                    assignees_column(&call.suspension.assignees)?.into(),
                    event.time_ms.into(),
                    call.continuation.as_str().into(),
                    run_id.into(),
                    call.tool_call_id.as_str().into(),
                ],
            })
        })
        .collect::<StoreResult<_>>()?;
    let run_update = Write {
        sql: UPDATE_RUN,
        params: vec![
            status.as_str().into(),
            (last_sequence as i64).into(),
            now_ms.into(),
            run_id.into(),
        ],
    };
    Ok(Some(ExecutedPlan {
        events,
        call_updates,
        suspend_updates,
        run_update,
        webhooks: head.webhooks,
        status,
        last_sequence,
    }))
}

impl ExecutedPlan {
    /// The outcome once written.
    pub fn outcome(self) -> TurnOutcome {
        TurnOutcome::Committed(Committed {
            events: self.events,
            status: self.status,
        })
    }
}

/// Why a call's result was not written: it was not executing.
pub(in crate::store) fn not_executing(write: &Write) -> crate::store::StoreError {
    let tool_call_id = match write.params.last() {
        Some(super::SqlValue::Text(Some(id))) => id.as_str(),
        _ => "?",
    };
    crate::store::StoreError::Corrupt(format!("executed call {tool_call_id} was not executing"))
}
