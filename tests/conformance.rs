//! The Rust conformance runner: runs every scenario in `tests/conformance` (the format is in its
//! README) against one server and prints `N passed, N failed` last.
//!
//! It starts its own server with `tests/conformance/agents.toml` and `--auth keys`, and makes the
//! keys of the tenants `conformance` and `other` for it, unless ASKUSER_CONFORMANCE_ADDR
//! (`host:port`) names a running one: then the keys are ASKUSER_API_KEY and ASKUSER_OTHER_API_KEY.

mod common;

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use askuser::proto::v1::tool_service_client::ToolServiceClient;
use askuser::proto::v1::watch_pending_calls_response::Event as PendingEvent;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};
use tonic_types::StatusExt;

use common::credentials::{create_key, sqlite_store};
use common::{FRAME_TIMEOUT, Server};

/// A scenario fails with a message saying which step went wrong and how.
type Outcome<T = ()> = Result<T, String>;

/// A whole scenario may take this long; a hung server then fails one scenario, not the suite.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// gRPC status code names as the gRPC spec writes them, indexed by code number.
const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

fn code_name(status: &Status) -> &'static str {
    usize::try_from(i32::from(status.code()))
        .ok()
        .and_then(|index| CODE_NAMES.get(index))
        .copied()
        .unwrap_or("UNKNOWN")
}

/// The scopes of both conformance keys (tests/conformance/README.md).
const SCOPES: &str = "runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read";

/// The credential every call of a client carries as `authorization: Bearer <key>`; none when the
/// server runs without auth.
#[derive(Clone)]
struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    fn new(key: Option<String>) -> Bearer {
        Bearer(key.map(|key| {
            format!("Bearer {key}")
                .parse()
                .unwrap_or_else(|error| panic!("an API key is not a header value: {error}"))
        }))
    }
}

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

type Agents = AgentServiceClient<InterceptedService<Channel, Bearer>>;
type Tools = ToolServiceClient<InterceptedService<Channel, Bearer>>;

/// The keys the scenarios call with: the conformance tenant's, and the other tenant's for steps
/// with `"as": "other"`.
struct Keys {
    own: Option<String>,
    other: Option<String>,
}

/// What reading a stream gave: a frame other than a heartbeat, the end with OK, or a failure.
enum Next {
    Frame(Box<pb::RunAgentResponse>),
    End,
    Failed(Status),
}

/// One stream of a scenario: a `RunAgent` stream, or the response of `ResumeRun` / `WatchRun`.
struct FrameStream {
    /// The run every frame must belong to.
    run_id: String,
    /// Where `answer` frames go; `None` for server-streaming calls.
    sender: Option<mpsc::Sender<pb::RunAgentRequest>>,
    inbound: Option<Streaming<pb::RunAgentResponse>>,
    /// Read ahead: the `run_started` frame `start` peeked at, or a failure at open.
    read_ahead: VecDeque<Next>,
}

impl FrameStream {
    fn of_response(run_id: String, inbound: Streaming<pb::RunAgentResponse>) -> Self {
        FrameStream {
            run_id,
            sender: None,
            inbound: Some(inbound),
            read_ahead: VecDeque::new(),
        }
    }

    async fn next(&mut self) -> Outcome<Next> {
        if let Some(next) = self.read_ahead.pop_front() {
            return Ok(next);
        }
        let Some(inbound) = self.inbound.as_mut() else {
            return Ok(Next::End);
        };
        loop {
            let message = tokio::time::timeout(FRAME_TIMEOUT, inbound.message())
                .await
                .map_err(|_| format!("no frame within {FRAME_TIMEOUT:?}"))?;
            return Ok(match message {
                Ok(Some(frame)) if matches!(frame.event, Some(Event::Heartbeat(_))) => continue,
                Ok(Some(frame)) => Next::Frame(Box::new(frame)),
                Ok(None) => Next::End,
                Err(status) => Next::Failed(status),
            });
        }
    }

    /// The next frame, which must exist and belong to the stream's run.
    async fn next_frame(&mut self) -> Outcome<pb::RunAgentResponse> {
        match self.next().await? {
            Next::Frame(frame) if frame.run_id == self.run_id => Ok(*frame),
            Next::Frame(frame) => Err(format!(
                "frame of run {:?} on a stream of run {:?}: {frame:?}",
                frame.run_id, self.run_id
            )),
            Next::End => Err("the stream ended; a frame was expected".into()),
            Next::Failed(status) => Err(format!("the stream failed: {status:?}")),
        }
    }

    async fn expect_end(&mut self) -> Outcome {
        match self.next().await? {
            Next::End => Ok(()),
            Next::Frame(frame) => Err(format!("expected the end of the stream, got {frame:?}")),
            Next::Failed(status) => Err(format!(
                "expected the end of the stream, it failed: {status:?}"
            )),
        }
    }
}

/// The step's fields, rejecting any key the step does not know (a typo would otherwise pass).
fn fields<'a>(value: &'a Value, allowed: &[&str]) -> Outcome<&'a Map<String, Value>> {
    let object = value
        .as_object()
        .ok_or_else(|| format!("expected an object, got {value}"))?;
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!("unknown field {key:?}")),
        None => Ok(object),
    }
}

fn feed_name(step: &Map<String, Value>) -> Outcome<String> {
    match step.get("feed") {
        None => Ok("main".into()),
        Some(Value::String(name)) => Ok(name.clone()),
        Some(other) => Err(format!("feed must be a string, got {other}")),
    }
}

fn stream_name(step: &Map<String, Value>) -> Outcome<String> {
    match step.get("stream") {
        None => Ok("main".into()),
        Some(Value::String(name)) => Ok(name.clone()),
        Some(other) => Err(format!("stream must be a string, got {other}")),
    }
}

