//! The scenarios: sequential round trips and round trips at several concurrencies (each repeat in
//! turn with the transport floor's), and the figures every scenario shares; the others have a file
//! each (hold.rs, streams.rs, features.rs, feeds.rs, one_connection.rs). Each starts its own
//! server with a fresh store.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::BenchError;
pub use crate::hold::Hold;
use crate::hold::hold;
use crate::server::{Launch, StoreKind};
use crate::workload::{self, APPROVAL, ASK_USER, CLIENT_TOOL, Client, RoundTrip, Workload};

/// The scenarios of the bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    Sequential,
    /// Sequential round trips through a question, a client tool and an approval, side by side.
    Tools,
    Concurrency,
    Hold,
    Streams,
    /// Another tenant's round trips with thousands of idle pending-calls feeds open, and without.
    Feeds,
    /// Many round trips, 16 in flight, over one connection (`--one-connection-runs`).
    OneConnection,
    /// The sequential and concurrent round trips on a bare tonic service (the transport floor,
    /// src/bin/askuser-bench/floor.rs), which every round-trip rate is shown against: one repeat
    /// of the floor in turn with each repeat of a store's sequential and concurrent round trips.
    Floor,
    /// Sequential round trips with `--auth keys`, and with metrics kept, against the defaults,
    /// interleaved repeat by repeat.
    Features,
}

const ALL_SCENARIOS: [Scenario; 9] = [
    Scenario::Floor,
    Scenario::Sequential,
    Scenario::Features,
    Scenario::Tools,
    Scenario::Concurrency,
    Scenario::Hold,
    Scenario::Streams,
    Scenario::Feeds,
    Scenario::OneConnection,
];

/// The round trips the tools scenario compares, the ask_user one first.
pub const TOOL_WORKLOADS: [Workload; 3] = [ASK_USER, CLIENT_TOOL, APPROVAL];

/// How much of each scenario to run on one store.
#[derive(Clone, Debug)]
pub struct Plan {
    pub scenarios: Vec<Scenario>,
    /// Times each throughput scenario is run (on a fresh server each time); figures are medians.
    pub repeats: usize,
    /// Repeats of the features scenario, each running the defaults and each feature once: a
    /// feature's cost is a few percent, less than the machine's drift between repeats, so it
    /// takes more pairs than a rate does.
    pub feature_repeats: usize,
    pub warmup_runs: usize,
    pub sequential_runs: usize,
    pub concurrency_levels: Vec<usize>,
    pub concurrent_runs: usize,
    /// Cumulative sizes of the hold: figures are taken as the held runs reach each one.
    pub hold: Vec<usize>,
    pub hold_concurrency: usize,
    pub hold_connections: usize,
    /// New feeds' snapshots timed at each size of the hold up to 100,000 runs; the median is
    /// reported.
    pub snapshots: usize,
    pub streams: usize,
    pub streams_per_connection: usize,
    /// Idle pending-calls feeds one tenant opens, and another tenant's round trips timed with
    /// them open and without.
    pub feeds: usize,
    pub feed_runs: usize,
    /// Round trips over one connection.
    pub one_connection_runs: usize,
    /// The most time any one scenario may take.
    pub time_limit: Duration,
}

impl Plan {
    pub fn sqlite(quick: bool) -> Self {
        if quick {
            return Plan {
                scenarios: ALL_SCENARIOS.to_vec(),
                repeats: 1,
                feature_repeats: 1,
                warmup_runs: 200,
                sequential_runs: 2_000,
                concurrency_levels: vec![16, 64, 256],
                concurrent_runs: 4_000,
                hold: vec![20_000],
                hold_concurrency: 256,
                hold_connections: 16,
                snapshots: crate::hold::SNAPSHOTS,
                streams: 2_000,
                streams_per_connection: 100,
                feeds: 1_000,
                feed_runs: 500,
                one_connection_runs: 50_000,
                time_limit: Duration::from_secs(300),
            };
        }
        Plan {
            scenarios: ALL_SCENARIOS.to_vec(),
            repeats: 5,
            feature_repeats: 9,
            warmup_runs: 500,
            sequential_runs: 10_000,
            concurrency_levels: vec![16, 64, 256],
            concurrent_runs: 20_000,
            hold: vec![100_000, 1_000_000],
            hold_concurrency: 256,
            hold_connections: 16,
            snapshots: crate::hold::SNAPSHOTS,
            streams: 10_000,
            streams_per_connection: 100,
            feeds: 5_000,
            feed_runs: 2_000,
            one_connection_runs: 1_000_000,
            time_limit: Duration::from_secs(600),
        }
    }

