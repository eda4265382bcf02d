//! BENCHMARKS.md: the machine, versions, commands, durability settings, every figure, the targets
//! and the ratio to Mastra's figures.

use std::fmt::Write;
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::scenarios::{
    Features, FloorFigures, Plan, Repeated, StoreFigures, TOOL_WORKLOADS, Throughput,
};
use crate::server::{StoreKind, postgres_client};

/// Mastra 1.71 with LibSQL on 2 cores, the reference the targets were set against.
const MASTRA_SEQUENTIAL: f64 = 85.0;
const MASTRA_CONCURRENT: &str = "80–86 (50 concurrent)";
const MASTRA_CONCURRENT_MID: f64 = 83.0;
const MASTRA_RESUME_P50_MS: f64 = 5.8;
const MASTRA_RESUME_P99_MS: &str = "12–16";
const MASTRA_RESUME_P99_MID_MS: f64 = 14.0;
const MASTRA_BYTES_PER_SUSPENDED_RUN: f64 = 65_000.0;

/// What the bench ran on.
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory: String,
    pub kernel: String,
    pub rustc: String,
    pub commit: String,
    pub sqlite: String,
    /// Version and durability settings, when PostgreSQL is benchmarked.
    pub postgres: Option<Vec<(String, String)>>,
}

