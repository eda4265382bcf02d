//! The gauges read from the store: runs not finished and calls waiting, as every replica sees them.
//!
//! Counted from the store rather than kept in memory, so that they are right after a restart and
//! the same on every replica (take `max`, not `sum`, across replicas): each replica runs a few
//! small counting queries every [`REFRESH_INTERVAL`].

use std::sync::Arc;
use std::time::Duration;

use ::metrics::gauge;
use tracing::warn;

use super::{CALLS_PENDING, CALLS_PENDING_OLDEST, RUNS_UNFINISHED};
use crate::domain::{RunStatus, SuspendKind};
use crate::store::RunStore;

/// How often the gauges are read from the store.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// Reads the gauges from the store now and every [`REFRESH_INTERVAL`]; a failed read leaves them
/// as they were (and is logged).
pub async fn refresh_loop(store: Arc<dyn RunStore>) {
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
            gauge!(RUNS_UNFINISHED, "status" => status.as_str()).set(count as f64);
        }
        for kind in [
            SuspendKind::Question,
            SuspendKind::Approval,
            SuspendKind::ClientTool,
        ] {
            let count = counts.calls.get(&kind).copied().unwrap_or(0);
            gauge!(CALLS_PENDING, "kind" => kind.as_str()).set(count as f64);
            let waited_ms = counts
                .oldest_call_ms
                .get(&kind)
                .map_or(0, |since| now_ms.saturating_sub(*since).max(0));
            gauge!(CALLS_PENDING_OLDEST, "kind" => kind.as_str()).set(waited_ms as f64 / 1000.0);
        }
        super::webhook_backlog(counts.webhooks_due);
    }
}
