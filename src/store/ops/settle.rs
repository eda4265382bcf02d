//! Settling a pending tool call: the compare-and-set, decided once for both stores.

use super::calls::{CallUpdate, between_turns};
use super::{SqlValue, Write, new_events};
use crate::domain::{Event, RunStatus};
use crate::store::records::RunHead;
use crate::store::{
    CallStatus, Committed, Decide, SettleOutcome, StepState, StoreResult, ToolCallRecord,
};

/// Rewrites a pending call as a [`CallUpdate`] says.
///
/// The call's tenant (its run's) is in the condition so that every index PostgreSQL may choose
/// finds the call by its whole key. Without it, PostgreSQL's prepared plan walked all of
/// `tool_calls_pending` (tenant, run, call), whose first column it was not given: planned while
/// the table was small, and kept as settled calls' dead entries filled the index (78 pages read
/// per settle on average over 10,000 runs at 64 streams, 0.2 ms of the database's time).
pub(in crate::store) const UPDATE_CALL: &str = "UPDATE tool_calls SET status = $1, suspend_kind = $2, \
     run_arguments = $3, expire_ms = $4, answer = $5, answer_id = $6, decision = $7, \
     result_content = $8, result_is_error = $9, result_kind = $10, result_sequence = $11, \
     assignees = $12, settled_by = $13, settled_ms = $14, suspended_ms = $15, continuation = $16, \
     claimant = NULL, claim_expires_ms = NULL WHERE run_id = $17 AND tool_call_id = $18 \
     AND status = 'pending' AND tenant = $19";

/// The run's state after the settle.
pub(in crate::store) const UPDATE_RUN: &str =
    "UPDATE runs SET status = $1, last_sequence = $2, updated_ms = $3 WHERE run_id = $4";

/// What a settle reads, under the run's lock: the run (`None`: not found, or another tenant's),
/// the call, and how many of the run's calls wait for someone and how many the server runs.
pub(in crate::store) struct SettleReads {
    pub head: Option<RunHead>,
    pub call: Option<ToolCallRecord>,
    pub counts: (i64, i64),
}

/// A settle to write.
pub(in crate::store) struct SettlePlan {
    /// The events to append (after the run's last), then the writes, in this order.
    pub events: Vec<Event>,
    /// Rewrites the call; changes exactly one row unless the store is corrupt.
    pub call_update: Write,
    pub run_update: Write,
    /// The run's webhook plan, for the deliveries the events make.
    pub webhooks: Option<String>,
    pub status: RunStatus,
    pub last_sequence: u64,
    first_sequence: u64,
    call: ToolCallRecord,
    agent_id: String,
}

/// What the reads decide: a plan to write, or an outcome that writes nothing.
pub(in crate::store) enum Settling {
    Write(Box<SettlePlan>),
    Unchanged(SettleOutcome),
}

/// Decides the settle of `tool_call_id` of `run_id` at `now_ms` from what was read.
pub(in crate::store) fn plan(
    run_id: &str,
    tool_call_id: &str,
    reads: SettleReads,
    decide: Decide,
    now_ms: i64,
) -> StoreResult<Settling> {
    let (Some(head), Some(call)) = (reads.head, reads.call) else {
        return Ok(Settling::Unchanged(SettleOutcome::NotFound));
    };
    if call.status != CallStatus::Pending {
        return Ok(Settling::Unchanged(SettleOutcome::NotPending(Box::new(
            call,
        ))));
    }
    let change = match decide(&call) {
        Ok(change) => change,
        Err(refusal) => {
            return Ok(Settling::Unchanged(SettleOutcome::Refused(
                Box::new(call),
                refusal,
            )));
        }
    };
    let first_sequence = head.last_sequence + 1;
    let update = CallUpdate::new(&call, change, first_sequence, now_ms)?;
    let events = new_events(
        run_id,
        head.last_sequence,
        update.event.clone().into_iter().collect(),
        now_ms,
    );
    let (pending, executing) = reads.counts;
    let status = between_turns(
        pending + update.pending_delta,
        executing + update.executing_delta,
    );
    let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
    let call_update = Write {
        sql: UPDATE_CALL,
        params: vec![
            update.status.as_str().into(),
            update.suspend_kind.into(),
            update.run_arguments.into(),
            update.expire_ms.into(),
            update.answer.into(),
            update.answer_id.into(),
            update.decision.into(),
            update.result_content.into(),
            update.result_is_error.into(),
            update.result_kind.into(),
            update.result_sequence.into(),
            update.assignees.into(),
            update.settled_by.into(),
            update.settled_ms.into(),
            update.suspended_ms.into(),
            update.continuation.into(),
            run_id.into(),
            tool_call_id.into(),
            head.tenant.into(),
        ],
    };
    let run_update = Write {
        sql: UPDATE_RUN,
        params: vec![
            status.as_str().into(),
            SqlValue::from(last_sequence as i64),
            now_ms.into(),
            run_id.into(),
        ],
    };
    Ok(Settling::Write(Box::new(SettlePlan {
        events,
        call_update,
        run_update,
        webhooks: head.webhooks,
        status,
        last_sequence,
        first_sequence,
        call,
        agent_id: head.agent_id,
    })))
}

impl SettlePlan {
    /// Whether the settler may take the run's lease for its next step: the run works again.
    pub fn runs_again(&self) -> bool {
        self.status == RunStatus::Running
    }

    /// The outcome once written, with the next step when the settler took the lease.
    pub fn outcome(self, step: Option<StepState>) -> SettleOutcome {
        SettleOutcome::Settled {
            committed: Committed {
                events: self.events,
                status: self.status,
            },
            step: step.map(Box::new),
            first_sequence: self.first_sequence,
            call: Box::new(self.call),
            agent_id: self.agent_id,
        }
    }
}
