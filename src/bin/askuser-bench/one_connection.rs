//! A busy connection kept (issue 22): many `RunAgent` round trips, several in flight at a time,
//! all over ONE HTTP/2 connection, as a backend with one channel makes them. Before, the server's
//! own resets of the streams it ended tore such a connection down after some thousands of runs
//! (GOAWAY ENHANCE_YOUR_CALM "too_many_internal_resets"); every failure is counted, not retried.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::BenchError;
use crate::scenarios::{Percentiles, Plan};
use crate::server::{ServerProcess, StoreKind};
use crate::workload::{self, ASK_USER};

/// Round trips in flight at once on the connection.
pub const IN_FLIGHT: usize = 16;

/// The figures of the scenario.
#[derive(Clone, Debug)]
pub struct OneConnection {
    pub runs: usize,
    pub concurrency: usize,
    pub elapsed: Duration,
    pub completed: usize,
    pub failed: usize,
    pub first_error: Option<String>,
    pub total: Percentiles,
}

impl OneConnection {
    pub fn rate(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64()
    }
}

pub async fn one_connection(
    binary: &Path,
    dir: &Path,
    kind: &StoreKind,
    plan: &Plan,
) -> Result<OneConnection, BenchError> {
    let server = ServerProcess::start(binary, dir, kind).await?;
    let client = server.connect(1).await?.remove(0);
    let runs = plan.one_connection_runs;
    // A long run: as long as the hold may take.
    let deadline = Instant::now() + plan.time_limit * 4;
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let mut client = client.clone();
        let (next, failed) = (Arc::clone(&next), Arc::clone(&failed));
        workers.spawn(async move {
            let mut totals = Vec::new();
            let mut first_error = None;
            while next.fetch_add(1, Ordering::Relaxed) < runs && Instant::now() < deadline {
                match workload::round_trip(&mut client, &ASK_USER).await {
                    Ok(trip) => totals.push(trip.total),
                    Err(error) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        first_error.get_or_insert_with(|| error.to_string());
                    }
                }
            }
            (totals, first_error)
        });
    }
    let progress = {
        let next = Arc::clone(&next);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(30)).await;
                println!(
                    "  {} round trips begun",
                    next.load(Ordering::Relaxed).min(runs)
                );
            }
        })
    };
    let mut totals = Vec::with_capacity(runs);
    let mut first_error = None;
    while let Some(worker) = workers.join_next().await {
        let (done, error) =
            worker.map_err(|error| BenchError::failed(format!("worker task: {error}")))?;
        totals.extend(done);
        if first_error.is_none() {
            first_error = error;
        }
    }
    progress.abort();
    let figures = OneConnection {
        runs,
        concurrency: IN_FLIGHT,
        elapsed: started.elapsed(),
        completed: totals.len(),
        failed: failed.load(Ordering::Relaxed),
        first_error,
        total: Percentiles::of(totals),
    };
    println!(
        "  {} of {} round trips over one connection in {:.1} s ({:.0}/s), {} failed{}",
        figures.completed,
        figures.runs,
        figures.elapsed.as_secs_f64(),
        figures.rate(),
        figures.failed,
        figures
            .first_error
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    );
    drop(client);
    server.stop().await?;
    let _ = std::fs::remove_dir_all(dir);
    if figures.failed > 0 || figures.completed < runs {
        return Err(BenchError::failed(format!(
            "{} of {runs} round trips over one connection failed or were not made",
            runs - figures.completed
        )));
    }
    Ok(figures)
}
