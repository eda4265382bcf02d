//! Test harness: runs the server on 127.0.0.1:0 with a real SQLite file in a temporary directory
//! (`server.rs`), and talks to it with the generated tonic clients.

pub mod credentials;
pub mod postgres_cluster;
pub mod postgres_gate;
mod server;
pub mod webhook_receiver;

pub use server::Server;

use std::process::Command;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tonic::transport::Channel;

/// How long a test waits for one frame before it fails.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// One open `RunAgent` stream.
pub struct RunStream {
    pub sender: mpsc::Sender<pb::RunAgentRequest>,
    pub inbound: Streaming<pb::RunAgentResponse>,
    pub run_id: String,
}

impl RunStream {
    /// Opens a stream whose first frame is `first`; fails with the status if the server refuses.
    pub async fn open(
        client: &mut AgentServiceClient<Channel>,
        first: Frame,
    ) -> Result<RunStream, tonic::Status> {
        RunStream::open_as(client, None, first).await
    }

    /// [`RunStream::open`] with an API key or token, when given.
    pub async fn open_as(
        client: &mut AgentServiceClient<Channel>,
        credential: Option<&str>,
        first: Frame,
    ) -> Result<RunStream, tonic::Status> {
        let (sender, receiver) = mpsc::channel(16);
        sender
            .send(pb::RunAgentRequest { frame: Some(first) })
            .await
            .expect("send first frame");
        let request = credentials::authorized(ReceiverStream::new(receiver), credential);
        let inbound = client.run_agent(request).await?.into_inner();
        Ok(RunStream {
            sender,
            inbound,
            run_id: String::new(),
        })
    }

    /// Starts a run and reads its `run_started` frame.
    pub async fn start(client: &mut AgentServiceClient<Channel>, agent_id: &str) -> RunStream {
        let mut stream = RunStream::open(
            client,
            Frame::Start(pb::StartRun {
                agent_id: agent_id.into(),
                prompt: "test".into(),
                ..Default::default()
            }),
        )
        .await
        .expect("start run");
        let first = stream.next().await;
        assert!(
            matches!(first.event, Some(Event::RunStarted(_))),
            "{first:?}"
        );
        assert_eq!(first.sequence, 1);
        stream.run_id = first.run_id;
        stream
    }

    /// Attaches to a run after `after_sequence`.
    pub async fn attach(
        client: &mut AgentServiceClient<Channel>,
        run_id: &str,
        after_sequence: u64,
    ) -> RunStream {
        let mut stream = RunStream::open(
            client,
            Frame::Attach(pb::AttachRun {
                run_id: run_id.into(),
                after_sequence,
            }),
        )
        .await
        .expect("attach");
        stream.run_id = run_id.to_owned();
        stream
    }

    /// The next frame other than a heartbeat, `None` at the end, or the stream's error.
    pub async fn try_next(&mut self) -> Result<Option<pb::RunAgentResponse>, tonic::Status> {
        loop {
            let frame = tokio::time::timeout(FRAME_TIMEOUT, self.inbound.message())
                .await
                .expect("timed out waiting for a frame")?;
            if !matches!(
                frame.as_ref().and_then(|f| f.event.as_ref()),
                Some(Event::Heartbeat(_))
            ) {
                return Ok(frame);
            }
        }
    }

    /// The next frame other than a heartbeat.
    pub async fn next(&mut self) -> pb::RunAgentResponse {
        loop {
            let frame = self.next_raw().await.expect("frame");
            if !matches!(frame.event, Some(Event::Heartbeat(_))) {
                return frame;
            }
        }
    }

    /// The next frame, heartbeats included; `None` when the stream ended with OK.
    pub async fn next_raw(&mut self) -> Option<pb::RunAgentResponse> {
        tokio::time::timeout(FRAME_TIMEOUT, self.inbound.message())
            .await
            .expect("timed out waiting for a frame")
            .expect("stream error")
    }

    /// Reads frames until a `tool_call_suspended`; returns it.
    pub async fn next_suspended(&mut self) -> pb::ToolCallSuspended {
        loop {
            let frame = self.next().await;
            match frame.event {
                Some(Event::ToolCallSuspended(suspended)) => return suspended,
                Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
                _ => {}
            }
        }
    }

