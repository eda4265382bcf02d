//! Figures for the metrics that the store's outcomes carry: how long a settled call waited, and
//! the agent of a cancelled run. Kept only when metrics are ([`RuntimeConfig::metrics`]).
//!
//! [`RuntimeConfig::metrics`]: super::RuntimeConfig::metrics

use std::time::Duration;

use super::Inner;
use crate::domain::RunStatus;
use crate::store::ToolCallRecord;

/// Records how long `call` (as it was when settled) waited, from its last suspension to now.
pub(super) fn settled_by_someone(inner: &Inner, call: &ToolCallRecord) {
    if !inner.config.metrics {
        return;
    }
    // A call stored before its suspension time was: nothing to measure.
    if let Some(suspended_ms) = call.suspended_ms {
        let waited = inner.store.now_ms().saturating_sub(suspended_ms).max(0);
        crate::metrics::answered(
            call.suspension.kind,
            Duration::from_millis(waited.unsigned_abs()),
        );
    }
}

/// Counts a cancelled run under its agent.
pub(super) fn cancelled(inner: &Inner, agent_id: &str) {
    if inner.config.metrics {
        crate::metrics::run_finished(agent_id, RunStatus::Cancelled);
    }
}
