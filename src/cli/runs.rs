//! `askuser runs [--status S] [--agent A]`: runs, newest first, page after page up to --limit.

use super::CliError;
use super::connect::{ClientArgs, Connection};
use super::print::Printer;
use crate::proto::v1 as pb;

/// A run status to list.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Status {
    Running,
    Suspended,
    Completed,
    Failed,
    Cancelled,
}

impl From<Status> for pb::RunStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Running => pb::RunStatus::Running,
            Status::Suspended => pb::RunStatus::Suspended,
            Status::Completed => pb::RunStatus::Completed,
            Status::Failed => pb::RunStatus::Failed,
            Status::Cancelled => pb::RunStatus::Cancelled,
        }
    }
}

/// `askuser runs`.
#[derive(Clone, Debug, clap::Args)]
pub struct RunsArgs {
    /// Only runs in this status.
    #[arg(long, value_enum)]
    pub status: Option<Status>,
    /// Only runs of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// The most runs to list.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The server's largest page.
const MAX_PAGE_SIZE: usize = 1000;

pub async fn run(args: RunsArgs) -> Result<(), CliError> {
    let mut connection = Connection::open(&args.client).await?;
    let mut printer = Printer::new(args.client.json);
    let mut left = args.limit;
    let mut page_token = String::new();
    while left > 0 {
        let page_size = left.min(MAX_PAGE_SIZE);
        let page = connection
            .list_runs(pb::ListRunsRequest {
                status: args.status.map(pb::RunStatus::from).unwrap_or_default() as i32,
                agent_id: args.agent.clone().unwrap_or_default(),
                page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
                page_token,
                ..pb::ListRunsRequest::default()
            })
            .await?;
        for run in page.runs.iter().take(left) {
            printer.run(run)?;
        }
        left = left.saturating_sub(page.runs.len());
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    Ok(())
}