    /// Reads frames until the run ends; returns the completed output text.
    pub async fn completed_text(&mut self) -> String {
        loop {
            let frame = self.next().await;
            match frame.event {
                Some(Event::RunCompleted(done)) => return done.output_text,
                Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
                _ => {}
            }
        }
    }

    pub async fn send(&self, answer: pb::Answer) {
        self.sender
            .send(pb::RunAgentRequest {
                frame: Some(Frame::Answer(answer)),
            })
            .await
            .expect("send answer");
    }

    pub async fn send_text(&self, tool_call_id: &str, text: &str) {
        self.send(text_answer(&self.run_id, tool_call_id, text))
            .await;
    }

    pub async fn send_selections(&self, tool_call_id: &str, labels: &[&str]) {
        self.send(selections_answer(&self.run_id, tool_call_id, labels))
            .await;
    }

    /// Reads every remaining frame (heartbeats skipped) until the stream ends with OK.
    pub async fn frames_until_end(&mut self) -> Vec<pb::RunAgentResponse> {
        collect_frames(&mut self.inbound).await
    }

    /// Reads the next frame, which must be `answer_rejected` (sequence 0), and returns it.
    pub async fn next_rejected(&mut self) -> pb::AnswerRejected {
        let frame = self.next().await;
        assert_eq!(frame.sequence, 0, "{frame:?}");
        match frame.event {
            Some(Event::AnswerRejected(rejected)) => rejected,
            other => panic!("expected answer_rejected, got {other:?}"),
        }
    }

    /// Reads frames until the verdict on an answer to `tool_call_id` (stored events before it are
    /// skipped).
    pub async fn next_verdict(&mut self, tool_call_id: &str) -> Verdict {
        loop {
            let frame = self.next().await;
            match frame.event {
                Some(Event::AnswerAccepted(accepted)) if accepted.tool_call_id == tool_call_id => {
                    return Verdict::Accepted {
                        duplicate: accepted.duplicate,
                    };
                }
                Some(Event::AnswerRejected(rejected)) if rejected.tool_call_id == tool_call_id => {
                    return Verdict::Rejected {
                        reason: rejected.reason,
                    };
                }
                Some(Event::AnswerAccepted(_) | Event::AnswerRejected(_)) => {
                    panic!("verdict on another tool call than {tool_call_id}: {frame:?}")
                }
                _ => {}
            }
        }
    }
}

pub fn text_answer(run_id: &str, tool_call_id: &str, text: &str) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Text(text.into())),
        answer_id: String::new(),
    }
}

pub fn selections_answer(run_id: &str, tool_call_id: &str, labels: &[&str]) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Selections(pb::Selections {
            labels: labels.iter().map(|l| l.to_string()).collect(),
        })),
        answer_id: String::new(),
    }
}

pub fn decline_answer(run_id: &str, tool_call_id: &str, reason: &str) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Decline(pb::Decline {
            reason: reason.into(),
        })),
        answer_id: String::new(),
    }
}

/// The `ErrorInfo.reason` of a status, if it has one.
pub fn error_reason(status: &tonic::Status) -> Option<String> {
    use tonic_types::StatusExt;
    status.get_details_error_info().map(|info| info.reason)
}

/// The `BadRequest` field violations of a status, as (field, description).
pub fn field_violations(status: &tonic::Status) -> Vec<(String, String)> {
    use tonic_types::StatusExt;
    status
        .get_details_bad_request()
        .map(|bad| {
            bad.field_violations
                .into_iter()
                .map(|v| (v.field, v.description))
                .collect()
        })
        .unwrap_or_default()
}

/// One `[[agent]]` table of an agents file: a scripted agent that plays `turns`, each the body of
/// one `[[agent.model.turns]]` table (e.g. `say = "hi"`). `settings` holds extra `key = value`
/// lines of the agent (e.g. `max_steps = 2`).
pub fn scripted_agent_with(id: &str, settings: &str, turns: &[&str]) -> String {
    let mut toml =
        format!("[[agent]]\nid = \"{id}\"\n{settings}\n[agent.model]\nprovider = \"scripted\"\n");
    for turn in turns {
        toml.push_str("\n[[agent.model.turns]]\n");
        toml.push_str(turn);
        toml.push('\n');
    }
    toml
}

