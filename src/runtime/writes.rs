//! Writes that outlive the request that asked for them.
//!
//! Tonic drops a handler's future when its client goes away. A write cut there could commit and
//! never be published, nor its run kicked: followers would not see it and the run would wait for
//! its lease to lapse. So commit → publish → kick runs as one spawned task that the handler only
//! awaits.

use std::future::Future;
use std::sync::Arc;
use tracing::Instrument;

use super::executor::{kick, lease};
use super::hub::Batch;
use super::observed;
use super::{Inner, RuntimeError};
use crate::domain::{RunStatus, SettledBy};
use crate::store::{
    CancelOutcome, Committed, CreateOutcome, Decide, NewRun, Refusal, SettleOutcome, StepState,
    ToolCallRecord,
};

/// Runs `work` (a write to `run_id`) to its end on its own task (tracked, so shutdown waits for
/// it) and returns its outcome to whoever still waits. A write that failed may still have been
/// made (its reply was lost): the run's followers here are told to read the store, since the
/// store's notice of it, if any, is this replica's own and not delivered to them.
async fn detached<T, F>(inner: &Inner, run_id: &str, work: F) -> Result<T, RuntimeError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, RuntimeError>> + Send + 'static,
{
    let outcome = inner
        .tasks
        // In the caller's span: the steps the write kicks link to it.
        .spawn(work.in_current_span())
        .await
        .map_err(|error| RuntimeError::Internal(format!("a write task failed: {error}")))?;
    if let Err(RuntimeError::Store(_)) = &outcome {
        inner.hub.notify(run_id, u64::MAX);
    }
    outcome
}

/// Creates a run, publishes its start and kicks its first step. Returns the id of the run an
/// earlier start with the same request id made, if there was one (then nothing was written).
pub(super) async fn create(
    inner: &Arc<Inner>,
    run: NewRun,
) -> Result<Option<String>, RuntimeError> {
    let task_inner = Arc::clone(inner);
    let run_id = run.run_id.clone();
    detached(inner, &run_id, async move {
        let inner = task_inner;
        let (run_id, agent_id) = (run.run_id.clone(), run.agent_id.clone());
        match inner.store.create_run(run, Some(lease(&inner))).await? {
            CreateOutcome::Created(created) => {
                crate::metrics::run_started(&agent_id);
                inner.hub.publish(&run_id, Batch::from(created.committed));
                kick(&inner, &run_id, Some(created.step));
                Ok(None)
            }
            CreateOutcome::Existing { run_id } => Ok(Some(run_id)),
        }
    })
    .await
}

/// What [`settle`] did.
pub(super) enum Settled {
    /// Changed; `first_sequence` is the sequence of the change's first event, `call` the call as
    /// it was before.
    Applied {
        first_sequence: u64,
        call: Box<ToolCallRecord>,
    },
    /// Refused by `decide` (with its reason), or no longer pending (no reason): the call as it is.
    Unchanged {
        call: Box<ToolCallRecord>,
        refusal: Option<Refusal>,
    },
    NotFound,
}

/// Settles a pending call of a run of `tenant` (of any tenant when `None`) with `decide`,
/// publishes the change and, when the run works again, makes sure it is executed (taking its
/// lease along with the commit when `take_lease`).
pub(super) async fn settle(
    inner: &Arc<Inner>,
    run_id: String,
    tenant: Option<String>,
    tool_call_id: String,
    decide: Decide,
    take_lease: bool,
) -> Result<Settled, RuntimeError> {
    let task_inner = Arc::clone(inner);
    let notified = run_id.clone();
    detached(inner, &notified, async move {
        let inner = task_inner;
        let outcome = inner
            .store
            .settle_tool_call(
                &run_id,
                tenant.as_deref().into(),
                &tool_call_id,
                decide,
                take_lease.then(|| lease(&inner)),
            )
            .await?;
        Ok(match outcome {
            SettleOutcome::Settled {
                committed,
                step,
                first_sequence,
                call,
                ..
            } => {
                publish_settled(&inner, &run_id, committed, step);
                Settled::Applied {
                    first_sequence,
                    call,
                }
            }
            SettleOutcome::Refused(call, refusal) => Settled::Unchanged {
                call,
                refusal: Some(refusal),
            },
            SettleOutcome::NotPending(call) => Settled::Unchanged {
                call,
                refusal: None,
            },
            SettleOutcome::NotFound => Settled::NotFound,
        })
    })
    .await
}

/// Cancels a run of `tenant` (of any tenant when `None`) and publishes the cancellation.
pub(super) async fn cancel(
    inner: &Arc<Inner>,
    run_id: String,
    tenant: Option<String>,
    reason: String,
    call_content: &'static str,
    cancelled_by: SettledBy,
) -> Result<CancelOutcome, RuntimeError> {
    let task_inner = Arc::clone(inner);
    let notified = run_id.clone();
    detached(inner, &notified, async move {
        let inner = task_inner;
        let outcome = inner
            .store
            .cancel_run(
                &run_id,
                tenant.as_deref().into(),
                &reason,
                call_content,
                &cancelled_by,
            )
            .await?;
        if let CancelOutcome::Cancelled {
            committed,
            agent_id,
        } = &outcome
        {
            inner.hub.publish(&run_id, Batch::from(committed.clone()));
            observed::cancelled(&inner, agent_id);
        }
        Ok(outcome)
    })
    .await
}

/// Publishes a settlement's commit and, when the run works again, makes sure it is executed.
fn publish_settled(
    inner: &Arc<Inner>,
    run_id: &str,
    committed: Committed,
    step: Option<Box<StepState>>,
) {
    let status = committed.status;
    inner.hub.publish(run_id, Batch::from(committed));
    if status == RunStatus::Running {
        kick(inner, run_id, step.map(|step| *step));
    }
}