    /// PostgreSQL commits wait for an fsync, so its scenarios run fewer runs.
    pub fn postgres(quick: bool) -> Self {
        if quick {
            return Plan {
                repeats: 1,
                warmup_runs: 100,
                sequential_runs: 500,
                concurrent_runs: 2_000,
                hold: vec![10_000],
                feed_runs: 200,
                one_connection_runs: 10_000,
                ..Plan::sqlite(true)
            };
        }
        Plan {
            repeats: 3,
            feature_repeats: 3,
            warmup_runs: 200,
            sequential_runs: 2_000,
            concurrent_runs: 10_000,
            hold: vec![100_000],
            feed_runs: 500,
            one_connection_runs: 100_000,
            ..Plan::sqlite(false)
        }
    }
}

/// Latency percentiles, nearest rank.
#[derive(Clone, Copy, Debug, Default)]
pub struct Percentiles {
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
}

impl Percentiles {
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let rank = |fraction: f64| {
            let index = ((fraction * samples.len() as f64).ceil() as usize).saturating_sub(1);
            samples.get(index).copied().unwrap_or_default()
        };
        Percentiles {
            p50: rank(0.50),
            p99: rank(0.99),
            p999: rank(0.999),
            max: samples.last().copied().unwrap_or_default(),
        }
    }
}

/// One measured batch of round trips.
#[derive(Clone, Debug)]
pub struct Throughput {
    pub runs: usize,
    pub elapsed: Duration,
    pub total: Percentiles,
    pub resume: Percentiles,
    /// CPU time (user + system) the server and the bench used meanwhile.
    pub server_cpu: Duration,
    pub client_cpu: Duration,
    /// CPU time PostgreSQL's processes used meanwhile, when it runs on this machine.
    pub database_cpu: Option<Duration>,
    /// Frames a round trip received before the answer and after it.
    pub frames: (usize, usize),
}

impl Throughput {
    pub fn rate(&self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64()
    }

    /// Server CPU time per round trip.
    pub fn server_cpu_per_run(&self) -> Duration {
        self.server_cpu / self.runs.max(1) as u32
    }

    /// Bench (client) CPU time per round trip.
    pub fn client_cpu_per_run(&self) -> Duration {
        self.client_cpu / self.runs.max(1) as u32
    }

    /// PostgreSQL's CPU time per round trip, when measured.
    pub fn database_cpu_per_run(&self) -> Option<Duration> {
        self.database_cpu.map(|cpu| cpu / self.runs.max(1) as u32)
    }

    /// The server's, the bench's and (when measured) PostgreSQL's CPU time per round trip.
    pub fn all_cpu_per_run(&self) -> Duration {
        self.server_cpu_per_run()
            + self.client_cpu_per_run()
            + self.database_cpu_per_run().unwrap_or_default()
    }
}

/// The same scenario repeated; figures are the medians over the repeats.
#[derive(Clone, Debug)]
pub struct Repeated {
    pub concurrency: usize,
    pub connections: usize,
    pub repeats: Vec<Throughput>,
}

impl Repeated {
    /// The median over the repeats of `figure`.
    pub fn median(&self, figure: impl Fn(&Throughput) -> f64) -> f64 {
        let mut values: Vec<f64> = self.repeats.iter().map(figure).collect();
        values.sort_by(f64::total_cmp);
        median_of_sorted(&values)
    }

    pub fn rate(&self) -> f64 {
        self.median(Throughput::rate)
    }

    /// Whether PostgreSQL's CPU time was read in every repeat.
    pub fn database_cpu_measured(&self) -> bool {
        self.repeats.iter().all(|t| t.database_cpu.is_some())
    }