fn first_line_of(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

fn proc_field(path: &str, field: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with(field))
                .and_then(|line| line.split_once(':'))
                .map(|(_, value)| value.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The PostgreSQL settings that decide durability and commit cost.
const POSTGRES_SETTINGS: [&str; 7] = [
    "server_version",
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_sync_method",
    "shared_buffers",
    "max_wal_size",
];

impl Machine {
    pub async fn detect(database_url: Option<&str>) -> Self {
        let dirty =
            !first_line_of("git", &["status", "--porcelain", "--untracked-files=no"]).eq("unknown");
        let commit = first_line_of("git", &["rev-parse", "--short", "HEAD"]);
        let mut postgres = None;
        if let Some(url) = database_url
            && let Ok(client) = postgres_client(url).await
        {
            let mut settings = Vec::new();
            for name in POSTGRES_SETTINGS {
                if let Ok(row) = client.query_one(&format!("SHOW {name}"), &[]).await {
                    settings.push((name.to_owned(), row.get::<_, String>(0)));
                }
            }
            postgres = Some(settings);
        }
        Machine {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model: proc_field("/proc/cpuinfo", "model name"),
            memory: proc_field("/proc/meminfo", "MemTotal"),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|text| text.trim().to_owned())
                .unwrap_or_else(|_| "unknown".into()),
            rustc: first_line_of("rustc", &["--version"]),
            commit: if dirty {
                format!("{commit} with uncommitted changes")
            } else {
                commit
            },
            sqlite: rusqlite::version().to_owned(),
            postgres,
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "machine: {} CPUs ({}), {} RAM, Linux {}; {}; askuser {} at {}; SQLite {}",
            self.cpus,
            self.cpu_model,
            self.memory,
            self.kernel,
            self.rustc,
            env!("CARGO_PKG_VERSION"),
            self.commit,
            self.sqlite
        )
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mb(kib: u64) -> f64 {
    (kib * 1024) as f64 / 1e6
}

/// How a figure stands against its target.
#[derive(Clone, Copy)]
enum Verdict {
    Met,
    NotMet,
    /// The scenario did not run at the target's size.
    NotMeasured,
    /// The target is another store's: the figure is shown for comparison.
    OtherStore,
}

impl Verdict {
    fn of(met: bool) -> Self {
        if met { Verdict::Met } else { Verdict::NotMet }
    }

    fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "**not met**",
            Verdict::NotMeasured => "not measured",
            Verdict::OtherStore => "(another store's target)",
        }
    }
}

/// `ours` as a percentage of the floor's `floor`.
fn percent_of(ours: f64, floor: f64) -> f64 {
    100.0 * ours / floor
}

/// A rate against the floor's at the same shape, and whether it reaches `share` of it.
fn rate_cell(ours: &Repeated, floor: Option<&Repeated>, share: f64) -> (String, Verdict) {
    match floor {
        Some(floor) => {
            let percent = percent_of(ours.rate(), floor.rate());
            (
                format!(
                    "{:.0} round trips/s = {percent:.0} % of the floor's {:.0}",
                    ours.rate(),
                    floor.rate()
                ),
                Verdict::of(percent >= share * 100.0),
            )
        }
        None => (
            format!("{:.0} round trips/s (floor not run)", ours.rate()),
            Verdict::NotMeasured,
        ),
    }
}

/// One store's figures against the targets, as table cells: SQLite's targets are the ratios to
/// the floor, latency, starts, memory and the costs of features; PostgreSQL's its two rates.
fn target_cells(
    kind: &StoreKind,
    floor: Option<&FloorFigures>,
    figures: &StoreFigures,
) -> Vec<(String, Verdict)> {
    let sqlite = matches!(kind, StoreKind::Sqlite);
    // A verdict on a target of this store; a figure only on another's.
    let mine = |cell: (String, Verdict), ours: bool| {
        if ours || matches!(cell.1, Verdict::NotMeasured) {
            cell
        } else {
            (cell.0, Verdict::OtherStore)
        }
    };
    let not_run = || ("not run".to_owned(), Verdict::NotMeasured);
    let at_64 = figures.concurrent.iter().find(|c| c.concurrency == 64);
    let mut cells = Vec::new();
    match &figures.sequential {
        Some(sequential) => {
            let p50 = sequential.ms(|t| t.resume.p50);
            let p99 = sequential.ms(|t| t.resume.p99);
            cells.push(mine(
                rate_cell(sequential, floor.map(|f| &f.sequential), 0.45),
                sqlite,
            ));
            cells.push(mine(
                (format!("{p50:.3} ms"), Verdict::of(p50 <= 0.5)),
                sqlite,
            ));
            cells.push(mine(
                (format!("{p99:.3} ms"), Verdict::of(p99 <= 1.0)),
                sqlite,
            ));
        }
        None => cells.extend([not_run(), not_run(), not_run()]),
    }
    cells.push(match at_64 {
        Some(c) => mine(rate_cell(c, floor.and_then(|f| f.at(64)), 0.30), sqlite),
        None => not_run(),
    });
    cells.push(match &figures.sequential {
        Some(s) => mine(
            (
                format!("{:.0} round trips/s", s.rate()),
                Verdict::of(s.rate() >= 500.0),
            ),
            !sqlite,
        ),
        None => not_run(),
    });
    cells.push(match at_64 {
        Some(c) => mine(
            (
                format!("{:.0} round trips/s", c.rate()),
                Verdict::of(c.rate() >= 1500.0),
            ),
            !sqlite,
        ),
        None => not_run(),
    });
    match &figures.hold {
        Some(hold) => {
            let started: usize = hold.points.iter().map(|p| p.started).sum();
            let elapsed: Duration = hold.points.iter().map(|p| p.elapsed).sum();
            let rate = started as f64 / elapsed.as_secs_f64();
            cells.push(mine(
                (format!("{rate:.0} starts/s"), Verdict::of(rate >= 10_000.0)),
                sqlite,
            ));
            cells.push(match hold.points.last() {
                Some(point) if point.runs < 1_000_000 => (
                    format!(
                        "{:.1} MB with {} runs held (the hold stops there)",
                        mb(point.rss_kib),
                        point.runs
                    ),
                    Verdict::NotMeasured,
                ),
                Some(point) => mine(
                    (
                        format!("{:.1} MB with {} runs held", mb(point.rss_kib), point.runs),
                        Verdict::of(mb(point.rss_kib) < 50.0),
                    ),
                    sqlite,
                ),
                None => not_run(),
            });
        }
        None => cells.extend([not_run(), not_run()]),
    }
    match &figures.features {
        Some(features) => {
            for with in [&features.auth, &features.metrics] {
                let cost = Features::cost(with, &features.defaults);
                cells.push(mine(
                    (
                        format!(
                            "{:.0} vs {:.0} round trips/s: {:+.1} %",
                            with.rate(),
                            features.defaults.rate(),
                            -100.0 * cost
                        ),
                        Verdict::of(cost <= 0.05),
                    ),
                    sqlite,
                ));
            }
        }
        None => cells.extend([not_run(), not_run()]),
    }
    cells.push(match &figures.streams {
        Some(streams) => (
            format!("{:.1} KB per stream", streams.bytes_per_stream() / 1000.0),
            Verdict::of(streams.streams >= 10_000 && streams.bytes_per_stream() < 20_000.0),
        ),
        None => not_run(),
    });
    cells.push(match &figures.feeds {
        Some(feeds) => (
            format!(
                "{:.3} ms with {} feeds vs {:.3} ms with none ({:.2}×)",
                ms(feeds.with.p50),
                feeds.feeds,
                ms(feeds.without.p50),
                feeds.slowdown()
            ),
            Verdict::of(feeds.feeds >= 5_000 && feeds.slowdown() <= 2.0),
        ),
        None => not_run(),
    });
    cells.push(match &figures.one_connection {
        Some(one) => (
            format!(
                "{} round trips, {} failed, in {:.0} s",
                one.completed,
                one.failed,
                one.elapsed.as_secs_f64()
            ),
            Verdict::of(one.completed >= 1_000_000 && one.failed == 0),
        ),
        None => not_run(),
    });
    cells
}

/// One store's figure compared with Mastra's: the figure and the ratio, when it was measured.
type ComparedFigure = dyn Fn(&StoreFigures) -> Option<(String, String)>;

const TARGETS: [&str; 13] = [
    "sequential ≥ 45 % of the transport floor",
    "resume p50 ≤ 0.5 ms (sequential)",
    "resume p99 ≤ 1 ms (sequential)",
    "concurrency 64 ≥ 30 % of the transport floor",
    "PostgreSQL: sequential ≥ 500 round trips/s",
    "PostgreSQL: concurrency 64 ≥ 1,500 round trips/s",
    "starts to suspension ≥ 10,000/s",
    "1,000,000 suspended runs, server RSS < 50 MB",
    "`--auth keys` costs ≤ 5 % of the sequential rate",
    "metrics kept (`--metrics-listen`) cost ≤ 5 % of the sequential rate",
    "10,000 idle streams < 20 KB RSS each",
    "another tenant's round trip p50 with 5,000 idle feeds ≤ 2× of none",
    "1,000,000 round trips over one connection, 0 failed",
];

fn ratio(ours: f64, theirs: f64) -> String {
    format!("{:.1}×", ours / theirs)
}

fn throughput_table(out: &mut String, scenario: &Repeated) {
    let _ = writeln!(
        out,
        "| repeat | runs | time | round trips/s | resume p50 | p99 | p99.9 | max | round trip p50 \
         | p99 | server CPU per round trip | bench CPU per round trip |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    let micros = |cpu: Duration| cpu.as_secs_f64() * 1e6;
    for (index, t) in scenario.repeats.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} s | {:.0} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms \
             | {:.3} ms | {:.0} µs | {:.0} µs |",
            index + 1,
            t.runs,
            t.elapsed.as_secs_f64(),
            t.rate(),
            ms(t.resume.p50),
            ms(t.resume.p99),
            ms(t.resume.p999),
            ms(t.resume.max),
            ms(t.total.p50),
            ms(t.total.p99),
            micros(t.server_cpu_per_run()),
            micros(t.client_cpu_per_run()),
        );
    }
    let _ = writeln!(
        out,
        "| **median** | | | **{:.0}** | **{:.3} ms** | **{:.3} ms** | **{:.3} ms** | {:.3} ms \
         | {:.3} ms | {:.3} ms | {:.0} µs | {:.0} µs |",
        scenario.rate(),
        scenario.ms(|t| t.resume.p50),
        scenario.ms(|t| t.resume.p99),
        scenario.ms(|t| t.resume.p999),
        scenario.ms(|t| t.resume.max),
        scenario.ms(|t| t.total.p50),
        scenario.ms(|t| t.total.p99),
        scenario.ms(Throughput::server_cpu_per_run) * 1000.0,
        scenario.ms(Throughput::client_cpu_per_run) * 1000.0,
    );
}

