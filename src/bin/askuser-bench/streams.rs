//! Idle open streams: thousands of `RunAgent` streams each waiting on its run's question, the
//! server's RSS with all of them open, then every run answered on its own stream.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::BenchError;
use crate::scenarios::Plan;
use crate::server::{ServerProcess, StoreKind};
use crate::workload::{self, ASK_USER, OpenRun};

/// The figures of the scenario.
#[derive(Clone, Debug)]
pub struct Streams {
    pub streams: usize,
    pub connections: usize,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub open_elapsed: Duration,
    pub answered: usize,
}

impl Streams {
    pub fn bytes_per_stream(&self) -> f64 {
        (self.rss_after_kib.saturating_sub(self.rss_before_kib) * 1024) as f64 / self.streams as f64
    }
}

/// Opens `plan.streams` RunAgent streams that each wait on their run's question, measures the
/// server's RSS with all of them open, then answers every run on its stream.
pub async fn open_streams(
    binary: &Path,
    dir: &Path,
    kind: &StoreKind,
    plan: &Plan,
) -> Result<Streams, BenchError> {
    let server = ServerProcess::start(binary, dir, kind).await?;
    let connections = plan.streams.div_ceil(plan.streams_per_connection);
    let clients = server.connect(connections).await?;
    let deadline = Instant::now() + plan.time_limit;
    // The same work once, with the streams closed again, so the RSS before counts warmed-up
    // connections, allocator and caches, not the streams' first-time costs.
    workload::run_concurrently(
        &clients,
        connections,
        connections * 2,
        deadline,
        |mut client, _| async move { workload::round_trip(&mut client, &ASK_USER).await },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before_kib = server.rss_kib()?;
    let started = Instant::now();
    let open: Vec<OpenRun> = workload::run_concurrently(
        &clients,
        connections,
        plan.streams,
        deadline,
        |mut client, _| async move { workload::start_run(&mut client, &ASK_USER).await },
    )
    .await?;
    let open_elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after_kib = server.rss_kib()?;
    let figures = Streams {
        streams: open.len(),
        connections,
        rss_before_kib,
        rss_after_kib,
        open_elapsed,
        answered: 0,
    };
    println!(
        "  {} streams open over {connections} connections in {:.1} s; server RSS {:.1} MiB -> \
         {:.1} MiB = {:.0} bytes per stream",
        figures.streams,
        open_elapsed.as_secs_f64(),
        rss_before_kib as f64 / 1024.0,
        rss_after_kib as f64 / 1024.0,
        figures.bytes_per_stream(),
    );
    // Each stream is answered on itself: the answer goes up the open stream, and the run's
    // completion comes down it.
    let open: Arc<Vec<Mutex<Option<OpenRun>>>> =
        Arc::new(open.into_iter().map(|run| Mutex::new(Some(run))).collect());
    let answered = workload::run_concurrently(
        &clients,
        connections,
        open.len(),
        deadline,
        move |_, index| {
            let run = open[index].lock().ok().and_then(|mut run| run.take());
            async move {
                match run {
                    Some(run) => run.answer().await,
                    None => Err(BenchError::failed("an open stream was answered twice")),
                }
            }
        },
    )
    .await?
    .len();
    println!("  answered all {answered} runs on their open streams");
    drop(clients);
    server.stop().await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(Streams {
        answered,
        ..figures
    })
}