    /// Median over repeats of a latency figure, in milliseconds.
    pub fn ms(&self, figure: impl Fn(&Throughput) -> Duration) -> f64 {
        self.median(|t| figure(t).as_secs_f64() * 1000.0)
    }

    /// `figure` of these repeats as a share of `base`'s: the median over the repeats of each
    /// repeat's ratio to the repeat of `base` run in turn with it. A ratio of the two medians
    /// would set a repeat on the machine's slow minutes against another on its fast ones: the
    /// machine's speed changes from minute to minute by more than the targets' margins. Without
    /// as many repeats on each side (no pairs), the ratio of the medians.
    pub fn share_of(&self, base: &Repeated, figure: impl Fn(&Throughput) -> f64) -> f64 {
        if self.repeats.len() != base.repeats.len() || self.repeats.is_empty() {
            return self.median(&figure) / base.median(&figure);
        }
        let mut ratios: Vec<f64> = self
            .repeats
            .iter()
            .zip(&base.repeats)
            .map(|(ours, base)| figure(ours) / figure(base))
            .collect();
        ratios.sort_by(f64::total_cmp);
        median_of_sorted(&ratios)
    }
}

/// Every figure of one store.
#[derive(Clone, Debug)]
pub struct StoreFigures {
    pub sequential: Option<Repeated>,
    /// Sequential round trips of each of [`TOOL_WORKLOADS`], in that order.
    pub tools: Vec<Repeated>,
    pub concurrent: Vec<Repeated>,
    pub hold: Option<Hold>,
    pub streams: Option<crate::streams::Streams>,
    pub feeds: Option<crate::feeds::Feeds>,
    pub one_connection: Option<crate::one_connection::OneConnection>,
    pub features: Option<crate::features::Features>,
    /// The transport floor, each repeat run in turn with one of this store's (sequential and
    /// at each concurrency level), so that each ratio compares the two at one speed of the
    /// machine.
    pub floor: Option<FloorFigures>,
}

impl StoreFigures {
    /// The ask_user round trips at `concurrency` (1: sequential).
    pub fn at(&self, concurrency: usize) -> Option<&Repeated> {
        at_concurrency(self.sequential.as_ref(), &self.concurrent, concurrency)
    }
}

/// The sequential figures at concurrency 1, else those at `concurrency` among `concurrent`.
fn at_concurrency<'a>(
    sequential: Option<&'a Repeated>,
    concurrent: &'a [Repeated],
    concurrency: usize,
) -> Option<&'a Repeated> {
    if concurrency == 1 {
        return sequential;
    }
    concurrent.iter().find(|c| c.concurrency == concurrency)
}

/// The transport floor's figures: sequential, and at each concurrency level of the plan.
#[derive(Clone, Debug, Default)]
pub struct FloorFigures {
    pub sequential: Option<Repeated>,
    pub concurrent: Vec<Repeated>,
}

impl FloorFigures {
    /// The floor's figures at `concurrency` (1: sequential).
    pub fn at(&self, concurrency: usize) -> Option<&Repeated> {
        at_concurrency(self.sequential.as_ref(), &self.concurrent, concurrency)
    }
}

