//! Conversions between the wire types of askuser.v1 and the domain.

use std::time::Duration;

use prost_types::Timestamp;

use super::error::ApiError;
use super::limits::RequestLimits;
use super::reason::reject_code;
use crate::domain::{
    self, AnswerInput, ApprovalDecision, PendingCall, Principal, RunRecord, RunStatus,
    SelectionMode, SettledBy, SettledCall, SuspendKind, ToolDefinition, ToolResultKind,
    WebhookEvent,
};
use crate::proto::v1 as pb;
use crate::runtime::tools::{ApprovalPolicy, ToolKind, schema_text};
use crate::runtime::{
    AgentDefinition, AnswerAck, AnswerRequest, PendingFilter, RejectReason, RunWebhook,
    StartRunRequest, Violation,
};
use crate::store::{RunFilter, RunPendingCall};
use crate::wire::{
    form_to_proto, kind_to_proto, payload_into_proto, settled_by_to_proto, suspend_kind_to_proto,
    timestamp, usage_to_proto,
};

/// Milliseconds since the Unix epoch of a wire timestamp; `field` names it in the error.
fn millis_of(time: &Timestamp, field: &str) -> Result<i64, ApiError> {
    if !(0..1_000_000_000).contains(&time.nanos) {
        return Err(ApiError::field(field, format!("{field} has invalid nanos")));
    }
    time.seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(i64::from(time.nanos / 1_000_000)))
        .ok_or_else(|| ApiError::field(field, format!("{field} is out of range")))
}

pub fn duration_to_proto(duration: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(duration.subsec_nanos()).unwrap_or(0),
    }
}

/// A non-negative wire duration; `field` names it in the error.
pub fn duration_from_proto(
    duration: &prost_types::Duration,
    field: &str,
) -> Result<Duration, ApiError> {
    match (
        u64::try_from(duration.seconds),
        u32::try_from(duration.nanos),
    ) {
        (Ok(seconds), Ok(nanos)) if nanos < 1_000_000_000 => Ok(Duration::new(seconds, nanos)),
        _ => Err(ApiError::field(
            field,
            format!("{field} must be a non-negative duration"),
        )),
    }
}

/// Decodes a tool input; unknown enum numbers are field violations under `field`.
pub fn input_from_proto(
    input: pb::AskUserInput,
    field: &str,
) -> Result<domain::AskUserInput, ApiError> {
    let selection_mode = match input.selection_mode.map(pb::SelectionMode::try_from) {
        None | Some(Ok(pb::SelectionMode::Unspecified)) => None,
        Some(Ok(pb::SelectionMode::SingleSelect)) => Some(SelectionMode::SingleSelect),
        Some(Ok(pb::SelectionMode::MultiSelect)) => Some(SelectionMode::MultiSelect),
        Some(Err(_)) => {
            return Err(ApiError::field(
                format!("{field}.selection_mode"),
                "selection_mode is not a known SelectionMode",
            ));
        }
    };
    Ok(domain::AskUserInput {
        question: input.question,
        options: input
            .options
            .into_iter()
            .map(|o| domain::AskUserOption {
                label: o.label,
                description: o.description,
            })
            .collect(),
        selection_mode,
    })
}

/// Prefixes violation fields with the request field that holds them.
pub fn nest(prefix: &str, violations: Vec<Violation>) -> Vec<Violation> {
    violations
        .into_iter()
        .map(|v| Violation {
            field: if v.field.is_empty() {
                prefix.to_owned()
            } else {
                format!("{prefix}.{}", v.field)
            },
            description: v.description,
        })
        .collect()
}

