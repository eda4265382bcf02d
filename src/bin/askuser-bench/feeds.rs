//! Fairness of the pending-calls feeds (issue 22): one tenant holds thousands of idle
//! `WatchPendingCalls` feeds open while another tenant's round trips are timed, against the same
//! round trips with no feed open.

use std::path::Path;
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;

use crate::BenchError;
use crate::scenarios::{Percentiles, Plan};
use crate::server::{ServerProcess, StoreKind};
use crate::workload::{self, ASK_USER, RoundTrip};

/// Feeds over one connection: well under the server's streams per connection.
const FEEDS_PER_CONNECTION: usize = 100;

/// The figures of the scenario.
#[derive(Clone, Debug)]
pub struct Feeds {
    pub feeds: usize,
    pub connections: usize,
    pub runs: usize,
    pub open_elapsed: Duration,
    /// Another tenant's round trips with no feed open.
    pub without: Percentiles,
    pub without_resume: Percentiles,
    /// The same with every feed open.
    pub with: Percentiles,
    pub with_resume: Percentiles,
}

impl Feeds {
    /// Round trip p50 with the feeds open ÷ without.
    pub fn slowdown(&self) -> f64 {
        self.with.p50.as_secs_f64() / self.without.p50.as_secs_f64().max(1e-9)
    }
}

async fn timed_round_trips(
    client: &mut workload::Client,
    key: &str,
    runs: usize,
) -> Result<Vec<RoundTrip>, BenchError> {
    let mut trips = Vec::with_capacity(runs);
    for _ in 0..runs {
        trips.push(workload::round_trip_as(client, &ASK_USER, Some(key)).await?);
    }
    Ok(trips)
}

/// Opens one idle feed of `key`'s tenant and reads it to the end of its snapshot.
async fn idle_feed(
    mut client: workload::Client,
    key: String,
) -> Result<tonic::Streaming<pb::WatchPendingCallsResponse>, BenchError> {
    let request = workload::authorized(pb::WatchPendingCallsRequest::default(), Some(&key))?;
    let mut feed = client.watch_pending_calls(request).await?.into_inner();
    workload::read_snapshot(&mut feed).await?;
    Ok(feed)
}

/// Tenant `busy` times `plan.feed_runs` sequential round trips; tenant `idle` opens
/// `plan.feeds` feeds; `busy` times as many round trips again.
pub async fn idle_feeds(
    binary: &Path,
    dir: &Path,
    kind: &StoreKind,
    plan: &Plan,
) -> Result<Feeds, BenchError> {
    let server = ServerProcess::start_with(binary, dir, kind, &["--auth", "keys"]).await?;
    let busy = server.create_key(binary, "busy")?;
    let idle = server.create_key(binary, "idle")?;
    let connections = plan.feeds.div_ceil(FEEDS_PER_CONNECTION);
    let mut busy_client = server.connect(1).await?.remove(0);
    let feed_clients = server.connect(connections).await?;
    let deadline = Instant::now() + plan.time_limit;

    timed_round_trips(&mut busy_client, &busy, plan.warmup_runs).await?;
    let without = timed_round_trips(&mut busy_client, &busy, plan.feed_runs).await?;
    println!(
        "  no feed open: round trip p50 {:.3} ms",
        without_p50(&without)
    );

    let started = Instant::now();
    let idle_key = idle.clone();
    let feeds = workload::run_concurrently(
        &feed_clients,
        connections,
        plan.feeds,
        deadline,
        move |client, _| idle_feed(client, idle_key.clone()),
    )
    .await?;
    let open_elapsed = started.elapsed();
    println!(
        "  {} idle feeds of another tenant open over {connections} connections in {:.1} s",
        feeds.len(),
        open_elapsed.as_secs_f64()
    );
    let with = timed_round_trips(&mut busy_client, &busy, plan.feed_runs).await?;
    let figures = Feeds {
        feeds: feeds.len(),
        connections,
        runs: plan.feed_runs,
        open_elapsed,
        without: Percentiles::of(without.iter().map(|t| t.total).collect()),
        without_resume: Percentiles::of(without.iter().map(|t| t.resume).collect()),
        with: Percentiles::of(with.iter().map(|t| t.total).collect()),
        with_resume: Percentiles::of(with.iter().map(|t| t.resume).collect()),
    };
    println!(
        "  {} feeds open: round trip p50 {:.3} ms ({:.2}x of none)",
        figures.feeds,
        figures.with.p50.as_secs_f64() * 1000.0,
        figures.slowdown()
    );
    drop(feeds);
    drop(feed_clients);
    drop(busy_client);
    server.stop().await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(figures)
}

fn without_p50(trips: &[RoundTrip]) -> f64 {
    Percentiles::of(trips.iter().map(|t| t.total).collect())
        .p50
        .as_secs_f64()
        * 1000.0
}