/// The median of sorted `values` (0 if there are none).
pub(crate) fn median_of_sorted(values: &[f64]) -> f64 {
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// User + system CPU time of a process so far, from /proc/PID/stat (in clock ticks of 10 ms).
pub(crate) fn cpu_time(pid: u32) -> Result<Duration, BenchError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |index: usize| fields.get(index).and_then(|v| v.parse::<u64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => Ok(Duration::from_millis((user + system) * 10)),
        _ => Err(BenchError::failed(format!("cannot read /proc/{pid}/stat"))),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

pub(crate) fn print_throughput(label: &str, figures: &Throughput) {
    println!(
        "  {label}: {} runs in {:.2} s = {:.0} round trips/s; resume p50 {:.3} ms p99 {:.3} ms \
         p99.9 {:.3} ms max {:.3} ms; round trip p50 {:.3} ms p99 {:.3} ms; CPU per round \
         trip: server {:.0} µs, bench {:.0} µs{}; frames {} before the answer, {} after",
        figures.runs,
        figures.elapsed.as_secs_f64(),
        figures.rate(),
        ms(figures.resume.p50),
        ms(figures.resume.p99),
        ms(figures.resume.p999),
        ms(figures.resume.max),
        ms(figures.total.p50),
        ms(figures.total.p99),
        figures.server_cpu_per_run().as_secs_f64() * 1e6,
        figures.client_cpu_per_run().as_secs_f64() * 1e6,
        figures
            .database_cpu_per_run()
            .map(|cpu| format!(", PostgreSQL {:.0} µs", cpu.as_secs_f64() * 1e6))
            .unwrap_or_default(),
        figures.frames.0,
        figures.frames.1,
    );
}

/// Runs every scenario of `plan` on a store of `kind`.
pub async fn run_all(
    binary: &Path,
    work_dir: &Path,
    kind: &StoreKind,
    plan: &Plan,
) -> Result<StoreFigures, BenchError> {
    let store = kind.name();
    let runs = |scenario| plan.scenarios.contains(&scenario);
    let server = Launch::Server {
        binary,
        kind,
        flags: &[],
        key_tenant: None,
    };
    let mut figures = StoreFigures {
        sequential: None,
        tools: Vec::new(),
        concurrent: Vec::new(),
        hold: None,
        streams: None,
        feeds: None,
        one_connection: None,
        features: None,
        floor: None,
    };
    let with_floor = runs(Scenario::Floor);
    let mut floor = FloorFigures::default();
    if runs(Scenario::Sequential) {
        println!(
            "== {store}: sequential round trips ({} runs x {} repeats){}",
            plan.sequential_runs,
            plan.repeats,
            in_turns_heading(with_floor)
        );
        let (ours, base) = in_turns(server, with_floor, work_dir, plan, Shape::SEQUENTIAL).await?;
        figures.sequential = Some(ours);
        floor.sequential = base;
    }
    if runs(Scenario::Tools) {
        for workload in &TOOL_WORKLOADS {
            println!(
                "== {store}: sequential {} round trips ({} runs x {} repeats)",
                workload.name, plan.sequential_runs, plan.repeats
            );
            let shape = Shape {
                workload,
                ..Shape::SEQUENTIAL
            };
            figures
                .tools
                .push(repeated(server, work_dir, plan, shape).await?);
        }
    }
    if runs(Scenario::Features) {
        println!(
            "== {store}: sequential round trips with the defaults, --auth keys and metrics \
             ({} runs x {} repeats each, interleaved)",
            plan.sequential_runs, plan.feature_repeats
        );
        figures.features = Some(crate::features::features(binary, work_dir, kind, plan).await?);
    }
    if runs(Scenario::Concurrency) {
        for (ours, base) in at_each_concurrency(server, with_floor, store, work_dir, plan).await? {
            figures.concurrent.push(ours);
            floor.concurrent.extend(base);
        }
    }
    if with_floor && !runs(Scenario::Sequential) && !runs(Scenario::Concurrency) {
        // The floor alone (`--only floor`): its figures, with nothing to set beside them.
        println!("== the transport floor alone: sequential and at each concurrency level");
        let alone = Launch::Floor;
        floor.sequential = Some(
            in_turns(alone, false, work_dir, plan, Shape::SEQUENTIAL)
                .await?
                .0,
        );
        for (base, _) in
            at_each_concurrency(alone, false, "the transport floor", work_dir, plan).await?
        {
            floor.concurrent.push(base);
        }
    }
    if with_floor {
        figures.floor = Some(floor);
    }
    if runs(Scenario::Hold) && !plan.hold.is_empty() {
        println!("== {store}: hold {:?} runs suspended", plan.hold);
        figures.hold = Some(hold(binary, &work_dir.join("hold"), kind, plan).await?);
    }
    if runs(Scenario::Streams) {
        println!(
            "== {store}: {} open streams idle on a suspension",
            plan.streams
        );
        figures.streams = Some(
            crate::streams::open_streams(binary, &work_dir.join("streams"), kind, plan).await?,
        );
    }
    if runs(Scenario::Feeds) {
        println!(
            "== {store}: another tenant's round trips with {} idle feeds open ({} runs each way)",
            plan.feeds, plan.feed_runs
        );
        figures.feeds =
            Some(crate::feeds::idle_feeds(binary, &work_dir.join("feeds"), kind, plan).await?);
    }
    if runs(Scenario::OneConnection) {
        println!(
            "== {store}: {} round trips over one connection, {} in flight",
            plan.one_connection_runs,
            crate::one_connection::IN_FLIGHT
        );
        figures.one_connection = Some(
            crate::one_connection::one_connection(binary, &work_dir.join("one"), kind, plan)
                .await?,
        );
    }
    Ok(figures)
}

/// Connections for a concurrency level: one HTTP/2 connection per 16 concurrent runs, as a pool of
/// clients (or a client with a connection pool) would spread them.
fn connections_for(concurrency: usize) -> usize {
    concurrency.div_ceil(16)
}

/// A throughput scenario's shape: `concurrency` streams in flight over `connections`
/// connections, each running `workload`.
#[derive(Clone, Copy, Debug)]
pub struct Shape<'a> {
    pub concurrency: usize,
    pub connections: usize,
    pub workload: &'a Workload,
}

impl Shape<'_> {
    pub const SEQUENTIAL: Shape<'static> = Shape {
        concurrency: 1,
        connections: 1,
        workload: &ASK_USER,
    };

    fn runs(&self, plan: &Plan) -> usize {
        if self.concurrency == 1 {
            plan.sequential_runs
        } else {
            plan.concurrent_runs
        }
    }
}

