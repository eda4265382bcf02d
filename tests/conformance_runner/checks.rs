//! What a check compares: the kind of a frame or feed event, and the value of a check's field in
//! it, read from the proto3 JSON mapping the client under test reports.

use serde_json::{Value, json};

use crate::Outcome;
use crate::message;

/// The frame kinds, named as the `event` oneof's fields are.
pub const FRAME_KINDS: [&str; 12] = [
    "run_started",
    "text_delta",
    "tool_call",
    "tool_call_suspended",
    "tool_result",
    "answer_rejected",
    "answer_accepted",
    "run_completed",
    "run_failed",
    "run_cancelled",
    "step_restarted",
    "heartbeat",
];

/// The pending-call event kinds, named as the feed's `event` oneof's fields are.
pub const PENDING_KINDS: [&str; 4] = ["call_pending", "call_settled", "snapshot_done", "heartbeat"];

/// The frame's kind and the event's fields.
pub fn frame_event(frame: &Value) -> Outcome<(&'static str, &Value)> {
    message::one_of(frame, &FRAME_KINDS)
}

/// The value a frame check's field compares against; `None` when the field does not apply to the
/// frame's kind.
pub fn frame_field(kind: &str, event: &Value, field: &str) -> Option<Value> {
    let text = |name: &str| Some(Value::String(message::text(event, name)));
    let has_call_id = [
        "tool_call",
        "tool_call_suspended",
        "tool_result",
        "answer_rejected",
        "answer_accepted",
    ];
    match (field, kind) {
        ("tool_call_id", kind) if has_call_id.contains(&kind) => text("tool_call_id"),
        ("tool_name", "tool_call" | "tool_call_suspended") => text("tool_name"),
        ("suspend_kind", "tool_call_suspended") => Some(Value::String(message::enum_name(
            event,
            "kind",
            "SUSPEND_KIND",
        ))),
        ("arguments", "tool_call" | "tool_call_suspended") => {
            Some(json_or_text(&message::text(event, "arguments_json")))
        }
        ("approval_reason", "tool_call_suspended") => text("approval_reason"),
        ("form_fields", "tool_call_suspended") => {
            let form = event.get("form").cloned().unwrap_or(json!({}));
            Some(
                message::items(&form, "fields")
                    .iter()
                    .map(|field| Value::String(message::text(field, "name")))
                    .collect(),
            )
        }
        ("question" | "options" | "selection_mode", "tool_call_suspended") => {
            let payload = event.get("suspend_payload").cloned().unwrap_or(json!({}));
            Some(match field {
                "question" => Value::String(message::text(&payload, "question")),
                "options" => message::items(&payload, "options")
                    .iter()
                    .map(|option| Value::String(message::text(option, "label")))
                    .collect(),
                _ => match payload.get("selection_mode") {
                    None | Some(Value::Null) => Value::Null,
                    Some(_) => Value::String(message::enum_name(
                        &payload,
                        "selection_mode",
                        "SELECTION_MODE",
                    )),
                },
            })
        }
        ("content", "tool_result") => text("content"),
        ("is_error", "tool_result") => Some(Value::Bool(message::boolean(event, "is_error"))),
        ("result_kind", "tool_result") => Some(Value::String(message::enum_name(
            event,
            "kind",
            "TOOL_RESULT_KIND",
        ))),
        ("reason", "answer_rejected") => text("reason"),
        ("fields", "answer_rejected") => Some(
            message::items(event, "field_violations")
                .iter()
                .map(|violation| Value::String(message::text(violation, "field")))
                .collect(),
        ),
        ("duplicate", "answer_accepted") => Some(Value::Bool(message::boolean(event, "duplicate"))),
        ("text", "text_delta") => text("text"),
        ("output_text", "run_completed") => text("output_text"),
        ("message", "run_failed") => text("message"),
        ("agent_id" | "prompt", "run_started") => text(field),
        _ => None,
    }
}

/// The value a pending-calls check's field compares against; `None` when it does not apply.
pub fn pending_field(kind: &str, event: &Value, field: &str) -> Option<Value> {
    let text = |message: &Value, name: &str| Some(Value::String(message::text(message, name)));
    let call = event.get("call").cloned().unwrap_or(json!({}));
    match (field, kind) {
        ("run_id", "call_pending" | "call_settled") => text(event, "run_id"),
        ("agent_id", "call_pending") => text(event, "agent_id"),
        ("tool_call_id", "call_settled") => text(event, "tool_call_id"),
        ("result_kind", "call_settled") => Some(Value::String(message::enum_name(
            event,
            "kind",
            "TOOL_RESULT_KIND",
        ))),
        ("tool_call_id" | "tool_name", "call_pending") => text(&call, field),
        ("suspend_kind", "call_pending") => Some(Value::String(message::enum_name(
            &call,
            "kind",
            "SUSPEND_KIND",
        ))),
        ("arguments", "call_pending") => {
            Some(json_or_text(&message::text(&call, "arguments_json")))
        }
        _ => None,
    }
}

/// Arguments JSON as a JSON value (compared by keys, whatever their order), or as text when it is
/// not JSON.
fn json_or_text(arguments_json: &str) -> Value {
    serde_json::from_str(arguments_json).unwrap_or_else(|_| Value::String(arguments_json.into()))
}