/// The event's field name in the contract, which is how checks name the kind of a frame.
fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::RunStarted(_) => "run_started",
        Event::TextDelta(_) => "text_delta",
        Event::ToolCall(_) => "tool_call",
        Event::ToolCallSuspended(_) => "tool_call_suspended",
        Event::ToolResult(_) => "tool_result",
        Event::AnswerRejected(_) => "answer_rejected",
        Event::RunCompleted(_) => "run_completed",
        Event::RunFailed(_) => "run_failed",
        Event::RunCancelled(_) => "run_cancelled",
        Event::Heartbeat(_) => "heartbeat",
        Event::AnswerAccepted(_) => "answer_accepted",
        Event::StepRestarted(_) => "step_restarted",
    }
}

fn tool_call_id(event: &Event) -> Option<&str> {
    match event {
        Event::ToolCall(call) => Some(&call.tool_call_id),
        Event::ToolCallSuspended(suspended) => Some(&suspended.tool_call_id),
        Event::ToolResult(result) => Some(&result.tool_call_id),
        Event::AnswerRejected(rejected) => Some(&rejected.tool_call_id),
        Event::AnswerAccepted(accepted) => Some(&accepted.tool_call_id),
        _ => None,
    }
}

fn selection_mode_name(mode: Option<i32>) -> Value {
    mode.map_or(Value::Null, |mode| {
        pb::SelectionMode::try_from(mode).map_or_else(
            |_| Value::String(format!("unknown selection mode {mode}")),
            |mode| Value::String(mode.as_str_name().into()),
        )
    })
}

fn suspend_kind_name(kind: i32) -> String {
    pb::SuspendKind::try_from(kind).map_or_else(
        |_| format!("unknown suspend kind {kind}"),
        |kind| kind.as_str_name().to_owned(),
    )
}

fn result_kind_name(kind: i32) -> String {
    pb::ToolResultKind::try_from(kind).map_or_else(
        |_| format!("unknown kind {kind}"),
        |kind| kind.as_str_name().to_owned(),
    )
}

/// Arguments JSON as a JSON value (compared by keys, whatever their order), or as text when it is
/// not JSON.
fn json_or_text(arguments_json: &str) -> Value {
    serde_json::from_str(arguments_json).unwrap_or_else(|_| Value::String(arguments_json.into()))
}

