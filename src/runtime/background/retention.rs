//! Retention: finished runs are deleted once older than the retention, a batch per transaction;
//! runs that never finish (a question nobody answers and that has no TTL) are cancelled once older
//! than the max run age, and deleted later like any finished run.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::domain::{Principal, SettledBy};
use crate::runtime::ask_user::CANCELLED_RESULT;
use crate::runtime::millis;
use crate::runtime::shared::Shared;
use crate::store::CancelOutcome;

/// Runs deleted per transaction: each holds the store's writer (SQLite) or the rows' locks
/// (PostgreSQL) only briefly, so the commits of live runs go on between the batches of a long
/// prune.
const PRUNE_BATCH: usize = 500;

/// Runs past the max run age read per round trip.
const CANCEL_BATCH: usize = 256;

/// Why a run past the max run age was cancelled.
const MAX_RUN_AGE_REASON: &str = "the run exceeded the server's max run age";

impl Shared {
    /// Cancels runs past the max run age, then deletes finished runs past the retention; again
    /// every prune interval.
    pub(in crate::runtime) async fn retention_loop(self: Arc<Self>) {
        loop {
            if let Some(max_age) = self.config.max_run_age {
                self.cancel_older_than(max_age).await;
            }
            self.prune().await;
            tokio::select! {
                () = tokio::time::sleep(self.config.prune_interval) => {}
                () = self.shutdown.cancelled() => return,
            }
        }
    }

    /// Cancels the runs still running or suspended that were created longer than `max_age` ago;
    /// their followers see `run_cancelled`.
    async fn cancel_older_than(self: &Arc<Self>, max_age: Duration) {
        let before_ms = self.store.now_ms().saturating_sub(millis(max_age));
        let mut cancelled = 0_u64;
        loop {
            let runs = match self.store.unfinished_before(before_ms, CANCEL_BATCH).await {
                Ok(runs) => runs,
                Err(error) => {
                    warn!(%error, "looking for runs past the max run age failed");
                    break;
                }
            };
            let full = runs.len() == CANCEL_BATCH;
            for run_id in runs {
                if self.shutdown.is_cancelled() {
                    return;
                }
                // The server's own work: whichever tenant the run belongs to.
                let outcome = self.cancel(
                    run_id.clone(),
                    None,
                    MAX_RUN_AGE_REASON.to_owned(),
                    CANCELLED_RESULT,
                    SettledBy::from(&Principal::server()),
                );
                match outcome.await {
                    Ok(CancelOutcome::Cancelled { .. }) => cancelled += 1,
                    // Ended or deleted meanwhile.
                    Ok(_) => {}
                    Err(error) => {
                        warn!(%error, run_id, "cancelling a run past the max run age failed");
                        // Read again next interval rather than meet the same run at once.
                        return;
                    }
                }
            }
            if !full {
                break;
            }
        }
        if cancelled > 0 {
            info!(cancelled, "cancelled runs past the max run age");
        }
    }

    /// Deletes finished runs past the retention, one batch per transaction until none is left.
    async fn prune(&self) {
        let before_ms = self
            .store
            .now_ms()
            .saturating_sub(millis(self.config.retention));
        let mut pruned = 0_u64;
        loop {
            match self.store.prune_finished(before_ms, PRUNE_BATCH).await {
                Ok(count) => {
                    pruned += count;
                    if count < PRUNE_BATCH as u64 {
                        break;
                    }
                }
                Err(error) => {
                    warn!(%error, "pruning finished runs failed");
                    break;
                }
            }
            if self.shutdown.is_cancelled() {
                break;
            }
            // Whatever queued up meanwhile runs before the next batch.
            tokio::task::yield_now().await;
        }
        if pruned > 0 {
            info!(pruned, "pruned finished runs past retention");
        }
    }
}