/// [`scripted_agent_with`] with the agent's default settings.
pub fn scripted_agent(id: &str, turns: &[&str]) -> String {
    scripted_agent_with(id, "", turns)
}

/// The calls of a `WatchPendingCalls` snapshot (up to `snapshot_done`), as `credential`.
pub async fn pending_snapshot(
    client: &mut AgentServiceClient<Channel>,
    credential: Option<&str>,
    request: pb::WatchPendingCallsRequest,
) -> Vec<pb::CallPending> {
    use pb::watch_pending_calls_response::Event as Pending;
    let mut feed = client
        .watch_pending_calls(credentials::authorized(request, credential))
        .await
        .expect("watch pending calls")
        .into_inner();
    let mut calls = Vec::new();
    loop {
        let event = tokio::time::timeout(FRAME_TIMEOUT, feed.message())
            .await
            .expect("timed out waiting for the feed")
            .expect("feed")
            .expect("feed open");
        match event.event {
            Some(Pending::CallPending(pending)) => calls.push(pending),
            Some(Pending::SnapshotDone(_)) => return calls,
            _ => {}
        }
    }
}

/// The run as `GetRun` returns it.
pub async fn get_run(client: &mut AgentServiceClient<Channel>, run_id: &str) -> pb::Run {
    client
        .get_run(pb::GetRunRequest {
            run_id: run_id.into(),
        })
        .await
        .expect("get run")
        .into_inner()
        .run
        .expect("run")
}

/// The name of a frame's event, as the `oneof` field in the contract (`tool_result`, ...).
pub fn event_name(frame: &pb::RunAgentResponse) -> &'static str {
    match &frame.event {
        Some(Event::RunStarted(_)) => "run_started",
        Some(Event::TextDelta(_)) => "text_delta",
        Some(Event::ToolCall(_)) => "tool_call",
        Some(Event::ToolCallSuspended(_)) => "tool_call_suspended",
        Some(Event::ToolResult(_)) => "tool_result",
        Some(Event::AnswerRejected(_)) => "answer_rejected",
        Some(Event::RunCompleted(_)) => "run_completed",
        Some(Event::RunFailed(_)) => "run_failed",
        Some(Event::RunCancelled(_)) => "run_cancelled",
        Some(Event::Heartbeat(_)) => "heartbeat",
        Some(Event::AnswerAccepted(_)) => "answer_accepted",
        Some(Event::StepRestarted(_)) => "step_restarted",
        None => "none",
    }
}

/// Reads a server stream of run frames until it ends with OK; heartbeats are skipped.
pub async fn collect_frames(
    stream: &mut Streaming<pb::RunAgentResponse>,
) -> Vec<pb::RunAgentResponse> {
    let mut frames = Vec::new();
    loop {
        let frame = tokio::time::timeout(FRAME_TIMEOUT, stream.message())
            .await
            .expect("timed out waiting for a frame")
            .expect("stream error");
        match frame {
            Some(frame) if matches!(frame.event, Some(Event::Heartbeat(_))) => {}
            Some(frame) => frames.push(frame),
            None => return frames,
        }
    }
}

/// `WatchRun` from `after_sequence` until the run ends: its stored events, heartbeats skipped.
pub async fn watch_until_end(
    client: &mut AgentServiceClient<Channel>,
    run_id: &str,
    after_sequence: u64,
) -> Vec<pb::RunAgentResponse> {
    let mut stream = client
        .watch_run(pb::WatchRunRequest {
            run_id: run_id.into(),
            after_sequence,
        })
        .await
        .expect("watch run")
        .into_inner();
    collect_frames(&mut stream).await
}

/// `ResumeRun` with `answer`, read until the stream ends; heartbeats skipped.
pub async fn resume(
    client: &mut AgentServiceClient<Channel>,
    answer: pb::Answer,
) -> Result<Vec<pb::RunAgentResponse>, tonic::Status> {
    let mut stream = client
        .resume_run(pb::ResumeRunRequest {
            answer: Some(answer),
        })
        .await?
        .into_inner();
    Ok(collect_frames(&mut stream).await)
}

