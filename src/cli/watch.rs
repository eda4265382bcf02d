//! `askuser watch RUN`: a run's events from its start (or after --after), then live until it ends.

use super::call::WaitingCalls;
use super::connect::{ClientArgs, Connection};
use super::follow::follow;
use super::print::Printer;
use super::{CliError, resolve};
use crate::proto::v1 as pb;

/// `askuser watch`.
#[derive(Clone, Debug, clap::Args)]
pub struct WatchArgs {
    /// The run (its id, or a unique prefix of at least 6 characters).
    pub run_id: String,
    /// Replay only the events after this sequence number.
    #[arg(long, default_value_t = 0)]
    pub after: u64,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn run(args: WatchArgs) -> Result<(), CliError> {
    let mut connection = Connection::open(&args.client).await?;
    let run_id = resolve::run_id(&mut connection, &args.run_id).await?;
    let request = pb::WatchRunRequest {
        run_id: run_id.clone(),
        after_sequence: args.after,
    };
    let stream = connection.client.watch_run(request).await?.into_inner();
    let mut waiting = WaitingCalls::default();
    follow(stream, &mut Printer::new(args.client.json), &mut waiting).await?;
    // The stream ends with the run; calls still waiting mean the server went away first.
    waiting.print_hints(&run_id);
    Ok(())
}
