//! The terminal client: `askuser agents | start | pending | answer | runs | watch | cancel`.
//!
//! A gRPC client of a running server, like any other: it never touches [`crate::runtime`] or
//! [`crate::store`]. Frames and items go to stdout (human lines, or proto3 JSON with `--json`);
//! prompts and errors go to stderr.

pub mod agents;
pub mod answer;
mod call;
pub mod cancel;
mod connect;
mod error;
mod follow;
mod form_prompt;
mod form_values;
mod line_prompt;
pub mod pending;
mod print;
mod prompt;
mod resolve;
pub mod runs;
pub mod start;
pub mod watch;

use std::process::ExitCode;

pub use agents::AgentsArgs;
pub use answer::AnswerArgs;
pub use cancel::CancelArgs;
pub use connect::ClientArgs;
pub use error::CliError;
pub use pending::PendingArgs;
pub use runs::RunsArgs;
pub use start::StartArgs;
pub use watch::WatchArgs;

/// The exit status of a subcommand: 0, or its error as one line on stderr and 1 (130 after Ctrl-C,
/// as shells report an interrupted program).
pub fn exit(result: Result<(), CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askuser: {error}");
            if error.is_interruption() {
                ExitCode::from(130)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