/// What became of one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `answer_accepted`; `duplicate` when it was recognised as a retry.
    Accepted { duplicate: bool },
    /// Rejected with this reason: the `answer_rejected` reason on `RunAgent`, the
    /// `ErrorInfo.reason` of a FAILED_PRECONDITION status on `ResumeRun`.
    Rejected { reason: String },
}

/// Sends `answer` with `ResumeRun` and returns the verdict, from the first frame or the status;
/// panics on any other status code, or an accepted frame that names another call.
pub async fn resume_verdict(
    client: &mut AgentServiceClient<Channel>,
    answer: pb::Answer,
) -> Verdict {
    let tool_call_id = answer.tool_call_id.clone();
    let response = client
        .resume_run(pb::ResumeRunRequest {
            answer: Some(answer),
        })
        .await;
    match response {
        Ok(response) => {
            let first = tokio::time::timeout(FRAME_TIMEOUT, response.into_inner().message())
                .await
                .expect("timed out waiting for answer_accepted")
                .expect("resume stream error")
                .expect("resume stream ended without a frame");
            match first.event {
                Some(Event::AnswerAccepted(accepted)) if accepted.tool_call_id == tool_call_id => {
                    Verdict::Accepted {
                        duplicate: accepted.duplicate,
                    }
                }
                other => panic!("ResumeRun's first frame is not answer_accepted: {other:?}"),
            }
        }
        Err(status) if status.code() == tonic::Code::FailedPrecondition => Verdict::Rejected {
            reason: error_reason(&status).expect("FAILED_PRECONDITION without ErrorInfo"),
        },
        Err(status) => panic!("ResumeRun failed with an unexpected status: {status:?}"),
    }
}

/// The `tool_result` events of one call in an event log.
pub fn tool_results<'a>(
    log: &'a [pb::RunAgentResponse],
    tool_call_id: &str,
) -> Vec<&'a pb::ToolResult> {
    log.iter()
        .filter_map(|frame| match &frame.event {
            Some(Event::ToolResult(result)) if result.tool_call_id == tool_call_id => Some(result),
            _ => None,
        })
        .collect()
}

/// The output texts of the `run_completed` events in an event log.
pub fn completions(log: &[pb::RunAgentResponse]) -> Vec<&str> {
    log.iter()
        .filter_map(|frame| match &frame.event {
            Some(Event::RunCompleted(done)) => Some(done.output_text.as_str()),
            _ => None,
        })
        .collect()
}

/// Asserts that an event log holds exactly the sequences `first..first + len`: none missing,
/// doubled or out of order.
pub fn assert_contiguous(log: &[pb::RunAgentResponse], first: u64) {
    let sequences: Vec<u64> = log.iter().map(|frame| frame.sequence).collect();
    let expected: Vec<u64> = (first..first + log.len() as u64).collect();
    assert_eq!(sequences, expected, "event sequences are not contiguous");
}

/// Milliseconds since the Unix epoch of a wire timestamp.
pub fn timestamp_ms(time: &prost_types::Timestamp) -> i64 {
    time.seconds * 1000 + i64::from(time.nanos) / 1_000_000
}

/// Milliseconds since the Unix epoch, now (the server stamps events on the same clock).
pub fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    i64::try_from(since_epoch.as_millis()).expect("time fits i64")
}

/// Prints a test's figures on stderr, past the test harness's output capture (which takes
/// `println!` and `eprintln!`), so they show in a normal `cargo test` run too.
pub fn report_figures(title: &str, figures: &[(&str, u64)]) {
    use std::io::Write;
    let line = figures
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(std::io::stderr(), "{title}: {line}");
}

/// Connects to PostgreSQL at `url`; the connection is driven by a background task.
pub async fn postgres_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| panic!("connecting to {url}: {error}"));
    // A failed connection shows as an error of the client's next query.
    tokio::spawn(connection);
    client
}

