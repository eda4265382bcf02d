use std::cell::Cell;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use askuser::cli::{
    AgentsArgs, AnswerArgs, CancelArgs, PendingArgs, RunsArgs, StartArgs, WatchArgs,
};
use askuser::config::ServeArgs;
use askuser::keys_cli::KeysArgs;
use clap::{Parser, Subcommand};

/// The askuser command line.
#[derive(Debug, Parser)]
#[command(
    name = "askuser",
    version,
    about = "Runs AI agents whose tools can stop and ask a human"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the askuser gRPC API.
    Serve(Box<ServeArgs>),
    /// Create, list and revoke API keys, offline against the store (the same store flags as
    /// serve; a server on the same store sees the change at its next request).
    Keys(Box<KeysArgs>),
    /// List the agents the server runs: id, name, tools, description.
    Agents(Box<AgentsArgs>),
    /// Start a run of an agent and follow it, answering its questions here.
    Start(Box<StartArgs>),
    /// List the calls that wait for someone, across runs (live with --watch).
    Pending(Box<PendingArgs>),
    /// Answer a pending call: with a flag (--text, --select, ...), or interactively without one.
    Answer(Box<AnswerArgs>),
    /// List runs, newest first.
    Runs(Box<RunsArgs>),
    /// Follow a run's events from its start, without answering.
    Watch(Box<WatchArgs>),
    /// Cancel a run.
    Cancel(Box<CancelArgs>),
}

/// mimalloc rather than glibc's malloc: rows are made on the store's reader threads and freed on
/// the runtime's workers, and frames the other way. Against glibc, in interleaved rounds on
/// 3 December 2026: 15–34 % more round trips at 64 streams, 36 % more starts, 11 % more RSS with
/// 100,000 runs held. Built without transparent huge pages (`no_thp`): with them its arenas held
/// 50 % more RSS than glibc, and peaked at four times as much.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_e` of the mimalloc v3 that
/// `libmimalloc-sys` 0.1.49 builds, whose bindings lack it; its default there is 1000 (ms).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const DEFAULT_PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// How often at most a runtime worker gives back, as it goes idle, the memory it freed.
const RELEASE_INTERVAL: Duration = Duration::from_millis(100);

