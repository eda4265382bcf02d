//! A delivery's body: `{"type", "timestamp", "data": {"run", "event", "link"?, "reminder"?}}`,
//! where `event` is the proto3 JSON mapping of the stored event (as `RunAgent` streams it) and
//! `run` summarises the run as it is when the delivery is made. `timestamp` is the event's time
//! (a reminder's: its call's suspension).

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::domain::{Event, EventKind};
use crate::proto_json::{ProtoJsonError, to_json_value};
use crate::store::{DeliveryRecord, RunSummary};

/// RFC 3339 with milliseconds, in UTC.
fn rfc3339(ms: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}

/// The body of `delivery` of `event` of `run`; `public_url` makes the deep link of calls.
pub(super) fn body(
    delivery: &DeliveryRecord,
    event: Event,
    run: &RunSummary,
    public_url: Option<&str>,
) -> Result<String, ProtoJsonError> {
    let call = match &event.kind {
        EventKind::ToolCallSuspended {
            tool_call_id,
            expire_ms,
            ..
        } => Some((tool_call_id.clone(), *expire_ms)),
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
    if let (Some((call_id, _)), Some(base)) = (&call, public_url) {
        data["link"] = Value::String(format!(
            "{}/runs/{}#{call_id}",
            base.trim_end_matches('/'),
            run.run_id
        ));
    }
    if let (Some((_, permille)), Some((_, expire_ms))) = (&delivery.reminder, &call) {
        data["reminder"] = json!({
            "fraction": *permille as f64 / 1000.0,
            "expire_time": expire_ms.map(rfc3339),
        });
    }
    Ok(json!({
        "type": delivery.event.as_str(),
        "timestamp": rfc3339(time_ms),
        "data": data,
    })
    .to_string())
}
