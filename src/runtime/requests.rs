//! Standalone requests (`HumanService.Ask`): a question, a form or an approval asked by code
//! outside any run. A request is a run of no agent (its agent id is empty) whose one call is made by
//! its first step instead of a model: the call waits like any other (inbox, terminal, pending-calls
//! feed, webhooks, assignees, expiry, the exactly-once settle), and once settled the request ends
//! with the call's result as its output. Retried with the same `request_id`, it is followed, not
//! made again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ask_user::{self, Violation};
use super::executor::StepOutcome;
use super::shared::Shared;
use super::tools::{ArgumentsSchema, check_name};
use super::{EventStream, RunWebhook, Runtime, RuntimeError, forms, millis};
use crate::domain::{AskUserInput, EventKind, Form, Message, Principal, SuspendKind, Suspension};
use crate::store::{NewCallState, NewRun, NewToolCall, RunEnd, StepState, StoreError, TurnCommit};

/// The agent id of a request: none.
pub const REQUEST_AGENT: &str = "";

/// The tool name a request's question is asked under, as in a run.
const QUESTION_TOOL: &str = ask_user::TOOL_NAME;
/// The tool name a request's form is asked under.
const FORM_TOOL: &str = forms::FORM_TOOL;

/// What a request asks.
#[derive(Clone, Debug)]
pub enum RequestCall {
    Question(AskUserInput),
    Form(Box<Form>),
    /// A tool call to approve, edit or reject before the asker runs it.
    Approval {
        tool_name: String,
        arguments_json: String,
        reason: String,
    },
}

/// A request to ask a person.
#[derive(Clone, Debug)]
pub struct AskRequest {
    pub call: RequestCall,
    /// What is going on and why it is asked: the request's prompt.
    pub context: String,
    pub assignees: Vec<String>,
    pub ttl: Option<Duration>,
    pub metadata: BTreeMap<String, String>,
    pub webhooks: Vec<RunWebhook>,
    /// Its idempotency key; empty for none.
    pub request_id: String,
    /// Who asks: the request belongs to their tenant.
    pub principal: Principal,
}

/// A request's one call as stored with it (`runs.request`).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct RequestSpec {
    tool_name: String,
    arguments_json: String,
    suspension: Suspension,
}

impl RequestCall {
    /// The call's spec, validated; the violations name the request's fields.
    fn spec(
        self,
        assignees: Vec<String>,
        limits: &ask_user::AskUserLimits,
    ) -> Result<RequestSpec, Vec<Violation>> {
        let nest = |prefix: &str, violations: Vec<Violation>| {
            violations
                .into_iter()
                .map(|v| {
                    Violation::new(
                        if v.field.is_empty() {
                            prefix.to_owned()
                        } else {
                            format!("{prefix}.{}", v.field)
                        },
                        v.description,
                    )
                })
                .collect::<Vec<_>>()
        };
        let (tool_name, arguments_json, suspension) = match self {
            RequestCall::Question(input) => {
                let payload =
                    ask_user::validate(&input, limits).map_err(|v| nest("question", v))?;
                let arguments = json!({
                    "question": input.question,
                    "options": input.options.iter().map(|o| json!({"label": o.label, "description": o.description})).collect::<Vec<_>>(),
                });
                (
                    QUESTION_TOOL.to_owned(),
                    arguments.to_string(),
                    Suspension {
                        kind: SuspendKind::Question,
                        payload: Some(payload),
                        ..Suspension::default()
                    },
                )
            }
            RequestCall::Form(form) => {
                forms::validate(&form, limits).map_err(|v| nest("form", v))?;
                let arguments = serde_json::to_string(&form).unwrap_or_default();
                (
                    FORM_TOOL.to_owned(),
                    arguments,
                    Suspension {
                        kind: SuspendKind::Form,
                        form: Some(form),
                        ..Suspension::default()
                    },
                )
            }
            RequestCall::Approval {
                tool_name,
                arguments_json,
                reason,
            } => {
                let mut violations = Vec::new();
                if let Err(why) = check_name(&tool_name) {
                    violations.push(Violation::new("approval.tool_name", why));
                }
                let canonical = match ArgumentsSchema::any_object()
                    .and_then(|schema| schema.check(&arguments_json))
                {
                    Ok((_, canonical)) => canonical,
                    Err(why) => {
                        violations.push(Violation::new("approval.arguments_json", why));
                        String::new()
                    }
                };
                if reason.len() > limits.max_question_bytes {
                    violations.push(Violation::new(
                        "approval.reason",
                        format!("the reason is over {} bytes", limits.max_question_bytes),
                    ));
                }
                if !violations.is_empty() {
                    return Err(violations);
                }
                (
                    tool_name,
                    canonical.clone(),
                    Suspension {
                        kind: SuspendKind::Approval,
                        arguments_json: canonical,
                        approval_reason: reason,
                        ..Suspension::default()
                    },
                )
            }
        };
        if assignees.iter().any(|a| a.is_empty() || a == "group:") {
            return Err(vec![Violation::new(
                "assignees",
                "assignees must not be empty (a subject, or group:NAME)",
            )]);
        }
        Ok(RequestSpec {
            tool_name,
            arguments_json,
            suspension: Suspension {
                assignees,
                ..suspension
            },
        })
    }
}

