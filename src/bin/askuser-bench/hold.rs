//! The hold: runs driven to suspension and left waiting, at each size of the plan the time it
//! took, the server's RSS, the store's size and a new feed's snapshot; then every run answered.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use rand::seq::IndexedRandom;

use crate::BenchError;
use crate::scenarios::{Plan, cpu_time};
use crate::server::{ServerProcess, StoreKind, StoreSize};
use crate::workload::{self, ASK_USER, Suspension};

/// Figures taken as the held runs reach one of the plan's sizes.
#[derive(Clone, Debug)]
pub struct HoldPoint {
    pub runs: usize,
    /// Time to start these runs and see each suspension committed (since the previous point).
    pub elapsed: Duration,
    pub started: usize,
    /// Server CPU time spent meanwhile.
    pub server_cpu: Duration,
    pub rss_kib: u64,
    /// The anonymous part of the RSS (`RssAnon`): what the server allocated. The rest is mostly
    /// the binary's own pages mapped from its file, which depend on the machine's read-ahead.
    pub anon_kib: u64,
    pub store: StoreSize,
    /// How long a new pending-calls feed took to deliver its whole snapshot (every held call),
    /// the median of [`Plan::snapshots`] feeds, measured up to [`SNAPSHOT_UP_TO`] held runs.
    pub snapshot: Option<Snapshot>,
}

/// A new feed's snapshot, timed.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub elapsed: Duration,
    /// The server's CPU time over it (user + system, 10 ms ticks): steadier than the wall time on
    /// a machine whose neighbours come and go.
    pub server_cpu: Duration,
}

/// How many new feeds' snapshots are timed at each size by default (`--snapshots` for more, e.g.
/// to profile them): one can land on a neighbour's burst.
pub const SNAPSHOTS: usize = 5;

impl Snapshot {
    /// The median of `timed`'s times and of their server CPU times, each on its own.
    fn median(mut timed: Vec<Snapshot>) -> Snapshot {
        timed.sort_by_key(|snapshot| snapshot.elapsed);
        let elapsed = timed[timed.len() / 2].elapsed;
        timed.sort_by_key(|snapshot| snapshot.server_cpu);
        Snapshot {
            elapsed,
            server_cpu: timed[timed.len() / 2].server_cpu,
        }
    }
}

/// The most held runs a feed's snapshot is timed at: past it a snapshot is bulk transfer, not the
/// index's work the target is about.
const SNAPSHOT_UP_TO: usize = 100_000;

impl HoldPoint {
    pub fn starts_per_second(&self) -> f64 {
        self.started as f64 / self.elapsed.as_secs_f64()
    }
}

#[derive(Clone, Debug)]
pub struct Hold {
    pub concurrency: usize,
    pub connections: usize,
    /// New feeds' snapshots timed at each size.
    pub snapshots: usize,
    pub baseline_rss_kib: u64,
    pub points: Vec<HoldPoint>,
    pub answer_elapsed: Duration,
    pub answered: usize,
    pub listed_completed: usize,
    pub listed_suspended: usize,
    pub sampled: usize,
    pub peak_rss_kib: u64,
}

