//! The `openai` provider against a stand-in chat completions server: a real HTTP server on
//! 127.0.0.1 that replays SSE fixtures (tests/fixtures/openai/*.sse) and records every request.

use crate::common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;
use askuser::runtime::AskUserLimits;
use askuser::runtime::ask_user::{TOOL_DESCRIPTION, arguments_schema};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use common::{RunStream, Server, tool_output_answer as tool_output};
use serde_json::{Value, json};

const KEY_ENV: &str = "ASKUSER_TEST_OPENAI_KEY";
const KEY: &str = "sk-test-4f9a2c";
const INSTRUCTIONS: &str = "You deploy services. Ask before anything risky.";

/// What the stand-in server does with one request.
enum Reply {
    /// Streams a fixture, in pieces that cut across events and characters.
    Stream(&'static str),
    /// Streams the first `events` events of a fixture, then drops the connection.
    CutAfter(&'static str, usize),
    /// Answers with an error status, headers and body.
    Error(u16, &'static [(&'static str, &'static str)], &'static str),
    /// Answers nothing for far longer than the agent's request timeout.
    Stall,
    /// Streams a fixture once the test lets it go.
    Held(&'static str, Arc<tokio::sync::Notify>),
}

#[derive(Clone)]
struct Recorded {
    headers: HeaderMap,
    body: Value,
}

#[derive(Default)]
struct LlmState {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

type SharedState = Arc<Mutex<LlmState>>;

/// The stand-in chat completions server; it answers requests with its replies, in order.
struct Llm {
    base_url: String,
    state: SharedState,
}

impl Llm {
    async fn start(replies: Vec<Reply>) -> Llm {
        let state = SharedState::new(Mutex::new(LlmState {
            replies: replies.into(),
            requests: Vec::new(),
        }));
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Llm {
            base_url: format!("http://{addr}/v1"),
            state,
        }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.state.lock().expect("state").requests.clone()
    }

    /// Starts askuser with one `openai` agent, `assistant`, pointed at this server.
    fn askuser(&self, extra_model_settings: &str) -> Server {
        self.askuser_with(&agents_toml(&self.base_url, extra_model_settings), &[])
    }

    /// Starts askuser with an agents file and extra flags.
    fn askuser_with(&self, agents: &str, args: &[&str]) -> Server {
        Server::process_with_env(Some(agents), args, &[(KEY_ENV, KEY)])
    }

    /// Waits until the server has received `count` requests.
    async fn await_requests(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + common::FRAME_TIMEOUT;
        while self.requests().len() < count {
            assert!(tokio::time::Instant::now() < deadline, "no request {count}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn agents_toml(base_url: &str, extra_model_settings: &str) -> String {
    format!(
        r#"
[[agent]]
id = "assistant"
instructions = "{INSTRUCTIONS}"
[agent.model]
provider = "openai"
model = "gpt-4o-mini"
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
temperature = 0.2
max_tokens = 400
parallel_tool_calls = true
{extra_model_settings}
[agent.model.headers]
X-Team = "platform"
"#
    )
}

async fn chat_completions(
    State(state): State<SharedState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).expect("the request body is JSON");
    let reply = {
        let mut state = state.lock().expect("state");
        state.requests.push(Recorded { headers, body });
        state.replies.pop_front()
    };
    match reply {
        None => error_response(500, &[], "the test scripted no reply for this request"),
        Some(Reply::Stream(name)) => {
            let text = fixture(name);
            let pieces: Vec<Result<Bytes, std::io::Error>> = text
                .as_bytes()
                .chunks(61)
                .map(|piece| Ok(Bytes::copy_from_slice(piece)))
                .collect();
            sse_response(Body::from_stream(futures::stream::iter(pieces)))
        }
        Some(Reply::CutAfter(name, events)) => {
            let pieces: Vec<Result<Bytes, std::io::Error>> = fixture_events(name)
                .into_iter()
                .take(events)
                .map(|event| Ok(Bytes::from(event)))
                .collect();
            let cut = futures::stream::once(async {
                // Lets the events go out before the connection drops.
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(std::io::Error::other("connection dropped by the test"))
            });
            sse_response(Body::from_stream(futures::StreamExt::chain(
                futures::stream::iter(pieces),
                cut,
            )))
        }
        Some(Reply::Error(status, headers, body)) => error_response(status, headers, body),
        Some(Reply::Held(name, gate)) => {
            gate.notified().await;
            sse_response(Body::from(fixture(name)))
        }
        Some(Reply::Stall) => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            error_response(500, &[], "stalled")
        }
    }
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .expect("response")
}

fn error_response(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
    let mut response = Response::builder()
        .status(StatusCode::from_u16(status).expect("status"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    response
        .body(Body::from(body.to_owned()))
        .expect("response")
}

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/openai/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A fixture's events, each with its blank line.
fn fixture_events(name: &str) -> Vec<String> {
    fixture(name)
        .split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| format!("{event}\n\n"))
        .collect()
}

/// The events of a run up to and including the one that ends it.
async fn events_until_end(run: &mut RunStream) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let event = run.next().await.event.expect("event");
        let end = matches!(
            event,
            Event::RunCompleted(_) | Event::RunFailed(_) | Event::RunCancelled(_)
        );
        events.push(event);
        if end {
            return events;
        }
    }
}

/// The events of a run up to its `count`th suspended question; returns them and the questions.
async fn events_until_suspended(
    run: &mut RunStream,
    count: usize,
) -> (Vec<Event>, Vec<pb::ToolCallSuspended>) {
    let mut events = Vec::new();
    let mut questions = Vec::new();
    while questions.len() < count {
        let event = run.next().await.event.expect("event");
        match &event {
            Event::ToolCallSuspended(question) => questions.push(question.clone()),
            Event::RunFailed(failed) => panic!("run failed: {}", failed.message),
            _ => {}
        }
        events.push(event);
    }
    (events, questions)
}

fn text_deltas(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextDelta(delta) => Some(delta.text.clone()),
            _ => None,
        })
        .collect()
}

fn restarts(events: &[Event]) -> Vec<pb::StepRestarted> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::StepRestarted(restarted) => Some(restarted.clone()),
            _ => None,
        })
        .collect()
}