impl Runtime {
    /// Creates a request (or finds the one its `request_id` made) and follows it to its end.
    pub async fn ask(&self, request: AskRequest) -> Result<(String, EventStream), RuntimeError> {
        if self.shared.shutdown.is_cancelled() {
            return Err(RuntimeError::ShuttingDown);
        }
        let limits = &self.shared.config.limits;
        let spec = request
            .call
            .spec(request.assignees, limits)
            .map_err(RuntimeError::InvalidArgument)?;
        let tenant = &request.principal.tenant;
        let tenant_has_secret = !request.webhooks.is_empty()
            && self.shared.store.webhook_secrets(tenant).await?.is_some();
        let webhooks =
            self.shared
                .config
                .webhooks
                .plan(&[], request.webhooks, tenant, tenant_has_secret)?;
        let ttl = request
            .ttl
            .map(|ttl| ttl.min(self.shared.config.max_question_ttl));
        let run = NewRun {
            run_id: uuid::Uuid::now_v7().to_string(),
            tenant: tenant.clone(),
            agent_id: REQUEST_AGENT.to_owned(),
            prompt: request.context,
            metadata: request.metadata,
            question_ttl_ms: ttl.map(millis),
            run_tools: Vec::new(),
            request_id: (!request.request_id.is_empty()).then_some(request.request_id),
            webhooks,
            trace_context: crate::telemetry::current_context(),
            request: Some(
                serde_json::to_string(&spec).map_err(|e| RuntimeError::Internal(e.to_string()))?,
            ),
        };
        self.create_and_follow(run, request.principal).await
    }
}

impl Shared {
    /// A request's step: its first makes the call; once the call is settled, the request ends
    /// with its result.
    pub(super) async fn request_step(
        self: &Arc<Self>,
        run_id: &str,
        state: &StepState,
        spec: &str,
    ) -> Result<StepOutcome, StoreError> {
        let spec: RequestSpec = serde_json::from_str(spec)
            .map_err(|e| StoreError::Corrupt(format!("run {run_id}'s request: {e}")))?;
        let commit = if state.run.turns == 0 {
            let tool_call_id = super::new_tool_call_id();
            let expire_ms = super::expire_at(self.store.now_ms(), None, state.run.question_ttl_ms);
            let suspension = spec.suspension;
            TurnCommit {
                // A turn of its own (with no text), as a model's would be: the call is in it.
                assistant_text: Some(String::new()),
                events: vec![
                    EventKind::ToolCall {
                        tool_call_id: tool_call_id.clone(),
                        tool_name: spec.tool_name.clone(),
                        arguments_json: spec.arguments_json.clone(),
                    },
                    EventKind::ToolCallSuspended {
                        tool_call_id: tool_call_id.clone(),
                        tool_name: spec.tool_name.clone(),
                        payload: suspension.payload.clone(),
                        form: suspension.form.clone(),
                        expire_ms,
                        kind: suspension.kind,
                        arguments_json: suspension.arguments_json.clone(),
                        approval_reason: suspension.approval_reason.clone(),
                        assignees: suspension.assignees.clone(),
                    },
                ],
                tool_calls: vec![NewToolCall {
                    tool_call_id,
                    tool_name: spec.tool_name,
                    arguments_json: spec.arguments_json,
                    state: NewCallState::Pending {
                        suspension,
                        expire_ms,
                    },
                }],
                ..TurnCommit::default()
            }
        } else if !state.run.pending.is_empty() {
            return Ok(StepOutcome::Idle);
        } else {
            let output_text = state
                .transcript
                .iter()
                .rev()
                .find_map(|message| match message {
                    Message::Tool { content, .. } => Some(content.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            TurnCommit {
                events: vec![EventKind::RunCompleted {
                    output_text: output_text.clone(),
                    usage: None,
                }],
                end: Some(RunEnd::Completed { output_text }),
                ..TurnCommit::default()
            }
        };
        self.commit_retrying(REQUEST_AGENT, run_id, state.run.turns, commit)
            .await
    }
}

/// How a request's approval settles: approved as asked or with edited arguments (the result says
/// which, with the arguments to run), never run by askuser.
pub fn approval_result(edited: bool, arguments_json: &str) -> String {
    let arguments: serde_json::Value =
        serde_json::from_str(arguments_json).unwrap_or(serde_json::Value::Null);
    json!({
        "decision": if edited { "edited" } else { "approved" },
        "arguments": arguments,
    })
    .to_string()
}
