//! askuser as an MCP server: hosts written with the official MCP client SDKs over Streamable HTTP
//! at `/mcp` (`tests/fixtures/mcp/host.py` with Python's `mcp`, `host.mjs` with TypeScript's
//! `@modelcontextprotocol/sdk`) list its tools, ask people (answered
//! from another gRPC client and from the terminal client), request approvals (approved, edited,
//! rejected), run an agent offered with `mcp = true`; without a key they are refused, another
//! tenant neither sees nor answers their requests, bad arguments are errors naming the argument.

use crate::common;
use crate::mcp_tools::{json, python};

use std::path::PathBuf;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use serde_json::{Value, json as j};
use tonic::transport::Channel;

use common::credentials::{authorized, create_key, resume_as, sqlite_store};
use common::{Server, decision_answer, fresh_database, scripted_agent_with, text_answer};

const SCOPES: &str = "asks:create,runs:start,runs:read,runs:answer";

/// Which official MCP client SDK plays the host.
#[derive(Clone, Copy, Debug)]
enum Sdk {
    Python,
    TypeScript,
}

impl Sdk {
    /// The program and the host script.
    fn command(self) -> (String, String) {
        let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
        match self {
            Sdk::Python => (python(), fixtures.join("host.py").display().to_string()),
            Sdk::TypeScript => {
                let sdk = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join(".tools/node_modules/@modelcontextprotocol/sdk/package.json");
                assert!(
                    sdk.exists(),
                    "{} is missing: run `source scripts/tools.sh && ensure_mcp_servers` (scripts/test does)",
                    sdk.display()
                );
                (
                    "node".into(),
                    fixtures.join("host.mjs").display().to_string(),
                )
            }
        }
    }
}

/// An agent MCP hosts may run, and one they may not.
fn agents() -> String {
    let offered = scripted_agent_with(
        "release",
        "mcp = true\ninstructions = \"Names a release.\"\ntools = [\"ask_user\"]",
        &[
            "ask = [{ question = \"Release name?\" }]",
            "say = \"Releasing {{answer.1}}\"",
        ],
    );
    let hidden = scripted_agent_with("internal", "", &["say = \"hidden\""]);
    format!("{offered}\n{hidden}")
}

/// The MCP host, with `key` (none: no Authorization header), doing `args`; what it printed.
async fn host(sdk: Sdk, server: &Server, key: Option<&str>, args: &[String]) -> Value {
    host_at(sdk, &server.url(), key, args).await
}

