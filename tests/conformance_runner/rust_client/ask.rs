//! `HumanService.Ask` as a user of the stubs would wrap it: create a request (or follow the one its
//! `request_id` made), hold it once its call waits, then wait for its end across lost connections
//! (reattaching with `WatchRun` after the last sequence seen) and read the typed outcome from the
//! settled call of `GetRun`.

use askuser::proto::v1 as pb;
use askuser::proto::v1::human_service_client::HumanServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Status, Streaming};

use super::calls::{connection_lost, retrying, with_deadline, within};
use super::{Agents, Bearer, Handled, number, text};

pub(super) type Humans = HumanServiceClient<InterceptedService<Channel, Bearer>>;

/// A request whose call waits: followed until it ends.
pub(super) struct AskHandle {
    agents: Agents,
    run_id: String,
    inbound: Option<Streaming<pb::RunAgentResponse>>,
    last_sequence: u64,
}

/// The `AskRequest` of the protocol's `ask` op, with the runner's `request_id`.
fn ask_request(request: &Value) -> Handled<pb::AskRequest> {
    use pb::ask_request::Call;
    let call = if let Some(question) = request.get("question") {
        let selection_mode = match question.get("selection_mode").and_then(Value::as_str) {
            None => None,
            Some(name) => Some(
                pb::SelectionMode::from_str_name(name)
                    .ok_or_else(|| format!("unknown selection mode {name}"))?
                    as i32,
            ),
        };
        Call::Question(pb::AskUserInput {
            question: text(question, "question"),
            options: question
                .get("options")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|option| pb::AskUserOption {
                    label: text(option, "label"),
                    description: text(option, "description"),
                })
                .collect(),
            selection_mode,
        })
    } else if let Some(form) = request.get("form") {
        Call::Form(
            askuser::proto_json::from_json_value(form.clone())
                .map_err(|error| format!("form: {error}"))?,
        )
    } else if let Some(approval) = request.get("approval") {
        Call::Approval(pb::ApprovalRequest {
            tool_name: text(approval, "tool_name"),
            arguments_json: approval
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}))
                .to_string(),
            reason: text(approval, "reason"),
        })
    } else {
        return Err("ask: give question, form or approval".into());
    };
    let ttl_ms = number(request, "ttl_ms");
    Ok(pb::AskRequest {
        call: Some(call),
        context: text(request, "context"),
        ttl: (ttl_ms > 0).then(|| prost_types::Duration {
            seconds: i64::try_from(ttl_ms / 1000).unwrap_or(i64::MAX),
            nanos: i32::try_from(ttl_ms % 1000 * 1_000_000).unwrap_or(0),
        }),
        request_id: text(request, "request_id"),
        ..Default::default()
    })
}

/// Creates the request and reads its stream until its call waits.
pub(super) async fn ask(
    humans: Humans,
    agents: Agents,
    request: &Value,
    deadline: Option<Instant>,
) -> Handled<(AskHandle, Value)> {
    let ask = ask_request(request)?;
    // Until the run's id is known, a lost connection is retried with the same request_id.
    let mut inbound = retrying(deadline, || {
        let mut humans = humans.clone();
        let ask = with_deadline(ask.clone(), deadline);
        async move { humans.ask(ask).await.map(tonic::Response::into_inner) }
    })
    .await?;
    let mut last_sequence = 0;
    loop {
        let frame = within(deadline, inbound.message())
            .await?
            .ok_or("the request's stream ended before its call waited")?;
        last_sequence = last_sequence.max(frame.sequence);
        if let Some(Event::ToolCallSuspended(suspended)) = &frame.event {
            let handle = AskHandle {
                agents,
                run_id: frame.run_id.clone(),
                inbound: Some(inbound),
                last_sequence,
            };
            let reply = json!({"run_id": frame.run_id, "tool_call_id": suspended.tool_call_id});
            return Ok((handle, reply));
        }
    }
}

