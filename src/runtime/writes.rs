//! Writes that outlive the request that asked for them.
//!
//! Tonic drops a handler's future when its client goes away. A write cut there could commit and
//! never be published, nor its run kicked: followers would not see it and the run would wait for
//! its lease to lapse. So commit → publish → kick runs as one spawned task that the handler only
//! awaits.

use std::future::Future;
use std::sync::Arc;
use tracing::Instrument;

use super::RuntimeError;
use super::effects::{Effects, Metric};
use super::shared::Shared;
use crate::domain::SettledBy;
use crate::store::{
    CallSettlement, CancelOutcome, Cancellation, CreateOutcome, Decide, NewRun, Refusal,
    SettleOutcome, ToolCallRecord,
};

/// A call of a run of `tenant` (of any tenant when `None`).
pub(super) struct CallRef {
    pub(super) run_id: String,
    pub(super) tenant: Option<String>,
    pub(super) tool_call_id: String,
}

/// What [`Shared::settle`] did.
pub(super) enum Settled {
    /// Changed; `first_sequence` is the sequence of the change's first event.
    Applied {
        first_sequence: u64,
    },
    /// Refused by `decide` (with its reason), or no longer pending (no reason): the call as it is.
    Unchanged {
        call: Box<ToolCallRecord>,
        refusal: Option<Refusal>,
    },
    NotFound,
}

impl Shared {
    /// Runs `write` (a write to `run_id`) to its end on its own task (tracked, so shutdown waits
    /// for it), applies its effects there, and returns its outcome to whoever still waits. A write
    /// that failed may still have been made: its outcome is unknown to the run's followers too.
    async fn detached<T, F>(self: &Arc<Self>, run_id: String, write: F) -> Result<T, RuntimeError>
    where
        T: Send + 'static,
        F: Future<Output = Result<(T, Effects), RuntimeError>> + Send + 'static,
    {
        let shared = Arc::clone(self);
        let work = async move {
            match write.await {
                Ok((value, effects)) => {
                    shared.apply(&run_id, effects);
                    Ok(value)
                }
                Err(error) => {
                    if let RuntimeError::Store(_) = &error {
                        shared.apply(&run_id, Effects::unknown_outcome());
                    }
                    Err(error)
                }
            }
        };
        self.tasks
            // In the caller's span: the steps the write kicks link to it.
            .spawn(work.in_current_span())
            .await
            .map_err(|error| RuntimeError::Internal(format!("a write task failed: {error}")))?
    }

    /// Creates a run, publishes its start and kicks its first step. Returns the id of the run an
    /// earlier start with the same request id made, if there was one (then nothing was written).
    pub(super) async fn create(
        self: &Arc<Self>,
        run: NewRun,
    ) -> Result<Option<String>, RuntimeError> {
        let shared = Arc::clone(self);
        self.detached(run.run_id.clone(), async move {
            let agent_id = run.agent_id.clone();
            Ok(
                match shared.store.create_run(run, Some(shared.lease())).await? {
                    CreateOutcome::Created(created) => (
                        None,
                        Effects::publish(created.committed)
                            .metric(Metric::RunStarted { agent_id })
                            .kick(Some(created.step)),
                    ),
                    CreateOutcome::Existing { run_id } => (Some(run_id), Effects::default()),
                },
            )
        })
        .await
    }

    /// Settles a pending call of a run of `tenant` (of any tenant when `None`) with `decide`,
    /// publishes the change and, when the run works again, makes sure it is executed (taking its
    /// lease along with the commit when `take_lease`). `metric` is the figure a settled call
    /// counts toward, from the call as it waited.
    pub(super) async fn settle(
        self: &Arc<Self>,
        call: CallRef,
        decide: Decide,
        metric: fn(&ToolCallRecord) -> Metric,
        take_lease: bool,
    ) -> Result<Settled, RuntimeError> {
        let CallRef {
            run_id,
            tenant,
            tool_call_id,
        } = call;
        let shared = Arc::clone(self);
        self.detached(run_id.clone(), async move {
            let outcome = shared
                .store
                .settle_tool_call(CallSettlement {
                    run_id: &run_id,
                    tenancy: tenant.as_deref().into(),
                    tool_call_id: &tool_call_id,
                    decide,
                    lease: take_lease.then(|| shared.lease()),
                })
                .await?;
            Ok(match outcome {
                SettleOutcome::Settled {
                    committed,
                    step,
                    first_sequence,
                    call,
                    agent_id: _,
                } => (
                    Settled::Applied { first_sequence },
                    Effects::publish(committed)
                        .metric(metric(&call))
                        .kick_if_running(step.map(|step| *step)),
                ),
                SettleOutcome::Refused(call, refusal) => (
                    Settled::Unchanged {
                        call,
                        refusal: Some(refusal),
                    },
                    Effects::default(),
                ),
                SettleOutcome::NotPending(call) => (
                    Settled::Unchanged {
                        call,
                        refusal: None,
                    },
                    Effects::default(),
                ),
                SettleOutcome::NotFound => (Settled::NotFound, Effects::default()),
            })
        })
        .await
    }

    /// Cancels a run of `tenant` (of any tenant when `None`) and publishes the cancellation.
    pub(super) async fn cancel(
        self: &Arc<Self>,
        run_id: String,
        tenant: Option<String>,
        reason: String,
        call_content: &'static str,
        cancelled_by: SettledBy,
    ) -> Result<CancelOutcome, RuntimeError> {
        let shared = Arc::clone(self);
        self.detached(run_id.clone(), async move {
            let outcome = shared
                .store
                .cancel_run(Cancellation {
                    run_id: &run_id,
                    tenancy: tenant.as_deref().into(),
                    reason: &reason,
                    call_content,
                    cancelled_by: &cancelled_by,
                })
                .await?;
            let effects = match &outcome {
                CancelOutcome::Cancelled {
                    committed,
                    agent_id,
                } => Effects::publish(committed.clone()).metric(Metric::RunCancelled {
                    agent_id: agent_id.clone(),
                }),
                _ => Effects::default(),
            };
            Ok((outcome, effects))
        })
        .await
    }
}
