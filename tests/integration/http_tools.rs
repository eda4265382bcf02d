//! HTTP tools against a local HTTP server (a real one on 127.0.0.1): the server sends the call's
//! arguments with an idempotency key, retries what a retry can help, caps the body, never runs a
//! rejected call, and sends a request cut short by a crash again with the same key.

use crate::common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;

use common::{RunStream, Server, decision_answer, get_run, resume, tool_results};

/// What the stand-in tool server answers one request with.
#[derive(Clone, Debug)]
struct Reply {
    status: u16,
    body: String,
    /// Waits this long before answering.
    delay: Duration,
}

impl Reply {
    fn ok(body: &str) -> Reply {
        Reply {
            status: 200,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }
}

/// One request as the tool server saw it.
#[derive(Clone, Debug)]
struct Seen {
    idempotency_key: String,
    authorization: String,
    content_type: String,
    body: String,
}

#[derive(Default)]
struct ToolState {
    replies: VecDeque<Reply>,
    seen: Vec<Seen>,
}

type Shared = Arc<Mutex<ToolState>>;

/// A stand-in for a team's deploy endpoint: answers with its replies in order (200 "ok" once they
/// run out) and records every request.
struct ToolServer {
    url: String,
    state: Shared,
}

async fn handle(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let reply = {
        let mut state = state.lock().expect("state");
        state.seen.push(Seen {
            idempotency_key: header("idempotency-key"),
            authorization: header("authorization"),
            content_type: header("content-type"),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        state.replies.pop_front().unwrap_or_else(|| Reply::ok("ok"))
    };
    tokio::time::sleep(reply.delay).await;
    (
        StatusCode::from_u16(reply.status).expect("status"),
        reply.body,
    )
}

impl ToolServer {
    async fn start(replies: Vec<Reply>) -> ToolServer {
        let state = Shared::new(Mutex::new(ToolState {
            replies: replies.into(),
            seen: Vec::new(),
        }));
        let app = Router::new()
            .route("/deploy", post(handle))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        ToolServer {
            url: format!("http://{addr}/deploy"),
            state,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.lock().expect("state").seen.clone()
    }

    /// Waits until the tool server has seen `count` requests.
    async fn wait_for(&self, count: usize) -> Vec<Seen> {
        for _ in 0..400 {
            let seen = self.seen();
            if seen.len() >= count {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "the tool server saw {:?}, not {count} requests",
            self.seen()
        );
    }
}

const TOKEN_ENV: &str = "ASKUSER_TEST_DEPLOY_TOKEN";
const TOKEN: &str = "Bearer deploy-secret-7";

/// An agent that calls the HTTP tool `deploy` once, then reports its result.
fn agents(url: &str, tool_settings: &str) -> String {
    format!(
        r#"
[[tool]]
name = "deploy"
kind = "http"
description = "Deploy a service"
parameters = {{ type = "object", properties = {{ service = {{ type = "string" }}, environment = {{ enum = ["staging", "production"] }} }}, required = ["service", "environment"] }}
url = "{url}"
headers_env = {{ Authorization = "{TOKEN_ENV}" }}
{tool_settings}

[[agent]]
id = "shipper"
tools = ["deploy"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{{ tool = "deploy", arguments = {{ service = "api", environment = "production" }} }}]
[[agent.model.turns]]
say = "deploy said: {{{{result.1}}}}"
"#
    )
}

fn askuser(url: &str, tool_settings: &str, args: &[&str]) -> Server {
    Server::process_with_env(
        Some(&agents(url, tool_settings)),
        args,
        &[(TOKEN_ENV, TOKEN)],
    )
}

/// Runs `shipper` to its end; returns its tool_call id, the deploy result and the final text.
async fn run_shipper(server: &Server) -> (String, pb::ToolResult, String) {
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "shipper").await;
    let mut call_id = String::new();
    let mut result = None;
    loop {
        let frame = run.next().await;
        match frame.event {
            Some(Event::ToolCall(call)) => call_id = call.tool_call_id,
            Some(Event::ToolResult(found)) => result = Some(found),
            Some(Event::RunCompleted(done)) => {
                return (call_id, result.expect("a tool result"), done.output_text);
            }
            Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_2xx_response_is_the_result_and_carries_the_idempotency_key() {
    let tools = ToolServer::start(vec![Reply::ok(r#"{"version":"v42"}"#)]).await;
    let server = askuser(&tools.url, "", &[]);
    let (call_id, result, text) = run_shipper(&server).await;
    assert_eq!(result.kind, pb::ToolResultKind::Executed as i32);
    assert!(!result.is_error);
    assert_eq!(result.content, r#"{"version":"v42"}"#);
    // Nobody approved it (no policy asks): nobody settled it.
    assert_eq!(result.settled_by, None);
    assert_eq!(text, r#"deploy said: {"version":"v42"}"#);
    let seen = tools.seen();
    assert_eq!(seen.len(), 1);
    let run_id = get_run_id(&server, &call_id).await;
    assert_eq!(seen[0].idempotency_key, format!("{run_id}/{call_id}"));
    assert_eq!(seen[0].authorization, TOKEN);
    assert_eq!(seen[0].content_type, "application/json");
    assert_eq!(
        seen[0].body,
        r#"{"environment":"production","service":"api"}"#
    );
    // The token came from the environment and is in no message or log.
    assert!(!server.log().contains("deploy-secret-7"));
}

/// The run that made a call, found through the server's run list.
async fn get_run_id(server: &Server, call_id: &str) -> String {
    let mut client = server.agents().await;
    let runs = client
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("list runs")
        .into_inner()
        .runs;
    for run in runs {
        let log = common::watch_until_end(&mut client, &run.run_id, 0).await;
        if !tool_results(&log, call_id).is_empty() {
            return run.run_id;
        }
    }
    panic!("no run made call {call_id}");
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_becomes_an_error_result() {
    let tools = ToolServer::start(vec![Reply::status(422, "environment frozen")]).await;
    let server = askuser(&tools.url, "", &[]);
    let (_, result, _) = run_shipper(&server).await;
    assert!(result.is_error);
    assert_eq!(result.kind, pb::ToolResultKind::Executed as i32);
    assert!(result.content.contains("HTTP 422"), "{}", result.content);
    assert!(
        result.content.contains("environment frozen"),
        "{}",
        result.content
    );
    assert!(!result.content.contains(&tools.url), "{}", result.content);
    assert_eq!(tools.seen().len(), 1);
}

#[tokio::test]
async fn a_5xx_is_retried_until_a_2xx() {
    let tools = ToolServer::start(vec![
        Reply::status(503, "busy"),
        Reply::status(500, "still busy"),
        Reply::ok("deployed"),
    ])
    .await;
    let server = askuser(&tools.url, "", &[]);
    let (call_id, result, _) = run_shipper(&server).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "deployed");
    let seen = tools.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|s| s.idempotency_key.ends_with(&call_id)));
}

#[tokio::test]
async fn http_tool_calls_are_measured_with_their_errors() {
    let tools = ToolServer::start(vec![
        Reply::ok("deployed"),
        Reply::status(422, "environment frozen"),
    ])
    .await;
    let metrics_addr = format!("127.0.0.1:{}", common::free_port());
    let server = askuser(&tools.url, "", &["--metrics-listen", &metrics_addr]);
    assert!(!run_shipper(&server).await.1.is_error);
    assert!(run_shipper(&server).await.1.is_error);
    // Recorded before the result is committed: the runs' ends come after.
    let scrape = common::scrape_metrics(&metrics_addr).await;
    let sample = |name| common::metric_sample(&scrape, name);
    assert_eq!(
        sample(r#"askuser_http_tool_call_duration_seconds_count{tool="deploy"}"#),
        Some(2.0),
        "{scrape}"
    );
    assert_eq!(
        sample(r#"askuser_http_tool_call_errors_total{tool="deploy"}"#),
        Some(1.0),
        "{scrape}"
    );
}

#[tokio::test]
async fn a_request_past_its_timeout_fails_the_call_not_the_run() {
    let slow = Reply {
        status: 200,
        body: "too late".into(),
        delay: Duration::from_secs(3),
    };
    let tools = ToolServer::start(vec![slow]).await;
    let server = askuser(&tools.url, "timeout = \"300ms\"\nmax_retries = 0", &[]);
    let (_, result, text) = run_shipper(&server).await;
    assert!(result.is_error);
    assert!(result.content.contains("1 attempt"), "{}", result.content);
    assert!(text.starts_with("deploy said: deploy failed"), "{text}");
}

#[tokio::test]
async fn a_body_over_the_cap_is_cut_with_a_note() {
    let tools = ToolServer::start(vec![Reply::ok(&"x".repeat(5000))]).await;
    let server = askuser(&tools.url, "", &["--max-tool-output-bytes", "1000"]);
    let (_, result, _) = run_shipper(&server).await;
    assert!(!result.is_error);
    assert_eq!(
        result.content,
        format!("{}\n[the response was cut at 1000 bytes]", "x".repeat(1000))
    );
}

/// Starts `shipper` whose deploy needs approval; returns the run and the approval's call id.
async fn approval_pending(server: &Server) -> (RunStream, String) {
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "shipper").await;
    let suspended = run.next_suspended().await;
    assert_eq!(suspended.kind, pb::SuspendKind::Approval as i32);
    assert_eq!(
        suspended.arguments_json,
        r#"{"environment":"production","service":"api"}"#
    );
    (run, suspended.tool_call_id)
}

/// The principal of every caller of a server without authentication.
fn anonymous() -> pb::SettledBy {
    pb::SettledBy {
        tenant: "default".into(),
        subject: "anonymous".into(),
        method: pb::AuthMethod::None as i32,
    }
}

#[tokio::test]
async fn a_rejected_call_never_reaches_the_tool() {
    let tools = ToolServer::start(Vec::new()).await;
    let server = askuser(&tools.url, "approval = \"always\"", &[]);
    let (run, call_id) = approval_pending(&server).await;
    let mut client = server.agents().await;
    let reject = pb::approval_decision::Decision::Reject(pb::approval_decision::Reject {
        reason: "freeze".into(),
    });
    let frames = resume(&mut client, decision_answer(&run.run_id, &call_id, reject))
        .await
        .expect("reject");
    let results = tool_results(&frames, &call_id);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, "User rejected the call: freeze");
    assert_eq!(results[0].kind, pb::ToolResultKind::Rejected as i32);
    assert_eq!(results[0].settled_by, Some(anonymous()));
    assert_eq!(
        get_run(&mut client, &run.run_id).await.output_text,
        "deploy said: User rejected the call: freeze"
    );
    // Nothing ran, now or later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(tools.seen().is_empty(), "{:?}", tools.seen());
}

#[tokio::test]
async fn an_approved_call_runs_with_the_edited_arguments() {
    let tools = ToolServer::start(vec![Reply::ok("deployed to staging")]).await;
    let server = askuser(
        &tools.url,
        "approval = 'args.environment == \"production\"'",
        &[],
    );
    let (run, call_id) = approval_pending(&server).await;
    assert!(tools.seen().is_empty(), "the tool ran before approval");
    let mut client = server.agents().await;
    let edit = pb::approval_decision::Decision::Edit(pb::approval_decision::Edit {
        arguments_json: r#"{"service": "api", "environment": "staging"}"#.into(),
    });
    let frames = resume(&mut client, decision_answer(&run.run_id, &call_id, edit))
        .await
        .expect("edit");
    let results = tool_results(&frames, &call_id);
    assert_eq!(results.len(), 1, "{frames:?}");
    assert_eq!(
        results[0].content,
        r#"User edited the arguments to {"environment":"staging","service":"api"}. Result: deployed to staging"#
    );
    assert_eq!(results[0].kind, pb::ToolResultKind::Executed as i32);
    // The call ran because someone approved it: the result names the approver.
    assert_eq!(results[0].settled_by, Some(anonymous()));
    let seen = tools.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body, r#"{"environment":"staging","service":"api"}"#);
    assert_eq!(
        get_run(&mut client, &run.run_id).await.status,
        pb::RunStatus::Completed as i32
    );
}

/// SIGKILL while the request is in flight: after the restart the request comes again with the same
/// key, and the run completes once with the second response.
#[tokio::test]
async fn a_request_cut_by_a_crash_is_sent_again_with_the_same_key() {
    let hanging = Reply {
        status: 200,
        body: "first response, never read".into(),
        delay: Duration::from_secs(30),
    };
    let tools = ToolServer::start(vec![hanging, Reply::ok("deployed once")]).await;
    let mut server = askuser(&tools.url, "", &["--lease-ttl", "1s"]);
    let mut client = server.agents().await;
    let run = RunStream::start(&mut client, "shipper").await;
    let run_id = run.run_id.clone();
    let first = tools.wait_for(1).await;
    server.kill();
    drop(run);
    server.restart();
    let seen = tools.wait_for(2).await;
    assert_eq!(seen[0].idempotency_key, seen[1].idempotency_key);
    assert!(seen[0].idempotency_key.starts_with(&format!("{run_id}/")));
    assert_eq!(first[0].body, seen[1].body);
    let mut client = server.agents().await;
    let log = common::watch_until_end(&mut client, &run_id, 0).await;
    let call_id = seen[0]
        .idempotency_key
        .rsplit('/')
        .next()
        .expect("call id")
        .to_owned();
    let results = tool_results(&log, &call_id);
    assert_eq!(results.len(), 1, "one result, committed once: {log:?}");
    assert_eq!(results[0].content, "deployed once");
    assert_eq!(common::completions(&log), ["deploy said: deployed once"]);
    assert_eq!(tools.seen().len(), 2);
}

#[tokio::test]
async fn a_missing_header_variable_stops_serve_naming_the_tool() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("agents.toml");
    std::fs::write(&config, agents("http://127.0.0.1:9/deploy", "")).expect("write");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env_remove(TOKEN_ENV)
        .output()
        .expect("run askuser");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tool \"deploy\""), "{stderr}");
    assert!(stderr.contains(TOKEN_ENV), "{stderr}");
}
