//! `askuser cancel RUN [--reason R]`.

use super::connect::{ClientArgs, Connection};
use super::print::Printer;
use super::{CliError, resolve};
use crate::proto::v1 as pb;

/// `askuser cancel`.
#[derive(Clone, Debug, clap::Args)]
pub struct CancelArgs {
    /// The run (its id, or a unique prefix of at least 6 characters).
    pub run_id: String,
    /// Why; streams following the run are told.
    #[arg(long, default_value = "")]
    pub reason: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn run(args: CancelArgs) -> Result<(), CliError> {
    let mut connection = Connection::open(&args.client).await?;
    let run_id = resolve::run_id(&mut connection, &args.run_id).await?;
    let response = connection
        .cancel_run(pb::CancelRunRequest {
            run_id: run_id.clone(),
            reason: args.reason,
        })
        .await?;
    let mut printer = Printer::new(args.client.json);
    match &response.run {
        Some(run) => printer.run(run),
        None => printer.line(&format!("run {run_id} cancelled")),
    }
}