async fn host_at(sdk: Sdk, url: &str, key: Option<&str>, args: &[String]) -> Value {
    let (program, script) = sdk.command();
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(program)
            .arg(script)
            .arg(format!("{url}/mcp"))
            .arg(key.unwrap_or("-"))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the host finished in time")
    .expect("run the host");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{sdk:?} host {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    json(stdout.trim())
}

/// Calls `tool` from the host in the background.
fn call(
    sdk: Sdk,
    server: &Server,
    key: &str,
    tool: &str,
    arguments: Value,
) -> tokio::task::JoinHandle<Value> {
    let args = vec!["call".to_owned(), tool.to_owned(), arguments.to_string()];
    let url = server.url();
    let key = key.to_owned();
    tokio::spawn(async move {
        let key = (key != "-").then_some(key.as_str());
        host_at(sdk, &url, key, &args).await
    })
}

/// The one run `listing` finds waiting for someone, as `key` (none: no credential): its id and its
/// waiting call's.
async fn waiting_run(
    agents: &mut AgentServiceClient<Channel>,
    key: Option<&str>,
    listing: pb::ListRunsRequest,
) -> (String, String) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let listing = pb::ListRunsRequest {
            status: pb::RunStatus::Suspended as i32,
            ..listing.clone()
        };
        let listed = agents
            .list_runs(authorized(listing, key))
            .await
            .expect("ListRuns")
            .into_inner();
        if let Some(run) = listed.runs.first() {
            assert_eq!(listed.runs.len(), 1, "one run waits: {listed:?}");
            let call = &run.pending_tool_calls[0];
            return (run.run_id.clone(), call.tool_call_id.clone());
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing waited in time"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The one request of `key`'s tenant waiting for someone: its run and call.
async fn waiting_request(agents: &mut AgentServiceClient<Channel>, key: &str) -> (String, String) {
    let requests = pb::ListRunsRequest {
        requests_only: true,
        ..Default::default()
    };
    waiting_run(agents, Some(key), requests).await
}

fn approve(run_id: &str, call_id: &str) -> pb::Answer {
    decision_answer(
        run_id,
        call_id,
        pb::approval_decision::Decision::Approve(pb::approval_decision::Approve {}),
    )
}

fn edit(run_id: &str, call_id: &str, arguments: &str) -> pb::Answer {
    decision_answer(
        run_id,
        call_id,
        pb::approval_decision::Decision::Edit(pb::approval_decision::Edit {
            arguments_json: arguments.into(),
        }),
    )
}

fn reject(run_id: &str, call_id: &str, reason: &str) -> pb::Answer {
    decision_answer(
        run_id,
        call_id,
        pb::approval_decision::Decision::Reject(pb::approval_decision::Reject {
            reason: reason.into(),
        }),
    )
}

/// Answers with `answer` as `key`; the answer must be accepted.
async fn settle(agents: &mut AgentServiceClient<Channel>, key: &str, answer: pb::Answer) {
    match resume_as(agents, key, answer).await {
        Ok(Event::AnswerAccepted(_)) => {}
        other => panic!("the answer was not accepted: {other:?}"),
    }
}

async fn asks_approvals_and_runs_through_mcp(sdk: Sdk, database_url: Option<&str>) {
    let mut args = vec!["--auth", "keys", "--heartbeat-interval", "200ms"];
    if let Some(url) = database_url {
        args.extend(["--database-url", url]);
    }
    let agents_file = agents();
    let server = Server::start_with(Some(&agents_file), &args);
    let store: Vec<&str> = match database_url {
        Some(url) => vec!["--database-url", url],
        None => sqlite_store(&server).to_vec(),
    };
    let key = create_key(&store, "acme", "host", SCOPES);
    let other = create_key(&store, "globex", "other", SCOPES);
    let mut agents = server.agents().await;
    agents
        .list_runs(authorized(pb::ListRunsRequest::default(), Some(&key)))
        .await
        .expect("the key works over gRPC");

    // The tools: the asks, and only the agent offered over MCP.
    let listed = host(sdk, &server, Some(&key), &["list".into()]).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "ask_user",
            "ask_user_questions",
            "ask_user_form",
            "request_approval",
            "run_release"
        ]
    );

    // ask_user, answered by another client; progress is reported while it waits.
    let asked = call(
        sdk,
        &server,
        &key,
        "ask_user",
        j!({"question": "Ship api?", "options": [{"label": "yes", "description": null}, {"label": "no", "description": null}],
            "context": "The build is **green**.", "request_id": "ship-api-1"}),
    );
    let (run_id, call_id) = waiting_request(&mut agents, &key).await;
    // Another tenant neither answers nor sees it.
    let refused = resume_as(&mut agents, &other, text_answer(&run_id, &call_id, "yes")).await;
    assert_eq!(
        refused.err().map(|(code, _)| code),
        Some(tonic::Code::NotFound)
    );
    let theirs = agents
        .list_runs(authorized(
            pb::ListRunsRequest {
                requests_only: true,
                ..Default::default()
            },
            Some(&other),
        ))
        .await
        .expect("ListRuns")
        .into_inner();
    assert!(
        theirs.runs.is_empty(),
        "another tenant's requests: {theirs:?}"
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    settle(
        &mut agents,
        &key,
        common::selections_answer(&run_id, &call_id, &["yes"]),
    )
    .await;
    let result = asked.await.expect("host");
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["text"], "User answered: yes");
    assert_eq!(result["structured"]["kind"], "selections");
    assert_eq!(result["structured"]["selections"], j!(["yes"]));
    assert_eq!(result["structured"]["settled_by"], "key:host");
    assert_eq!(result["structured"]["run_id"], run_id.as_str());
    assert!(
        result["progress"].as_u64().unwrap_or(0) >= 2,
        "progress while waiting: {result}"
    );
    // The same request_id again: the same request, already answered.
    let again = call(
        sdk,
        &server,
        &key,
        "ask_user",
        j!({"question": "Ship api?", "request_id": "ship-api-1"}),
    )
    .await
    .expect("host");
    assert_eq!(again["structured"]["run_id"], run_id.as_str(), "{again}");

    // request_approval: approved, edited, rejected.
    let approval = |reason: &str| j!({"tool_name": "deploy", "arguments": {"service": "api", "environment": "production"}, "reason": reason});
    let approved = call(sdk, &server, &key, "request_approval", approval("prod"));
    let (run_id, call_id) = waiting_request(&mut agents, &key).await;
    settle(&mut agents, &key, approve(&run_id, &call_id)).await;
    let approved = approved.await.expect("host");
    assert_eq!(approved["structured"]["decision"], "approved", "{approved}");
    assert_eq!(
        approved["structured"]["arguments"],
        j!({"service": "api", "environment": "production"})
    );
    assert_eq!(
        json(approved["text"].as_str().expect("text")),
        approved["structured"]
    );

    let edited = call(sdk, &server, &key, "request_approval", approval("prod"));
    let (run_id, call_id) = waiting_request(&mut agents, &key).await;
    settle(
        &mut agents,
        &key,
        edit(
            &run_id,
            &call_id,
            r#"{"service":"api","environment":"staging"}"#,
        ),
    )
    .await;
    let edited = edited.await.expect("host");
    assert_eq!(edited["structured"]["decision"], "edited", "{edited}");
    assert_eq!(
        edited["structured"]["arguments"],
        j!({"service": "api", "environment": "staging"})
    );

    let rejected = call(sdk, &server, &key, "request_approval", approval("prod"));
    let (run_id, call_id) = waiting_request(&mut agents, &key).await;
    settle(&mut agents, &key, reject(&run_id, &call_id, "not today")).await;
    let rejected = rejected.await.expect("host");
    assert_eq!(rejected["structured"]["decision"], "rejected", "{rejected}");
    assert_eq!(rejected["structured"]["reason"], "not today");
    assert_eq!(rejected["structured"]["arguments"], Value::Null);

    // A form in the MCP elicitation shape.
    let form = call(
        sdk,
        &server,
        &key,
        "ask_user_form",
        j!({"message": "Release details", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}},
            "required": ["name"]}}),
    );
    let (run_id, call_id) = waiting_request(&mut agents, &key).await;
    settle(
        &mut agents,
        &key,
        crate::forms::form_answer(
            &run_id,
            &call_id,
            &[
                (
                    "name",
                    pb::FieldValue {
                        value: Some(pb::field_value::Value::Text("Apollo".into())),
                    },
                ),
                ("replicas", crate::forms::number(3.0)),
            ],
        ),
    )
    .await;
    let form = form.await.expect("host");
    assert_eq!(form["structured"]["kind"], "form", "{form}");
    // JavaScript writes 3.0 as 3: compare the number as a number.
    assert_eq!(form["structured"]["values"]["name"], "Apollo", "{form}");
    assert_eq!(form["structured"]["values"]["replicas"].as_f64(), Some(3.0));

    // run_<agent>: the run's question goes to askuser's people; the call returns its output.
    let run = call(sdk, &server, &key, "run_release", j!({"prompt": "ship it"}));
    let release = pb::ListRunsRequest {
        agent_id: "release".into(),
        ..Default::default()
    };
    let (run_id, call_id) = waiting_run(&mut agents, Some(&key), release).await;
    settle(&mut agents, &key, text_answer(&run_id, &call_id, "Apollo")).await;
    let run = run.await.expect("host");
    assert_eq!(run["is_error"], false, "{run}");
    assert_eq!(run["text"], "Releasing Apollo");

    // Bad arguments are MCP errors naming the argument; nothing is asked.
    let bad = call(sdk, &server, &key, "ask_user", j!({"question": ""}))
        .await
        .expect("host");
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["data"]["violations"][0]["argument"], "question",
        "{bad}"
    );
    let bad = call(
        sdk,
        &server,
        &key,
        "request_approval",
        j!({"tool_name": "deploy", "arguments": "all of them"}),
    )
    .await
    .expect("host");
    assert_eq!(
        bad["error"]["data"]["violations"][0]["argument"], "arguments",
        "{bad}"
    );
    let bad = call(sdk, &server, &key, "run_internal", j!({"prompt": "x"}))
        .await
        .expect("host");
    assert_eq!(bad["error"]["data"]["reason"], "UNKNOWN_TOOL", "{bad}");
    let none = agents
        .list_runs(authorized(
            pb::ListRunsRequest {
                status: pb::RunStatus::Suspended as i32,
                ..Default::default()
            },
            Some(&key),
        ))
        .await
        .expect("ListRuns")
        .into_inner();
    assert!(none.runs.is_empty(), "a bad call asked nothing: {none:?}");

    // Without a key, or with a key that may not ask: refused before any tool.
    let refused = host(sdk, &server, None, &["list".into()]).await;
    assert_eq!(refused["http_error"], 401, "{refused}");
    let reader = create_key(&store, "acme", "reader", "runs:read");
    let refused = host(sdk, &server, Some(&reader), &["list".into()]).await;
    assert_eq!(refused["http_error"], 403, "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_hosts_ask_approve_and_run_on_sqlite() {
    asks_approvals_and_runs_through_mcp(Sdk::Python, None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_mcp_hosts_ask_approve_and_run() {
    asks_approvals_and_runs_through_mcp(Sdk::TypeScript, None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_hosts_ask_approve_and_run_on_postgresql() {
    let Some(database) = fresh_database().await else {
        return;
    };
    asks_approvals_and_runs_through_mcp(Sdk::Python, Some(&database)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_question_is_answered_from_the_terminal_client() {
    let server = Server::start_with(None, &[]);
    let asked = call(
        Sdk::Python,
        &server,
        "-",
        "ask_user",
        j!({"question": "Your name?"}),
    );
    let mut agents = server.agents().await;
    let requests = pb::ListRunsRequest {
        requests_only: true,
        ..Default::default()
    };
    let (run_id, call_id) = waiting_run(&mut agents, None, requests).await;
    let answered = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args(["answer", &run_id, &call_id, "--text", "Ada"])
        .env("ASKUSER_ADDR", &server.addr)
        .output()
        .expect("askuser answer");
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let result = asked.await.expect("host");
    assert_eq!(result["text"], "User answered: Ada", "{result}");
    assert_eq!(result["structured"]["text"], "Ada");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_mcp_turns_the_endpoint_off() {
    let server = Server::start_with(None, &["--no-mcp", "--no-ui"]);
    let status = reqwest::Client::new()
        .post(format!("{}/mcp", server.url()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .expect("POST /mcp");
    assert_ne!(status.status(), reqwest::StatusCode::OK);
    let body = status.text().await.unwrap_or_default();
    assert!(!body.contains("jsonrpc"), "no MCP answer: {body}");
}

/// An MCP host on the official Rust SDK (`rmcp`) that declares the tasks extension.
async fn task_host(
    server: &Server,
    key: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::ServiceExt;
    use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // reqwest is built without a rustls provider of its own: askuser's (ring), as askuser does.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url()))
        .auth_header(key.to_owned());
    let info = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("askuser-test-host", "1.0.0"),
    );
    info.serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the host connects")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_answered_after_askuser_is_killed_and_restarted() {
    use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskPayload};
    let mut server = Server::process_with(Some(&agents()), &["--auth", "keys"]);
    let key = create_key(&sqlite_store(&server), "acme", "host", SCOPES);
    let other = create_key(&sqlite_store(&server), "globex", "other", SCOPES);

    // The host asks for approval as a task: the call returns at once, the task is the request.
    let host = task_host(&server, &key).await;
    let arguments = j!({"tool_name": "deploy", "arguments": {"service": "api"}, "reason": "prod"});
    let call = CallToolRequestParams::new("request_approval")
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let task_id = match host.call_tool_once(call).await.expect("tools/call") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    };
    let working = host
        .get_task(GetTaskParams::new(task_id.clone()))
        .await
        .expect("tasks/get");
    assert!(
        matches!(working.task.payload, TaskPayload::Working),
        "{working:?}"
    );
    let _ = host.cancel().await;

    // askuser is killed and comes back (on another port): the task is still there, and still
    // the caller's tenant's only.
    server.restart();
    let mut agents = server.agents().await;
    let (run_id, call_id) = waiting_request(&mut agents, &key).await;
    assert_eq!(run_id, task_id, "the task's id is the request's run id");
    let stranger = task_host(&server, &other).await;
    assert!(
        stranger
            .get_task(GetTaskParams::new(task_id.clone()))
            .await
            .is_err(),
        "another tenant reads no task of this one"
    );
    let _ = stranger.cancel().await;
    settle(
        &mut agents,
        &key,
        edit(&run_id, &call_id, r#"{"service":"web"}"#),
    )
    .await;

    let host = task_host(&server, &key).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let result = loop {
        let polled = host
            .get_task(GetTaskParams::new(task_id.clone()))
            .await
            .expect("tasks/get");
        if let TaskPayload::Completed { result } = polled.task.payload {
            break result;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task did not complete"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // A task the host cancels: the request is cancelled, and so is the task.
    let call = CallToolRequestParams::new("ask_user").with_arguments(
        j!({"question": "Still needed?"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let dropped = match host.call_tool_once(call).await.expect("tools/call") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    };
    host.cancel_task(rmcp::model::CancelTaskParams::new(dropped.clone()))
        .await
        .expect("tasks/cancel");
    let cancelled = host
        .get_task(GetTaskParams::new(dropped.clone()))
        .await
        .expect("tasks/get");
    assert!(
        matches!(cancelled.task.payload, TaskPayload::Cancelled),
        "{cancelled:?}"
    );
    let stored = agents
        .get_run(authorized(
            pb::GetRunRequest { run_id: dropped },
            Some(&key),
        ))
        .await
        .expect("GetRun")
        .into_inner()
        .run
        .expect("run");
    assert_eq!(stored.status(), pb::RunStatus::Cancelled);
    let _ = host.cancel().await;
    assert_eq!(
        result["structuredContent"]["decision"], "edited",
        "{result:?}"
    );
    assert_eq!(
        result["structuredContent"]["arguments"],
        j!({"service": "web"})
    );
    assert_eq!(result["structuredContent"]["settled_by"], "key:host");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_call_ends_when_its_key_is_revoked() {
    let server = Server::start_with(
        Some(&agents()),
        &["--auth", "keys", "--principal-recheck", "300ms"],
    );
    let key = create_key(&sqlite_store(&server), "acme", "revoked", SCOPES);
    let asked = call(
        Sdk::Python,
        &server,
        &key,
        "ask_user",
        j!({"question": "Still allowed?"}),
    );
    let mut agents = server.agents().await;
    waiting_request(&mut agents, &key).await;
    let listing = common::credentials::keys(&server, &["list"]);
    let key_id = listing
        .lines()
        .find(|line| line.contains("revoked"))
        .and_then(|line| line.split('\t').next())
        .expect("the key is listed")
        .to_owned();
    common::credentials::keys(&server, &["revoke", &key_id]);
    let ended = tokio::time::timeout(Duration::from_secs(30), asked)
        .await
        .expect("the wait ends once the key is revoked")
        .expect("host");
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("revoked")),
        "{ended}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_auth_mcp_takes_only_loopback_hosts_and_its_own_origin() {
    let server = Server::start_with(None, &[]);
    let post = |host: Option<&str>, origin: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(format!("{}/mcp", server.url()))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
        if let Some(host) = host {
            request = request.header("host", host);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let own = post(None, None).await.expect("POST /mcp");
    assert_eq!(
        own.status(),
        reqwest::StatusCode::OK,
        "a loopback host is served"
    );
    // DNS rebinding: a page of another name for 127.0.0.1.
    let rebound = post(Some("attacker.example"), None).await.expect("POST");
    assert_eq!(rebound.status(), reqwest::StatusCode::FORBIDDEN);
    let foreign = post(None, Some("https://evil.example"))
        .await
        .expect("POST");
    assert_eq!(foreign.status(), reqwest::StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_mcp_host_of_a_cors_origin_passes_its_preflight() {
    let server = Server::start_with(
        None,
        &["--auth", "keys", "--cors-origin", "https://host.example"],
    );
    let preflight = |origin: &'static str| {
        reqwest::Client::new()
            .request(reqwest::Method::OPTIONS, format!("{}/mcp", server.url()))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization,content-type,mcp-protocol-version,mcp-session-id",
            )
            .send()
    };
    let allowed = preflight("https://host.example").await.expect("preflight");
    let header = |name: &str| {
        allowed
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        header("access-control-allow-origin"),
        "https://host.example"
    );
    assert!(header("access-control-allow-headers").contains("mcp-session-id"));
    let foreign = preflight("https://evil.example").await.expect("preflight");
    assert!(
        foreign
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
}