fn completed(events: &[Event]) -> pb::RunCompleted {
    match events.last() {
        Some(Event::RunCompleted(done)) => done.clone(),
        other => panic!("the run did not complete: {other:?}"),
    }
}

fn failure_message(events: &[Event]) -> String {
    match events.last() {
        Some(Event::RunFailed(failed)) => failed.message.clone(),
        other => panic!("the run did not fail: {other:?}"),
    }
}

/// The messages sent in a request.
fn messages(request: &Recorded) -> Vec<Value> {
    request.body["messages"]
        .as_array()
        .expect("messages")
        .clone()
}

fn system_and_prompt() -> Vec<Value> {
    vec![
        json!({ "role": "system", "content": INSTRUCTIONS }),
        json!({ "role": "user", "content": "test" }),
    ]
}

fn tool_message(tool_call_id: &str, content: &str) -> Value {
    json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content })
}

/// Every object schema lists all its properties as required and allows no others, as OpenAI's
/// strict mode demands.
fn assert_strict_schema(schema: &Value, path: &str) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no required list"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        required.sort_unstable();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(required, names, "{path}: every property must be required");
        assert_eq!(
            schema["additionalProperties"],
            json!(false),
            "{path}: additionalProperties"
        );
        for (name, property) in properties {
            assert_strict_schema(property, &format!("{path}.{name}"));
        }
    }
    if let Some(items) = schema.get("items") {
        assert_strict_schema(items, &format!("{path}[]"));
    }
}