/// Creates an empty database with a unique name on the test PostgreSQL server
/// (`ASKUSER_TEST_DATABASE_URL`) and returns its URL, so every test starts from nothing and tests
/// running at once never share data. Without the variable: `None`, and the test returns early,
/// reported as not run (postgres_gate), or, where PostgreSQL is required, the test fails.
pub async fn fresh_database() -> Option<String> {
    let Ok(admin_url) = std::env::var("ASKUSER_TEST_DATABASE_URL") else {
        postgres_gate::not_run("ASKUSER_TEST_DATABASE_URL is not set");
        return None;
    };
    let name = format!("askuser_test_{}", uuid::Uuid::now_v7().simple());
    postgres_client(&admin_url)
        .await
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap_or_else(|error| panic!("CREATE DATABASE {name}: {error}"));
    // Same server and credentials, another database: swap the path, keep any query string.
    let (location, query) = match admin_url.split_once('?') {
        Some((location, query)) => (location, format!("?{query}")),
        None => (admin_url.as_str(), String::new()),
    };
    let (server, _admin_database) = location
        .rsplit_once('/')
        .filter(|(server, _)| server.contains("://"))
        .unwrap_or_else(|| panic!("ASKUSER_TEST_DATABASE_URL {admin_url} names no database"));
    Some(format!("{server}/{name}{query}"))
}

// Races for one call: the agents raced on and what a winner leaves behind. Shared by
// exactly_once.rs (one server) and replicas.rs (several on PostgreSQL).

/// A second question keeps the run, and so every attached stream, open while the first call is
/// raced: a question (`race`), a client tool call (`race_tool`) or an approval (`race_approval`).
pub fn race_agents() -> String {
    let second = [
        r#"ask = [{ question = "Second?" }]"#,
        r#"say = "race: {{answer.1}} then {{answer.2}}""#,
    ];
    let agent = |id: &str, first: &str| {
        let turns: Vec<&str> = std::iter::once(first).chain(second).collect();
        let tools = if id == "race" {
            ""
        } else {
            r#"tools = ["ask_user", "probe", "gate"]"#
        };
        scripted_agent_with(id, tools, &turns)
    };
    format!(
        r#"
[[tool]]
name = "probe"
kind = "client"
[[tool]]
name = "gate"
kind = "client"
parameters = {{ type = "object", properties = {{ n = {{ type = "integer" }} }}, required = ["n"] }}
approval = "always"
{}{}{}"#,
        agent("race", r#"ask = [{ question = "First?" }]"#),
        agent("race_tool", r#"call = [{ tool = "probe" }]"#),
        agent(
            "race_approval",
            r#"call = [{ tool = "gate", arguments = { n = 0 } }]"#
        ),
    )
}

/// The output an edited call gets once the race is over.
pub const EDITED_OUTPUT: &str = "done";

/// The result the model gets when `answer` wins.
pub fn answer_result(answer: &pb::Answer) -> String {
    use pb::approval_decision::Decision;
    match &answer.answer {
        Some(pb::answer::Answer::Text(text)) => format!("User answered: {text}"),
        Some(pb::answer::Answer::ToolOutput(output)) => output.content.clone(),
        Some(pb::answer::Answer::Approval(pb::ApprovalDecision {
            decision: Some(Decision::Reject(reject)),
        })) => format!("User rejected the call: {}", reject.reason),
        Some(pb::answer::Answer::Approval(pb::ApprovalDecision {
            decision: Some(Decision::Edit(edit)),
        })) => {
            let canonical: serde_json::Value =
                serde_json::from_str(&edit.arguments_json).expect("edit JSON");
            format!("User edited the arguments to {canonical}. Result: {EDITED_OUTPUT}")
        }
        other => panic!("no race answers with {other:?}"),
    }
}

/// What the scripted agent says when `answer` wins the race.
pub fn race_completion(answer: &pb::Answer) -> String {
    let result = answer_result(answer);
    let first = result.strip_prefix("User answered: ").unwrap_or(&result);
    format!("race: {first} then done")
}

pub fn tool_output_answer(run_id: &str, tool_call_id: &str, content: &str) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::ToolOutput(pb::ToolOutput {
            content: content.into(),
            is_error: false,
        })),
        answer_id: String::new(),
    }
}

