//! A delivery's body: `{"type", "timestamp", "data": {"run", "event", "link"?, "answer_url"?,
//! "answer_urls"?, "reminder"?}}`, where `event` is the proto3 JSON mapping of the stored event (as
//! `RunAgent` streams it) and `run` summarises the run as it is when the delivery is made.
//! `timestamp` is the event's time (a reminder's: its call's suspension).

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::auth::{AnswerLinks, LinkClaims};
use crate::domain::{Event, EventKind, SuspendKind};
use crate::proto_json::{ProtoJsonError, to_json_value};
use crate::store::{DeliveryRecord, RunSummary};

/// `answer_url`: a link that opens the call in the inbox without a key and settles it once; and
/// for a call with assignees, `answer_urls`, one per assignee (recorded as `link:<assignee>` when
/// used), `answer_url` being the first's. Each delivery signs fresh links, so a reminder's last
/// their whole lifetime from the reminder.
fn add_answer_links(
    data: &mut Value,
    links: &AnswerLinks,
    base: &str,
    run: &RunSummary,
    call: &WaitingCall,
) {
    let expire_ms = links.expiry(crate::auth::answer_link::now_ms(), call.expire_ms);
    let url = |assignee: Option<&String>| {
        let token = links.sign(&LinkClaims {
            run_id: run.run_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            tenant: run.tenant.clone(),
            assignee: assignee.cloned(),
            expire_ms,
        });
        format!("{base}/answer#{token}")
    };
    data["answer_url_expire_time"] = Value::String(rfc3339(expire_ms));
    if call.assignees.is_empty() {
        data["answer_url"] = Value::String(url(None));
        return;
    }
    let per_assignee: serde_json::Map<String, Value> = call
        .assignees
        .iter()
        .map(|assignee| (assignee.clone(), Value::String(url(Some(assignee)))))
        .collect();
    if let Some(first) = call.assignees.first().and_then(|a| per_assignee.get(a)) {
        data["answer_url"] = first.clone();
    }
    data["answer_urls"] = Value::Object(per_assignee);
}

/// RFC 3339 with milliseconds, in UTC.
fn rfc3339(ms: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}

/// A waiting call, as its deliveries link to it.
struct WaitingCall {
    tool_call_id: String,
    expire_ms: Option<i64>,
    /// Whether a person settles it (a question, a form, an approval), so a link can.
    for_a_person: bool,
    assignees: Vec<String>,
}

/// The body of `delivery` of `event` of `run`; `public_url` makes the deep link of calls, and with
/// `answer_links` their answer links.
pub(super) fn body(
    delivery: &DeliveryRecord,
    event: Event,
    run: &RunSummary,
    public_url: Option<&str>,
    answer_links: Option<&AnswerLinks>,
) -> Result<String, ProtoJsonError> {
    let call = match &event.kind {
        EventKind::ToolCallSuspended {
            tool_call_id,
            expire_ms,
            kind,
            assignees,
            ..
        } => Some(WaitingCall {
            tool_call_id: tool_call_id.clone(),
            expire_ms: *expire_ms,
            for_a_person: *kind != SuspendKind::ClientTool,
            assignees: assignees.clone(),
        }),
        _ => None,
    };
    let time_ms = event.time_ms;
    let mut data = json!({
        "run": {
            "run_id": run.run_id,
            "agent_id": run.agent_id,
            "status": run.status.as_str(),
            "tenant": run.tenant,
            "metadata": run.metadata,
        },
        "event": to_json_value(&crate::wire::event_to_proto(event))?,
    });
    if let (Some(call), Some(base)) = (&call, public_url) {
        let base = base.trim_end_matches('/');
        data["link"] = Value::String(format!("{base}/runs/{}#{}", run.run_id, call.tool_call_id));
        if let Some(links) = answer_links.filter(|_| call.for_a_person) {
            add_answer_links(&mut data, links, base, run, call);
        }
    }
    if let (Some((_, permille)), Some(call)) = (&delivery.reminder, &call) {
        data["reminder"] = json!({
            "fraction": *permille as f64 / 1000.0,
            "expire_time": call.expire_ms.map(rfc3339),
        });
    }
    Ok(json!({
        "type": delivery.event.as_str(),
        "timestamp": rfc3339(time_ms),
        "data": data,
    })
    .to_string())
}
