//! Figures for the metrics that take a read of the store: how long a settled call waited, and
//! the agent of a cancelled run. Read only when metrics are kept ([`RuntimeConfig::metrics`]),
//! off the request's path, so a reply never waits for them.
//!
//! [`RuntimeConfig::metrics`]: super::RuntimeConfig::metrics

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use super::shared::Shared;
use crate::domain::{Event, EventKind, RunStatus};
use crate::store::Tenancy;

/// Records how long the call waited, from its suspension (its last before the settle's first
/// event, `settled_sequence`) to now.
pub(super) fn settled_by_someone(
    inner: &Arc<Shared>,
    run_id: &str,
    tool_call_id: &str,
    settled_sequence: u64,
) {
    if !inner.config.metrics {
        return;
    }
    let task_inner = Arc::clone(inner);
    let (run_id, tool_call_id) = (run_id.to_owned(), tool_call_id.to_owned());
    inner.tasks.spawn(async move {
        let store = &task_inner.store;
        match store
            .suspension_event(&run_id, &tool_call_id, settled_sequence)
            .await
        {
            Ok(Some(Event {
                time_ms,
                kind: EventKind::ToolCallSuspended { kind, .. },
                ..
            })) => {
                let waited = store.now_ms().saturating_sub(time_ms).max(0);
                crate::metrics::answered(kind, Duration::from_millis(waited.unsigned_abs()));
            }
            // Pruned meanwhile: nothing to measure.
            Ok(_) => {}
            Err(error) => {
                warn!(run_id, tool_call_id, %error, "reading a call's suspension for the metrics failed")
            }
        }
    });
}

/// Counts a cancelled run under its agent, which the cancel itself does not read.
pub(super) fn cancelled(inner: &Arc<Shared>, run_id: &str) {
    if !inner.config.metrics {
        return;
    }
    let task_inner = Arc::clone(inner);
    let run_id = run_id.to_owned();
    inner.tasks.spawn(async move {
        match task_inner.store.get_run(&run_id, Tenancy::Any).await {
            Ok(Some(run)) => crate::metrics::run_finished(&run.agent_id, RunStatus::Cancelled),
            // Pruned meanwhile: the metric misses one run.
            Ok(None) => {}
            Err(error) => {
                warn!(run_id, %error, "reading a cancelled run's agent for the metrics failed")
            }
        }
    });
}
