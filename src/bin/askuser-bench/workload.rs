//! The round-trip workloads, driven over loopback gRPC with the crate's generated client: a run
//! that suspends once, is settled once, and completes. [`ASK_USER`] is the "ask-user round trip";
//! [`CLIENT_TOOL`] and [`APPROVAL`] are the same trip through a client tool and an approval.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tonic::transport::Channel;

use crate::BenchError;

pub type Client = AgentServiceClient<Channel>;

/// One kind of round trip: the agent run, what its one call waits for, how it is settled and
/// what the run then says.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub name: &'static str,
    pub agent_id: &'static str,
    pub kind: pb::SuspendKind,
    answer: fn() -> pb::answer::Answer,
    output: &'static str,
}

/// The demo agent `environment` asks "Which environment?" (staging / production, single select);
/// after the answer `staging` the model says "Deploying to staging".
pub const ASK_USER: Workload = Workload {
    name: "ask_user",
    agent_id: "environment",
    kind: pb::SuspendKind::Question,
    answer: || pb::answer::Answer::Text("staging".into()),
    output: "Deploying to staging",
};

/// The demo agent `status_check` calls the client tool `service_status`; its output `healthy`
/// makes the model say "api is healthy".
pub const CLIENT_TOOL: Workload = Workload {
    name: "client tool",
    agent_id: "status_check",
    kind: pb::SuspendKind::ClientTool,
    answer: || {
        pb::answer::Answer::ToolOutput(pb::ToolOutput {
            content: "healthy".into(),
            is_error: false,
        })
    },
    output: "api is healthy",
};

/// The bench agent `gated` (see [`BENCH_AGENTS`]) calls `release`, which always waits for approval;
/// the decision (a rejection, so that one settlement ends the trip as in the others) makes the
/// model say what it got.
pub const APPROVAL: Workload = Workload {
    name: "approval",
    agent_id: "gated",
    kind: pb::SuspendKind::Approval,
    answer: || {
        pb::answer::Answer::Approval(pb::ApprovalDecision {
            decision: Some(pb::approval_decision::Decision::Reject(
                pb::approval_decision::Reject {
                    reason: "not now".into(),
                },
            )),
        })
    },
    output: "release: User rejected the call: not now",
};

/// The agents file every benchmarked server runs: the demo agents the workloads use, and `gated`.
pub const BENCH_AGENTS: &str = concat!(
    include_str!("../../demo_agents.toml"),
    r#"
[[tool]]
name = "release"
kind = "client"
parameters = { type = "object", properties = { version = { type = "string" } }, required = ["version"] }
approval = "always"

[[agent]]
id = "gated"
tools = ["release"]
max_steps = 4
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{ tool = "release", arguments = { version = "v1" } }]
[[agent.model.turns]]
say = "release: {{result.1}}"
"#
);

/// The longest wait for one frame: a server that stops answering fails the bench.
const FRAME_TIMEOUT: Duration = Duration::from_secs(60);

/// A run waiting for its answer.
#[derive(Clone, Debug)]
pub struct Suspension {
    pub run_id: String,
    pub tool_call_id: String,
}

/// A `RunAgent` stream open on a suspended run.
pub struct OpenRun {
    sender: mpsc::Sender<pb::RunAgentRequest>,
    inbound: Streaming<pb::RunAgentResponse>,
    workload: Workload,
    pub suspension: Suspension,
    /// Frames received up to and including `tool_call_suspended`.
    frames_before: usize,
}

/// The timings of one round trip.
#[derive(Clone, Copy, Debug)]
pub struct RoundTrip {
    /// RunAgent start → run_completed seen.
    pub total: Duration,
    /// Answer sent → run_completed seen.
    pub resume: Duration,
    /// Frames received before the answer, and after it up to `run_completed` (heartbeats aside):
    /// the pattern the transport floor imitates.
    pub frames: (usize, usize),
}

async fn next_frame(
    inbound: &mut Streaming<pb::RunAgentResponse>,
) -> Result<Option<pb::RunAgentResponse>, BenchError> {
    match tokio::time::timeout(FRAME_TIMEOUT, inbound.message()).await {
        Ok(frame) => Ok(frame?),
        Err(_) => Err(BenchError::failed("no frame from the server for 60 s")),
    }
}

/// Reads the rest of a stream after `run_completed`, which must be its end.
async fn expect_end(inbound: &mut Streaming<pb::RunAgentResponse>) -> Result<(), BenchError> {
    loop {
        match next_frame(inbound).await? {
            None => return Ok(()),
            Some(frame) if matches!(frame.event, Some(Event::Heartbeat(_))) => {}
            Some(frame) => {
                return Err(BenchError::failed(format!(
                    "a frame after run_completed: {frame:?}"
                )));
            }
        }
    }
}

