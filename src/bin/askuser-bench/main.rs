//! askuser-bench: the "ask-user round trip" benchmarks (issue 7), run by `scripts/bench`.
//!
//! Starts the real server as a child process for every scenario (fresh store each time), drives it
//! over loopback gRPC with the generated client, prints every figure and writes BENCHMARKS.md.
//! It is a client of the server, outside the server's layers. Every load loop is bounded in count
//! and in time.

mod features;
mod feeds;
mod floor;
mod hold;
mod one_connection;
mod report;
mod scenarios;
mod server;
mod streams;
mod workload;

use std::path::PathBuf;

use clap::Parser;

use scenarios::{Plan, Scenario};
use server::StoreKind;

/// Why a benchmark could not finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Failed(String),
    #[error("gRPC status: {0}")]
    Status(#[from] tonic::Status),
    #[error("gRPC transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl BenchError {
    pub fn failed(message: impl Into<String>) -> Self {
        BenchError::Failed(message.into())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum StoreName {
    Sqlite,
    Postgres,
}

/// Benchmarks of askuser: round trips, concurrency, held suspensions, open streams.
#[derive(Debug, Parser)]
#[command(name = "askuser-bench")]
struct Args {
    /// The askuser server binary to benchmark.
    #[arg(long, default_value = "target/release/askuser")]
    server: PathBuf,
    /// Where scenario data directories go (removed after each scenario).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// A PostgreSQL URL whose database may be used to create and drop benchmark databases; without
    /// it only the SQLite store is benchmarked.
    #[arg(long)]
    database_url: Option<String>,
    /// The Markdown report to write.
    #[arg(long, default_value = "BENCHMARKS.md")]
    out: PathBuf,
    /// A short run (fewer runs and repeats) to try the bench out; its figures are rougher.
    #[arg(long)]
    quick: bool,
    /// Runs held suspended on SQLite, cumulatively (figures at each size), comma-separated.
    #[arg(long, value_delimiter = ',')]
    hold: Option<Vec<usize>>,
    /// Runs held suspended on PostgreSQL, cumulatively, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pg_hold: Option<Vec<usize>>,
    /// Run only these scenarios (e.g. for profiling one); the report then lacks the others.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Scenario>,
    /// Times each throughput scenario is repeated, instead of the plan's.
    #[arg(long)]
    repeats: Option<usize>,
    /// Repeats of the features scenario, instead of the plan's (9; --quick 1).
    #[arg(long)]
    feature_repeats: Option<usize>,
    /// Concurrency levels of the concurrency scenario and the floor, instead of the plan's
    /// (16,64,256).
    #[arg(long, value_delimiter = ',')]
    concurrency: Option<Vec<usize>>,
    /// Measured runs at each concurrency level, instead of the plan's.
    #[arg(long)]
    concurrent_runs: Option<usize>,
    /// Measured sequential runs, instead of the plan's.
    #[arg(long)]
    sequential_runs: Option<usize>,
    /// Round trips of the one-connection scenario, instead of the plan's (1,000,000; --quick
    /// 50,000).
    #[arg(long)]
    one_connection_runs: Option<usize>,
    /// New feeds' snapshots timed at each size of the hold, instead of the plan's (5).
    #[arg(long)]
    snapshots: Option<usize>,
    /// Idle feeds of the feeds scenario, instead of the plan's (5,000; --quick 1,000).
    #[arg(long)]
    feeds: Option<usize>,
    /// Benchmark only this store (default: SQLite, and PostgreSQL with --database-url).
    #[arg(long, value_enum)]
    store: Option<StoreName>,
    /// Mastra's figures, measured before this run by bench/mastra (`scripts/bench --compare
    /// mastra`), to compare with.
    #[arg(long)]
    mastra: Option<PathBuf>,
    /// How the bench was invoked, for the report.
    #[arg(long, default_value = "askuser-bench")]
    command: String,
    /// Serve the transport floor (src/bin/askuser-bench/floor.rs) instead of benchmarking: the
    /// bench starts itself so for the floor scenario.
    #[arg(long, hide = true)]
    serve_floor: bool,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let outcome = if args.serve_floor {
        floor::serve().map_err(BenchError::from)
    } else {
        // One thread: the load generator takes at most one of the machine's cores, and spends
        // none of it waking threads of its own.
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(BenchError::from)
            .and_then(|runtime| runtime.block_on(run(args)))
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askuser-bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), BenchError> {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("askuser-bench-{}", std::process::id()))
    });
    let mut stores = Vec::new();
    if args.store != Some(StoreName::Postgres) {
        stores.push((StoreKind::Sqlite, Plan::sqlite(args.quick)));
    }
    match (&args.database_url, args.store) {
        (Some(url), None | Some(StoreName::Postgres)) => stores.push((
            StoreKind::Postgres {
                admin_url: url.clone(),
            },
            Plan::postgres(args.quick),
        )),
        (None, Some(StoreName::Postgres)) => {
            return Err(BenchError::failed("--store postgres needs --database-url"));
        }
        _ => {}
    }
    let mastra = args
        .mastra
        .as_deref()
        .map(report::MastraFigures::read)
        .transpose()?;
    let machine = report::Machine::detect(args.database_url.as_deref()).await;
    println!("{}", machine.summary());
    let mut results = Vec::new();
    for (kind, mut plan) in stores {
        match (&kind, &args.hold, &args.pg_hold) {
            (StoreKind::Sqlite, Some(hold), _) | (StoreKind::Postgres { .. }, _, Some(hold)) => {
                plan.hold = hold.clone();
            }
            _ => {}
        }
        if let Some(runs) = args.one_connection_runs {
            plan.one_connection_runs = runs;
        }
        if let Some(snapshots) = args.snapshots {
            plan.snapshots = snapshots.max(1);
        }
        if let Some(feeds) = args.feeds {
            plan.feeds = feeds;
        }
        if let Some(repeats) = args.repeats {
            plan.repeats = repeats;
        }
        if let Some(repeats) = args.feature_repeats {
            plan.feature_repeats = repeats.max(1);
        }
        if let Some(levels) = &args.concurrency {
            plan.concurrency_levels = levels.clone();
        }
        if let Some(runs) = args.concurrent_runs {
            plan.concurrent_runs = runs;
        }
        if let Some(runs) = args.sequential_runs {
            plan.sequential_runs = runs;
        }
        if !args.only.is_empty() {
            plan.scenarios = args.only.clone();
        }
        let figures = scenarios::run_all(&args.server, &work_dir, &kind, &plan).await?;
        results.push((kind, plan, figures));
    }
    let _ = std::fs::remove_dir_all(&work_dir);
    let text = report::render(
        &machine,
        &args.command,
        args.quick,
        mastra.as_ref(),
        &results,
    );
    std::fs::write(&args.out, text)?;
    println!("wrote {}", args.out.display());
    Ok(())
}
