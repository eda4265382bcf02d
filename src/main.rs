use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use askuser::config::{Cli, Command, LogFormat};

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A log line that cannot be written (stderr on a full disk) is dropped: reporting that
        // with `eprintln!`, which panics when stderr fails, would panic whichever task logged.
        .log_internal_errors(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            init_logging(args.log_format);
            match askuser::server::serve(*args).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(%error, "askuser failed");
                    eprintln!("askuser: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Keys(args) => match askuser::keys_cli::run(*args).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("askuser keys: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Start(args) => askuser::cli::exit(askuser::cli::start::run(*args).await),
        Command::Pending(args) => askuser::cli::exit(askuser::cli::pending::run(*args).await),
        Command::Answer(args) => askuser::cli::exit(askuser::cli::answer::run(*args).await),
        Command::Runs(args) => askuser::cli::exit(askuser::cli::runs::run(*args).await),
        Command::Watch(args) => askuser::cli::exit(askuser::cli::watch::run(*args).await),
        Command::Cancel(args) => askuser::cli::exit(askuser::cli::cancel::run(*args).await),
    }
}
