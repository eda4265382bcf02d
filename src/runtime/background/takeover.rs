//! Takeover: working runs that no executor holds are kicked here. At start these are the runs that
//! were working when the server stopped; later, runs whose executor (on any replica) died and whose
//! lease expired.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::runtime::shared::Shared;

/// Runs looked for per round trip.
const BATCH: usize = 256;

impl Shared {
    /// Looks for working runs without a live lease every [`period`] and kicks them, spread over
    /// the period.
    pub(in crate::runtime) async fn takeover_loop(self: Arc<Self>) {
        let period = period(self.config.lease_ttl);
        loop {
            match self.store.unleased_runs(self.store.now_ms(), BATCH).await {
                Ok(runs) => {
                    if !runs.is_empty() {
                        crate::metrics::lease_takeovers(runs.len());
                        info!(
                            runs = runs.len(),
                            "taking over working runs without an executor"
                        );
                    }
                    let gap = gap(period, runs.len());
                    for run_id in runs {
                        self.kick(&run_id, None);
                        tokio::select! {
                            () = tokio::time::sleep(gap) => {}
                            () = self.shutdown.cancelled() => return,
                        }
                    }
                }
                Err(error) => warn!(%error, "looking for runs to take over failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                () = self.shutdown.cancelled() => return,
            }
        }
    }
}

/// How often runs to take over are looked for: four times per lease, so a run whose executor died
/// waits little past its lease, but not more often than every 100 ms.
fn period(lease_ttl: Duration) -> Duration {
    (lease_ttl / 4).max(Duration::from_millis(100))
}

/// The pause between two takeovers of one batch of `runs`: spread over the period, so that after a
/// restart with many working runs their steps (and model requests) do not all start at once.
fn gap(period: Duration, runs: usize) -> Duration {
    period / u32::try_from(runs).unwrap_or(u32::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takeovers_of_a_batch_are_spread_over_the_period() {
        let period = Duration::from_secs(1);
        assert_eq!(gap(period, 4), Duration::from_millis(250));
        assert_eq!(gap(period, 1), period);
        // An empty batch takes nothing over; the gap must still be defined (no division by zero).
        assert_eq!(gap(period, 0), period);
        assert_eq!(gap(period, 1000), Duration::from_millis(1));
    }

    #[test]
    fn runs_are_looked_for_four_times_per_lease_but_not_too_often() {
        assert_eq!(period(Duration::from_secs(30)), Duration::from_millis(7500));
        assert_eq!(period(Duration::from_secs(1)), Duration::from_millis(250));
        // A tiny lease (tests) does not turn the loop into a busy one.
        assert_eq!(
            period(Duration::from_millis(40)),
            Duration::from_millis(100)
        );
        assert_eq!(period(Duration::ZERO), Duration::from_millis(100));
    }
}