/// The value a pending-calls check's field compares against; `None` when the field does not apply.
fn pending_field(event: &PendingEvent, field: &str) -> Option<Value> {
    let text = |value: &str| Some(Value::String(value.to_owned()));
    match (field, event) {
        ("run_id", PendingEvent::CallPending(pending)) => text(&pending.run_id),
        ("run_id", PendingEvent::CallSettled(settled)) => text(&settled.run_id),
        ("agent_id", PendingEvent::CallPending(pending)) => text(&pending.agent_id),
        ("tool_call_id", PendingEvent::CallSettled(settled)) => text(&settled.tool_call_id),
        ("result_kind", PendingEvent::CallSettled(settled)) => {
            text(result_kind_name(settled.kind).as_str())
        }
        (_, PendingEvent::CallPending(pending)) => {
            let call = pending.call.as_ref()?;
            match field {
                "tool_call_id" => text(&call.tool_call_id),
                "tool_name" => text(&call.tool_name),
                "suspend_kind" => text(suspend_kind_name(call.kind).as_str()),
                "arguments" => Some(json_or_text(&call.arguments_json)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn pending_kind(event: &PendingEvent) -> &'static str {
    match event {
        PendingEvent::CallPending(_) => "call_pending",
        PendingEvent::CallSettled(_) => "call_settled",
        PendingEvent::SnapshotDone(_) => "snapshot_done",
        PendingEvent::Heartbeat(_) => "heartbeat",
    }
}

/// The value a frame check's field compares against, as JSON; `None` when the field does not apply
/// to the frame's kind.
fn event_field(event: &Event, field: &str) -> Option<Value> {
    let text = |value: &str| Some(Value::String(value.to_owned()));
    match (field, event) {
        ("tool_call_id", _) => tool_call_id(event).and_then(text),
        ("tool_name", Event::ToolCall(call)) => text(&call.tool_name),
        ("tool_name", Event::ToolCallSuspended(suspended)) => text(&suspended.tool_name),
        ("suspend_kind", Event::ToolCallSuspended(suspended)) => {
            text(suspend_kind_name(suspended.kind).as_str())
        }
        ("arguments", Event::ToolCall(call)) => Some(json_or_text(&call.arguments_json)),
        ("arguments", Event::ToolCallSuspended(suspended)) => {
            Some(json_or_text(&suspended.arguments_json))
        }
        ("approval_reason", Event::ToolCallSuspended(suspended)) => {
            text(&suspended.approval_reason)
        }
        ("question" | "options" | "selection_mode", Event::ToolCallSuspended(suspended)) => {
            let payload = suspended.suspend_payload.clone().unwrap_or_default();
            Some(match field {
                "question" => Value::String(payload.question),
                "options" => payload.options.into_iter().map(|o| o.label).collect(),
                _ => selection_mode_name(payload.selection_mode),
            })
        }
        ("content", Event::ToolResult(result)) => text(&result.content),
        ("is_error", Event::ToolResult(result)) => Some(Value::Bool(result.is_error)),
        ("result_kind", Event::ToolResult(result)) => text(result_kind_name(result.kind).as_str()),
        ("reason", Event::AnswerRejected(rejected)) => text(&rejected.reason),
        ("fields", Event::AnswerRejected(rejected)) => Some(
            rejected
                .field_violations
                .iter()
                .map(|v| Value::String(v.field.clone()))
                .collect(),
        ),
        ("duplicate", Event::AnswerAccepted(accepted)) => Some(Value::Bool(accepted.duplicate)),
        ("text", Event::TextDelta(delta)) => text(&delta.text),
        ("output_text", Event::RunCompleted(completed)) => text(&completed.output_text),
        ("message", Event::RunFailed(failed)) => text(&failed.message),
        ("agent_id", Event::RunStarted(started)) => text(&started.agent_id),
        ("prompt", Event::RunStarted(started)) => text(&started.prompt),
        _ => None,
    }
}

/// One scenario being run: its connections, saved values and open streams.
struct ScenarioRun {
    agents: Agents,
    /// The other tenant's client; `None` when ASKUSER_OTHER_API_KEY is unset.
    other_agents: Option<Agents>,
    tools: Tools,
    saved: HashMap<String, String>,
    streams: HashMap<String, FrameStream>,
    feeds: HashMap<String, Streaming<pb::WatchPendingCallsResponse>>,
}

/// The keys that say what an `answer` or `resume` step answers with; exactly one is given.
const ANSWER_KINDS: [&str; 7] = [
    "text",
    "selections",
    "decline",
    "tool_output",
    "approve",
    "reject",
    "edit",
];

/// A step's allowed keys: its own, then every kind of answer.
fn with_answer_kinds<'a>(own: &[&'a str]) -> Vec<&'a str> {
    own.iter().copied().chain(ANSWER_KINDS).collect()
}

impl ScenarioRun {
    /// The client a step calls with: the other tenant's for `"as": "other"`, else the own one.
    fn agents_for(&self, step: &Map<String, Value>) -> Outcome<Agents> {
        match step.get("as") {
            None => Ok(self.agents.clone()),
            Some(Value::String(name)) if name == "other" => self
                .other_agents
                .clone()
                .ok_or_else(|| "\"as\": \"other\" needs ASKUSER_OTHER_API_KEY".into()),
            Some(other) => Err(format!("as must be \"other\", got {other}")),
        }
    }

    /// Substitutes every `"$name"` string in `value` with the saved string.
    fn resolve(&self, value: &Value) -> Outcome<Value> {
        Ok(match value {
            Value::String(text) => match text.strip_prefix('$') {
                Some(name) => Value::String(
                    self.saved
                        .get(name)
                        .cloned()
                        .ok_or_else(|| format!("nothing saved as ${name}"))?,
                ),
                None => value.clone(),
            },
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.resolve(item))
                    .collect::<Outcome<_>>()?,
            ),
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, item)| Ok((key.clone(), self.resolve(item)?)))
                    .collect::<Outcome<_>>()?,
            ),
            other => other.clone(),
        })
    }

    fn string(&self, step: &Map<String, Value>, key: &str) -> Outcome<String> {
        match self.resolve(step.get(key).unwrap_or(&Value::Null))? {
            Value::String(text) => Ok(text),
            Value::Null => Ok(String::new()),
            other => Err(format!("{key} must be a string, got {other}")),
        }
    }

    /// A number field, written as a number or as a saved `"$name"`.
    fn number(&self, value: &Value, key: &str) -> Outcome<u64> {
        match self.resolve(value)? {
            Value::Number(number) => number.as_u64(),
            Value::String(text) => text.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("{key} must be a non-negative integer, got {value}"))
    }

    fn strings(&self, value: &Value, key: &str) -> Outcome<Vec<String>> {
        match self.resolve(value)? {
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(text) => Ok(text),
                    other => Err(format!("{key} must hold strings, got {other}")),
                })
                .collect(),
            other => Err(format!("{key} must be an array, got {other}")),
        }
    }

    fn stream(&mut self, name: &str) -> Outcome<&mut FrameStream> {
        self.streams
            .get_mut(name)
            .ok_or_else(|| format!("no open stream {name:?}"))
    }

    async fn run(&mut self, steps: &[Value]) -> Outcome {
        for (index, step) in steps.iter().enumerate() {
            self.step(step)
                .await
                .map_err(|error| format!("step {} {step}: {error}", index + 1))?;
        }
        Ok(())
    }

    async fn step(&mut self, step: &Value) -> Outcome {
        let object = step
            .as_object()
            .filter(|object| object.len() == 1)
            .ok_or("a step is an object with exactly one key")?;
        let (kind, body) = object.iter().next().ok_or("empty step")?;
        match kind.as_str() {
            "start" => self.start(body).await,
            "attach" => self.attach(body).await,
            "answer" => self.answer(body).await,
            "expect" => {
                // The check's own fields are validated as it is compared.
                let mut check = body.as_object().cloned().ok_or("a check is an object")?;
                let name = stream_name(&check)?;
                check.remove("stream");
                let mut stream = self
                    .streams
                    .remove(&name)
                    .ok_or_else(|| format!("no open stream {name:?}"))?;
                let outcome = self.expect(&mut stream, &check).await;
                self.streams.insert(name, stream);
                outcome
            }
            "expect_end" => {
                let body = fields(body, &["stream"])?;
                let name = stream_name(body)?;
                self.stream(&name)?.expect_end().await
            }
            "expect_stream_error" => {
                let body = fields(body, &["stream", "code", "field"])?;
                let name = stream_name(body)?;
                let want = self.string(body, "code")?;
                let mut expected = body.clone();
                expected.remove("stream");
                match self.stream(&name)?.next().await? {
                    Next::Failed(status) => {
                        self.expect_status(&status, &Value::Object(expected), &["code", "field"])
                    }
                    Next::Frame(frame) => Err(format!("expected {want}, got the frame {frame:?}")),
                    Next::End => Err(format!("expected {want}, the stream ended with OK")),
                }
            }
            "watch_pending" => self.watch_pending(body).await,
            "expect_pending" => self.expect_pending(body).await,
            "close_pending" => {
                let name = feed_name(fields(body, &["feed"])?)?;
                self.feeds
                    .remove(&name)
                    .map(drop)
                    .ok_or_else(|| format!("no open feed {name:?}"))
            }
            "claim" => self.claim(body).await,
            "cancel" => self.cancel(body).await,
            "close" => {
                let name = stream_name(fields(body, &["stream"])?)?;
                // Dropping the sender half-closes; dropping the response stream disconnects.
                self.streams
                    .remove(&name)
                    .map(drop)
                    .ok_or_else(|| format!("no open stream {name:?}"))
            }
            "resume" => self.resume(body).await,
            "watch" => self.watch(body).await,
            "get_run" => self.get_run(body).await,
            "ask_user" => self.ask_user(body).await,
            other => Err(format!("unknown step kind {other:?}")),
        }
    }

    /// Opens a `RunAgent` stream with its first frame; a refusal is kept for `expect_stream_error`.
    async fn open(
        &mut self,
        mut agents: Agents,
        name: String,
        run_id: String,
        first: Frame,
    ) -> Outcome {
        if self.streams.contains_key(&name) {
            return Err(format!("stream {name:?} is already open"));
        }
        let (sender, receiver) = mpsc::channel(16);
        sender
            .send(pb::RunAgentRequest { frame: Some(first) })
            .await
            .map_err(|_| "cannot send the first frame")?;
        let opened = tokio::time::timeout(
            FRAME_TIMEOUT,
            agents.run_agent(ReceiverStream::new(receiver)),
        )
        .await
        .map_err(|_| "the server did not answer the stream")?;
        let mut stream = FrameStream {
            run_id,
            sender: Some(sender),
            inbound: None,
            read_ahead: VecDeque::new(),
        };
        match opened {
            Ok(response) => stream.inbound = Some(response.into_inner()),
            Err(status) => stream.read_ahead.push_back(Next::Failed(status)),
        }
        self.streams.insert(name, stream);
        Ok(())
    }

    async fn start(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &["stream", "agent_id", "prompt", "metadata", "tools", "as"],
        )?;
        let agents = self.agents_for(body)?;
        let name = stream_name(body)?;
        let metadata = match self.resolve(body.get("metadata").unwrap_or(&Value::Null))? {
            Value::Null => HashMap::new(),
            Value::Object(entries) => entries
                .into_iter()
                .map(|(key, value)| match value {
                    Value::String(value) => Ok((key, value)),
                    other => Err(format!("metadata values must be strings, got {other}")),
                })
                .collect::<Outcome<_>>()?,
            other => return Err(format!("metadata must be an object, got {other}")),
        };
        let start = pb::StartRun {
            agent_id: self.string(body, "agent_id")?,
            prompt: self.string(body, "prompt")?,
            metadata,
            question_ttl: None,
            tools: self.run_tools(body.get("tools"))?,
            request_id: String::new(),
            webhooks: Vec::new(),
        };
        self.open(agents, name.clone(), String::new(), Frame::Start(start))
            .await?;
        let stream = self.stream(&name)?;
        let first = stream.next().await?;
        let run_id = match &first {
            Next::Frame(frame) if matches!(frame.event, Some(Event::RunStarted(_))) => {
                Some(frame.run_id.clone())
            }
            Next::Frame(frame) => {
                return Err(format!("the first frame is not run_started: {frame:?}"));
            }
            Next::End => return Err("the stream ended before run_started".into()),
            Next::Failed(_) => None,
        };
        stream.read_ahead.push_front(first);
        if let Some(run_id) = run_id {
            stream.run_id = run_id.clone();
            self.saved.insert("run_id".into(), run_id);
        }
        Ok(())
    }

    async fn attach(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["stream", "run_id", "after_sequence", "as"])?;
        let agents = self.agents_for(body)?;
        let run_id = self.string(body, "run_id")?;
        let after_sequence = match body.get("after_sequence") {
            Some(value) => self.number(value, "after_sequence")?,
            None => 0,
        };
        let attach = Frame::Attach(pb::AttachRun {
            run_id: run_id.clone(),
            after_sequence,
        });
        self.open(agents, stream_name(body)?, run_id, attach).await
    }

    /// The answer an `answer` or `resume` step describes.
    fn answer_of(&self, body: &Map<String, Value>) -> Outcome<pb::Answer> {
        use pb::answer::Answer as Kind;
        let mut kinds = Vec::new();
        if body.contains_key("text") {
            kinds.push(Kind::Text(self.string(body, "text")?));
        }
        if let Some(labels) = body.get("selections") {
            kinds.push(Kind::Selections(pb::Selections {
                labels: self.strings(labels, "selections")?,
            }));
        }
        if body.contains_key("decline") {
            kinds.push(Kind::Decline(pb::Decline {
                reason: self.string(body, "decline")?,
            }));
        }
        if let Some(output) = body.get("tool_output") {
            let output = fields(output, &["content", "is_error"])?;
            kinds.push(Kind::ToolOutput(pb::ToolOutput {
                content: self.string(output, "content")?,
                is_error: output.get("is_error").map_or(Ok(false), |v| {
                    v.as_bool().ok_or("is_error must be a boolean")
                })?,
            }));
        }
        use pb::approval_decision::Decision;
        let approval = |decision| {
            Kind::Approval(pb::ApprovalDecision {
                decision: Some(decision),
            })
        };
        if let Some(approve) = body.get("approve") {
            if approve != &Value::Bool(true) {
                return Err("approve must be true".into());
            }
            kinds.push(approval(Decision::Approve(
                pb::approval_decision::Approve {},
            )));
        }
        if body.contains_key("reject") {
            kinds.push(approval(Decision::Reject(pb::approval_decision::Reject {
                reason: self.string(body, "reject")?,
            })));
        }
        if body.contains_key("edit") {
            kinds.push(approval(Decision::Edit(pb::approval_decision::Edit {
                arguments_json: self.string(body, "edit")?,
            })));
        }
        if kinds.len() != 1 {
            return Err(format!(
                "an answer has exactly one of {}",
                ANSWER_KINDS.join(", ")
            ));
        }
        Ok(pb::Answer {
            run_id: self.string(body, "run_id")?,
            tool_call_id: self.string(body, "tool_call_id")?,
            answer: kinds.pop(),
            answer_id: self.string(body, "answer_id")?,
        })
    }

    async fn answer(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &with_answer_kinds(&["stream", "run_id", "tool_call_id", "answer_id"]),
        )?;
        let answer = self.answer_of(body)?;
        let name = stream_name(body)?;
        let sender = self
            .stream(&name)?
            .sender
            .clone()
            .ok_or_else(|| format!("stream {name:?} takes no answers"))?;
        sender
            .send(pb::RunAgentRequest {
                frame: Some(Frame::Answer(answer)),
            })
            .await
            .map_err(|_| format!("stream {name:?} is closed"))
    }

    /// Reads the frame (or, for `text_deltas`, the frames) one check describes and compares.
    async fn expect(&mut self, stream: &mut FrameStream, check: &Map<String, Value>) -> Outcome {
        let kind = self.string(check, "kind")?;
        if kind == "text_deltas" {
            fields(&Value::Object(check.clone()), &["kind", "text"])?;
            return self
                .expect_text_deltas(stream, &self.string(check, "text")?)
                .await;
        }
        let frame = stream.next_frame().await?;
        let event = frame.event.as_ref().ok_or("a frame without an event")?;
        if event_kind(event) != kind {
            return Err(format!("expected {kind}, got {frame:?}"));
        }
        for (field, want) in check {
            match field.as_str() {
                "kind" => {}
                "save" => {
                    let name = want.as_str().ok_or("save names a value")?;
                    let id = tool_call_id(event).ok_or("save needs a frame with a tool_call_id")?;
                    self.saved.insert(name.into(), id.into());
                }
                "save_sequence" => {
                    let name = want.as_str().ok_or("save_sequence names a value")?;
                    self.saved.insert(name.into(), frame.sequence.to_string());
                }
                "sequence" => {
                    let want = self.number(want, "sequence")?;
                    if frame.sequence != want {
                        return Err(format!("expected sequence {want}, got {frame:?}"));
                    }
                }
                _ => {
                    let actual = event_field(event, field)
                        .ok_or_else(|| format!("{kind} frames have no field {field:?}"))?;
                    let want = self.resolve(want)?;
                    if actual != want {
                        return Err(format!(
                            "{field}: expected {want}, got {actual} in {frame:?}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    async fn expect_text_deltas(&self, stream: &mut FrameStream, want: &str) -> Outcome {
        let mut text = String::new();
        while text != want {
            let frame = stream.next_frame().await?;
            match &frame.event {
                Some(Event::TextDelta(delta)) => text.push_str(&delta.text),
                _ => {
                    return Err(format!(
                        "text deltas {text:?} end before {want:?}: {frame:?}"
                    ));
                }
            }
            if !want.starts_with(&text) {
                return Err(format!("text deltas {text:?} do not spell {want:?}"));
            }
        }
        Ok(())
    }

    /// Checks a whole server stream: one check per frame (a `text_deltas` check spans several), then
    /// the end with OK.
    async fn expect_all(&mut self, mut stream: FrameStream, checks: &Value) -> Outcome {
        let checks = checks.as_array().ok_or("expect must be an array")?;
        for (index, check) in checks.iter().enumerate() {
            let check = check.as_object().ok_or("a check is an object")?;
            self.expect(&mut stream, check)
                .await
                .map_err(|error| format!("check {}: {error}", index + 1))?;
        }
        stream.expect_end().await
    }

    /// Compares a failed call's status with `{"code", "reason", "field", "fields"}`.
    fn expect_status(&self, status: &Status, want: &Value, allowed: &[&str]) -> Outcome {
        let want = fields(want, allowed)?;
        let code = self.string(want, "code")?;
        if code_name(status) != code {
            return Err(format!("expected {code}, got {status:?}"));
        }
        if want.contains_key("reason") {
            let reason = self.string(want, "reason")?;
            let actual = status.get_details_error_info().map(|info| info.reason);
            if actual.as_deref() != Some(reason.as_str()) {
                return Err(format!("expected reason {reason}, got {actual:?}"));
            }
        }
        let violations: Vec<String> = status
            .get_details_bad_request()
            .map(|bad| bad.field_violations.into_iter().map(|v| v.field).collect())
            .unwrap_or_default();
        if want.contains_key("field") {
            let field = self.string(want, "field")?;
            if !violations.contains(&field) {
                return Err(format!("no violation of {field}; got {violations:?}"));
            }
        }
        if let Some(fields) = want.get("fields") {
            let fields = self.strings(fields, "fields")?;
            if violations != fields {
                return Err(format!(
                    "expected violations {fields:?}, got {violations:?}"
                ));
            }
        }
        Ok(())
    }

    async fn resume(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &with_answer_kinds(&[
                "run_id",
                "tool_call_id",
                "answer_id",
                "expect",
                "expect_error",
                "as",
            ]),
        )?;
        let mut agents = self.agents_for(body)?;
        let answer = self.answer_of(body)?;
        let run_id = answer.run_id.clone();
        let called = tokio::time::timeout(
            FRAME_TIMEOUT,
            agents.resume_run(pb::ResumeRunRequest {
                answer: Some(answer),
            }),
        )
        .await
        .map_err(|_| "ResumeRun did not answer")?;
        self.expect_call(called, body, run_id, &["code", "reason", "field"])
            .await
    }

    async fn watch(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &["run_id", "after_sequence", "expect", "expect_error", "as"],
        )?;
        let mut agents = self.agents_for(body)?;
        let run_id = self.string(body, "run_id")?;
        let after_sequence = match body.get("after_sequence") {
            Some(value) => self.number(value, "after_sequence")?,
            None => 0,
        };
        let called = tokio::time::timeout(
            FRAME_TIMEOUT,
            agents.watch_run(pb::WatchRunRequest {
                run_id: run_id.clone(),
                after_sequence,
            }),
        )
        .await
        .map_err(|_| "WatchRun did not answer")?;
        self.expect_call(called, body, run_id, &["code"]).await
    }

    /// Checks a server-streaming call against the step's `expect` frames or `expect_error`.
    async fn expect_call(
        &mut self,
        called: Result<tonic::Response<Streaming<pb::RunAgentResponse>>, Status>,
        body: &Map<String, Value>,
        run_id: String,
        error_fields: &[&str],
    ) -> Outcome {
        match (called, body.get("expect"), body.get("expect_error")) {
            (Ok(response), Some(checks), None) => {
                let stream = FrameStream::of_response(run_id, response.into_inner());
                self.expect_all(stream, checks).await
            }
            (Err(status), None, Some(want)) => self.expect_status(&status, want, error_fields),
            (Ok(response), None, Some(want)) => {
                let mut stream = FrameStream::of_response(run_id, response.into_inner());
                match stream.next().await? {
                    Next::Failed(status) => self.expect_status(&status, want, error_fields),
                    Next::Frame(frame) => Err(format!("expected an error, got {frame:?}")),
                    Next::End => Err("expected an error, the stream ended with OK".into()),
                }
            }
            (Err(status), _, _) => Err(format!("the call failed: {status:?}")),
            _ => Err("give exactly one of expect, expect_error".into()),
        }
    }

    async fn get_run(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "run_id",
                "status",
                "pending",
                "output_text",
                "last_sequence",
                "expect_error",
                "as",
            ],
        )?;
        let mut agents = self.agents_for(body)?;
        let request = pb::GetRunRequest {
            run_id: self.string(body, "run_id")?,
        };
        let called = tokio::time::timeout(FRAME_TIMEOUT, agents.get_run(request))
            .await
            .map_err(|_| "GetRun did not answer")?;
        let run = match (called, body.get("expect_error")) {
            (Err(status), Some(want)) => return self.expect_status(&status, want, &["code"]),
            (Ok(response), Some(_)) => {
                return Err(format!(
                    "expected an error, got {:?}",
                    response.into_inner()
                ));
            }
            (Err(status), None) => return Err(format!("GetRun failed: {status:?}")),
            (Ok(response), None) => response.into_inner().run.ok_or("a response without run")?,
        };
        if body.contains_key("status") {
            let want = self.string(body, "status")?;
            let actual = pb::RunStatus::try_from(run.status)
                .map_or("unknown status", |status| status.as_str_name());
            if actual != want {
                return Err(format!("expected status {want}, got {run:?}"));
            }
        }
        if let Some(pending) = body.get("pending") {
            let want = self.strings(pending, "pending")?;
            let actual: Vec<&str> = run
                .pending_tool_calls
                .iter()
                .map(|call| call.tool_call_id.as_str())
                .collect();
            if actual != want {
                return Err(format!("expected pending {want:?}, got {run:?}"));
            }
        }
        if body.contains_key("output_text") {
            let want = self.string(body, "output_text")?;
            if run.output_text != want {
                return Err(format!("expected output_text {want:?}, got {run:?}"));
            }
        }
        if let Some(value) = body.get("last_sequence") {
            let want = self.number(value, "last_sequence")?;
            if run.last_sequence != want {
                return Err(format!("expected last_sequence {want}, got {run:?}"));
            }
        }
        Ok(())
    }

    /// The per-run tools of a `start` step.
    fn run_tools(&self, tools: Option<&Value>) -> Outcome<Vec<pb::ToolDefinition>> {
        let Some(tools) = tools else {
            return Ok(Vec::new());
        };
        tools
            .as_array()
            .ok_or("tools must be an array")?
            .iter()
            .map(|tool| {
                let tool = fields(
                    tool,
                    &["name", "description", "parameters_json_schema", "approval"],
                )?;
                let approval = match tool.get("approval") {
                    None => pb::ApprovalPolicy::Unspecified,
                    Some(_) => {
                        let name = self.string(tool, "approval")?;
                        pb::ApprovalPolicy::from_str_name(&name)
                            .ok_or_else(|| format!("unknown approval policy {name}"))?
                    }
                };
                Ok(pb::ToolDefinition {
                    name: self.string(tool, "name")?,
                    description: self.string(tool, "description")?,
                    parameters_json_schema: self.string(tool, "parameters_json_schema")?,
                    approval: approval as i32,
                })
            })
            .collect()
    }

    async fn watch_pending(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["feed", "agent_ids", "tool_names", "kinds", "as"])?;
        let mut agents = self.agents_for(body)?;
        let name = feed_name(body)?;
        if self.feeds.contains_key(&name) {
            return Err(format!("feed {name:?} is already open"));
        }
        let list = |key: &str| match body.get(key) {
            Some(value) => self.strings(value, key),
            None => Ok(Vec::new()),
        };
        let kinds = list("kinds")?
            .iter()
            .map(|name| {
                pb::SuspendKind::from_str_name(name)
                    .map(|kind| kind as i32)
                    .ok_or_else(|| format!("unknown suspend kind {name}"))
            })
            .collect::<Outcome<_>>()?;
        let request = pb::WatchPendingCallsRequest {
            agent_ids: list("agent_ids")?,
            tool_names: list("tool_names")?,
            kinds,
            ..Default::default()
        };
        let feed = tokio::time::timeout(FRAME_TIMEOUT, agents.watch_pending_calls(request))
            .await
            .map_err(|_| "WatchPendingCalls did not answer")?
            .map_err(|status| format!("WatchPendingCalls failed: {status:?}"))?
            .into_inner();
        self.feeds.insert(name, feed);
        Ok(())
    }

    /// Reads the feed until an event matches the check's kind (and run), as the README says.
    async fn expect_pending(&mut self, body: &Value) -> Outcome {
        let mut check = body.as_object().cloned().ok_or("a check is an object")?;
        let name = feed_name(&check)?;
        check.remove("feed");
        let kind = self.string(&check, "kind")?;
        let run_id = check
            .contains_key("run_id")
            .then(|| self.string(&check, "run_id"))
            .transpose()?;
        // Calls the snapshot must not hold; checked on every event read up to the snapshot's end.
        let absent = match check.remove("absent") {
            None => Vec::new(),
            Some(_) if kind != "snapshot_done" => {
                return Err("absent goes with a snapshot_done check".into());
            }
            Some(ids) => self.strings(&ids, "absent")?,
        };
        let mut feed = self
            .feeds
            .remove(&name)
            .ok_or_else(|| format!("no open feed {name:?}"))?;
        let outcome = async {
            loop {
                let response = tokio::time::timeout(FRAME_TIMEOUT, feed.message())
                    .await
                    .map_err(|_| format!("no {kind} within {FRAME_TIMEOUT:?}"))?
                    .map_err(|status| format!("the feed failed: {status:?}"))?
                    .ok_or("the feed ended")?;
                let event = response.event.ok_or("a feed event without an event")?;
                if let PendingEvent::CallPending(pending) = &event
                    && let Some(call) = &pending.call
                    && absent.contains(&call.tool_call_id)
                {
                    return Err(format!("the snapshot holds an absent call: {event:?}"));
                }
                let this_run = match (&run_id, pending_field(&event, "run_id")) {
                    (Some(want), Some(Value::String(actual))) => *want == actual,
                    (Some(_), _) => false,
                    (None, _) => true,
                };
                if pending_kind(&event) != kind || !this_run {
                    if run_id.is_some() && this_run {
                        return Err(format!("expected {kind}, got {event:?}"));
                    }
                    continue;
                }
                return self.check_pending(&event, &check);
            }
        }
        .await;
        self.feeds.insert(name, feed);
        outcome
    }

    fn check_pending(&mut self, event: &PendingEvent, check: &Map<String, Value>) -> Outcome {
        for (field, want) in check {
            match field.as_str() {
                "kind" => {}
                "save" => {
                    let name = want.as_str().ok_or("save names a value")?;
                    let Some(Value::String(id)) = pending_field(event, "tool_call_id") else {
                        return Err("save needs an event with a tool_call_id".into());
                    };
                    self.saved.insert(name.into(), id);
                }
                _ => {
                    let actual = pending_field(event, field)
                        .ok_or_else(|| format!("{event:?} has no field {field:?}"))?;
                    let want = self.resolve(want)?;
                    if actual != want {
                        return Err(format!(
                            "{field}: expected {want}, got {actual} in {event:?}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    async fn claim(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "run_id",
                "tool_call_id",
                "claimant",
                "ttl_ms",
                "expect_error",
                "as",
            ],
        )?;
        let mut agents = self.agents_for(body)?;
        let ttl = body
            .get("ttl_ms")
            .map(|value| self.number(value, "ttl_ms"))
            .transpose()?
            .map(|ms| prost_types::Duration {
                seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
                nanos: i32::try_from(ms % 1000 * 1_000_000).unwrap_or(0),
            });
        let request = pb::ClaimCallRequest {
            run_id: self.string(body, "run_id")?,
            tool_call_id: self.string(body, "tool_call_id")?,
            ttl,
            claimant: self.string(body, "claimant")?,
        };
        let called = tokio::time::timeout(FRAME_TIMEOUT, agents.claim_call(request))
            .await
            .map_err(|_| "ClaimCall did not answer")?;
        match (called, body.get("expect_error")) {
            (Ok(response), None) => response
                .into_inner()
                .expire_time
                .map(drop)
                .ok_or_else(|| "a claim without expire_time".into()),
            (Err(status), Some(want)) => self.expect_status(&status, want, &["code", "reason"]),
            (Ok(response), Some(_)) => Err(format!(
                "expected an error, got {:?}",
                response.into_inner()
            )),
            (Err(status), None) => Err(format!("ClaimCall failed: {status:?}")),
        }
    }

    async fn cancel(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["run_id", "reason", "expect_error", "as"])?;
        let mut agents = self.agents_for(body)?;
        let request = pb::CancelRunRequest {
            run_id: self.string(body, "run_id")?,
            reason: self.string(body, "reason")?,
        };
        let called = tokio::time::timeout(FRAME_TIMEOUT, agents.cancel_run(request))
            .await
            .map_err(|_| "CancelRun did not answer")?;
        match (called, body.get("expect_error")) {
            (Ok(response), None) => {
                let run = response.into_inner().run.ok_or("a response without run")?;
                if run.status == pb::RunStatus::Cancelled as i32 {
                    Ok(())
                } else {
                    Err(format!("expected a cancelled run, got {run:?}"))
                }
            }
            (Err(status), Some(want)) => self.expect_status(&status, want, &["code", "reason"]),
            (Ok(response), Some(_)) => Err(format!(
                "expected an error, got {:?}",
                response.into_inner()
            )),
            (Err(status), None) => Err(format!("CancelRun failed: {status:?}")),
        }
    }

    fn ask_user_input(&self, input: &Value) -> Outcome<pb::AskUserInput> {
        let input = fields(input, &["question", "options", "selection_mode"])?;
        let options = match input.get("options") {
            None => Vec::new(),
            Some(Value::Array(options)) => options
                .iter()
                .map(|option| {
                    let option = fields(option, &["label", "description"])?;
                    Ok(pb::AskUserOption {
                        label: self.string(option, "label")?,
                        description: self.string(option, "description")?,
                    })
                })
                .collect::<Outcome<_>>()?,
            Some(other) => return Err(format!("options must be an array, got {other}")),
        };
        let selection_mode = match input.get("selection_mode") {
            None => None,
            Some(_) => {
                let name = self.string(input, "selection_mode")?;
                let mode = pb::SelectionMode::from_str_name(&name)
                    .ok_or_else(|| format!("unknown selection mode {name}"))?;
                Some(mode as i32)
            }
        };
        Ok(pb::AskUserInput {
            question: self.string(input, "question")?,
            options,
            selection_mode,
        })
    }

    async fn ask_user(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["input", "content", "expect_error"])?;
        let input = self.ask_user_input(body.get("input").ok_or("ask_user needs input")?)?;
        let called = tokio::time::timeout(
            FRAME_TIMEOUT,
            self.tools
                .ask_user(pb::AskUserRequest { input: Some(input) }),
        )
        .await
        .map_err(|_| "AskUser did not answer")?;
        match (called, body.get("expect_error")) {
            (Ok(response), None) => {
                let content = response.into_inner().content;
                let want = self.string(body, "content")?;
                if content == want {
                    Ok(())
                } else {
                    Err(format!("expected content {want:?}, got {content:?}"))
                }
            }
            (Err(status), Some(want)) => self.expect_status(&status, want, &["code", "fields"]),
            (Ok(response), Some(_)) => Err(format!(
                "expected an error, got {:?}",
                response.into_inner()
            )),
            (Err(status), None) => Err(format!("AskUser failed: {status:?}")),
        }
    }
}

/// Every scenario file, sorted by name.
fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// Runs one scenario file; the error says what failed.
async fn run_scenario(
    channel: &Channel,
    keys: &Keys,
    path: &Path,
) -> Result<String, (String, String)> {
    let file_name = path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let fail = |error: String| (file_name.clone(), error);
    let text = std::fs::read_to_string(path).map_err(|error| fail(error.to_string()))?;
    let scenario: Value = serde_json::from_str(&text).map_err(|error| fail(error.to_string()))?;
    let scenario = fields(&scenario, &["name", "description", "steps"]).map_err(fail)?;
    let name = scenario
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(&file_name)
        .to_owned();
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| (name.clone(), "steps must be an array".to_owned()))?;
    let own = Bearer::new(keys.own.clone());
    let mut run = ScenarioRun {
        agents: AgentServiceClient::with_interceptor(channel.clone(), own.clone()),
        other_agents: keys.other.clone().map(|key| {
            AgentServiceClient::with_interceptor(channel.clone(), Bearer::new(Some(key)))
        }),
        tools: ToolServiceClient::with_interceptor(channel.clone(), own),
        saved: HashMap::new(),
        streams: HashMap::new(),
        feeds: HashMap::new(),
    };
    match tokio::time::timeout(SCENARIO_TIMEOUT, run.run(steps)).await {
        Ok(Ok(())) => Ok(name),
        Ok(Err(error)) => Err((name, error)),
        Err(_) => Err((name, format!("did not finish within {SCENARIO_TIMEOUT:?}"))),
    }
}

#[tokio::test]
async fn conformance_scenarios() {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let (server, addr, keys) = match env("ASKUSER_CONFORMANCE_ADDR") {
        Some(addr) => {
            let keys = Keys {
                own: env("ASKUSER_API_KEY"),
                other: env("ASKUSER_OTHER_API_KEY"),
            };
            (None, addr, keys)
        }
        None => {
            let server = Server::start_with(
                Some(include_str!("conformance/agents.toml")),
                &["--auth", "keys"],
            );
            let key =
                |tenant: &str| Some(create_key(&sqlite_store(&server), tenant, tenant, SCOPES));
            let keys = Keys {
                own: key("conformance"),
                other: key("other"),
            };
            let addr = server.addr.clone();
            (Some(server), addr, keys)
        }
    };
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("server address")
        .connect()
        .await
        .unwrap_or_else(|error| panic!("cannot connect to {addr}: {error}"));
    let files = scenario_files();
    assert!(!files.is_empty(), "no scenarios in tests/conformance");
    // Written to stdout directly, past the test harness's capture: the report is the point.
    let mut out = std::io::stdout();
    let (mut passed, mut failed) = (0, 0);
    for path in &files {
        match run_scenario(&channel, &keys, path).await {
            Ok(name) => {
                passed += 1;
                writeln!(out, "PASS {name}").expect("stdout");
            }
            Err((name, error)) => {
                failed += 1;
                writeln!(out, "FAIL {name}: {error}").expect("stdout");
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed").expect("stdout");
    let log = server.as_ref().map(Server::log).unwrap_or_default();
    assert_eq!(failed, 0, "{failed} scenario(s) failed; server log:\n{log}");
}