/// Decodes an answer; `default_run_id` fills an empty `run_id` (the stream's run on `RunAgent`).
pub fn answer_from_proto(
    answer: pb::Answer,
    default_run_id: Option<&str>,
    limits: &RequestLimits,
    principal: Principal,
) -> Result<AnswerRequest, ApiError> {
    let invalid = |field: &str, description: &str| {
        ApiError::InvalidAnswer(vec![Violation {
            field: field.into(),
            description: description.into(),
        }])
    };
    super::limits::check_answer(&answer, limits).map_err(ApiError::InvalidAnswer)?;
    let run_id = match (answer.run_id.is_empty(), default_run_id) {
        (false, _) => answer.run_id,
        (true, Some(run_id)) => run_id.to_owned(),
        (true, None) => return Err(invalid("answer.run_id", "run_id must not be empty")),
    };
    let input = match answer.answer {
        Some(pb::answer::Answer::Text(text)) => AnswerInput::Text(text),
        Some(pb::answer::Answer::Selections(selections)) => {
            AnswerInput::Selections(selections.labels)
        }
        Some(pb::answer::Answer::Decline(decline)) => AnswerInput::Decline(decline.reason),
        Some(pb::answer::Answer::ToolOutput(output)) => AnswerInput::ToolOutput {
            content: output.content,
            is_error: output.is_error,
        },
        Some(pb::answer::Answer::Approval(approval)) => {
            use pb::approval_decision::Decision;
            AnswerInput::Approval(match approval.decision {
                Some(Decision::Approve(_)) => ApprovalDecision::Approve,
                Some(Decision::Reject(reject)) => ApprovalDecision::Reject {
                    reason: reject.reason,
                },
                Some(Decision::Edit(edit)) => ApprovalDecision::Edit {
                    arguments_json: edit.arguments_json,
                },
                None => {
                    return Err(invalid(
                        "answer.approval.decision",
                        "an approval needs one of approve, reject or edit",
                    ));
                }
            })
        }
        Some(pb::answer::Answer::Form(form)) => {
            AnswerInput::Form(super::form_answer::form_answer_from_proto(form)?)
        }
        Some(pb::answer::Answer::Reply(reply)) => AnswerInput::Reply(reply),
        None => {
            return Err(invalid(
                "answer.answer",
                "an answer needs one of text, selections, decline, tool_output, approval, form or reply",
            ));
        }
    };
    Ok(AnswerRequest {
        run_id,
        tool_call_id: answer.tool_call_id,
        answer: input,
        answer_id: answer.answer_id,
        principal,
    })
}

/// Decodes the filters of `ListRuns`.
pub fn list_filter(request: &pb::ListRunsRequest) -> Result<RunFilter, ApiError> {
    let pending_kind = match pb::SuspendKind::try_from(request.pending_kind) {
        Ok(pb::SuspendKind::Unspecified) => None,
        Ok(pb::SuspendKind::Question) => Some(SuspendKind::Question),
        Ok(pb::SuspendKind::Approval) => Some(SuspendKind::Approval),
        Ok(pb::SuspendKind::ClientTool) => Some(SuspendKind::ClientTool),
        Ok(pb::SuspendKind::Form) => Some(SuspendKind::Form),
        Err(_) => {
            return Err(ApiError::field(
                "pending_kind",
                "pending_kind is not a known SuspendKind",
            ));
        }
    };
    // A request is a run of no agent: listing requests is listing runs whose agent id is empty.
    let agent_id = match (request.requests_only, request.agent_id.is_empty()) {
        (true, true) => Some(crate::runtime::requests::REQUEST_AGENT.to_owned()),
        (true, false) => {
            return Err(ApiError::field(
                "requests_only",
                "requests have no agent: give requests_only or agent_id, not both",
            ));
        }
        (false, true) => None,
        (false, false) => Some(request.agent_id.clone()),
    };
    Ok(RunFilter {
        status: status_filter(request.status)?,
        agent_id,
        metadata: request
            .metadata
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        created_after_ms: request
            .create_time_after
            .as_ref()
            .map(|time| millis_of(time, "create_time_after"))
            .transpose()?,
        created_before_ms: request
            .create_time_before
            .as_ref()
            .map(|time| millis_of(time, "create_time_before"))
            .transpose()?,
        pending_kind,
    })
}