/// The tools scenario's medians, each against the ask_user round trip's.
fn tools_table(out: &mut String, figures: &StoreFigures) {
    let _ = writeln!(
        out,
        "| round trip | round trips/s (median) | vs ask_user | resume p50 | resume p99 | within 15 % |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let base = figures.tools.first().map_or(0.0, Repeated::rate);
    for (workload, scenario) in TOOL_WORKLOADS.iter().zip(&figures.tools) {
        let share = scenario.rate() / base;
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} % | {:.3} ms | {:.3} ms | {} |",
            workload.name,
            scenario.rate(),
            share * 100.0,
            scenario.ms(|t| t.resume.p50),
            scenario.ms(|t| t.resume.p99),
            Verdict::of(share >= 0.85).text(),
        );
    }
}

/// The sections of the feeds and one-connection scenarios (issue 22).
fn fairness_sections(out: &mut String, figures: &StoreFigures) {
    if let Some(feeds) = &figures.feeds {
        let _ = writeln!(
            out,
            "\n### Idle feeds of another tenant\n\nServer with `--auth keys`. Tenant `busy` makes \
             {} sequential round trips on one connection with no feed open; then tenant `idle` \
             opens {} `WatchPendingCalls` feeds over {} connections (each read to its snapshot's \
             end, in {:.1} s) and leaves them idle, and `busy` makes {} round trips again. Target: \
             the p50 with the feeds open within 2× of none.\n\n\
             | feeds open | round trip p50 | p99 | resume p50 | p99 |\n|---|---|---|---|---|\n\
             | 0 | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms |\n\
             | {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms |\n\n\
             With the feeds open: **{:.2}×** the p50 of none.",
            feeds.runs,
            feeds.feeds,
            feeds.connections,
            feeds.open_elapsed.as_secs_f64(),
            feeds.runs,
            ms(feeds.without.p50),
            ms(feeds.without.p99),
            ms(feeds.without_resume.p50),
            ms(feeds.without_resume.p99),
            feeds.feeds,
            ms(feeds.with.p50),
            ms(feeds.with.p99),
            ms(feeds.with_resume.p50),
            ms(feeds.with_resume.p99),
            feeds.slowdown(),
        );
    }
    if let Some(one) = &figures.one_connection {
        let _ = writeln!(
            out,
            "\n### One connection\n\n{} `RunAgent` round trips, {} in flight at all times, over \
             ONE HTTP/2 connection (every failure counted, none retried): {} completed, **{} \
             failed**, in {:.1} s ({:.0} round trips/s); round trip p50 {:.3} ms, p99 {:.3} ms, \
             max {:.3} ms.",
            one.runs,
            one.concurrency,
            one.completed,
            one.failed,
            one.elapsed.as_secs_f64(),
            one.rate(),
            ms(one.total.p50),
            ms(one.total.p99),
            ms(one.total.max),
        );
    }
}