/// Drives runs to suspension and leaves them (their streams closed); at each size of the plan
/// records the time taken, the server's RSS and the store's size. Then answers every run with
/// `ResumeRun` and checks they all completed.
pub(crate) async fn hold(
    binary: &Path,
    dir: &Path,
    kind: &StoreKind,
    plan: &Plan,
) -> Result<Hold, BenchError> {
    let server = ServerProcess::start(binary, dir, kind).await?;
    let clients = server.connect(plan.hold_connections).await?;
    let deadline = Instant::now() + plan.time_limit * 4;
    let baseline_rss_kib = server.rss_kib()?;
    let mut held: Vec<Suspension> = Vec::new();
    let mut points = Vec::new();
    for &size in &plan.hold {
        let count = size.saturating_sub(held.len());
        let started = Instant::now();
        let server_cpu = cpu_time(server.pid())?;
        let suspensions = workload::run_concurrently(
            &clients,
            plan.hold_concurrency,
            count,
            deadline,
            |mut client, _| async move {
                Ok(workload::start_run(&mut client, &ASK_USER)
                    .await?
                    .suspension)
            },
        )
        .await?;
        let elapsed = started.elapsed();
        let server_cpu = cpu_time(server.pid())?.saturating_sub(server_cpu);
        held.extend(suspensions);
        // Let the last closed streams be torn down before reading the RSS.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let snapshot = if held.len() <= SNAPSHOT_UP_TO {
            println!(
                "  {} runs suspended; timing {} new feeds' snapshots",
                held.len(),
                plan.snapshots
            );
            let mut timed = Vec::with_capacity(plan.snapshots);
            for _ in 0..plan.snapshots {
                let cpu_before = cpu_time(server.pid())?;
                let elapsed = workload::feed_snapshot(&mut clients[0].clone(), held.len()).await?;
                let server_cpu = cpu_time(server.pid())?.saturating_sub(cpu_before);
                timed.push(Snapshot {
                    elapsed,
                    server_cpu,
                });
            }
            let times: Vec<String> = timed
                .iter()
                .map(|snapshot| format!("{:.0}", snapshot.elapsed.as_secs_f64() * 1e3))
                .collect();
            println!(
                "  {} new feeds' snapshots of {} calls: {} ms",
                plan.snapshots,
                held.len(),
                times.join(", ")
            );
            Some(Snapshot::median(timed))
        } else {
            None
        };
        let point = HoldPoint {
            runs: held.len(),
            elapsed,
            started: count,
            server_cpu,
            rss_kib: server.rss_kib()?,
            anon_kib: server.anon_kib()?,
            store: server.store_size().await?,
            snapshot,
        };
        println!(
            "  {} runs suspended: {count} starts in {:.1} s = {:.0} starts/s (server CPU {:.0} µs \
             per start); server RSS {:.1} MiB ({:.1} MiB anonymous); store {:.0} bytes/run ({:.1} MiB, and {:.1} MiB of \
             WAL){}",
            point.runs,
            elapsed.as_secs_f64(),
            point.starts_per_second(),
            server_cpu.as_secs_f64() * 1e6 / count.max(1) as f64,
            point.rss_kib as f64 / 1024.0,
            point.anon_kib as f64 / 1024.0,
            point.store.database as f64 / point.runs as f64,
            point.store.database as f64 / 1048576.0,
            point.store.wal as f64 / 1048576.0,
            point.snapshot.map_or_else(String::new, |snapshot| format!(
                "; a new feed's snapshot of {} calls in {:.1} ms (server CPU {:.0} ms)",
                point.runs,
                snapshot.elapsed.as_secs_f64() * 1e3,
                snapshot.server_cpu.as_secs_f64() * 1e3
            )),
        );
        points.push(point);
    }
    let mut client = clients[0].clone();
    let listed_suspended = workload::count_runs(&mut client, pb::RunStatus::Suspended).await?;
    if listed_suspended != held.len() {
        return Err(BenchError::failed(format!(
            "ListRuns shows {listed_suspended} suspended runs, not {}",
            held.len()
        )));
    }
    let held = Arc::new(held);
    let started = Instant::now();
    let answers = Arc::clone(&held);
    let answered = workload::run_concurrently(
        &clients,
        plan.hold_concurrency,
        held.len(),
        deadline,
        move |mut client, index| {
            let answers = Arc::clone(&answers);
            async move { workload::resume_run(&mut client, &answers[index]).await }
        },
    )
    .await?
    .len();
    let answer_elapsed = started.elapsed();
    let listed_completed = workload::count_runs(&mut client, pb::RunStatus::Completed).await?;
    let still_suspended = workload::count_runs(&mut client, pb::RunStatus::Suspended).await?;
    let sample: Vec<&Suspension> = held
        .choose_multiple(&mut rand::rng(), 1000.min(held.len()))
        .collect();
    for suspension in &sample {
        workload::check_completed(&mut client, &suspension.run_id).await?;
    }
    if listed_completed != held.len() || still_suspended != 0 {
        return Err(BenchError::failed(format!(
            "after answering {} runs, ListRuns shows {listed_completed} completed and \
             {still_suspended} suspended",
            held.len()
        )));
    }
    let peak_rss_kib = server.peak_rss_kib()?;
    println!(
        "  answered {answered} runs with ResumeRun in {:.1} s = {:.0} answers/s; ListRuns: \
         {listed_completed} completed, {still_suspended} suspended; GetRun on {} sampled runs: \
         all completed with the expected text; peak RSS {:.1} MiB",
        answer_elapsed.as_secs_f64(),
        answered as f64 / answer_elapsed.as_secs_f64(),
        sample.len(),
        peak_rss_kib as f64 / 1024.0,
    );
    drop(clients);
    server.stop().await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(Hold {
        concurrency: plan.hold_concurrency,
        connections: plan.hold_connections,
        snapshots: plan.snapshots,
        baseline_rss_kib,
        points,
        answer_elapsed,
        answered,
        listed_completed,
        listed_suspended,
        sampled: sample.len(),
        peak_rss_kib,
    })
}