/// `shape` on a fresh server of `launch`, `plan.repeats` times.
pub async fn repeated(
    launch: Launch<'_>,
    work_dir: &Path,
    plan: &Plan,
    shape: Shape<'_>,
) -> Result<Repeated, BenchError> {
    Ok(in_turns(launch, false, work_dir, plan, shape).await?.0)
}

/// `shape` on a fresh server of `launch`, `plan.repeats` times; `with_floor`, each repeat in
/// turn with one of the transport floor's (the floor first in the first, third, ... repeat, the
/// store first in the others, so that neither always follows the other's files being written
/// back), so that the two are compared at the same speed of the machine, which changes from
/// minute to minute.
async fn in_turns(
    launch: Launch<'_>,
    with_floor: bool,
    work_dir: &Path,
    plan: &Plan,
    shape: Shape<'_>,
) -> Result<(Repeated, Option<Repeated>), BenchError> {
    let mut repeats = Vec::with_capacity(plan.repeats);
    let mut floor = Vec::new();
    for repeat in 0..plan.repeats {
        let dir = work_dir.join(format!("c{}-r{repeat}", shape.concurrency));
        let floor_first = repeat % 2 == 0;
        if with_floor && floor_first {
            floor.push(floor_repeat(&dir, plan, shape, repeat).await?);
        }
        let figures = measure(launch, &dir, plan, shape).await?;
        print_throughput(&format!("repeat {}", repeat + 1), &figures);
        repeats.push(figures);
        if with_floor && !floor_first {
            floor.push(floor_repeat(&dir, plan, shape, repeat).await?);
        }
    }
    let result = Repeated {
        concurrency: shape.concurrency,
        connections: shape.connections,
        repeats,
    };
    print_median(&result);
    let floor = with_floor.then_some(Repeated {
        concurrency: shape.concurrency,
        connections: shape.connections,
        repeats: floor,
    });
    if let Some(floor) = &floor {
        println!(
            "  the floor's median: {:.0} round trips/s; this rate's share of it, the median of \
             the repeats' own: {:.1} %",
            floor.rate(),
            100.0 * result.share_of(floor, Throughput::rate)
        );
    }
    Ok((result, floor))
}

/// What a scenario's heading adds when its repeats run [`in_turns`] with the floor's.
fn in_turns_heading(with_floor: bool) -> &'static str {
    if with_floor {
        ", each in turn with one of the transport floor's"
    } else {
        ""
    }
}

/// One repeat of `shape` on the transport floor.
async fn floor_repeat(
    dir: &Path,
    plan: &Plan,
    shape: Shape<'_>,
    repeat: usize,
) -> Result<Throughput, BenchError> {
    let figures = measure(Launch::Floor, &dir.with_extension("floor"), plan, shape).await?;
    print_throughput(&format!("the floor, repeat {}", repeat + 1), &figures);
    Ok(figures)
}

