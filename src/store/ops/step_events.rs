//! Appending the events of a step still in progress (live text deltas), decided once for both
//! stores.

use super::{Write, new_events};
use crate::domain::{Event, EventKind, RunStatus};
use crate::store::records::RunHead;
use crate::store::{Committed, StoreResult, TurnOutcome};

/// The run after its step streamed: which attempt of the step did.
pub(in crate::store) const UPDATE_RUN: &str = "UPDATE runs SET last_sequence = $1, \
     step_attempt = $2, updated_ms = $3 WHERE run_id = $4";

/// Step events to write.
pub(in crate::store) struct StepEventsPlan {
    /// In this order: the events, then the run.
    pub events: Vec<Event>,
    pub run_update: Write,
    /// The run's webhook plan, for the deliveries the events make.
    pub webhooks: Option<String>,
    pub last_sequence: u64,
}

/// Decides the append of `kinds` by `attempt` of a step at `now_ms`: `None` when the step may no
/// longer write (see [`RunHead::admits_step`]).
pub(in crate::store) fn plan(
    run_id: &str,
    head: Option<RunHead>,
    (owner, expected_turns): (&str, u32),
    attempt: u32,
    kinds: Vec<EventKind>,
    now_ms: i64,
) -> StoreResult<Option<StepEventsPlan>> {
    let Some(head) = head.filter(|head| head.admits_step(owner, expected_turns)) else {
        return Ok(None);
    };
    let events = new_events(run_id, head.last_sequence, kinds, now_ms);
    let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
    let run_update = Write {
        sql: UPDATE_RUN,
        params: vec![
            (last_sequence as i64).into(),
            i64::from(attempt).into(),
            now_ms.into(),
            run_id.into(),
        ],
    };
    Ok(Some(StepEventsPlan {
        events,
        run_update,
        webhooks: head.webhooks,
        last_sequence,
    }))
}

impl StepEventsPlan {
    /// The outcome once written: the run still runs.
    pub fn outcome(self) -> TurnOutcome {
        TurnOutcome::Committed(Committed {
            events: self.events,
            status: RunStatus::Running,
        })
    }
}
