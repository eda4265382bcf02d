//! BENCHMARKS.md: the machine, versions, commands, durability settings, every figure, the targets
//! and the ratio to Mastra's figures.

use std::fmt::Write;
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::scenarios::{Plan, Repeated, StoreFigures, TOOL_WORKLOADS, Throughput};
use crate::server::{StoreKind, postgres_client};

mod floor;
mod mastra;
mod targets;
mod text;

pub use mastra::MastraFigures;

use floor::{features_table, floor_line, floor_section};
use targets::{TARGETS, Verdict, target_cells};
use text::{CPU_BUDGET, LIMITS, METHOD};

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

fn throughput_table(out: &mut String, scenario: &Repeated) {
    // PostgreSQL's own CPU, when it was measured (on this machine).
    let database = scenario.database_cpu_measured();
    let _ = writeln!(
        out,
        "| repeat | runs | time | round trips/s | resume p50 | p99 | p99.9 | max | round trip p50 \
         | p99 | server CPU per round trip | bench CPU per round trip |{}",
        if database {
            " PostgreSQL CPU per round trip |"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|---|---|---|{}",
        if database { "---|" } else { "" }
    );
    let micros = |cpu: Duration| cpu.as_secs_f64() * 1e6;
    let database_cell = |cpu: f64| {
        if database {
            format!(" {cpu:.0} µs |")
        } else {
            String::new()
        }
    };
    for (index, t) in scenario.repeats.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} s | {:.0} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms \
             | {:.3} ms | {:.0} µs | {:.0} µs |{}",
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
            database_cell(micros(t.database_cpu_per_run().unwrap_or_default())),
        );
    }
    let _ = writeln!(
        out,
        "| **median** | | | **{:.0}** | **{:.3} ms** | **{:.3} ms** | **{:.3} ms** | {:.3} ms \
         | {:.3} ms | {:.3} ms | {:.0} µs | {:.0} µs |{}",
        scenario.rate(),
        scenario.ms(|t| t.resume.p50),
        scenario.ms(|t| t.resume.p99),
        scenario.ms(|t| t.resume.p999),
        scenario.ms(|t| t.resume.max),
        scenario.ms(|t| t.total.p50),
        scenario.ms(|t| t.total.p99),
        scenario.ms(Throughput::server_cpu_per_run) * 1000.0,
        scenario.ms(Throughput::client_cpu_per_run) * 1000.0,
        database_cell(scenario.ms(|t| t.database_cpu_per_run().unwrap_or_default()) * 1000.0),
    );
}

/// Where the CPU time of a round trip goes, when PostgreSQL's was measured, and the rate that CPU
/// time allows on `cpus` cores: one round trip after another when sequential (its pieces run in
/// turn), every core busy when concurrent.
fn cpu_budget_section(out: &mut String, figures: &StoreFigures, cpus: usize) {
    let scenarios: Vec<&Repeated> = figures
        .sequential
        .iter()
        .chain(&figures.concurrent)
        .filter(|scenario| scenario.database_cpu_measured())
        .collect();
    if scenarios.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n### Where a round trip's CPU time goes\n\n{}\n",
        CPU_BUDGET.replace("{cpus}", &cpus.to_string())
    );
    let _ = writeln!(
        out,
        "| round trips | round trips/s | server | PostgreSQL | bench | all three | the rate that \
         allows | reached | the rate PostgreSQL's share alone allows |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for scenario in scenarios {
        let micros = |figure: fn(&Throughput) -> Duration| scenario.ms(figure) * 1000.0;
        let all = micros(Throughput::all_cpu_per_run);
        let database = micros(|t| t.database_cpu_per_run().unwrap_or_default());
        let (label, cores) = match scenario.concurrency {
            1 => ("sequential".to_owned(), 1),
            c => (format!("{c} at a time"), cpus.max(1)),
        };
        let allows = |cpu: f64| cores as f64 * 1e6 / cpu.max(1.0);
        let _ = writeln!(
            out,
            "| {label} | {:.0} | {:.0} µs | {database:.0} µs | {:.0} µs | {all:.0} µs | {:.0} \
             | {:.0} % | {:.0} |",
            scenario.rate(),
            micros(Throughput::server_cpu_per_run),
            micros(Throughput::client_cpu_per_run),
            allows(all),
            scenario.rate() / allows(all) * 100.0,
            allows(database),
        );
    }
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