pub fn print_median(result: &Repeated) {
    println!(
        "  median: {:.0} round trips/s; resume p50 {:.3} ms p99 {:.3} ms p99.9 {:.3} ms",
        result.rate(),
        result.ms(|t| t.resume.p50),
        result.ms(|t| t.resume.p99),
        result.ms(|t| t.resume.p999),
    );
}

/// One measured batch of `shape` on a fresh server of `launch` in `dir`, after a warm-up.
pub async fn measure(
    launch: Launch<'_>,
    dir: &Path,
    plan: &Plan,
    shape: Shape<'_>,
) -> Result<Throughput, BenchError> {
    let server = launch.start(dir).await?;
    let credential = match launch {
        Launch::Server {
            binary,
            key_tenant: Some(tenant),
            ..
        } => Some(server.create_key(binary, tenant)?),
        _ => None,
    };
    let clients = server.connect(shape.connections).await?;
    // Warm up connections, allocator and caches; not measured.
    let deadline = Instant::now() + plan.time_limit;
    let credential = credential.as_deref();
    round_trips(&clients, shape, plan.warmup_runs, deadline, credential).await?;
    // Read before the clock starts and after it stops: it opens a connection of its own.
    let database_cpu = server.database_cpu().await?;
    let started = Instant::now();
    let server_cpu = cpu_time(server.pid())?;
    let client_cpu = cpu_time(std::process::id())?;
    let trips = round_trips(&clients, shape, shape.runs(plan), deadline, credential).await?;
    let elapsed = started.elapsed();
    let server_cpu = cpu_time(server.pid())?.saturating_sub(server_cpu);
    let client_cpu = cpu_time(std::process::id())?.saturating_sub(client_cpu);
    let database_cpu = match (server.database_cpu().await?, database_cpu) {
        (Some(after), Some(before)) => Some(after.since(&before)),
        _ => None,
    };
    let figures = Throughput {
        runs: trips.len(),
        elapsed,
        total: Percentiles::of(trips.iter().map(|t| t.total).collect()),
        resume: Percentiles::of(trips.iter().map(|t| t.resume).collect()),
        server_cpu,
        client_cpu,
        database_cpu,
        frames: trips.first().map_or((0, 0), |trip| trip.frames),
    };
    drop(clients);
    server.stop().await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(figures)
}

async fn round_trips(
    clients: &[Client],
    shape: Shape<'_>,
    runs: usize,
    deadline: Instant,
    credential: Option<&str>,
) -> Result<Vec<RoundTrip>, BenchError> {
    let workload = *shape.workload;
    let credential: Option<Arc<str>> = credential.map(Arc::from);
    workload::run_concurrently(
        clients,
        shape.concurrency,
        runs,
        deadline,
        move |mut client, _| {
            let credential = credential.clone();
            async move {
                workload::round_trip_as(&mut client, &workload, credential.as_deref()).await
            }
        },
    )
    .await
}

/// The ask_user round trips at each concurrency level of `plan` on `launch` (called `name`);
/// `with_floor`, each repeat in turn with one of the transport floor's.
async fn at_each_concurrency(
    launch: Launch<'_>,
    with_floor: bool,
    name: &str,
    work_dir: &Path,
    plan: &Plan,
) -> Result<Vec<(Repeated, Option<Repeated>)>, BenchError> {
    let mut results = Vec::new();
    for &concurrency in &plan.concurrency_levels {
        let connections = connections_for(concurrency);
        let shape = Shape {
            concurrency,
            connections,
            workload: &ASK_USER,
        };
        // The runs this shape makes: at a concurrency of 1, the plan's sequential runs.
        println!(
            "== {name}: round trips at concurrency {concurrency} over {connections} \
             connection(s) ({} runs x {} repeats){}",
            shape.runs(plan),
            plan.repeats,
            in_turns_heading(with_floor)
        );
        results.push(in_turns(launch, with_floor, work_dir, plan, shape).await?);
    }
    Ok(results)
}
