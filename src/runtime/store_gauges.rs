//! The gauges read from the store: runs not finished and calls waiting, as every replica sees them.
//!
//! Counted from the store rather than kept in memory, so that they are right after a restart and
//! the same on every replica (take `max`, not `sum`, across replicas): each replica runs a few
//! small counting queries every [`REFRESH_INTERVAL`].

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::domain::{RunStatus, SuspendKind};
use crate::metrics;
use crate::store::RunStore;

/// How often the gauges are read from the store.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// Reads the gauges from the store now and every [`REFRESH_INTERVAL`]; a failed read leaves them
/// as they were (and is logged).
pub async fn refresh_store_gauges(store: Arc<dyn RunStore>) {
    let mut ticks = tokio::time::interval(REFRESH_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now_ms = store.now_ms();
        let counts = match store.pending_counts(now_ms).await {
            Ok(counts) => counts,
            Err(error) => {
                warn!(%error, "reading the metrics' pending counts failed");
                continue;
            }
        };
        // Every status and kind is set, to 0 when none is counted, so a gauge drops to 0 rather
        // than keep its last value.
        for status in [RunStatus::Running, RunStatus::Suspended] {
            let count = counts.runs.get(&status).copied().unwrap_or(0);
            metrics::runs_unfinished(status, count);
        }
        for kind in [
            SuspendKind::Question,
            SuspendKind::Approval,
            SuspendKind::ClientTool,
        ] {
            let count = counts.calls.get(&kind).copied().unwrap_or(0);
            let waited_ms = counts
                .oldest_call_ms
                .get(&kind)
                .map_or(0, |since| now_ms.saturating_sub(*since).max(0));
            metrics::calls_pending(kind, count, waited_ms);
        }
        metrics::webhook_backlog(counts.webhooks_due);
    }
}