impl AskHandle {
    /// Waits for the request's end, then reads its outcome.
    pub(super) async fn wait(&mut self, deadline: Option<Instant>) -> Handled {
        loop {
            let Some(inbound) = self.inbound.as_mut() else {
                let watch = pb::WatchRunRequest {
                    run_id: self.run_id.clone(),
                    after_sequence: self.last_sequence,
                };
                let agents = self.agents.clone();
                self.inbound = Some(
                    retrying(deadline, || {
                        let mut agents = agents.clone();
                        let watch = with_deadline(watch.clone(), deadline);
                        async move {
                            agents
                                .watch_run(watch)
                                .await
                                .map(tonic::Response::into_inner)
                        }
                    })
                    .await?,
                );
                continue;
            };
            match within(deadline, inbound.message()).await {
                Ok(Some(frame)) => self.last_sequence = self.last_sequence.max(frame.sequence),
                Ok(None) => break,
                Err(status) if connection_lost(&status) => self.inbound = None,
                Err(status) => return Err(status.into()),
            }
        }
        let get = pb::GetRunRequest {
            run_id: self.run_id.clone(),
        };
        let agents = self.agents.clone();
        let run = retrying(deadline, || {
            let mut agents = agents.clone();
            let get = with_deadline(get.clone(), deadline);
            async move { agents.get_run(get).await }
        })
        .await?
        .into_inner()
        .run
        .ok_or("GetRun returned no run")?;
        let call = run
            .settled_tool_calls
            .first()
            .ok_or_else(|| Status::internal("the request ended with no settled call"))?;
        Ok(json!({"outcome": outcome(call)?}))
    }
}

/// The typed outcome of a request's settled call, as the protocol writes it.
fn outcome(call: &pb::SettledToolCall) -> Handled {
    use pb::answer::Answer;
    use pb::approval_decision::Decision;
    let mut outcome = Map::new();
    let mut put = |key: &str, value: Value| outcome.insert(key.to_owned(), value);
    let kind = pb::ToolResultKind::try_from(call.kind).unwrap_or_default();
    match (kind, call.answer.as_ref().and_then(|a| a.answer.as_ref())) {
        (pb::ToolResultKind::Expired, _) => put("kind", json!("expired")),
        (pb::ToolResultKind::Cancelled, _) => put("kind", json!("cancelled")),
        (_, Some(Answer::Text(text))) => {
            put("text", json!(text));
            put("kind", json!("text"))
        }
        (_, Some(Answer::Selections(selections))) => {
            put("selections", json!(selections.labels));
            put("kind", json!("selections"))
        }
        (_, Some(Answer::Reply(text))) => {
            put("text", json!(text));
            put("kind", json!("replied"))
        }
        (pb::ToolResultKind::Rejected, Some(Answer::Decline(decline))) => {
            put("reason", json!(decline.reason));
            put("kind", json!("rejected"))
        }
        (_, Some(Answer::Decline(decline))) => {
            put("reason", json!(decline.reason));
            put("kind", json!("declined"))
        }
        (_, Some(Answer::Form(form))) => {
            let values: Map<String, Value> = form
                .values
                .iter()
                .map(|(name, value)| (name.clone(), field_value(value)))
                .collect();
            put("values", Value::Object(values));
            put("kind", json!("form"))
        }
        (_, Some(Answer::Approval(approval))) => match &approval.decision {
            Some(Decision::Reject(reject)) => {
                put("reason", json!(reject.reason));
                put("kind", json!("rejected"))
            }
            Some(Decision::Approve(_) | Decision::Edit(_)) => {
                // The result says what to run: `{"decision", "arguments"}`.
                let result: Value = serde_json::from_str(&call.content)
                    .map_err(|error| format!("an approval's result is not JSON: {error}"))?;
                put(
                    "arguments",
                    result.get("arguments").cloned().unwrap_or_default(),
                );
                put("kind", result.get("decision").cloned().unwrap_or_default())
            }
            None => return Err("an approval with no decision".into()),
        },
        (kind, answer) => {
            return Err(format!("no outcome for a call settled {kind:?} with {answer:?}").into());
        }
    };
    if let Some(by) = &call.settled_by {
        put("settled_by", json!(by.subject));
    }
    Ok(Value::Object(outcome))
}

/// A form field's value as plain JSON.
fn field_value(value: &pb::FieldValue) -> Value {
    use pb::field_value::Value as Field;
    match &value.value {
        Some(Field::Text(text)) => json!(text),
        Some(Field::Number(number)) => json!(number),
        Some(Field::Boolean(boolean)) => json!(boolean),
        Some(Field::Choice(choice)) => json!({"values": choice.values, "other": choice.other}),
        None => Value::Null,
    }
}
