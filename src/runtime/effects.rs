//! What a write makes happen on this replica once the store has answered, as a plain value: the
//! writes (a start, a settle, a cancel, a step's commit) return their [`Effects`] and
//! [`Shared::apply`] carries them out. "After a commit" is written here once.

use std::sync::Arc;
use std::time::Duration;

use super::hub::Batch;
use super::shared::Shared;
use crate::domain::{RunStatus, SuspendKind};
use crate::store::{Committed, StepState, ToolCallRecord};

/// The effects of one write to one run.
#[derive(Default)]
#[must_use = "effects do nothing until applied"]
pub(super) struct Effects {
    /// The commit, for the run's followers and the pending-calls feeds.
    publish: Option<Committed>,
    /// The run works: make sure an executor works on it.
    kick: Option<Kick>,
    /// The commit suspended a call that expires: the expiry loop looks at its clock again.
    wake_expiry: bool,
    /// The figures the write changes.
    metrics: Vec<Metric>,
    /// The write failed but may have been made (its reply was lost): the run's followers here read
    /// the store, since the store's notice of it, if any, is this replica's own and not delivered
    /// to them.
    reread: bool,
}

/// A request for an executor.
struct Kick {
    /// The state of the run's next step when its lease was taken along with the commit: the step
    /// then starts without a store round trip.
    leased: Option<StepState>,
}

/// A figure a write changes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Metric {
    /// A run of `agent_id` started.
    RunStarted { agent_id: String },
    /// A step of a run of `agent_id` committed, leaving it `status` (counted if that ends it).
    StepCommitted { agent_id: String, status: RunStatus },
    /// A run of `agent_id` was cancelled.
    RunCancelled { agent_id: String },
    /// A call that waited for `kind` since `suspended_ms` (unknown for a call stored before that
    /// was) was answered.
    Answered {
        kind: SuspendKind,
        suspended_ms: Option<i64>,
    },
    /// A call that waited for `kind` expired.
    Expired { kind: SuspendKind },
}

impl Metric {
    /// `call` (as it waited) was answered.
    pub(super) fn answered(call: &ToolCallRecord) -> Self {
        Metric::Answered {
            kind: call.suspension.kind,
            suspended_ms: call.suspended_ms,
        }
    }

    /// `call` (as it waited) expired.
    pub(super) fn expired(call: &ToolCallRecord) -> Self {
        Metric::Expired {
            kind: call.suspension.kind,
        }
    }
}

impl Effects {
    /// Publishes `committed`.
    pub(super) fn publish(committed: Committed) -> Self {
        Self {
            publish: Some(committed),
            ..Self::default()
        }
    }

    /// The outcome of a write is unknown: followers read the store.
    pub(super) fn unknown_outcome() -> Self {
        Self {
            reread: true,
            ..Self::default()
        }
    }

    /// Also makes sure an executor works on the run.
    pub(super) fn kick(mut self, leased: Option<StepState>) -> Self {
        self.kick = Some(Kick { leased });
        self
    }

    /// Also makes sure an executor works on the run, if the commit leaves it working.
    pub(super) fn kick_if_running(self, leased: Option<StepState>) -> Self {
        match self.publish.as_ref().map(|c| c.status) {
            Some(RunStatus::Running) => self.kick(leased),
            _ => self,
        }
    }

    /// Also wakes the expiry loop, when `expires`.
    pub(super) fn wake_expiry(mut self, expires: bool) -> Self {
        self.wake_expiry |= expires;
        self
    }

    /// Also records `metric`.
    pub(super) fn metric(mut self, metric: Metric) -> Self {
        self.metrics.push(metric);
        self
    }
}

impl Shared {
    /// Carries out the effects of a write to `run_id`: figures are recorded before the commit is
    /// published (a follower that saw it finds them), and the run is kicked after.
    pub(super) fn apply(self: &Arc<Self>, run_id: &str, effects: Effects) {
        let Effects {
            publish,
            kick,
            wake_expiry,
            metrics,
            reread,
        } = effects;
        if reread {
            self.hub.notify(run_id, u64::MAX);
        }
        if wake_expiry {
            self.expiry_wake.notify_one();
        }
        for metric in metrics {
            match metric {
                Metric::RunStarted { agent_id } => crate::metrics::run_started(&agent_id),
                Metric::StepCommitted { agent_id, status } => {
                    crate::metrics::run_finished(&agent_id, status)
                }
                // These two are kept only when metrics are (`RuntimeConfig::metrics`).
                Metric::RunCancelled { agent_id } if self.config.metrics => {
                    crate::metrics::run_finished(&agent_id, RunStatus::Cancelled)
                }
                Metric::Answered {
                    kind,
                    suspended_ms: Some(suspended_ms),
                } if self.config.metrics => {
                    let waited = self.store.now_ms().saturating_sub(suspended_ms).max(0);
                    crate::metrics::answered(kind, Duration::from_millis(waited.unsigned_abs()));
                }
                Metric::RunCancelled { .. } | Metric::Answered { .. } => {}
                Metric::Expired { kind } => crate::metrics::call_expired(kind),
            }
        }
        if let Some(committed) = publish {
            self.hub.publish(run_id, Batch::from(committed));
        }
        if let Some(Kick { leased }) = kick {
            self.kick(run_id, leased);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::testing::{Harness, config};

    fn committed(status: RunStatus) -> Committed {
        Committed {
            events: Vec::new(),
            status,
        }
    }

    #[test]
    fn only_a_commit_that_leaves_the_run_working_kicks_it() {
        for (status, kicks) in [
            (RunStatus::Running, true),
            (RunStatus::Suspended, false),
            (RunStatus::Completed, false),
            (RunStatus::Cancelled, false),
        ] {
            let effects = Effects::publish(committed(status)).kick_if_running(None);
            assert_eq!(effects.kick.is_some(), kicks, "{status:?}");
        }
        assert!(Effects::default().kick_if_running(None).kick.is_none());
    }

    #[tokio::test]
    async fn an_unknown_outcome_sends_the_runs_followers_to_the_store() {
        let harness = Harness::new(Vec::new(), config());
        let shared = &harness.runtime.shared;
        let mut follower = shared.hub.subscribe("run-1");
        shared.apply("run-1", Effects::unknown_outcome());
        let notice = follower.recv().await.expect("a notice");
        assert!(notice.events.is_empty());
        assert_eq!(notice.last_sequence, u64::MAX);
    }

    #[tokio::test]
    async fn the_expiry_loop_is_woken_only_when_asked() {
        let harness = Harness::new(Vec::new(), config());
        let shared = &harness.runtime.shared;
        let woken =
            || tokio::time::timeout(Duration::from_millis(50), shared.expiry_wake.notified());
        shared.apply("run-1", Effects::publish(committed(RunStatus::Suspended)));
        assert!(woken().await.is_err(), "a commit without an expiry");
        shared.apply(
            "run-1",
            Effects::publish(committed(RunStatus::Suspended)).wake_expiry(true),
        );
        assert!(woken().await.is_ok());
    }
}
