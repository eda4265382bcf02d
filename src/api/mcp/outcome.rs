//! What a finished call returns to the MCP host: the text the model would read inside a run
//! (`User answered: …`), with the typed outcome as structured content; for `request_approval`,
//! `{decision, arguments, reason, settled_by}`; for a run, its final text.

use rmcp::model::{CallToolResult, ContentBlock as Content};
use serde_json::{Map, Value, json};

use crate::domain::{
    AnswerInput, ApprovalDecision, EventKind, FieldValue, RunRecord, SettledCall, ToolResultKind,
};

/// The request's one settled call; `None` when it ended without one (cancelled before).
fn settled(run: &RunRecord) -> Option<&SettledCall> {
    run.settled.first()
}

fn settled_by(call: &SettledCall) -> Value {
    call.settled_by
        .as_ref()
        .map_or(Value::Null, |by| json!(by.subject))
}

/// A form value as plain JSON.
fn field_value(value: &FieldValue) -> Value {
    match value {
        FieldValue::Text(text) => json!(text),
        FieldValue::Number(number) => json!(number.0),
        FieldValue::Boolean(boolean) => json!(boolean),
        FieldValue::Choice(choice) => json!({"values": choice.values, "other": choice.other}),
    }
}

/// A question's or a form's outcome.
pub(super) fn answer(run: &RunRecord) -> CallToolResult {
    let Some(call) = settled(run) else {
        return CallToolResult::error(vec![Content::text(format!(
            "the request was cancelled before anyone answered: {}",
            run.error_message
        ))]);
    };
    let mut outcome = Map::new();
    let kind = match (call.kind, &call.answer) {
        (ToolResultKind::Expired, _) => "expired",
        (ToolResultKind::Cancelled, _) => "cancelled",
        (_, Some(AnswerInput::Text(text))) => {
            outcome.insert("text".into(), json!(text));
            "text"
        }
        (_, Some(AnswerInput::Selections(labels))) => {
            outcome.insert("selections".into(), json!(labels));
            "selections"
        }
        (_, Some(AnswerInput::Form(form))) => {
            let values: Map<String, Value> = form
                .values
                .iter()
                .map(|(name, value)| (name.clone(), field_value(value)))
                .collect();
            outcome.insert("values".into(), Value::Object(values));
            "form"
        }
        (_, Some(AnswerInput::Decline(reason))) => {
            outcome.insert("reason".into(), json!(reason));
            "declined"
        }
        (_, Some(AnswerInput::Reply(text))) => {
            outcome.insert("text".into(), json!(text));
            "replied"
        }
        _ => "other",
    };
    outcome.insert("kind".into(), json!(kind));
    outcome.insert("settled_by".into(), settled_by(call));
    outcome.insert("run_id".into(), json!(run.run_id));
    let mut result = CallToolResult::success(vec![Content::text(call.content.clone())]);
    result.structured_content = Some(Value::Object(outcome));
    result
}

/// An approval's decision: `{decision, arguments, reason, settled_by}`.
pub(super) fn approval(run: &RunRecord) -> CallToolResult {
    let Some(call) = settled(run) else {
        return CallToolResult::error(vec![Content::text(format!(
            "the request was cancelled before anyone decided: {}",
            run.error_message
        ))]);
    };
    // The result of an approval that lets the tool run says what to run it with.
    let result: Value = serde_json::from_str(&call.content).unwrap_or(Value::Null);
    let (decision, arguments, reason) = match (call.kind, &call.answer) {
        (ToolResultKind::Expired, _) => ("expired", Value::Null, String::new()),
        (ToolResultKind::Cancelled, _) => ("cancelled", Value::Null, String::new()),
        (_, Some(AnswerInput::Approval(ApprovalDecision::Reject { reason })))
        | (_, Some(AnswerInput::Decline(reason))) => ("rejected", Value::Null, reason.clone()),
        (_, Some(AnswerInput::Approval(ApprovalDecision::Edit { .. }))) => {
            ("edited", result["arguments"].clone(), String::new())
        }
        _ => ("approved", result["arguments"].clone(), String::new()),
    };
    let outcome = json!({
        "decision": decision,
        "arguments": arguments,
        "reason": reason,
        "settled_by": settled_by(call),
        "run_id": run.run_id,
    });
    let mut result = CallToolResult::success(vec![Content::text(outcome.to_string())]);
    result.structured_content = Some(outcome);
    result
}

/// A run's end: its final text, or why it did not complete.
pub(super) fn run_end(run_id: &str, end: EventKind) -> CallToolResult {
    match end {
        EventKind::RunCompleted { output_text, .. } => {
            let mut result = CallToolResult::success(vec![Content::text(output_text.clone())]);
            result.structured_content = Some(json!({"run_id": run_id, "output_text": output_text}));
            result
        }
        EventKind::RunFailed { message } => CallToolResult::error(vec![Content::text(format!(
            "the run {run_id} failed: {message}"
        ))]),
        EventKind::RunCancelled { reason } => CallToolResult::error(vec![Content::text(format!(
            "the run {run_id} was cancelled: {reason}"
        ))]),
        _ => CallToolResult::error(vec![Content::text(format!("the run {run_id} ended"))]),
    }
}
