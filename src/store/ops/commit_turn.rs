//! Committing a model turn: its text, events and calls, and the run's state after it, decided
//! once for both stores.

use super::calls::CallRow;
use super::{Write, new_events};
use crate::domain::{Event, RunStatus};
use crate::store::records::{RunHead, usage_columns};
use crate::store::{CallStatus, Committed, RunEnd, StoreResult, TurnCommit, TurnOutcome};

/// Records the turn's assistant text.
pub(in crate::store) const INSERT_TURN: &str =
    "INSERT INTO turns (run_id, turn, text) VALUES ($1, $2, $3)";

/// The run after a turn: a turn that leaves it not running also ends its lease.
pub(in crate::store) const UPDATE_RUN: &str = "UPDATE runs SET status = $1, turns = $2, \
     last_sequence = $3, output_text = $4, error_message = $5, updated_ms = $6, \
     step_attempt = 0, step_starts = 0, input_tokens = $7, output_tokens = $8, \
     lease_owner = CASE WHEN $1 = 'running' THEN lease_owner END, \
     lease_expires_ms = CASE WHEN $1 = 'running' THEN lease_expires_ms END WHERE run_id = $9";

/// A turn to write.
pub(in crate::store) struct TurnPlan<'c> {
    /// In this order: the turn's text (when it has one), its events, its calls, the run.
    pub turn_insert: Option<Write>,
    pub events: Vec<Event>,
    pub calls: Vec<CallRow<'c>>,
    /// The turn the calls belong to.
    pub turn: i64,
    /// The run's tenant and agent, which each call carries (`tool_calls.tenant`, `.agent_id`).
    pub owner: (String, String),
    pub run_update: Write,
    /// The run's webhook plan, for the deliveries the events make.
    pub webhooks: Option<String>,
    pub status: RunStatus,
    pub last_sequence: u64,
}

/// Decides the commit of `commit` (whose events it takes) at `now_ms` from the run's head:
/// `None` when the step that made it may no longer write (see [`RunHead::admits_step`]).
pub(in crate::store) fn plan<'c>(
    run_id: &str,
    head: Option<RunHead>,
    (owner, expected_turns): (&str, u32),
    commit: &'c mut TurnCommit,
    now_ms: i64,
) -> StoreResult<Option<TurnPlan<'c>>> {
    let Some(head) = head.filter(|head| head.admits_step(owner, expected_turns)) else {
        return Ok(None);
    };
    let turns = head.turns + u32::from(commit.assistant_text.is_some());
    let events = new_events(
        run_id,
        head.last_sequence,
        std::mem::take(&mut commit.events),
        now_ms,
    );
    let commit = &*commit;
    let calls = commit
        .tool_calls
        .iter()
        .enumerate()
        .map(|(position, call)| CallRow::new(position, call, &events))
        .collect::<StoreResult<Vec<_>>>()?;
    let count = |status| calls.iter().filter(|c| c.status == status).count() as i64;
    let (status, output_text, error_message) = RunEnd::run_after(
        commit.end.as_ref(),
        count(CallStatus::Pending),
        count(CallStatus::Executing),
    );
    let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
    let (input_tokens, output_tokens) = usage_columns(commit.usage);
    let turn_insert = commit.assistant_text.as_deref().map(|text| Write {
        sql: INSERT_TURN,
        params: vec![run_id.into(), i64::from(head.turns).into(), text.into()],
    });
    let run_update = Write {
        sql: UPDATE_RUN,
        params: vec![
            status.as_str().into(),
            i64::from(turns).into(),
            (last_sequence as i64).into(),
            output_text.into(),
            error_message.into(),
            now_ms.into(),
            input_tokens.into(),
            output_tokens.into(),
            run_id.into(),
        ],
    };
    Ok(Some(TurnPlan {
        turn_insert,
        events,
        calls,
        turn: i64::from(turns) - 1,
        owner: (head.tenant, head.agent_id),
        run_update,
        webhooks: head.webhooks,
        status,
        last_sequence,
    }))
}

impl TurnPlan<'_> {
    /// The outcome once written.
    pub fn outcome(self) -> TurnOutcome {
        TurnOutcome::Committed(Committed {
            events: self.events,
            status: self.status,
        })
    }
}