/// askuser against the transport floor, figure by figure.
fn floor_section(
    out: &mut String,
    floor: &FloorFigures,
    results: &[(StoreKind, Plan, StoreFigures)],
) {
    let _ = writeln!(
        out,
        "\n## Against the transport floor\n\nThe floor is the same round trip's frame pattern \
         (three frames out after the start, the answer in, five frames out, the end: counted \
         below) with the same payloads on a bare tonic `AgentService` with no store and no agent (src/bin/askuser-bench/floor.rs), two \
         worker threads, driven by the same client code, measured first in this run ({} repeats \
         each). Machines here differ 2× from day to day; these ratios are what carries from one \
         run to the next. Rates: askuser ÷ floor; latencies and CPU: floor ÷ askuser (100 % = as \
         fast as the transport alone).\n",
        floor.sequential.repeats.len()
    );
    let mut header = String::from("| figure | floor |");
    let mut rule = String::from("|---|---|");
    for (kind, _, _) in results {
        header.push_str(&format!(" {} | of the floor |", kind.name()));
        rule.push_str("---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    type Figure = fn(&Repeated) -> f64;
    let rate: Figure = Repeated::rate;
    let p50: Figure = |r| r.ms(|t| t.resume.p50);
    let p99: Figure = |r| r.ms(|t| t.resume.p99);
    let cpu: Figure = |r| r.ms(Throughput::server_cpu_per_run) * 1000.0;
    let mut rows: Vec<(String, usize, Figure, bool, &str)> = vec![
        ("sequential round trips/s".into(), 1, rate, true, ""),
        ("resume p50 (sequential)".into(), 1, p50, false, " ms"),
        ("resume p99 (sequential)".into(), 1, p99, false, " ms"),
        (
            "server CPU per round trip (sequential)".into(),
            1,
            cpu,
            false,
            " µs",
        ),
    ];
    for concurrent in &floor.concurrent {
        let c = concurrent.concurrency;
        rows.push((
            format!("round trips/s at concurrency {c}"),
            c,
            rate,
            true,
            "",
        ));
        rows.push((
            format!("server CPU per round trip at {c}"),
            c,
            cpu,
            false,
            " µs",
        ));
    }
    let at = |figures: &StoreFigures, concurrency: usize| -> Option<Repeated> {
        if concurrency == 1 {
            return figures.sequential.clone();
        }
        figures
            .concurrent
            .iter()
            .find(|c| c.concurrency == concurrency)
            .cloned()
    };
    for (name, concurrency, figure, higher_is_better, unit) in rows {
        let Some(base) = floor.at(concurrency) else {
            continue;
        };
        let base_value = figure(base);
        let digits = if unit == " ms" { 3 } else { 0 };
        let mut line = format!("| {name} | {base_value:.digits$}{unit} |");
        for (_, _, figures) in results {
            match at(figures, concurrency) {
                Some(ours) => {
                    let value = figure(&ours);
                    let share = if higher_is_better {
                        percent_of(value, base_value)
                    } else {
                        percent_of(base_value, value)
                    };
                    line.push_str(&format!(" {value:.digits$}{unit} | {share:.0} % |"));
                }
                None => line.push_str(" not run | |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    let mut counted = format!("floor {}", frames(&floor.sequential));
    for (kind, _, figures) in results {
        if let Some(sequential) = &figures.sequential {
            counted.push_str(&format!(", {} {}", kind.name(), frames(sequential)));
        }
    }
    let _ = writeln!(
        out,
        "\nFrames a round trip receives (before the answer + after it, up to `run_completed`, as \
         counted by the bench): {counted}."
    );
}

/// The frames of a round trip (before the answer + after it), as the bench counted them.
fn frames(repeated: &Repeated) -> String {
    repeated
        .repeats
        .first()
        .map_or("?".into(), |t| format!("{} + {}", t.frames.0, t.frames.1))
}

/// The transport floor's rate at `concurrency`, and this figure's share of it, as a sentence.
fn floor_line(out: &mut String, floor: Option<&FloorFigures>, ours: &Repeated) {
    if let Some(base) = floor.and_then(|f| f.at(ours.concurrency)) {
        let _ = writeln!(
            out,
            "\nThe transport floor at this shape: {:.0} round trips/s, resume p99 {:.3} ms; this \
             store: **{:.0} %** of its rate.",
            base.rate(),
            base.ms(|t| t.resume.p99),
            percent_of(ours.rate(), base.rate())
        );
    }
}

/// The features scenario: the sequential rate with each feature on against the defaults.
fn features_table(out: &mut String, features: &Features) {
    let _ = writeln!(
        out,
        "| server | round trips/s (median) | vs the defaults | resume p50 | resume p99 | server CPU \
         per round trip | within 5 % |\n|---|---|---|---|---|---|---|"
    );
    for (name, with) in [
        ("defaults", &features.defaults),
        ("`--auth keys`, a key on every call", &features.auth),
        ("`--metrics-listen` (metrics kept)", &features.metrics),
    ] {
        let cost = Features::cost(with, &features.defaults);
        let _ = writeln!(
            out,
            "| {name} | {:.0} | {:+.1} % | {:.3} ms | {:.3} ms | {:.0} µs | {} |",
            with.rate(),
            -100.0 * cost,
            with.ms(|t| t.resume.p50),
            with.ms(|t| t.resume.p99),
            with.ms(Throughput::server_cpu_per_run) * 1000.0,
            Verdict::of(cost <= 0.05).text(),
        );
    }
}

fn store_section(
    out: &mut String,
    kind: &StoreKind,
    plan: &Plan,
    floor: Option<&FloorFigures>,
    figures: &StoreFigures,
) {
    let store = kind.name();
    let _ = writeln!(out, "\n## {store} store\n");
    let _ = writeln!(
        out,
        "### Sequential round trips\n\nOne `RunAgent` stream at a time on one connection; {} \
         warm-up runs, then {} measured runs, on a fresh server {} times.\n",
        plan.warmup_runs, plan.sequential_runs, plan.repeats
    );
    if let Some(sequential) = &figures.sequential {
        throughput_table(out, sequential);
        floor_line(out, floor, sequential);
    }
    if let Some(features) = &figures.features {
        let _ = writeln!(
            out,
            "\n### What features cost\n\nSequential round trips on servers started with the \
             defaults, with `--auth keys` (every call presents an API key, looked up and checked) \
             and with `--metrics-listen` (counters and histograms kept), one of each per repeat, \
             {} repeats. Target: each costs at most 5 % of the defaults' rate.\n",
            plan.repeats
        );
        features_table(out, features);
    }
    if !figures.tools.is_empty() {
        let _ = writeln!(
            out,
            "\n### Round trips through tools\n\nThe sequential round trip three ways, each on a \
             fresh server {} times: a question answered (`ask_user`), a client tool call settled \
             with its output, and an approval decided (a rejection, so that one settlement ends \
             the run as in the others). Target: each within 15 % of the ask_user rate.\n",
            plan.repeats
        );
        tools_table(out, figures);
    }
    for scenario in &figures.concurrent {
        let _ = writeln!(
            out,
            "\n### Concurrency {}\n\n{} streams in flight at all times over {} HTTP/2 \
             connection(s); {} warm-up runs, then {} measured runs, on a fresh server {} times.\n",
            scenario.concurrency,
            scenario.concurrency,
            scenario.connections,
            plan.warmup_runs,
            plan.concurrent_runs,
            plan.repeats
        );
        throughput_table(out, scenario);
        floor_line(out, floor, scenario);
    }
    if let Some(hold) = &figures.hold {
        let _ = writeln!(
            out,
            "\n### Hold: runs left suspended\n\nRuns started {} at a time over {} connections; \
             each stream is closed once its `tool_call_suspended` arrives, leaving the run \
             suspended in the store. Server RSS before the first start: {:.1} MB.\n",
            hold.concurrency,
            hold.connections,
            mb(hold.baseline_rss_kib)
        );
        let held = hold.points.last().map_or(0, |point| point.runs);
        let started: usize = hold.points.iter().map(|p| p.started).sum();
        let starting: Duration = hold.points.iter().map(|p| p.elapsed).sum();
        if held < 1_000_000 && held > 0 {
            // What 1,000,000 would take at the rates measured here.
            let minutes = 1e6
                * (starting.as_secs_f64() / started.max(1) as f64
                    + hold.answer_elapsed.as_secs_f64() / hold.answered.max(1) as f64)
                / 60.0;
            let _ = writeln!(
                out,
                "This store's hold stops at {held} runs rather than 1,000,000: at the start and \
                 answer rates measured here, 1,000,000 runs would take about {minutes:.0} minutes \
                 to start and answer, beyond the bench's time budget.\n"
            );
        }
        let _ = writeln!(
            out,
            "| runs suspended | starts | time | starts/s | server CPU per start | server RSS (VmRSS) \
             | database file | per run | WAL not yet checkpointed |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        for point in &hold.points {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} s | {:.0} | {:.0} µs | {:.1} MB | {:.1} MB | {:.0} bytes | {:.1} MB |",
                point.runs,
                point.started,
                point.elapsed.as_secs_f64(),
                point.starts_per_second(),
                point.server_cpu.as_secs_f64() * 1e6 / point.started.max(1) as f64,
                mb(point.rss_kib),
                point.store.database as f64 / 1e6,
                point.store.database as f64 / point.runs as f64,
                point.store.wal as f64 / 1e6,
            );
        }
        let _ = writeln!(
            out,
            "\nBefore answering, `ListRuns` (status SUSPENDED) listed {} runs. Then every run was \
             answered `staging` with `ResumeRun` ({} at a time): {} answers in {:.1} s = {:.0} \
             answers/s, each stream read to `run_completed` with the text checked. After: \
             `ListRuns` lists {} completed runs and none suspended; `GetRun` on {} randomly sampled \
             runs shows each completed with \"Deploying to staging\". Peak server RSS (VmHWM): \
             {:.1} MB.",
            hold.listed_suspended,
            hold.concurrency,
            hold.answered,
            hold.answer_elapsed.as_secs_f64(),
            hold.answered as f64 / hold.answer_elapsed.as_secs_f64(),
            hold.listed_completed,
            hold.sampled,
            mb(hold.peak_rss_kib)
        );
    }
    let Some(streams) = &figures.streams else {
        return;
    };
    let _ = writeln!(
        out,
        "\n### Open streams\n\n{} `RunAgent` streams over {} connections ({} per connection), each \
         idle on its run's question. Server RSS {:.1} MB before (connections open and warmed up), \
         {:.1} MB with every stream open: **{:.0} bytes per stream**. Opening took {:.1} s; then \
         every run was answered on its own stream ({} completed).",
        streams.streams,
        streams.connections,
        plan.streams_per_connection,
        mb(streams.rss_before_kib),
        mb(streams.rss_after_kib),
        streams.bytes_per_stream(),
        streams.open_elapsed.as_secs_f64(),
        streams.answered
    );
}

/// The whole report.
pub fn render(
    machine: &Machine,
    command: &str,
    quick: bool,
    floor: Option<&FloorFigures>,
    results: &[(StoreKind, Plan, StoreFigures)],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Written by `{command}` on {}{}. Every figure below comes from that run; \
         `scripts/bench` regenerates this file.\n",
        httpdate::fmt_http_date(SystemTime::now()),
        if quick {
            " with `--quick` (fewer runs and repeats: rough figures)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "## Machine and versions\n");
    let _ = writeln!(
        out,
        "- CPU: {} × {} (nproc {})",
        machine.cpus, machine.cpu_model, machine.cpus
    );
    let _ = writeln!(out, "- RAM: {}", machine.memory);
    let _ = writeln!(out, "- Linux {}", machine.kernel);
    let _ = writeln!(
        out,
        "- askuser {} at commit {}, built with `cargo build --release` ({})",
        env!("CARGO_PKG_VERSION"),
        machine.commit,
        machine.rustc
    );
    let _ = writeln!(out, "- SQLite {} (bundled by rusqlite)", machine.sqlite);
    if let Some(settings) = &machine.postgres {
        let settings: Vec<String> = settings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(out, "- PostgreSQL: {}", settings.join(", "));
    }
    let _ = writeln!(out, "\n## Method\n");
    let _ = writeln!(out, "{METHOD}");
    let _ = writeln!(out, "## Targets\n");
    let mut header = String::from("| target |");
    let mut rule = String::from("|---|");
    for (kind, _, _) in results {
        header.push_str(&format!(" {} |", kind.name()));
        rule.push_str("---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    let cells: Vec<Vec<(String, Verdict)>> = results
        .iter()
        .map(|(kind, _, figures)| target_cells(kind, floor, figures))
        .collect();
    for (row, target) in TARGETS.iter().enumerate() {
        let mut line = format!("| {target} |");
        for store in &cells {
            match &store[row] {
                (text, Verdict::NotMeasured) if text == "not run" => line.push_str(" not run |"),
                (text, verdict) => line.push_str(&format!(" {text}: {} |", verdict.text())),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(floor) = floor {
        floor_section(&mut out, floor, results);
    }
    let _ = writeln!(out, "\n## Compared with Mastra\n");
    let _ = writeln!(
        out,
        "Mastra 1.71 with LibSQL on 2 cores: ~85 runs/s sequential, 80–86 runs/s at 50 concurrent, \
         resume 5.8 ms p50 / 12–16 ms p99, ~65 KB RSS per suspended run. Ratios are askuser ÷ \
         Mastra for rates and Mastra ÷ askuser for latencies and memory (higher is better for \
         askuser; ranges are taken at their middle).\n"
    );
    let mut header = String::from("| figure | Mastra |");
    let mut rule = String::from("|---|---|");
    for (kind, _, _) in results {
        header.push_str(&format!(" {} | ratio |", kind.name()));
        rule.push_str("---|---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    let rows: [(&str, String, &ComparedFigure); 5] = [
        (
            "sequential runs/s",
            format!("{MASTRA_SEQUENTIAL:.0}"),
            &|f| {
                let rate = f.sequential.as_ref()?.rate();
                Some((format!("{rate:.0}"), ratio(rate, MASTRA_SEQUENTIAL)))
            },
        ),
        (
            "concurrent runs/s (askuser: 64 concurrent)",
            MASTRA_CONCURRENT.into(),
            &|f| {
                f.concurrent.iter().find(|c| c.concurrency == 64).map(|c| {
                    (
                        format!("{:.0}", c.rate()),
                        ratio(c.rate(), MASTRA_CONCURRENT_MID),
                    )
                })
            },
        ),
        ("resume p50", format!("{MASTRA_RESUME_P50_MS} ms"), &|f| {
            let p50 = f.sequential.as_ref()?.ms(|t| t.resume.p50);
            Some((format!("{p50:.3} ms"), ratio(MASTRA_RESUME_P50_MS, p50)))
        }),
        ("resume p99", format!("{MASTRA_RESUME_P99_MS} ms"), &|f| {
            let p99 = f.sequential.as_ref()?.ms(|t| t.resume.p99);
            Some((format!("{p99:.3} ms"), ratio(MASTRA_RESUME_P99_MID_MS, p99)))
        }),
        ("RSS per suspended run", "~65 KB".into(), &|f| {
            let hold = f.hold.as_ref()?;
            let last = hold.points.last()?;
            let per_run = (last.rss_kib.saturating_sub(hold.baseline_rss_kib) * 1024) as f64
                / last.runs as f64;
            Some((
                format!(
                    "{per_run:.0} bytes (({:.1} − {:.1} MB) ÷ {} runs)",
                    mb(last.rss_kib),
                    mb(hold.baseline_rss_kib),
                    last.runs
                ),
                ratio(MASTRA_BYTES_PER_SUSPENDED_RUN, per_run.max(1.0)),
            ))
        }),
    ];
    for (name, mastra, figure) in rows {
        let mut line = format!("| {name} | {mastra} |");
        for (_, _, figures) in results {
            match figure(figures) {
                Some((ours, ratio)) => line.push_str(&format!(" {ours} | {ratio} |")),
                None => line.push_str(" not run | |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    for (kind, plan, figures) in results {
        store_section(&mut out, kind, plan, floor, figures);
        fairness_sections(&mut out, figures);
    }
    let _ = writeln!(out, "\n## What limits the figures\n\n{LIMITS}");
    out
}

/// How the figures are taken; the same for every run of the bench.
const METHOD: &str = "\
Workload \"ask-user round trip\": the demo agent `environment` (src/demo_agents.toml) asks \
\"Which environment?\" with the options staging / production (single select); after the answer \
the scripted model says \"Deploying to <answer>\". One round trip = `RunAgent` start → \
`tool_call_suspended` (sent only after its commit) → answer `staging` on the same stream → \
`run_completed` seen, its text checked to be \"Deploying to staging\", and the stream's end read.

- The server is the release binary `askuser serve --listen 127.0.0.1:0`, started as a child \
  process for every scenario and every repeat with a fresh store: a new data directory for \
  SQLite, a new database for PostgreSQL. It runs with its defaults (log level info).
- The client is `askuser-bench` (src/bin/askuser-bench), using the crate's generated tonic \
  client over loopback on the same 2 cores, on one thread (a current-thread Tokio runtime): the \
  figures include the client's own CPU use. \"CPU per round trip\" is the user + system time of \
  the server process (all its threads) and of the bench over the measured runs (from \
  /proc/PID/stat), divided by the runs.
- Round trips/s = measured runs ÷ wall time. Resume latency = answer sent → `run_completed` \
  received (client clock). Round trip latency = start sent → `run_completed` received. \
  Percentiles are nearest-rank; the figures against the targets are medians over the repeats.
- Server RSS is `VmRSS` of /proc/PID/status; \"per stream\" = (RSS with the streams open − RSS \
  before) ÷ streams. Store size: the SQLite database and WAL files, or PostgreSQL's \
  `pg_database_size` (its WAL is not included).
- Durability: SQLite runs in WAL mode with `synchronous=NORMAL`, the server's default: a commit \
  is in the WAL file (written, not fsynced) before its events are announced, so it survives a \
  crash of the process; a power loss or OS crash can lose the last commits but never corrupts \
  the database (`--sqlite-synchronous full` fsyncs every commit and survives power loss too). \
  PostgreSQL runs with `fsync = on`, `synchronous_commit = on` and `full_page_writes = on`: \
  every commit is flushed to its WAL before the server announces it.
- Every load loop is bounded in count and in time; the bench fails (exit status 1) if any run \
  does not end as expected.
";

/// What the profiles (perf, on the bench's own scenarios) showed limits each figure.
const LIMITS: &str = "\
- Sequential round trips: nothing of one round trip overlaps the next, so the rate is one over a \
  critical path made of CPU time run one piece after another: the bench's and the server's (the \
  table above), on 2 vCPUs where waking a sleeping thread is dear (perf: about a third of the \
  bench's samples and a fifth of the server's are in the scheduler's switch and wake-up paths; a \
  `perf sched` timeline shows the bench and the server's two workers taking turns, seldom \
  running at once). A round trip is four durable commits in a row (run created, question \
  suspended, answer settled, run completed), each announced only after it is in the WAL, plus \
  two gRPC exchanges. SQLite is about 40% of the server's CPU time, half of that writing WAL \
  frames (about 24, ~100 KB, per round trip: every commit rewrites each B-tree page it touches). \
  Tried and measured against the same build, none moving the median beyond the run-to-run spread \
  (about ±8%): one Tokio worker instead of two (server CPU −15%, same rate: the saving was off \
  the critical path); running a batch in the task of the caller that finds the store idle rather \
  than in the store's own task (about 6% slower); one connection with exclusive locking and \
  checkpoints inside commits (no file-lock calls, which `perf stat` counted at ~23 `fcntl` per \
  round trip before, and a resume p99 of 0.37 ms instead of 0.6 ms, but the same rate, and \
  checkpoint stalls doubled the p99 at 64 and 256 streams); mimalloc. Schemas keyed by rowid or \
  with a partial status index were simulated: 3–4% fewer WAL frames (21% with no status index at \
  all), a few percent of the server's CPU at most.
- Resume latency: the answer's settling commit and the completing turn's commit, one store \
  operation each (the question is checked inside the settling transaction, and that transaction \
  also takes the run's lease and reads the next step's state).
- Concurrency: both cores are busy; the store's group commit puts every operation queued during \
  a batch into the next transaction, so a commit's WAL write is shared by up to 256 operations \
  and the server's CPU time per round trip drops to well under half of the sequential one. \
  Beyond 64 streams the throughput stays flat and only the queueing latency grows.
- Starts to suspension: two commits per start (create, suspend), group-committed; the limit is \
  CPU (the server's per start, in the hold table, plus the bench's).
- Server RSS with many suspended runs: a suspended run holds no memory in the server (no task, \
  no channel, no cache entry); what grows is SQLite's page cache (bounded at its default 2 MB) \
  and allocator slack.
- Idle streams: each stream holds its HTTP/2 stream state, its task and body future, a broadcast \
  receiver (channel capacity 16 batches) and 1 KiB codec buffers per direction (tonic's default \
  is 8 KiB each, allocated up front).
- PostgreSQL: a change is one or two round trips to the database: its statements go in pipelined \
  flights, `BEGIN` in the first and `COMMIT` in the last (7 round trips per ask-user round trip, \
  from 37 before), and every commit waits for its WAL flush (fdatasync takes about 0.12 ms on \
  this disk, by `pg_test_fsync`). Sequentially, four commits' round trips and flushes and \
  PostgreSQL's CPU time for about 34 statements (counted in the code) lie on the critical path. \
  With 16 or more streams both cores are busy (at 64 streams `vmstat` showed ~12% idle and \
  ~50,000 context switches a second, on the build before `BEGIN` and `COMMIT` joined the \
  flights), shared by the PostgreSQL backends, the server (its CPU per round trip is above: the \
  client side of the database protocol costs it more than SQLite does) and the bench. PostgreSQL \
  on a machine of its own was not measured.
";