/// Reads frames until `run_completed` and checks its text; other ends are failures. Returns the
/// frames read, heartbeats aside.
async fn until_completed(
    inbound: &mut Streaming<pb::RunAgentResponse>,
    workload: &Workload,
) -> Result<usize, BenchError> {
    let mut frames = 0;
    loop {
        let Some(frame) = next_frame(inbound).await? else {
            return Err(BenchError::failed("the stream ended before run_completed"));
        };
        if !matches!(frame.event, Some(Event::Heartbeat(_))) {
            frames += 1;
        }
        match frame.event {
            Some(Event::RunCompleted(done)) if done.output_text == workload.output => {
                return Ok(frames);
            }
            Some(Event::RunCompleted(done)) => {
                return Err(BenchError::failed(format!(
                    "run {} completed with {:?}, not {:?}",
                    frame.run_id, done.output_text, workload.output
                )));
            }
            Some(Event::RunFailed(failed)) => {
                return Err(BenchError::failed(format!(
                    "run {} failed: {}",
                    frame.run_id, failed.message
                )));
            }
            Some(Event::AnswerRejected(rejected)) => {
                return Err(BenchError::failed(format!(
                    "answer rejected: {} {}",
                    rejected.reason, rejected.message
                )));
            }
            _ => {}
        }
    }
}

/// A request carrying `credential` (an API key) as a bearer token, if any.
pub fn authorized<T>(
    message: T,
    credential: Option<&str>,
) -> Result<tonic::Request<T>, BenchError> {
    let mut request = tonic::Request::new(message);
    if let Some(credential) = credential {
        let value = format!("Bearer {credential}")
            .parse()
            .map_err(|_| BenchError::failed("a key that is no header value"))?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

/// Starts a run of the workload's agent and reads until its call is committed.
pub async fn start_run(client: &mut Client, workload: &Workload) -> Result<OpenRun, BenchError> {
    start_run_as(client, workload, None).await
}

/// [`start_run`] as the holder of `credential`.
pub async fn start_run_as(
    client: &mut Client,
    workload: &Workload,
    credential: Option<&str>,
) -> Result<OpenRun, BenchError> {
    let (sender, receiver) = mpsc::channel(2);
    sender
        .send(pb::RunAgentRequest {
            frame: Some(Frame::Start(pb::StartRun {
                agent_id: workload.agent_id.into(),
                prompt: "Deploy the release".into(),
                ..Default::default()
            })),
        })
        .await
        .map_err(|_| BenchError::failed("request stream closed"))?;
    let mut inbound = client
        .run_agent(authorized(ReceiverStream::new(receiver), credential)?)
        .await?
        .into_inner();
    let mut frames_before = 0;
    loop {
        let Some(frame) = next_frame(&mut inbound).await? else {
            return Err(BenchError::failed(
                "the stream ended before tool_call_suspended",
            ));
        };
        if !matches!(frame.event, Some(Event::Heartbeat(_))) {
            frames_before += 1;
        }
        match frame.event {
            Some(Event::ToolCallSuspended(suspended)) => {
                if suspended.kind != workload.kind as i32 {
                    return Err(BenchError::failed(format!(
                        "{} waits for {:?}, not {:?}",
                        workload.agent_id, suspended.kind, workload.kind
                    )));
                }
                return Ok(OpenRun {
                    sender,
                    inbound,
                    workload: *workload,
                    suspension: Suspension {
                        run_id: frame.run_id,
                        tool_call_id: suspended.tool_call_id,
                    },
                    frames_before,
                });
            }
            Some(Event::RunFailed(failed)) => {
                return Err(BenchError::failed(format!(
                    "run failed: {}",
                    failed.message
                )));
            }
            _ => {}
        }
    }
}

fn answer(suspension: &Suspension, workload: &Workload) -> pb::Answer {
    pb::Answer {
        run_id: suspension.run_id.clone(),
        tool_call_id: suspension.tool_call_id.clone(),
        answer: Some((workload.answer)()),
        answer_id: String::new(),
    }
}

impl OpenRun {
    /// Answers on the stream and reads until the run completes; returns answer sent →
    /// `run_completed` seen, and the frames read before and after the answer.
    pub async fn answer(mut self) -> Result<(Duration, (usize, usize)), BenchError> {
        let sent = Instant::now();
        self.sender
            .send(pb::RunAgentRequest {
                frame: Some(Frame::Answer(answer(&self.suspension, &self.workload))),
            })
            .await
            .map_err(|_| BenchError::failed("request stream closed"))?;
        let frames_after = until_completed(&mut self.inbound, &self.workload).await?;
        let resume = sent.elapsed();
        expect_end(&mut self.inbound).await?;
        Ok((resume, (self.frames_before, frames_after)))
    }
}

/// One whole round trip on one `RunAgent` stream.
pub async fn round_trip(client: &mut Client, workload: &Workload) -> Result<RoundTrip, BenchError> {
    round_trip_as(client, workload, None).await
}

/// [`round_trip`] as the holder of `credential`.
pub async fn round_trip_as(
    client: &mut Client,
    workload: &Workload,
    credential: Option<&str>,
) -> Result<RoundTrip, BenchError> {
    let started = Instant::now();
    let run = start_run_as(client, workload, credential).await?;
    let (resume, frames) = run.answer().await?;
    Ok(RoundTrip {
        total: started.elapsed(),
        resume,
        frames,
    })
}

/// Answers a suspended run of [`ASK_USER`] with `ResumeRun` and reads until it completes.
pub async fn resume_run(client: &mut Client, suspension: &Suspension) -> Result<(), BenchError> {
    let mut inbound = client
        .resume_run(pb::ResumeRunRequest {
            answer: Some(answer(suspension, &ASK_USER)),
        })
        .await?
        .into_inner();
    until_completed(&mut inbound, &ASK_USER).await?;
    expect_end(&mut inbound).await
}

/// Runs `operation(client, index)` for every index below `total`, `concurrency` at a time in as
/// many tasks, spread over `clients` (one HTTP/2 connection each). Fails at the first error, or
/// when `deadline` passes first. Results come back in index order.
pub async fn run_concurrently<T, F, Fut>(
    clients: &[Client],
    concurrency: usize,
    total: usize,
    deadline: Instant,
    operation: F,
) -> Result<Vec<T>, BenchError>
where
    T: Send + 'static,
    F: Fn(Client, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, BenchError>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let operation = Arc::new(operation);
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..concurrency.min(total) {
        let client = clients[worker % clients.len()].clone();
        let next = Arc::clone(&next);
        let operation = Arc::clone(&operation);
        workers.spawn(async move {
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    return Ok(done);
                }
                if Instant::now() > deadline {
                    return Err(BenchError::failed(format!(
                        "out of time after {index} of {total} operations"
                    )));
                }
                done.push((index, operation(client.clone(), index).await?));
            }
        });
    }
    let mut results = Vec::with_capacity(total);
    while let Some(finished) = workers.join_next().await {
        match finished {
            Ok(Ok(done)) => results.extend(done),
            Ok(Err(error)) => {
                workers.abort_all();
                return Err(error);
            }
            Err(error) => return Err(BenchError::failed(format!("worker task: {error}"))),
        }
    }
    results.sort_unstable_by_key(|(index, _)| *index);
    Ok(results.into_iter().map(|(_, result)| result).collect())
}