/// Called by a runtime worker about to go idle: returns to the OS the memory freed on this thread,
/// at most once per [`RELEASE_INTERVAL`]. mimalloc frees a thread's emptied pages (and purges them)
/// only when that thread allocates again or collects, so a worker idle after a burst of starts kept
/// them: about 6 MB of the RSS with 1,000,000 runs held. glibc's arenas hold SQLite's freed pages
/// (its page caches are allocated with malloc). Interleaved rounds on 3 December 2026 showed no
/// change in the round-trip rates beyond their spread.
fn release_freed_memory() {
    thread_local! {
        static LAST_RELEASE: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    let due = LAST_RELEASE.with(|last| {
        let due = last
            .get()
            .is_none_or(|at| now.duration_since(at) >= RELEASE_INTERVAL);
        if due {
            last.set(Some(now));
        }
        due
    });
    if !due {
        return;
    }
    // SAFETY: `mi_collect` frees the calling thread's empty pages and purges the arenas' free
    // memory; it takes no pointer and may be called at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
    // SAFETY: `malloc_trim` gives back glibc's free memory; it takes no pointer and locks each
    // arena as it goes.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

fn main() -> ExitCode {
    // Freed memory goes back to the OS after 10 ms rather than 1 s, which let a burst of answers
    // peak at about 50 % more RSS. Only over the default: a `MIMALLOC_PURGE_DELAY` stands, and
    // a mimalloc whose option 15 is something else is left alone.
    // SAFETY: `mi_option_get` and `mi_option_set` read and store a value in mimalloc's table of
    // options.
    unsafe {
        if libmimalloc_sys::mi_option_get(PURGE_DELAY) == DEFAULT_PURGE_DELAY_MS {
            libmimalloc_sys::mi_option_set(PURGE_DELAY, 10);
        }
    }
    let cli = Cli::parse();
    match runtime(&cli) {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(error) => {
            eprintln!("askuser: cannot start Tokio: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The async runtime: for `serve`, as many threads as [`ServeArgs::runtime_workers`] says; for
/// the other commands, a thread per CPU core.
fn runtime(cli: &Cli) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().on_thread_park(release_freed_memory);
    if let Command::Serve(args) = &cli.command {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        builder.worker_threads(args.runtime_workers(cores));
    }
    builder.build()
}

async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve(args) => {
            let telemetry =
                match askuser::telemetry::init(args.log_format, args.otlp_endpoint().as_deref()) {
                    Ok(telemetry) => telemetry,
                    Err(error) => {
                        eprintln!("askuser: {error}");
                        return ExitCode::FAILURE;
                    }
                };
            let served = askuser::server::serve(*args).await;
            if let Err(error) = &served {
                tracing::error!(%error, "askuser failed");
                eprintln!("askuser: {error}");
            }
            telemetry.shutdown().await;
            match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Command::Keys(args) => match askuser::keys_cli::run(*args).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("askuser keys: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Agents(args) => askuser::cli::exit(askuser::cli::agents::run(*args).await),
        Command::Start(args) => askuser::cli::exit(askuser::cli::start::run(*args).await),
        Command::Pending(args) => askuser::cli::exit(askuser::cli::pending::run(*args).await),
        Command::Answer(args) => askuser::cli::exit(askuser::cli::answer::run(*args).await),
        Command::Runs(args) => askuser::cli::exit(askuser::cli::runs::run(*args).await),
        Command::Watch(args) => askuser::cli::exit(askuser::cli::watch::run(*args).await),
        Command::Cancel(args) => askuser::cli::exit(askuser::cli::cancel::run(*args).await),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_runs_on_as_many_worker_threads_as_asked() {
        let cli = |flags: &[&str]| Cli::try_parse_from(["askuser", "serve"].iter().chain(flags));
        for threads in [1, 3] {
            let cli = cli(&["--worker-threads", &threads.to_string()]).expect("valid flags");
            let runtime = runtime(&cli).expect("a runtime");
            assert_eq!(runtime.metrics().num_workers(), threads);
        }
        assert!(cli(&["--worker-threads", "0"]).is_err());
    }

    /// By default SQLite's writer thread has a core to itself; PostgreSQL, which has no such
    /// thread, gets every core.
    #[test]
    fn serve_leaves_a_core_to_sqlite_s_writer_by_default() {
        let serve =
            |flags: &[&str]| match Cli::try_parse_from(["askuser", "serve"].iter().chain(flags)) {
                Ok(Cli {
                    command: Command::Serve(args),
                    ..
                }) => args,
                _ => panic!("serve takes {flags:?}"),
            };
        let sqlite = serve(&[]);
        assert_eq!(sqlite.runtime_workers(2), 1);
        assert_eq!(sqlite.runtime_workers(8), 7);
        assert_eq!(sqlite.runtime_workers(1), 1);
        let postgres = serve(&["--database-url", "postgres://localhost/askuser"]);
        assert_eq!(postgres.runtime_workers(2), 2);
        assert_eq!(serve(&["--worker-threads", "3"]).runtime_workers(2), 3);
    }

    #[test]
    fn keys_takes_the_store_flags_and_no_other_serve_flag() {
        let keys = |flags: &[&str]| {
            Cli::try_parse_from(["askuser", "keys"].iter().chain(flags)).map(|cli| cli.command)
        };
        match keys(&["--data-dir", "somewhere", "list"]) {
            Ok(Command::Keys(args)) => {
                assert_eq!(
                    args.store.sqlite_path(),
                    std::path::Path::new("somewhere/askuser.sqlite3")
                );
            }
            other => panic!("{other:?}"),
        }
        match keys(&["--database-url", "postgres://db/askuser", "list"]) {
            Ok(Command::Keys(args)) => assert!(args.store.database_url.is_some()),
            other => panic!("{other:?}"),
        }
        assert!(keys(&["--max-options", "5", "list"]).is_err());
        assert!(keys(&["list", "--max-options", "5"]).is_err());
    }
}
