use std::process::ExitCode;

use askuser::config::{Cli, Command};
use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
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
        Command::Start(args) => askuser::cli::exit(askuser::cli::start::run(*args).await),
        Command::Pending(args) => askuser::cli::exit(askuser::cli::pending::run(*args).await),
        Command::Answer(args) => askuser::cli::exit(askuser::cli::answer::run(*args).await),
        Command::Runs(args) => askuser::cli::exit(askuser::cli::runs::run(*args).await),
        Command::Watch(args) => askuser::cli::exit(askuser::cli::watch::run(*args).await),
        Command::Cancel(args) => askuser::cli::exit(askuser::cli::cancel::run(*args).await),
    }
}