/// Counts the runs of the agent in `status` by paging through `ListRuns`.
pub async fn count_runs(client: &mut Client, status: pb::RunStatus) -> Result<usize, BenchError> {
    let mut count = 0;
    let mut page_token = String::new();
    loop {
        let page = client
            .list_runs(pb::ListRunsRequest {
                status: status as i32,
                agent_id: ASK_USER.agent_id.into(),
                page_size: 1000,
                page_token,
                ..pb::ListRunsRequest::default()
            })
            .await?
            .into_inner();
        count += page.runs.len();
        if page.next_page_token.is_empty() {
            return Ok(count);
        }
        page_token = page.next_page_token;
    }
}

/// Checks with `GetRun` that the run completed with the expected text.
pub async fn check_completed(client: &mut Client, run_id: &str) -> Result<(), BenchError> {
    let run = client
        .get_run(pb::GetRunRequest {
            run_id: run_id.into(),
        })
        .await?
        .into_inner()
        .run
        .ok_or_else(|| BenchError::failed("GetRun without a run"))?;
    if run.status != pb::RunStatus::Completed as i32 || run.output_text != ASK_USER.output {
        return Err(BenchError::failed(format!(
            "run {run_id} is {:?} with {:?}",
            pb::RunStatus::try_from(run.status),
            run.output_text
        )));
    }
    Ok(())
}

/// Opens a pending-calls feed and reads its snapshot to `snapshot_done`; how long that took. The
/// snapshot must hold `expected` calls.
pub async fn feed_snapshot(client: &mut Client, expected: usize) -> Result<Duration, BenchError> {
    let started = Instant::now();
    let request = authorized(pb::WatchPendingCallsRequest::default(), None)?;
    let mut feed = client.watch_pending_calls(request).await?.into_inner();
    let calls = read_snapshot(&mut feed).await?;
    let elapsed = started.elapsed();
    if calls != expected {
        return Err(BenchError::failed(format!(
            "a feed's snapshot held {calls} calls, not {expected}"
        )));
    }
    Ok(elapsed)
}

/// Reads a feed to the end of its snapshot; how many calls it held.
pub async fn read_snapshot(
    feed: &mut tonic::Streaming<pb::WatchPendingCallsResponse>,
) -> Result<usize, BenchError> {
    use askuser::proto::v1::watch_pending_calls_response::Event;
    // One deadline for the whole snapshot: a timer per message would cost the client (on the
    // server's cores) more than reading the message.
    tokio::time::timeout(Duration::from_secs(120), async {
        let mut calls = 0;
        loop {
            match feed.message().await?.and_then(|m| m.event) {
                Some(Event::CallPending(_)) => calls += 1,
                Some(Event::SnapshotDone(_)) => return Ok(calls),
                Some(_) => {}
                None => return Err(BenchError::failed("a feed ended during its snapshot")),
            }
        }
    })
    .await
    .map_err(|_| BenchError::failed("no whole snapshot from a feed in 120 s"))?
}