#[tokio::test]
async fn plain_text_streams_live_with_a_well_formed_request() {
    let llm = Llm::start(vec![Reply::Stream("plain_text.sse")]).await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let events = events_until_end(&mut run).await;

    assert_eq!(
        text_deltas(&events),
        [
            "Deploy", "ment to", " staging", " is", " done", " ✅", " — all", " checks", " passed",
            "."
        ]
    );
    let done = completed(&events);
    assert_eq!(
        done.output_text,
        "Deployment to staging is done ✅ — all checks passed."
    );
    assert_eq!(
        done.usage,
        Some(pb::Usage {
            input_tokens: 57,
            output_tokens: 12
        })
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("authorization"), format!("Bearer {KEY}"));
    assert_eq!(header("x-team"), "platform");
    assert_eq!(header("content-type"), "application/json");
    let parameters = arguments_schema(&AskUserLimits::default());
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": system_and_prompt(),
            "stream": true,
            "stream_options": { "include_usage": true },
            "temperature": 0.2,
            "max_tokens": 400,
            "parallel_tool_calls": true,
            "tools": [{
                "type": "function",
                "function": {
                    "name": "ask_user",
                    "description": TOOL_DESCRIPTION,
                    "parameters": parameters,
                    "strict": true,
                },
            }],
        })
    );
    assert_strict_schema(&request.body["tools"][0]["function"]["parameters"], "$");
}

#[tokio::test]
async fn tool_call_split_across_chunks_asks_and_the_answer_goes_back() {
    let llm = Llm::start(vec![
        Reply::Stream("ask_free_text.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let (events, questions) = events_until_suspended(&mut run, 1).await;
    let arguments = r#"{"question":"Which environment should I deploy to?","options":null,"selectionMode":null}"#;
    assert!(
        events.iter().any(|event| matches!(event,
            Event::ToolCall(call) if call.tool_call_id == "call_DdmO9pD3xa9XTPNJ32zg2hcA"
                && call.tool_name == "ask_user"
                && call.arguments_json == arguments)),
        "{events:?}"
    );
    let question = &questions[0];
    assert_eq!(question.tool_call_id, "call_DdmO9pD3xa9XTPNJ32zg2hcA");
    let payload = question.suspend_payload.as_ref().expect("payload");
    assert_eq!(payload.question, "Which environment should I deploy to?");
    assert!(payload.options.is_empty());
    assert_eq!(payload.selection_mode, None);

    run.send_text(&question.tool_call_id, "staging").await;
    let events = events_until_end(&mut run).await;
    let done = completed(&events);
    assert_eq!(done.output_text, "Thanks! Starting the deployment now.");
    // Both model calls count: 212 + 301 prompt tokens, 27 + 9 completion tokens.
    assert_eq!(
        done.usage,
        Some(pb::Usage {
            input_tokens: 513,
            output_tokens: 36
        })
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let mut expected = system_and_prompt();
    expected.push(json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
            "type": "function",
            "function": { "name": "ask_user", "arguments": arguments },
        }],
    }));
    expected.push(tool_message(
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "User answered: staging",
    ));
    assert_eq!(messages(&requests[1]), expected);
}

/// The `assistant` agent with two client tools: `service_status` (a schema strict mode accepts) and
/// `lookup` (one it does not).
fn client_tool_agents(llm: &Llm) -> String {
    format!(
        r#"
[[tool]]
name = "service_status"
kind = "client"
description = "Current status of a service"
parameters = {{ type = "object", properties = {{ service = {{ type = "string" }} }}, required = ["service"], additionalProperties = false }}

[[tool]]
name = "lookup"
kind = "client"
description = "Looks a key up"
parameters = {{ type = "object", properties = {{ key = {{ type = "string" }}, note = {{ type = "string" }} }}, required = ["key"] }}
{}"#,
        agents_toml(&llm.base_url, "").replacen(
            "[agent.model]",
            "tools = [\"service_status\", \"lookup\"]\n[agent.model]",
            1
        )
    )
}