/// Decodes the kinds filter of `WatchPendingCalls`; unknown or unspecified kinds are violations.
pub fn pending_filter(request: pb::WatchPendingCallsRequest) -> Result<PendingFilter, ApiError> {
    let kinds = request
        .kinds
        .iter()
        .enumerate()
        .map(|(index, kind)| match pb::SuspendKind::try_from(*kind) {
            Ok(pb::SuspendKind::Question) => Ok(SuspendKind::Question),
            Ok(pb::SuspendKind::Approval) => Ok(SuspendKind::Approval),
            Ok(pb::SuspendKind::ClientTool) => Ok(SuspendKind::ClientTool),
            Ok(pb::SuspendKind::Form) => Ok(SuspendKind::Form),
            _ => Err(ApiError::field(
                format!("kinds[{index}]"),
                "kinds holds only known kinds, not SUSPEND_KIND_UNSPECIFIED",
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(PendingFilter {
        agent_ids: request.agent_ids,
        tool_names: request.tool_names,
        kinds,
        assigned_to_me: request.assigned_to_me,
    })
}

/// Decodes `principal`'s start of a run: its text, its question TTL and its client tools.
pub fn start_from_proto(
    start: pb::StartRun,
    limits: &RequestLimits,
    principal: Principal,
) -> Result<StartRunRequest, ApiError> {
    super::limits::check_start(&start, limits)?;
    let question_ttl = start
        .question_ttl
        .as_ref()
        .map(|ttl| duration_from_proto(ttl, "start.question_ttl"))
        .transpose()?;
    Ok(StartRunRequest {
        webhooks: run_webhooks_from_proto(start.webhooks, "start.webhooks")?,
        tools: run_tools_from_proto(start.tools)?,
        agent_id: start.agent_id,
        prompt: start.prompt,
        metadata: start.metadata.into_iter().collect(),
        question_ttl,
        request_id: start.request_id,
        principal,
    })
}

/// The most webhooks one start may ask for.
const MAX_RUN_WEBHOOKS: usize = 16;

/// Decodes the webhooks of `StartRun` (whether their URLs are allowed is the runtime's to say).
pub fn run_webhooks_from_proto(
    webhooks: Vec<pb::WebhookSubscription>,
    path: &str,
) -> Result<Vec<RunWebhook>, ApiError> {
    if webhooks.len() > MAX_RUN_WEBHOOKS {
        return Err(ApiError::field(
            path,
            format!("at most {MAX_RUN_WEBHOOKS} webhooks"),
        ));
    }
    webhooks
        .into_iter()
        .enumerate()
        .map(|(index, webhook)| {
            let events = webhook
                .events
                .iter()
                .enumerate()
                .map(|(position, name)| {
                    WebhookEvent::parse(name).ok_or_else(|| {
                        ApiError::field(
                            format!("{path}[{index}].events[{position}]"),
                            "unknown event type",
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(RunWebhook {
                url: webhook.url,
                events,
            })
        })
        .collect()
}

/// Decodes the client tools of `StartRun`.
pub fn run_tools_from_proto(
    tools: Vec<pb::ToolDefinition>,
) -> Result<Vec<ToolDefinition>, ApiError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(index, tool)| {
            let approval_always = match pb::ApprovalPolicy::try_from(tool.approval) {
                Ok(pb::ApprovalPolicy::Unspecified | pb::ApprovalPolicy::Never) => false,
                Ok(pb::ApprovalPolicy::Always) => true,
                _ => {
                    return Err(ApiError::field(
                        format!("start.tools[{index}].approval"),
                        "a run's tool takes APPROVAL_POLICY_NEVER or APPROVAL_POLICY_ALWAYS",
                    ));
                }
            };
            Ok(ToolDefinition {
                name: tool.name,
                description: tool.description,
                parameters_json_schema: tool.parameters_json_schema,
                approval_always,
            })
        })
        .collect()
}

/// The frame of a call that waits.
pub fn call_pending_frame(call: RunPendingCall) -> pb::WatchPendingCallsResponse {
    pending_calls_frame(pb::watch_pending_calls_response::Event::CallPending(
        pb::CallPending {
            run_id: call.run_id,
            agent_id: call.agent_id,
            call: Some(pending_to_proto(call.call)),
        },
    ))
}

/// The frame of a call that no longer waits.
pub fn call_settled_frame(
    run_id: String,
    tool_call_id: String,
    kind: Option<ToolResultKind>,
    settled_by: Option<SettledBy>,
) -> pb::WatchPendingCallsResponse {
    pending_calls_frame(pb::watch_pending_calls_response::Event::CallSettled(
        pb::CallSettled {
            run_id,
            tool_call_id,
            kind: kind.map_or(pb::ToolResultKind::Unspecified, kind_to_proto) as i32,
            settled_by: settled_by.map(settled_by_to_proto),
        },
    ))
}

/// A frame of the pending-calls feed.
pub fn pending_calls_frame(
    event: pb::watch_pending_calls_response::Event,
) -> pb::WatchPendingCallsResponse {
    pb::WatchPendingCallsResponse { event: Some(event) }
}

/// A frame that is not stored (sequence 0), stamped now.
pub fn unstored_frame(run_id: &str, event: pb::run_agent_response::Event) -> pb::RunAgentResponse {
    pb::RunAgentResponse {
        run_id: run_id.to_owned(),
        sequence: 0,
        time: Some(timestamp(domain::now_millis())),
        event: Some(event),
    }
}

pub fn accepted_frame(run_id: &str, ack: AnswerAck) -> pb::RunAgentResponse {
    unstored_frame(
        run_id,
        pb::run_agent_response::Event::AnswerAccepted(pb::AnswerAccepted {
            tool_call_id: ack.tool_call_id,
            answer_id: ack.answer_id,
            duplicate: ack.duplicate,
        }),
    )
}

/// The in-band form of a rejected answer on `RunAgent`.
pub fn rejected_frame(
    run_id: &str,
    tool_call_id: &str,
    answer_id: &str,
    reason: RejectReason,
    message: String,
    violations: Vec<Violation>,
) -> pb::RunAgentResponse {
    crate::metrics::answer_rejected(reject_code(reason));
    unstored_frame(
        run_id,
        pb::run_agent_response::Event::AnswerRejected(pb::AnswerRejected {
            tool_call_id: tool_call_id.to_owned(),
            reason: reject_code(reason).to_owned(),
            message,
            field_violations: violations
                .into_iter()
                .map(|v| pb::FieldViolation {
                    field: v.field,
                    description: v.description,
                })
                .collect(),
            answer_id: answer_id.to_owned(),
        }),
    )
}

pub fn status_to_proto(status: RunStatus) -> pb::RunStatus {
    match status {
        RunStatus::Running => pb::RunStatus::Running,
        RunStatus::Suspended => pb::RunStatus::Suspended,
        RunStatus::Completed => pb::RunStatus::Completed,
        RunStatus::Failed => pb::RunStatus::Failed,
        RunStatus::Cancelled => pb::RunStatus::Cancelled,
    }
}

/// Decodes a status filter: unspecified is "any".
pub fn status_filter(value: i32) -> Result<Option<RunStatus>, ApiError> {
    match pb::RunStatus::try_from(value) {
        Ok(pb::RunStatus::Unspecified) => Ok(None),
        Ok(pb::RunStatus::Running) => Ok(Some(RunStatus::Running)),
        Ok(pb::RunStatus::Suspended) => Ok(Some(RunStatus::Suspended)),
        Ok(pb::RunStatus::Completed) => Ok(Some(RunStatus::Completed)),
        Ok(pb::RunStatus::Failed) => Ok(Some(RunStatus::Failed)),
        Ok(pb::RunStatus::Cancelled) => Ok(Some(RunStatus::Cancelled)),
        Err(_) => Err(ApiError::field("status", "status is not a known RunStatus")),
    }
}

fn pending_to_proto(call: PendingCall) -> pb::PendingToolCall {
    // A claim that has lapsed is no claim.
    let claim = call
        .claim
        .filter(|(_, until_ms)| *until_ms > domain::now_millis());
    pb::PendingToolCall {
        tool_call_id: call.tool_call_id,
        tool_name: call.tool_name,
        suspend_payload: call.suspension.payload.map(payload_into_proto),
        form: call.suspension.form.as_deref().map(form_to_proto),
        expire_time: call.expire_ms.map(timestamp),
        kind: suspend_kind_to_proto(call.suspension.kind) as i32,
        arguments_json: call.suspension.arguments_json,
        approval_reason: call.suspension.approval_reason,
        assignees: call.suspension.assignees,
        claim_expire_time: claim.as_ref().map(|(_, until_ms)| timestamp(*until_ms)),
        claimant: claim.map(|(claimant, _)| claimant).unwrap_or_default(),
        suspend_time: call.suspended_ms.map(timestamp),
    }
}

pub fn run_to_proto(run: RunRecord) -> pb::Run {
    let settled_tool_calls = run
        .settled
        .into_iter()
        .map(|call| settled_to_proto(&run.run_id, call))
        .collect();
    pb::Run {
        run_id: run.run_id,
        agent_id: run.agent_id,
        status: status_to_proto(run.status) as i32,
        pending_tool_calls: run.pending.into_iter().map(pending_to_proto).collect(),
        output_text: run.output_text,
        last_sequence: run.last_sequence,
        create_time: Some(timestamp(run.created_ms)),
        update_time: Some(timestamp(run.updated_ms)),
        metadata: run.metadata.into_iter().collect(),
        prompt: run.prompt,
        error_message: run.error_message,
        settled_tool_calls,
        usage: run.usage.map(usage_to_proto),
    }
}

fn settled_to_proto(run_id: &str, call: SettledCall) -> pb::SettledToolCall {
    pb::SettledToolCall {
        answer: call.answer.map(|answer| pb::Answer {
            run_id: run_id.to_owned(),
            tool_call_id: call.tool_call_id.clone(),
            answer: Some(answer_to_proto(answer)),
            answer_id: String::new(),
        }),
        tool_call_id: call.tool_call_id,
        tool_name: call.tool_name,
        kind: kind_to_proto(call.kind) as i32,
        settled_by: call.settled_by.map(settled_by_to_proto),
        settle_time: call.settled_ms.map(timestamp),
        result_sequence: call.result_sequence,
        suspend_time: call.suspended_ms.map(timestamp),
        content: call.content,
    }
}

/// An answer as given, back in the API's words.
fn answer_to_proto(answer: AnswerInput) -> pb::answer::Answer {
    use pb::answer::Answer;
    use pb::approval_decision::{Approve, Decision, Edit, Reject};
    match answer {
        AnswerInput::Text(text) => Answer::Text(text),
        AnswerInput::Selections(labels) => Answer::Selections(pb::Selections { labels }),
        AnswerInput::Decline(reason) => Answer::Decline(pb::Decline { reason }),
        AnswerInput::ToolOutput { content, is_error } => {
            Answer::ToolOutput(pb::ToolOutput { content, is_error })
        }
        AnswerInput::Approval(decision) => Answer::Approval(pb::ApprovalDecision {
            decision: Some(match decision {
                ApprovalDecision::Approve => Decision::Approve(Approve {}),
                ApprovalDecision::Reject { reason } => Decision::Reject(Reject { reason }),
                ApprovalDecision::Edit { arguments_json } => {
                    Decision::Edit(Edit { arguments_json })
                }
            }),
        }),
        AnswerInput::Form(form) => Answer::Form(super::form_answer::form_answer_to_proto(form)),
        AnswerInput::Reply(reply) => Answer::Reply(reply),
    }
}

pub fn agent_to_proto(agent: &AgentDefinition) -> pb::Agent {
    let tools = agent.tools_now();
    pb::Agent {
        mcp_servers: agent
            .mcp
            .iter()
            .map(|offer| {
                let status = offer.server.status();
                pb::McpServerStatus {
                    tool_count: tools
                        .iter()
                        .filter(|tool| {
                            matches!(&tool.kind, ToolKind::Mcp(mcp) if mcp.server_name == status.name)
                        })
                        .count() as u32,
                    name: status.name,
                    up: status.up,
                    error: status.error,
                }
            })
            .collect(),
        agent_id: agent.id.clone(),
        name: agent.name.clone(),
        instructions: agent.instructions.clone(),
        tools: tools.iter().map(|t| t.name.clone()).collect(),
        model_provider: agent.model.provider().to_owned(),
        max_steps: agent.max_steps,
        question_ttl: agent.question_ttl.map(duration_to_proto),
        agent_tools: tools
            .iter()
            .map(|tool| pb::AgentTool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                kind: match tool.kind {
                    ToolKind::AskUser => pb::ToolKind::AskUser,
                    ToolKind::Form(_) => pb::ToolKind::Form,
                    ToolKind::Client => pb::ToolKind::Client,
                    ToolKind::Http(_) => pb::ToolKind::Http,
                    ToolKind::Mcp(_) => pb::ToolKind::Mcp,
                } as i32,
                parameters_json_schema: schema_text(tool),
                approval: match tool.approval {
                    ApprovalPolicy::Never => pb::ApprovalPolicy::Never,
                    ApprovalPolicy::Always => pb::ApprovalPolicy::Always,
                    ApprovalPolicy::When(_) => pb::ApprovalPolicy::Conditional,
                } as i32,
                approval_condition: tool.approval.condition().unwrap_or_default().to_owned(),
            })
            .collect(),
    }
}
