//! `askuser pending [--agent A] [--kind K] [--watch]`: the calls that wait, across runs, from the
//! pending-calls feed: its snapshot, or with --watch the snapshot and then each change live.

use super::CliError;
use super::connect::{ClientArgs, Connection};
use super::print::Printer;
use crate::proto::v1 as pb;
use crate::proto::v1::watch_pending_calls_response::Event;

/// What a waiting call waits for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Kind {
    /// A person's answer to a question.
    Question,
    /// A person's decision before a tool runs.
    Approval,
    /// A client tool's output, from whoever runs it.
    ClientTool,
}

impl From<Kind> for pb::SuspendKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Question => pb::SuspendKind::Question,
            Kind::Approval => pb::SuspendKind::Approval,
            Kind::ClientTool => pb::SuspendKind::ClientTool,
        }
    }
}

/// `askuser pending`.
#[derive(Clone, Debug, clap::Args)]
pub struct PendingArgs {
    /// Only calls of runs of this agent (repeatable).
    #[arg(long)]
    pub agent: Vec<String>,
    /// Only calls of this kind (repeatable).
    #[arg(long, value_enum)]
    pub kind: Vec<Kind>,
    /// Only calls assigned to the caller.
    #[arg(long)]
    pub assigned_to_me: bool,
    /// Keep following: print new calls and settlements as they happen.
    #[arg(long)]
    pub watch: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn run(args: PendingArgs) -> Result<(), CliError> {
    let mut connection = Connection::open(&args.client).await?;
    let request = pb::WatchPendingCallsRequest {
        agent_ids: args.agent.clone(),
        tool_names: Vec::new(),
        kinds: args
            .kind
            .iter()
            .map(|kind| pb::SuspendKind::from(*kind) as i32)
            .collect(),
        assigned_to_me: args.assigned_to_me,
    };
    let mut feed = connection
        .client
        .watch_pending_calls(request)
        .await?
        .into_inner();
    let mut printer = Printer::new(args.client.json);
    while let Some(event) = feed.message().await? {
        if !args.watch && matches!(event.event, Some(Event::SnapshotDone(_))) {
            break;
        }
        printer.feed_event(&event)?;
    }
    Ok(())
}