fn store_section(out: &mut String, kind: &StoreKind, plan: &Plan, figures: &StoreFigures) {
    let store = kind.name();
    let floor = figures.floor.as_ref();
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
             and with `--metrics-listen` (counters and histograms kept), one of each per repeat \
             in an order that turns from one repeat to the next, {} repeats. A feature's cost is \
             the median over the repeats of its rate's loss against the defaults' in the same \
             repeat, so that the machine's drift between repeats, larger than the costs, cancels \
             out. Target: each costs at most 5 % of the defaults' rate.\n",
            plan.feature_repeats
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
             suspended in the store. At each size up to 100,000 runs, {} new \
             `WatchPendingCalls` feeds read their snapshot of every held call one after another; \
             the targets give the median. Server RSS before the first start: {:.1} MB.\n",
            hold.concurrency,
            hold.connections,
            hold.snapshots,
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
             | of it anonymous (RssAnon) | database file | per run | WAL not yet checkpointed |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
        for point in &hold.points {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} s | {:.0} | {:.0} µs | {:.1} MB | {:.1} MB | {:.1} MB | {:.0} bytes | {:.1} MB |",
                point.runs,
                point.started,
                point.elapsed.as_secs_f64(),
                point.starts_per_second(),
                point.server_cpu.as_secs_f64() * 1e6 / point.started.max(1) as f64,
                mb(point.rss_kib),
                mb(point.anon_kib),
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
    mastra: Option<&MastraFigures>,
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
        .map(|(kind, _, figures)| target_cells(kind, figures))
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
    if results
        .iter()
        .any(|(_, _, figures)| figures.floor.is_some())
    {
        floor_section(&mut out, results);
    }
    mastra::section(&mut out, mastra, results);
    for (kind, plan, figures) in results {
        store_section(&mut out, kind, plan, figures);
        cpu_budget_section(&mut out, figures, machine.cpus);
        fairness_sections(&mut out, figures);
    }
    let _ = writeln!(out, "\n## What limits the figures\n\n{LIMITS}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::Features;
    use crate::scenarios::Percentiles;

    fn repeat(runs: usize, secs: u64, cpu_ms: [u64; 3]) -> Throughput {
        let ms = Duration::from_millis;
        Throughput {
            runs,
            elapsed: Duration::from_secs(secs),
            total: Percentiles::default(),
            resume: Percentiles::default(),
            server_cpu: ms(cpu_ms[0]),
            client_cpu: ms(cpu_ms[1]),
            database_cpu: Some(ms(cpu_ms[2])),
            frames: (3, 5),
        }
    }

    /// Repeats of 1,000 round trips each, taking `secs` seconds each.
    fn thousand_runs_in(secs: &[f64]) -> Repeated {
        Repeated {
            concurrency: 1,
            connections: 1,
            repeats: secs
                .iter()
                .map(|&secs| Throughput {
                    elapsed: Duration::from_secs_f64(secs),
                    ..repeat(1000, 1, [0, 0, 0])
                })
                .collect(),
        }
    }

    fn figures(sequential: Repeated, concurrent: Vec<Repeated>) -> StoreFigures {
        StoreFigures {
            sequential: Some(sequential),
            tools: Vec::new(),
            concurrent,
            hold: None,
            streams: None,
            feeds: None,
            one_connection: None,
            features: None,
            floor: None,
        }
    }

    #[test]
    fn the_cpu_budget_gives_the_rate_each_round_trip_s_cpu_time_allows() {
        // Sequential: 1,000 round trips in 4 s with 1 ms of server, 0.25 ms of bench and 2.75 ms
        // of PostgreSQL each: 4 ms in all, so one after another allows 250 a second.
        let sequential = Repeated {
            concurrency: 1,
            connections: 1,
            repeats: vec![repeat(1000, 4, [1000, 250, 2750])],
        };
        // 64 at a time: 2,000 in 2 s, 2 ms each in all: two cores allow 1,000 a second.
        let concurrent = Repeated {
            concurrency: 64,
            connections: 4,
            repeats: vec![repeat(2000, 2, [1000, 200, 2800])],
        };
        let mut out = String::new();
        cpu_budget_section(&mut out, &figures(sequential, vec![concurrent]), 2);
        assert!(out.contains("all on the same 2 cores"), "{out}");
        assert!(
            out.contains(
                "| sequential | 250 | 1000 µs | 2750 µs | 250 µs | 4000 µs | 250 | 100 % | 364 |"
            ),
            "{out}"
        );
        assert!(
            out.contains("| 64 at a time | 1000 | 500 µs | 1400 µs | 100 µs | 2000 µs | 1000 | 100 % | 1429 |"),
            "{out}"
        );
    }

    #[test]
    fn a_feature_s_cost_is_the_median_of_each_repeat_s_loss_against_its_own_defaults() {
        // 1,000 runs in 10, 5 and 4 s: the machine got faster from repeat to repeat. Against the
        // same repeat's defaults the feature lost 10 %, 0 % and 20 %: 10 % at the median. The
        // medians' ratio (200 against 200 a second) would show no cost at all.
        let defaults = thousand_runs_in(&[10.0, 5.0, 4.0]);
        let with = thousand_runs_in(&[10.0 / 0.9, 5.0, 4.0 / 0.8]);
        assert!((defaults.rate() - 200.0).abs() < 1e-9);
        assert!((with.rate() - 200.0).abs() < 1e-9);
        let cost = Features::cost(&with, &defaults);
        assert!((cost - 0.10).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn a_share_of_the_floor_is_the_median_of_each_repeat_s_ratio_to_the_floor_beside_it() {
        // 1,000 runs a repeat. The floor's repeats ran slow, fast, fast (1,000, 2,000 and 2,000 a
        // second); the store's beside them slow, slow, fast (250, 250 and 500): 25 %, 12.5 % and
        // 25 % of the floor beside each. The medians' ratio, 250 against 2,000, would say 12.5 %.
        let floor = thousand_runs_in(&[1.0, 0.5, 0.5]);
        let ours = thousand_runs_in(&[4.0, 4.0, 2.0]);
        assert!((ours.rate() / floor.rate() - 0.125).abs() < 1e-9);
        let share = ours.share_of(&floor, Throughput::rate);
        assert!((share - 0.25).abs() < 1e-9, "{share}");
        // Without pairs (a repeat missing on one side), the medians' ratio: 250 against 2,000.
        let unpaired = thousand_runs_in(&[4.0, 4.0]).share_of(&floor, Throughput::rate);
        assert!((unpaired - 0.125).abs() < 1e-9, "{unpaired}");
    }

    #[test]
    fn no_cpu_budget_without_the_database_s_cpu() {
        let mut unmeasured = repeat(1000, 1, [500, 100, 0]);
        unmeasured.database_cpu = None;
        let sequential = Repeated {
            concurrency: 1,
            connections: 1,
            repeats: vec![unmeasured],
        };
        let mut out = String::new();
        cpu_budget_section(&mut out, &figures(sequential, Vec::new()), 2);
        assert_eq!(out, "");
    }
}