/// Every tool is offered as a function with its schema, strict only where the schema allows it; a
/// client tool's output goes back as a `role: tool` message.
#[tokio::test]
async fn client_tools_are_offered_with_their_schemas_and_their_output_goes_back() {
    let llm = Llm::start(vec![
        Reply::Stream("client_tool_call.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let server = Server::process_with_env(Some(&client_tool_agents(&llm)), &[], &[(KEY_ENV, KEY)]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let suspended = run.next_suspended().await;
    assert_eq!(suspended.tool_call_id, "call_Status9x");
    assert_eq!(suspended.kind, pb::SuspendKind::ClientTool as i32);
    assert_eq!(suspended.arguments_json, r#"{"service":"api"}"#);
    run.send(tool_output(
        &run.run_id,
        &suspended.tool_call_id,
        "degraded: 2 of 5 pods ready",
    ))
    .await;
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Thanks! Starting the deployment now."
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let tools = &requests[0].body["tools"];
    assert_eq!(
        tools[0],
        json!({
            "type": "function",
            "function": {
                "name": "service_status",
                "description": "Current status of a service",
                "parameters": {"type": "object", "properties": {"service": {"type": "string"}},
                               "required": ["service"], "additionalProperties": false},
                "strict": true,
            },
        })
    );
    assert_eq!(tools[1]["function"]["name"], "lookup");
    assert_eq!(
        tools[1]["function"]["strict"], false,
        "an optional property and an open object"
    );
    let messages = messages(&requests[1]);
    assert_eq!(
        messages.last(),
        Some(&tool_message(
            "call_Status9x",
            "degraded: 2 of 5 pods ready"
        ))
    );
}

/// A provider that gives a call of a later turn the id of an earlier one does not wedge the run:
/// the later call gets a fresh id, and the run goes on.
#[tokio::test]
async fn a_tool_call_id_reused_by_a_later_turn_gets_a_fresh_one() {
    let llm = Llm::start(vec![
        Reply::Stream("client_tool_call.sse"),
        Reply::Stream("client_tool_call.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let server = Server::process_with_env(Some(&client_tool_agents(&llm)), &[], &[(KEY_ENV, KEY)]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let mut ids = Vec::new();
    for output in ["first", "second"] {
        let suspended = run.next_suspended().await;
        ids.push(suspended.tool_call_id.clone());
        run.send(tool_output(&run.run_id, &suspended.tool_call_id, output))
            .await;
    }
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Thanks! Starting the deployment now."
    );
    assert_eq!(ids[0], "call_Status9x");
    assert_ne!(ids[1], ids[0], "the reused id was replaced");
    // The model saw both calls and both outputs, each under its own id.
    let last = messages(&llm.requests()[2]);
    assert!(last.contains(&tool_message(&ids[0], "first")), "{last:?}");
    assert!(last.contains(&tool_message(&ids[1], "second")), "{last:?}");
}

#[tokio::test]
async fn parallel_tool_calls_interleaved_by_index_ask_single_and_multi_select() {
    let llm = Llm::start(vec![
        Reply::Stream("two_asks_interleaved.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let (_, questions) = events_until_suspended(&mut run, 2).await;

    let region = &questions[0];
    assert_eq!(region.tool_call_id, "call_a1Xn5WJbq4P2v8GmTtY7cR3e");
    let payload = region.suspend_payload.as_ref().expect("payload");
    assert_eq!(payload.question, "Which region?");
    let options: Vec<(&str, &str)> = payload
        .options
        .iter()
        .map(|o| (o.label.as_str(), o.description.as_str()))
        .collect();
    assert_eq!(options, [("eu-west-1", "Ireland"), ("us-east-1", "")]);
    assert_eq!(
        payload.selection_mode,
        Some(pb::SelectionMode::SingleSelect as i32)
    );

    let checks = &questions[1];
    assert_eq!(checks.tool_call_id, "call_b2Km8ZrLw6Q1s9HdUyF4jN0x");
    let payload = checks.suspend_payload.as_ref().expect("payload");
    assert_eq!(payload.question, "Which checks should run?");
    let labels: Vec<&str> = payload.options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(labels, ["lint", "unit", "e2e"]);
    assert_eq!(payload.options[2].description, "Slow: 20 minutes");
    assert_eq!(
        payload.selection_mode,
        Some(pb::SelectionMode::MultiSelect as i32)
    );

    run.send_selections(&region.tool_call_id, &["eu-west-1"])
        .await;
    run.send_selections(&checks.tool_call_id, &["lint", "unit"])
        .await;
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Thanks! Starting the deployment now."
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let sent = messages(&requests[1]);
    assert_eq!(sent[..2], system_and_prompt()[..]);
    let calls = sent[2]["tool_calls"].as_array().expect("tool calls");
    let ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "call_a1Xn5WJbq4P2v8GmTtY7cR3e",
            "call_b2Km8ZrLw6Q1s9HdUyF4jN0x"
        ]
    );
    let checks_arguments: Value = serde_json::from_str(
        calls[1]["function"]["arguments"]
            .as_str()
            .expect("arguments"),
    )
    .expect("whole JSON");
    assert_eq!(checks_arguments["selectionMode"], "multi_select");
    assert_eq!(
        sent[3..],
        [
            tool_message("call_a1Xn5WJbq4P2v8GmTtY7cR3e", "User answered: eu-west-1"),
            tool_message("call_b2Km8ZrLw6Q1s9HdUyF4jN0x", "User answered: lint, unit"),
        ]
    );
}

#[tokio::test]
async fn rate_limited_request_is_retried_after_retry_after() {
    let llm = Llm::start(vec![
        Reply::Error(
            429,
            &[("retry-after", "1")],
            r#"{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","code":"rate_limit_exceeded"}}"#,
        ),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Deployment to staging is done ✅ — all checks passed."
    );
    // Nothing had streamed, so there is nothing to restart.
    assert!(restarts(&events).is_empty(), "{events:?}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn retry_after_beyond_the_longest_wait_fails_at_once() {
    let llm = Llm::start(vec![
        Reply::Error(
            429,
            &[("retry-after", "3600")],
            r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
        ),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let message = failure_message(&events_until_end(&mut run).await);
    assert!(
        message.contains("HTTP 429 Too Many Requests after 1 attempt(s)"),
        "{message}"
    );
    // The body is for the operator: in the log, not in the run.
    assert!(
        !message.contains("You exceeded your current quota"),
        "{message}"
    );
    assert!(
        server.log().contains("You exceeded your current quota"),
        "{}",
        server.log()
    );
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn model_requests_are_measured_with_retries_and_tokens() {
    let llm = Llm::start(vec![
        Reply::Error(500, &[], "busy"),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let metrics_addr = format!("127.0.0.1:{}", common::free_port());
    let server = Server::process_with_env(
        Some(&agents_toml(&llm.base_url, "")),
        &["--metrics-listen", &metrics_addr],
        &[(KEY_ENV, KEY)],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    completed(&events_until_end(&mut run).await);
    let scrape = common::scrape_metrics(&metrics_addr).await;
    let sample = |labels: &str| common::metric_sample(&scrape, labels);
    let model = r#"provider="openai",model="gpt-4o-mini""#;
    assert_eq!(
        sample(&format!("askuser_model_request_retries_total{{{model}}}")),
        Some(1.0),
        "{scrape}"
    );
    // One turn, its retry included.
    assert_eq!(
        sample(&format!(
            "askuser_model_request_duration_seconds_count{{{model}}}"
        )),
        Some(1.0),
        "{scrape}"
    );
    assert_eq!(
        sample(&format!("askuser_model_request_errors_total{{{model}}}")),
        None
    );
    assert_eq!(
        sample(&format!(
            r#"askuser_model_tokens_total{{{model},type="input"}}"#
        )),
        Some(57.0)
    );
    assert_eq!(
        sample(&format!(
            r#"askuser_model_tokens_total{{{model},type="output"}}"#
        )),
        Some(12.0)
    );
    assert!(
        scrape.contains("# TYPE askuser_model_tokens_total counter"),
        "{scrape}"
    );
}

/// The provider's error body goes to the log only: the run's message says which provider failed and
/// how, with a correlation id that finds the log line holding the body. The base URL's userinfo
/// and query string are in neither.
#[tokio::test]
async fn server_errors_until_retries_run_out_fail_the_run() {
    const MARKER: &str = "The server had an error while processing your request.";
    const BODY: &str = r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#;
    let llm = Llm::start(vec![
        Reply::Error(500, &[], BODY),
        Reply::Error(500, &[], BODY),
        Reply::Error(500, &[], BODY),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let base_url = format!(
        "{}?token=abc-77",
        llm.base_url
            .replacen("http://", "http://svc:pw-s3cr3t-91@", 1)
    );
    let server = Server::process_with_env(
        Some(&agents_toml(&base_url, "max_retries = 2")),
        &[],
        &[(KEY_ENV, KEY)],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let message = failure_message(&events_until_end(&mut run).await);
    assert!(
        message.starts_with(
            "model provider openai failed: HTTP 500 Internal Server Error after 3 attempt(s)"
        ),
        "{message}"
    );
    let correlation_id = message
        .split("correlation id ")
        .nth(1)
        .map(|rest| rest.trim_end_matches(')'))
        .unwrap_or_else(|| panic!("no correlation id in {message}"));
    let log = server.log();
    let line = log
        .lines()
        .find(|line| line.contains(correlation_id))
        .unwrap_or_else(|| panic!("no log line has {correlation_id}: {log}"));
    assert!(line.contains(MARKER), "{line}");
    let stored = common::get_run(&mut client, &run.run_id)
        .await
        .error_message;
    assert_eq!(stored, message);
    for secret in [MARKER, KEY, "pw-s3cr3t-91", "abc-77"] {
        assert!(!message.contains(secret), "{secret} in {message}");
    }
    for secret in [KEY, "pw-s3cr3t-91", "abc-77"] {
        assert!(!log.contains(secret), "{secret} in {log}");
    }
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let llm = Llm::start(vec![
        Reply::Error(
            400,
            &[],
            r#"{"error":{"message":"Invalid schema for function 'ask_user'","type":"invalid_request_error"}}"#,
        ),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let message = failure_message(&events_until_end(&mut run).await);
    assert!(
        message.contains("HTTP 400 Bad Request after 1 attempt(s)"),
        "{message}"
    );
    // The body is for the operator: in the log, not in the run.
    assert!(
        !message.contains("Invalid schema for function 'ask_user'"),
        "{message}"
    );
    assert!(
        server
            .log()
            .contains("Invalid schema for function 'ask_user'"),
        "{}",
        server.log()
    );
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn malformed_chunk_restarts_the_step() {
    let llm = Llm::start(vec![
        Reply::Stream("malformed_chunk.sse"),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let events = events_until_end(&mut run).await;
    let restarts = restarts(&events);
    assert_eq!(restarts.len(), 1, "{events:?}");
    assert_eq!(restarts[0].attempt, 2);
    // What the provider sent is for the log only.
    assert_eq!(
        restarts[0].reason,
        "the response could not be read; asking the model again"
    );
    assert!(server.log().contains("malformed chunk"), "{}", server.log());
    let restart_at = events
        .iter()
        .position(|e| matches!(e, Event::StepRestarted(_)))
        .expect("restart");
    assert_eq!(
        text_deltas(&events[restart_at..]).concat(),
        "Deployment to staging is done ✅ — all checks passed."
    );
    assert_eq!(
        completed(&events).output_text,
        "Deployment to staging is done ✅ — all checks passed."
    );
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn dropped_connection_restarts_the_step_without_a_half_message() {
    let llm = Llm::start(vec![
        // The role chunk and "Let me check": cut mid-sentence.
        Reply::CutAfter("text_then_ask.sse", 4),
        Reply::Stream("text_then_ask.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let (events, questions) = events_until_suspended(&mut run, 1).await;
    let restarts = restarts(&events);
    assert_eq!(restarts.len(), 1, "{events:?}");
    assert_eq!(restarts[0].attempt, 2);
    assert!(
        restarts[0].reason.contains("broke off"),
        "{}",
        restarts[0].reason
    );
    let restart_at = events
        .iter()
        .position(|e| matches!(e, Event::StepRestarted(_)))
        .expect("restart");
    assert_eq!(
        text_deltas(&events[restart_at..]).concat(),
        "Let me check one thing first."
    );
    let payload = questions[0].suspend_payload.as_ref().expect("payload");
    assert_eq!(
        payload.question,
        "Deploy now or wait for the freeze to end?"
    );

    run.send_selections(&questions[0].tool_call_id, &["Now"])
        .await;
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Thanks! Starting the deployment now."
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body, requests[1].body);
    let sent = messages(&requests[2]);
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert_eq!(sent[2]["content"], "Let me check one thing first.");
    assert_eq!(
        sent[2]["tool_calls"][0]["id"],
        "call_c3Pq7TsVx1R5w2ZnKdL8mB4y"
    );
    assert_eq!(
        sent[3],
        tool_message("call_c3Pq7TsVx1R5w2ZnKdL8mB4y", "User answered: Now")
    );
}

#[tokio::test]
async fn stalled_response_times_out_and_is_retried() {
    let llm = Llm::start(vec![Reply::Stall, Reply::Stream("plain_text.sse")]).await;
    let server = llm.askuser("request_timeout = \"1s\"");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Deployment to staging is done ✅ — all checks passed."
    );
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn unreachable_server_fails_the_run_after_retries() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base_url = format!("http://{}/v1", closed.local_addr().expect("address"));
    drop(closed);
    let server = Server::process_with_env(
        Some(&agents_toml(&base_url, "max_retries = 1")),
        &[],
        &[(KEY_ENV, KEY)],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let message = failure_message(&events_until_end(&mut run).await);
    assert!(
        message.starts_with("model provider openai failed: could not connect after 2 attempt(s)"),
        "{message}"
    );
    assert!(
        server.log().contains("Connection refused"),
        "{}",
        server.log()
    );
}

#[tokio::test]
async fn invalid_tool_arguments_go_back_to_the_model_and_the_run_goes_on() {
    let llm = Llm::start(vec![
        Reply::Stream("invalid_arguments.sse"),
        Reply::Stream("plain_text.sse"),
    ])
    .await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let events = events_until_end(&mut run).await;
    let results: Vec<&pb::ToolResult> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{events:?}");
    assert!(
        results
            .iter()
            .all(|r| r.is_error && r.kind == pb::ToolResultKind::InvalidCall as i32)
    );
    assert_eq!(
        completed(&events).output_text,
        "Deployment to staging is done ✅ — all checks passed."
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let sent = messages(&requests[1]);
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert_eq!(
        sent[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"question": "Which env"#
    );
    assert_eq!(sent[3]["role"], "tool");
    assert_eq!(sent[3]["tool_call_id"], "call_d4Lm2QwEr7T9y1UiOp5AsD6f");
    let bad_json = sent[3]["content"].as_str().expect("content");
    assert!(
        bad_json.starts_with("Failed to ask user: arguments are not valid JSON"),
        "{bad_json}"
    );
    assert_eq!(
        sent[4],
        tool_message(
            "call_e5Nb3VcXz8K0j2HgFd7SaQ1w",
            "Failed to ask user: question must not be empty"
        )
    );
}

#[tokio::test]
async fn length_finish_reason_fails_the_run() {
    let llm = Llm::start(vec![Reply::Stream("length.sse")]).await;
    let server = llm.askuser("");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let message = failure_message(&events_until_end(&mut run).await);
    assert_eq!(
        message,
        "model provider openai failed: the response ended incomplete (finish_reason \"length\")"
    );
    assert_eq!(llm.requests().len(), 1);
}

#[test]
fn missing_api_key_variable_stops_startup() {
    let temp = tempfile::tempdir().expect("temp dir");
    let config = temp.path().join("agents.toml");
    std::fs::write(&config, agents_toml("http://127.0.0.1:9/v1", "")).expect("write");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
        .arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(temp.path().join("data"))
        .arg("--config")
        .arg(&config)
        .env_remove(KEY_ENV)
        .output()
        .expect("run askuser");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "agent \"assistant\": api_key_env: the environment variable {KEY_ENV} is not set or empty"
        )),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// A turn whose commit fails (no room to write) is committed again with the same model output
/// once there is room: the model is asked once, not once per failed write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_commit_failed_is_committed_again_without_asking_the_model_again() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let llm = Llm::start(vec![Reply::Held("plain_text.sse", Arc::clone(&gate))]).await;
    let server = llm.askuser("");
    let pid = server.pid().expect("server pid");
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    llm.await_requests(1).await;

    // Every write of the server's files fails while the model's output arrives.
    common::set_file_size_limit(pid, "0:unlimited");
    gate.notify_one();
    tokio::time::sleep(Duration::from_millis(500)).await;
    common::set_file_size_limit(pid, "unlimited");

    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Deployment to staging is done ✅ — all checks passed."
    );
    assert_eq!(llm.requests().len(), 1, "the model was asked again");
    assert_eq!(server.pid(), Some(pid), "the server restarted");
}

/// A provider that sends a NUL character does not make the turn unstorable (PostgreSQL refuses
/// NUL in text): it arrives as U+FFFD and the run completes.
#[tokio::test]
async fn a_nul_character_from_the_model_is_replaced_and_the_run_completes_on_postgres() {
    let llm = Llm::start(vec![Reply::Stream("nul_text.sse")]).await;
    let Some(database) = common::fresh_database().await else {
        return;
    };
    let server = llm.askuser_with(
        &agents_toml(&llm.base_url, ""),
        &["--database-url", &database],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let events = events_until_end(&mut run).await;
    let done = completed(&events);
    assert_eq!(
        done.output_text,
        "Deployment\u{FFFD}to staging is done ✅ — all checks passed."
    );
    let stored = common::get_run(&mut client, &run.run_id).await;
    assert_eq!(stored.output_text, done.output_text);
    assert_eq!(llm.requests().len(), 1);
}

/// Past `max_tokens_per_run` the run fails before its next model request, saying why.
#[tokio::test]
async fn a_run_past_its_token_budget_fails_before_the_next_model_request() {
    let llm = Llm::start(vec![
        Reply::Stream("ask_free_text.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let agents = agents_toml(&llm.base_url, "").replacen(
        "[agent.model]",
        "max_tokens_per_run = 200\n[agent.model]",
        1,
    );
    let server = llm.askuser_with(&agents, &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let question = run.next_suspended().await;
    run.send_text(&question.tool_call_id, "yes").await;
    let events = events_until_end(&mut run).await;
    let message = failure_message(&events);
    assert!(
        message.contains("239 tokens") && message.contains("max_tokens_per_run"),
        "{message}"
    );
    assert_eq!(
        llm.requests().len(),
        1,
        "a request past the budget was sent"
    );
}

/// The form tools are offered with their schemas (`AskUserQuestion` in strict mode, whose schema
/// allows it; `ask_user_form`, whose `requestedSchema` is open, not), a model's `AskUserQuestion`
/// call suspends as a form, and its answers go back keyed by question.
#[tokio::test]
async fn form_tools_are_offered_and_a_question_call_comes_back_answered() {
    let llm = Llm::start(vec![
        Reply::Stream("ask_user_question_call.sse"),
        Reply::Stream("final_text.sse"),
    ])
    .await;
    let agents = agents_toml(&llm.base_url, "").replacen(
        "[agent.model]",
        "tools = [\"AskUserQuestion\", \"ask_user_form\"]\n[agent.model]",
        1,
    );
    let server = Server::process_with_env(Some(&agents), &[], &[(KEY_ENV, KEY)]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "assistant").await;
    let suspended = run.next_suspended().await;
    assert_eq!(suspended.kind, pb::SuspendKind::Form as i32);
    assert_eq!(suspended.tool_name, "AskUserQuestion");
    let form = suspended.form.expect("a form");
    assert_eq!(form.fields[0].header, "Env");
    run.send(pb::Answer {
        run_id: run.run_id.clone(),
        tool_call_id: suspended.tool_call_id.clone(),
        answer: Some(pb::answer::Answer::Form(pb::FormAnswer {
            values: [(
                "q1".to_owned(),
                pb::FieldValue {
                    value: Some(pb::field_value::Value::Choice(pb::ChoiceValue {
                        values: vec!["production".into()],
                        other: String::new(),
                    })),
                },
            )]
            .into(),
        })),
        answer_id: String::new(),
    })
    .await;
    let events = events_until_end(&mut run).await;
    assert_eq!(
        completed(&events).output_text,
        "Thanks! Starting the deployment now."
    );

    let requests = llm.requests();
    let tools = &requests[0].body["tools"];
    let offered: Vec<(&str, bool)> = tools
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| {
            (
                tool["function"]["name"].as_str().expect("a name"),
                tool["function"]["strict"].as_bool().expect("strict said"),
            )
        })
        .collect();
    assert_eq!(
        offered,
        [("AskUserQuestion", true), ("ask_user_form", false)]
    );
    assert_strict_schema(&tools[0]["function"]["parameters"], "$");
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"]["questions"]["maxItems"],
        4
    );
    assert_eq!(
        messages(&requests[1]).last(),
        Some(&tool_message(
            "call_Form7q",
            r#"{"answers":{"Which environment?":"production"}}"#
        ))
    );
}
