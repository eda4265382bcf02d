//! The client under test for Rust: the generated tonic stubs, answering the runner's requests in
//! process. There is no Rust client library, so what a client does by itself (reattaching a run's
//! stream after `UNAVAILABLE`, re-sending unacknowledged answers, retrying `GetRun` / `CancelRun`)
//! is written here (`rust_client/calls.rs`), in the few lines a user of the stubs would write.

use std::collections::HashMap;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::human_service_client::HumanServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use askuser::proto::v1::tool_service_client::ToolServiceClient;
use serde_json::{Value, json};
use tokio::time::Instant;
mod ask;
mod calls;

use ask::{AskHandle, Humans};
use calls::{RunStream, deadline_of, open, retrying, with_deadline, within};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status, Streaming};
use tonic_types::StatusExt;

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

/// Every call of a client carries its key as `authorization: Bearer <key>`.
#[derive(Clone)]
struct Bearer(MetadataValue<Ascii>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

type Agents = AgentServiceClient<InterceptedService<Channel, Bearer>>;
type Tools = ToolServiceClient<InterceptedService<Channel, Bearer>>;

/// Why a request was not answered with `ok`: a gRPC status, or a request this client cannot do.
enum Failure {
    Status(Status),
    Bad(String),
}

impl From<Status> for Failure {
    fn from(status: Status) -> Self {
        Failure::Status(status)
    }
}

impl From<String> for Failure {
    fn from(text: String) -> Self {
        Failure::Bad(text)
    }
}

impl From<&str> for Failure {
    fn from(text: &str) -> Self {
        Failure::Bad(text.to_owned())
    }
}

type Handled<T = Value> = Result<T, Failure>;

fn status_json(status: &Status) -> Value {
    let code = usize::try_from(i32::from(status.code()))
        .ok()
        .and_then(|index| CODE_NAMES.get(index))
        .copied()
        .unwrap_or("UNKNOWN");
    let fields: Vec<String> = status
        .get_details_bad_request()
        .map(|bad| bad.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default();
    let reason = status
        .get_details_error_info()
        .map(|info| info.reason)
        .unwrap_or_default();
    json!({"code": code, "message": status.message(), "reason": reason, "fields": fields})
}

fn to_json<M: prost::Message + prost::Name>(message: &M) -> Handled {
    askuser::proto_json::to_json_value(message).map_err(|error| Failure::Bad(error.to_string()))
}

fn text(request: &Value, field: &str) -> String {
    request
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn number(request: &Value, field: &str) -> u64 {
    request
        .get(field)
        .and_then(Value::as_u64)
        .unwrap_or_default()
}

fn strings(request: &Value, field: &str) -> Vec<String> {
    request
        .get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Each key's clients.
struct Callers {
    agents: HashMap<&'static str, Agents>,
    tools: HashMap<&'static str, Tools>,
    humans: HashMap<&'static str, Humans>,
}

#[derive(Default)]
pub struct RustClient {
    callers: Option<Callers>,
    streams: HashMap<String, RunStream>,
    feeds: HashMap<String, Streaming<pb::WatchPendingCallsResponse>>,
    asks: HashMap<String, AskHandle>,
}

impl RustClient {
    /// Answers one request of the protocol with its reply object.
    pub async fn handle(&mut self, request: Value) -> Value {
        match self.dispatch(&request).await {
            Ok(ok) => json!({"ok": ok}),
            Err(Failure::Status(status)) => json!({"error": status_json(&status)}),
            Err(Failure::Bad(text)) => json!({"failure": text}),
        }
    }

    fn agents(&self, request: &Value) -> Handled<Agents> {
        let who = text(request, "as");
        self.callers
            .as_ref()
            .and_then(|callers| callers.agents.get(who.as_str()))
            .cloned()
            .ok_or_else(|| format!("no client for as={who:?} (connect first)").into())
    }

    fn stream(&mut self, request: &Value) -> Handled<&mut RunStream> {
        let name = text(request, "stream");
        self.streams
            .get_mut(&name)
            .ok_or_else(|| format!("no stream {name:?}").into())
    }

    async fn dispatch(&mut self, request: &Value) -> Handled {
        let deadline = deadline_of(request);
        match text(request, "op").as_str() {
            "connect" => self.connect(request),
            "start" => self.start(request, deadline).await,
            "attach" => {
                let mut agents = self.agents(request)?;
                let run_id = text(request, "run_id");
                let attach = Frame::Attach(pb::AttachRun {
                    run_id: run_id.clone(),
                    after_sequence: number(request, "after_sequence"),
                });
                let opened = open(&mut agents, attach, deadline).await?;
                let after = number(request, "after_sequence");
                let stream = RunStream::new(agents, run_id, opened, None, after, deadline);
                self.streams.insert(text(request, "stream"), stream);
                Ok(json!({}))
            }
            "send" => {
                let answer = answer_of(request.get("answer").unwrap_or(&Value::Null))?;
                self.stream(request)?.send(answer).await;
                Ok(json!({}))
            }
            "next" => match self.stream(request)?.next().await? {
                Some(frame) => Ok(json!({"frame": to_json(&frame)?})),
                None => Ok(json!({"end": true})),
            },
            "close" => {
                self.streams.remove(&text(request, "stream"));
                Ok(json!({}))
            }
            "resume" => {
                let mut agents = self.agents(request)?;
                let answer = answer_of(request.get("answer").unwrap_or(&Value::Null))?;
                let resume = pb::ResumeRunRequest {
                    answer: Some(answer),
                };
                let called =
                    within(deadline, agents.resume_run(with_deadline(resume, deadline))).await;
                recorded(called, deadline).await
            }
            "watch" => {
                let mut agents = self.agents(request)?;
                let watch = pb::WatchRunRequest {
                    run_id: text(request, "run_id"),
                    after_sequence: number(request, "after_sequence"),
                };
                let called =
                    within(deadline, agents.watch_run(with_deadline(watch, deadline))).await;
                recorded(called, deadline).await
            }
            "get_run" => {
                let agents = self.agents(request)?;
                let get = pb::GetRunRequest {
                    run_id: text(request, "run_id"),
                };
                let response = retrying(deadline, || {
                    let mut agents = agents.clone();
                    let get = with_deadline(get.clone(), deadline);
                    async move { agents.get_run(get).await }
                })
                .await?;
                let run = response.into_inner().run.ok_or("GetRun returned no run")?;
                Ok(json!({"run": to_json(&run)?}))
            }
            "cancel" => {
                let agents = self.agents(request)?;
                let cancel = pb::CancelRunRequest {
                    run_id: text(request, "run_id"),
                    reason: text(request, "reason"),
                };
                let response = retrying(deadline, || {
                    let mut agents = agents.clone();
                    let cancel = with_deadline(cancel.clone(), deadline);
                    async move { agents.cancel_run(cancel).await }
                })
                .await?;
                let run = response
                    .into_inner()
                    .run
                    .ok_or("CancelRun returned no run")?;
                Ok(json!({"run": to_json(&run)?}))
            }
            "ask_user" => self.ask_user(request).await,
            "ask" => {
                let who = text(request, "as");
                let humans = self
                    .callers
                    .as_ref()
                    .and_then(|callers| callers.humans.get(who.as_str()))
                    .cloned()
                    .ok_or("connect first")?;
                let (handle, reply) =
                    ask::ask(humans, self.agents(request)?, request, deadline).await?;
                self.asks.insert(text(request, "ask"), handle);
                Ok(reply)
            }
            "ask_result" => {
                let name = text(request, "ask");
                self.asks
                    .get_mut(&name)
                    .ok_or_else(|| format!("no ask {name:?}"))?
                    .wait(deadline)
                    .await
            }
            "watch_pending" => {
                let mut agents = self.agents(request)?;
                let kinds = strings(request, "kinds")
                    .iter()
                    .map(|name| {
                        pb::SuspendKind::from_str_name(name)
                            .map(|kind| kind as i32)
                            .ok_or_else(|| format!("unknown suspend kind {name}"))
                    })
                    .collect::<Result<_, _>>()?;
                let watch = pb::WatchPendingCallsRequest {
                    agent_ids: strings(request, "agent_ids"),
                    tool_names: strings(request, "tool_names"),
                    kinds,
                    ..Default::default()
                };
                let feed = agents.watch_pending_calls(watch).await?.into_inner();
                self.feeds.insert(text(request, "feed"), feed);
                Ok(json!({}))
            }
            "next_pending" => {
                let name = text(request, "feed");
                let feed = self
                    .feeds
                    .get_mut(&name)
                    .ok_or_else(|| format!("no feed {name:?}"))?;
                match feed.message().await? {
                    Some(event) => Ok(json!({"event": to_json(&event)?})),
                    None => Ok(json!({"end": true})),
                }
            }
            "close_pending" => {
                self.feeds.remove(&text(request, "feed"));
                Ok(json!({}))
            }
            "claim" => {
                let mut agents = self.agents(request)?;
                let ttl_ms = number(request, "ttl_ms");
                let ttl = (ttl_ms > 0).then(|| prost_types::Duration {
                    seconds: i64::try_from(ttl_ms / 1000).unwrap_or(i64::MAX),
                    nanos: i32::try_from(ttl_ms % 1000 * 1_000_000).unwrap_or(0),
                });
                let claim = pb::ClaimCallRequest {
                    run_id: text(request, "run_id"),
                    tool_call_id: text(request, "tool_call_id"),
                    ttl,
                    claimant: text(request, "claimant"),
                };
                agents.claim_call(claim).await?;
                Ok(json!({}))
            }
            other => Err(format!("unknown op {other:?}").into()),
        }
    }

    fn connect(&mut self, request: &Value) -> Handled {
        let address = text(request, "address");
        let channel = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|error| format!("address {address:?}: {error}"))?
            .connect_lazy();
        let keys = request.get("keys").cloned().unwrap_or(Value::Null);
        let mut callers = Callers {
            agents: HashMap::new(),
            tools: HashMap::new(),
            humans: HashMap::new(),
        };
        for who in ["own", "other"] {
            let bearer: MetadataValue<Ascii> = format!("Bearer {}", text(&keys, who))
                .parse()
                .map_err(|error| format!("the {who} key is not a header value: {error}"))?;
            let bearer = Bearer(bearer);
            callers.agents.insert(
                who,
                AgentServiceClient::with_interceptor(channel.clone(), bearer.clone()),
            );
            callers.tools.insert(
                who,
                ToolServiceClient::with_interceptor(channel.clone(), bearer.clone()),
            );
            callers.humans.insert(
                who,
                HumanServiceClient::with_interceptor(channel.clone(), bearer),
            );
        }
        self.callers = Some(callers);
        Ok(json!({"client": format!("askuser tonic stubs {}", env!("CARGO_PKG_VERSION"))}))
    }

    /// Starts a run; replies once `run_started` came, which stays to be read with `next`.
    async fn start(&mut self, request: &Value, deadline: Option<Instant>) -> Handled {
        let mut agents = self.agents(request)?;
        let metadata = request
            .get("metadata")
            .and_then(Value::as_object)
            .map(|entries| {
                entries
                    .iter()
                    .map(|(key, value)| {
                        (key.clone(), value.as_str().unwrap_or_default().to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let tools = request
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|tool| {
                let approval = match text(tool, "approval").as_str() {
                    "" => pb::ApprovalPolicy::Unspecified,
                    name => pb::ApprovalPolicy::from_str_name(name)
                        .ok_or_else(|| format!("unknown approval policy {name}"))?,
                };
                Ok(pb::ToolDefinition {
                    name: text(tool, "name"),
                    description: text(tool, "description"),
                    parameters_json_schema: text(tool, "parameters_json_schema"),
                    approval: approval as i32,
                })
            })
            .collect::<Result<_, String>>()?;
        let start = Frame::Start(pb::StartRun {
            agent_id: text(request, "agent_id"),
            prompt: text(request, "prompt"),
            metadata,
            tools,
            ..Default::default()
        });
        let (sender, mut inbound) = open(&mut agents, start, deadline).await?;
        let first = within(deadline, inbound.message())
            .await?
            .ok_or("the stream ended before run_started")?;
        if !matches!(first.event, Some(Event::RunStarted(_))) {
            return Err(format!("the first frame is not run_started: {first:?}").into());
        }
        let run_id = first.run_id.clone();
        let opened = (sender, inbound);
        let stream = RunStream::new(agents, run_id.clone(), opened, Some(first), 0, deadline);
        self.streams.insert(text(request, "stream"), stream);
        Ok(json!({"run_id": run_id}))
    }

    async fn ask_user(&mut self, request: &Value) -> Handled {
        let who = text(request, "as");
        let mut tools = self
            .callers
            .as_ref()
            .and_then(|callers| callers.tools.get(who.as_str()))
            .cloned()
            .ok_or("connect first")?;
        let input = request.get("input").cloned().unwrap_or(Value::Null);
        let options = input
            .get("options")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|option| pb::AskUserOption {
                label: text(option, "label"),
                description: text(option, "description"),
            })
            .collect();
        let selection_mode = match input.get("selection_mode").and_then(Value::as_str) {
            None => None,
            Some(name) => Some(
                pb::SelectionMode::from_str_name(name)
                    .ok_or_else(|| format!("unknown selection mode {name}"))?
                    as i32,
            ),
        };
        let ask = pb::AskUserRequest {
            input: Some(pb::AskUserInput {
                question: text(&input, "question"),
                options,
                selection_mode,
            }),
        };
        let content = tools.ask_user(ask).await?.into_inner().content;
        Ok(json!({"content": content}))
    }
}

/// The frames of a server-streaming call and how it ended, as `resume` and `watch` reply.
async fn recorded(
    called: Result<tonic::Response<Streaming<pb::RunAgentResponse>>, Status>,
    deadline: Option<Instant>,
) -> Handled {
    let mut stream = called?.into_inner();
    let mut frames = Vec::new();
    loop {
        match within(deadline, stream.message()).await {
            Ok(Some(frame)) => frames.push(to_json(&frame)?),
            Ok(None) => return Ok(json!({"frames": frames, "error": null})),
            Err(status) => return Ok(json!({"frames": frames, "error": status_json(&status)})),
        }
    }
}

/// A form's values from the protocol's `form` object: each value `{"text"}`, `{"number"}`,
/// `{"boolean"}` or `{"choice": {"values", "other"}}`.
fn form_answer(values: &serde_json::Map<String, Value>) -> Handled<pb::FormAnswer> {
    use pb::field_value::Value as Field;
    let mut answer = pb::FormAnswer::default();
    for (name, value) in values {
        let field = if let Some(text) = value.get("text").and_then(Value::as_str) {
            Field::Text(text.to_owned())
        } else if let Some(number) = value.get("number").and_then(Value::as_f64) {
            Field::Number(number)
        } else if let Some(boolean) = value.get("boolean").and_then(Value::as_bool) {
            Field::Boolean(boolean)
        } else if let Some(choice) = value.get("choice") {
            Field::Choice(pb::ChoiceValue {
                values: strings(choice, "values"),
                other: text(choice, "other"),
            })
        } else {
            return Err(format!("form value {name} has no kind: {value}").into());
        };
        answer
            .values
            .insert(name.clone(), pb::FieldValue { value: Some(field) });
    }
    Ok(answer)
}

/// The answer of the protocol's answer object.
fn answer_of(answer: &Value) -> Handled<pb::Answer> {
    use pb::answer::Answer as Kind;
    use pb::approval_decision::{Approve, Decision, Edit, Reject};
    let approval = |decision| {
        Kind::Approval(pb::ApprovalDecision {
            decision: Some(decision),
        })
    };
    let kind = if let Some(text) = answer.get("text").and_then(Value::as_str) {
        Kind::Text(text.to_owned())
    } else if answer.get("selections").is_some() {
        Kind::Selections(pb::Selections {
            labels: strings(answer, "selections"),
        })
    } else if let Some(reason) = answer.get("decline").and_then(Value::as_str) {
        Kind::Decline(pb::Decline {
            reason: reason.to_owned(),
        })
    } else if let Some(output) = answer.get("tool_output") {
        Kind::ToolOutput(pb::ToolOutput {
            content: text(output, "content"),
            is_error: output
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or_default(),
        })
    } else if answer.get("approve").is_some() {
        approval(Decision::Approve(Approve {}))
    } else if let Some(reason) = answer.get("reject").and_then(Value::as_str) {
        approval(Decision::Reject(Reject {
            reason: reason.to_owned(),
        }))
    } else if let Some(arguments_json) = answer.get("edit").and_then(Value::as_str) {
        approval(Decision::Edit(Edit {
            arguments_json: arguments_json.to_owned(),
        }))
    } else if let Some(values) = answer.get("form").and_then(Value::as_object) {
        Kind::Form(form_answer(values)?)
    } else if let Some(reply) = answer.get("reply").and_then(Value::as_str) {
        Kind::Reply(reply.to_owned())
    } else {
        return Err(format!("an answer with no kind: {answer}").into());
    };
    Ok(pb::Answer {
        run_id: text(answer, "run_id"),
        tool_call_id: text(answer, "tool_call_id"),
        answer: Some(kind),
        answer_id: text(answer, "answer_id"),
    })
}
