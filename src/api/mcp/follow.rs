//! Waiting for a request or a run to end inside one `tools/call`: people take minutes or days, so
//! while it waits the call reports progress at the heartbeat interval (when the host asked for
//! progress), which keeps proxies and clients from giving up on a quiet call. Like every stream,
//! the wait ends when the caller's credential stops authenticating (`recheck::rechecked`).

use futures::StreamExt;
use rmcp::ErrorData as McpError;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer};
use tokio::time::MissedTickBehavior;

use super::{McpFace, errors};
use crate::api::error::ApiError;
use crate::api::recheck::{StatusStream, rechecked};
use crate::domain::{Event, EventKind};
use crate::runtime::EventStream;

/// Follows `events` of `run_id` to the event that ends it.
pub(super) async fn to_end(
    face: &McpFace,
    run_id: &str,
    events: EventStream,
    context: &RequestContext<RoleServer>,
) -> Result<EventKind, McpError> {
    let events: StatusStream<Event> =
        Box::pin(events.map(|event| event.map_err(|e| ApiError::Runtime(e).into())));
    let mut events = rechecked(events, super::credential(context));
    let token = context.meta.get_progress_token();
    let mut ticks = tokio::time::interval(face.heartbeat);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticks.tick().await;
    let mut progress = 0.0;
    let mut waiting = String::from("working");
    loop {
        tokio::select! {
            // The host gave up on the call: the request stays, answerable; a call with its
            // request_id waits for it again.
            () = context.ct.cancelled() => {
                return Err(McpError::internal_error(
                    format!("the call was cancelled; request {run_id} goes on"),
                    None,
                ));
            }
            next = events.next() => match next {
                Some(Ok(event)) if event.kind.is_terminal() => return Ok(event.kind),
                Some(Ok(event)) => {
                    if let EventKind::ToolCallSuspended { tool_name, .. } = &event.kind {
                        waiting = format!("waiting for a person ({tool_name})");
                    }
                    progress += 1.0;
                    report(context, token.as_ref(), progress, &waiting).await;
                }
                Some(Err(status)) => return Err(errors::from_status("the wait", &status)),
                None => {
                    return Err(McpError::internal_error(
                        format!("{run_id} stopped before its end (the server is stopping); call again with the same request_id"),
                        None,
                    ));
                }
            },
            _ = ticks.tick() => {
                progress += 1.0;
                report(context, token.as_ref(), progress, &waiting).await;
            }
        }
    }
}

/// One progress notification, when the host asked for them.
async fn report(
    context: &RequestContext<RoleServer>,
    token: Option<&ProgressToken>,
    progress: f64,
    message: &str,
) {
    let Some(token) = token else { return };
    let mut param = ProgressNotificationParam::new(token.clone(), progress);
    param.message = Some(message.to_owned());
    // A host that went away shows as the call's cancellation; nothing to do here.
    let _ = context.peer.notify_progress(param).await;
}