pub fn decision_answer(
    run_id: &str,
    tool_call_id: &str,
    decision: pb::approval_decision::Decision,
) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(pb::answer::Answer::Approval(pb::ApprovalDecision {
            decision: Some(decision),
        })),
        answer_id: String::new(),
    }
}

/// Ends a raced run: an approval won by an edit waits again, for the tool's output; then the
/// second question is answered and the run completes.
pub async fn finish_race_run(run: &mut RunStream, first: &str) {
    loop {
        let suspended = run.next_suspended().await;
        if suspended.tool_call_id == first {
            run.send(tool_output_answer(&run.run_id, first, EDITED_OUTPUT))
                .await;
            continue;
        }
        run.send_text(&suspended.tool_call_id, "done").await;
        break;
    }
    run.completed_text().await;
}

/// The next status a health `Watch` reports.
pub async fn next_status(
    health: &mut Streaming<tonic_health::pb::HealthCheckResponse>,
) -> tonic_health::pb::health_check_response::ServingStatus {
    tokio::time::timeout(FRAME_TIMEOUT, health.message())
        .await
        .expect("timed out waiting for a health status")
        .expect("health stream error")
        .expect("health stream ended")
        .status()
}

/// A TCP proxy on 127.0.0.1 in front of `target` that a test can cut (every connection through it
/// is closed, and new ones are closed at once) and restore, as a network fault between a server
/// and its database would.
pub struct TcpProxy {
    pub addr: std::net::SocketAddr,
    open: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
    accept: tokio::task::JoinHandle<()>,
}

impl TcpProxy {
    pub async fn start(target: String) -> TcpProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let open = std::sync::Arc::new(tokio::sync::watch::Sender::new(true));
        let accept_open = std::sync::Arc::clone(&open);
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !*accept_open.borrow() {
                    continue;
                }
                let mut closed = accept_open.subscribe();
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = closed.wait_for(|open| !*open) => {}
                    }
                });
            }
        });
        TcpProxy { addr, open, accept }
    }

    /// Closes every connection through the proxy, and closes new ones at once.
    pub fn cut(&self) {
        self.open.send_replace(false);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.open.send_replace(true);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// A PostgreSQL URL like `url` that connects through `addr` instead of its host and port.
pub fn url_through(url: &str, addr: std::net::SocketAddr) -> String {
    let (scheme_and_user, rest) = url.split_once('@').expect("a URL with user@host");
    let (_, path) = rest.split_once('/').expect("a URL with a database");
    format!("{scheme_and_user}@{addr}/{path}")
}

/// The host and port a PostgreSQL URL `postgres://user@host:port/db` names.
pub fn url_address(url: &str) -> String {
    let (_, rest) = url.split_once('@').expect("a URL with user@host");
    let (address, _) = rest.split_once('/').expect("a URL with a database");
    address.to_owned()
}

/// Holds SQLite's write lock until dropped (rolled back: it writes nothing).
pub struct WriteLock(rusqlite::Connection);

impl WriteLock {
    pub async fn take(server: &Server) -> WriteLock {
        // Writes the server still has to make (a lease given back) go first.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let conn = rusqlite::Connection::open(server.data_path().join("askuser.sqlite3"))
            .expect("open the server's database");
        conn.execute_batch("BEGIN IMMEDIATE")
            .expect("take the write lock");
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("ROLLBACK");
    }
}

/// Sets the file size limit of a running process: `fsize` as prlimit takes it (soft:hard).
pub fn set_file_size_limit(pid: u32, fsize: &str) {
    let status = Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--fsize={fsize}"))
        .status()
        .expect("run prlimit");
    assert!(status.success(), "prlimit --fsize={fsize} failed");
}

/// A port free right now, for a listener a child process opens (e.g. `--metrics-listen`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// The text of the server's `GET /metrics` at `addr` (its `--metrics-listen`).
pub async fn scrape_metrics(addr: &str) -> String {
    let response = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape /metrics");
    assert!(response.status().is_success(), "{response:?}");
    response.text().await.expect("metrics text")
}

/// The value of one sample (`name{labels}` exactly as rendered) in a scrape; `None` when absent.
pub fn metric_sample(scrape: &str, sample: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == sample).then(|| value.parse().expect("a number"))
    })
}
