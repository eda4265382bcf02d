//! `askuser pending [--agent A] [--kind K] [--watch]`: the calls that wait, across runs, from the
//! pending-calls feed: its snapshot, or with --watch the snapshot and then each change live.

use super::CliError;
use super::connect::{ClientArgs, Connection};
use super::print::{PENDING_HEADER, Printer, pending_row};
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
    // The snapshot, in a stable order; then, with --watch, each change as it comes.
    let mut snapshot = Vec::new();
    let mut snapshot_done = false;
    while let Some(event) = feed.message().await? {
        if !snapshot_done {
            match &event.event {
                Some(Event::CallPending(_)) => {
                    snapshot.push(event);
                    continue;
                }
                Some(Event::SnapshotDone(_)) => {
                    snapshot_done = true;
                    print_snapshot(
                        &mut printer,
                        std::mem::take(&mut snapshot),
                        args.client.json,
                    )?;
                    if !args.watch {
                        break;
                    }
                    continue;
                }
                _ => continue,
            }
        }
        printer.feed_event(&event)?;
    }
    if !snapshot_done {
        print_snapshot(&mut printer, snapshot, args.client.json)?;
    }
    Ok(())
}

/// The snapshot's calls, oldest first (then by run id and call id): a table under a header, or
/// with --json one `WatchPendingCallsResponse` a line.
fn print_snapshot(
    printer: &mut Printer,
    mut events: Vec<pb::WatchPendingCallsResponse>,
    json: bool,
) -> Result<(), CliError> {
    events.sort_by_key(|event| match &event.event {
        Some(Event::CallPending(pending)) => order_key(pending),
        _ => Default::default(),
    });
    if json {
        for event in &events {
            printer.feed_event(event)?;
        }
        return Ok(());
    }
    let now = std::time::SystemTime::now();
    let rows: Vec<Vec<String>> = events
        .iter()
        .filter_map(|event| match &event.event {
            Some(Event::CallPending(pending)) => Some(pending_row(pending, now)),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        eprintln!("no calls wait");
        return Ok(());
    }
    printer.table(&PENDING_HEADER, &rows)
}

/// Oldest first, then by run id, then by call id.
pub fn order_key(pending: &pb::CallPending) -> ((i64, i32), String, String) {
    let call = pending.call.clone().unwrap_or_default();
    let since = call
        .suspend_time
        .map(|time| (time.seconds, time.nanos))
        .unwrap_or((i64::MAX, 0));
    (since, pending.run_id.clone(), call.tool_call_id)
}
