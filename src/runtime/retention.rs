//! Retention: finished runs are deleted once older than the retention, a batch per transaction;
//! runs that never finish (a question nobody answers and that has no TTL) are cancelled once older
//! than the max run age, and deleted later like any finished run.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use super::ask_user::CANCELLED_RESULT;
use super::{Inner, millis, writes};
use crate::domain::{Principal, SettledBy};
use crate::store::CancelOutcome;

/// Runs deleted per transaction: each holds the store's writer (SQLite) or the rows' locks
/// (PostgreSQL) only briefly, so the commits of live runs go on between the batches of a long
/// prune.
const PRUNE_BATCH: usize = 500;

/// Runs past the max run age read per round trip.
const CANCEL_BATCH: usize = 256;

/// Why a run past the max run age was cancelled.
const MAX_RUN_AGE_REASON: &str = "the run exceeded the server's max run age";

/// Cancels runs past the max run age, then deletes finished runs past the retention; again every
/// prune interval.
pub(super) async fn retention_loop(inner: Arc<Inner>) {
    loop {
        if let Some(max_age) = inner.config.max_run_age {
            cancel_older_than(&inner, max_age).await;
        }
        prune(&inner).await;
        tokio::select! {
            () = tokio::time::sleep(inner.config.prune_interval) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// Cancels the runs still running or suspended that were created longer than `max_age` ago; their
/// followers see `run_cancelled`.
async fn cancel_older_than(inner: &Arc<Inner>, max_age: Duration) {
    let before_ms = inner.store.now_ms().saturating_sub(millis(max_age));
    let mut cancelled = 0_u64;
    loop {
        let runs = match inner.store.unfinished_before(before_ms, CANCEL_BATCH).await {
            Ok(runs) => runs,
            Err(error) => {
                warn!(%error, "looking for runs past the max run age failed");
                break;
            }
        };
        let full = runs.len() == CANCEL_BATCH;
        for run_id in runs {
            if inner.shutdown.is_cancelled() {
                return;
            }
            // The server's own work: whichever tenant the run belongs to.
            let outcome = writes::cancel(
                inner,
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
async fn prune(inner: &Inner) {
    let before_ms = inner
        .store
        .now_ms()
        .saturating_sub(millis(inner.config.retention));
    let mut pruned = 0_u64;
    loop {
        match inner.store.prune_finished(before_ms, PRUNE_BATCH).await {
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
        if inner.shutdown.is_cancelled() {
            break;
        }
        // Whatever queued up meanwhile runs before the next batch.
        tokio::task::yield_now().await;
    }
    if pruned > 0 {
        info!(pruned, "pruned finished runs past retention");
    }
}
