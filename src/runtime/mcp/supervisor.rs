//! Keeping a server connected: connect, list its tools (every page, bounded), list them again when
//! it says they changed, and when the connection ends mark it down and reconnect with backoff.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{PaginatedRequestParams, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient, Subscription};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::connection::{self, Connection};
use super::{McpServer, ServerState, backoff, catalog};

/// Pages of a tool listing read at most; a server that pages on past them is taken as it is.
const MAX_PAGES: usize = 64;

/// A connection that lasted this long resets the backoff.
const STEADY: Duration = Duration::from_secs(60);

pub(super) async fn supervise(server: Arc<McpServer>, shutdown: CancellationToken) {
    let mut failures = 0u32;
    loop {
        let attempt = Instant::now();
        let connected = tokio::select! {
            _ = shutdown.cancelled() => return,
            connected = connection::connect(&server) => connected,
        };
        let why = match connected {
            Ok(connection) => serve(&server, connection, &shutdown).await,
            Err(why) => why,
        };
        if shutdown.is_cancelled() {
            server.write(ServerState {
                error: "stopped".into(),
                ..ServerState::default()
            });
            return;
        }
        failures = if attempt.elapsed() > STEADY {
            1
        } else {
            failures + 1
        };
        let delay = backoff(failures);
        warn!(mcp_server = %server.name(), endpoint = %server.settings().endpoint(), error = %why, retry_in = ?delay, "MCP server down; its tools are not offered");
        server.write(ServerState {
            error: why,
            ..ServerState::default()
        });
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// Lists the tools, marks the server up and keeps the list current until the connection ends
/// (returning why) or `shutdown`.
async fn serve(
    server: &Arc<McpServer>,
    connection: Connection,
    shutdown: &CancellationToken,
) -> String {
    let peer = connection.peer().clone();
    let stop = connection.cancellation_token();
    let mut closed = Box::pin(connection.waiting());
    let mut listed = false;
    // Since the 2026-07-28 revision a client asks for list changes (`subscriptions/listen`); a
    // server on an earlier one sends them unasked, to the handler.
    let mut changes = match tokio::time::timeout(
        server.settings().timeout,
        peer.listen(SubscriptionFilter::builder().tools_list_changed().build()),
    )
    .await
    {
        Ok(Ok(subscription)) => Some(subscription),
        _ => None,
    };
    loop {
        match list(server, &peer).await {
            Ok(tools) => {
                if !listed {
                    let protocol = peer
                        .peer_info()
                        .map(|info| info.protocol_version.to_string())
                        .unwrap_or_default();
                    info!(mcp_server = %server.name(), tools = tools.len(), %protocol, "MCP server up");
                } else {
                    info!(mcp_server = %server.name(), tools = tools.len(), "MCP server's tools listed again");
                }
                listed = true;
                server.write(ServerState {
                    up: true,
                    error: String::new(),
                    tools: tools.into(),
                    peer: Some(peer.clone()),
                });
            }
            Err(why) => {
                stop.cancel();
                let _ = closed.await;
                return why;
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => {
                stop.cancel();
                let _ = closed.await;
                return "stopped".into();
            }
            quit = &mut closed => {
                return match quit {
                    Ok(reason) => format!("the connection ended ({reason:?})"),
                    Err(error) => format!("the connection failed: {error}"),
                };
            }
            _ = server.list_changed.notified() => {}
            change = next_change(&mut changes) => {
                if !matches!(change, Ok(Some(_))) {
                    // The subscription ended: changes come (if at all) to the handler.
                    changes = None;
                    continue;
                }
            }
        }
    }
}

/// The next notification of a subscription; never, without one.
async fn next_change(
    changes: &mut Option<Subscription>,
) -> Result<Option<rmcp::model::ServerNotification>, rmcp::ServiceError> {
    match changes {
        Some(subscription) => subscription.next().await,
        None => std::future::pending().await,
    }
}

/// Every page of `tools/list`, within the server's timeout each, made into askuser's tools.
async fn list(
    server: &Arc<McpServer>,
    peer: &Peer<RoleClient>,
) -> Result<Vec<Arc<crate::runtime::tools::Tool>>, String> {
    let settings = server.settings();
    let mut listed = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let mut params = PaginatedRequestParams::default();
        params.cursor = cursor;
        let page = tokio::time::timeout(settings.timeout, peer.list_tools(Some(params)))
            .await
            .map_err(|_| "tools/list got no answer in time".to_owned())?
            .map_err(|e| server.scrub(format!("tools/list failed: {e}")))?;
        for tool in page.tools {
            // One past the most taken, so the catalogue can say some were left out.
            if listed.len() > settings.limits.max_tools {
                break;
            }
            listed.push(serde_json::to_value(&tool).map_err(|e| e.to_string())?);
        }
        cursor = page.next_cursor;
        if cursor.is_none() || listed.len() > settings.limits.max_tools {
            break;
        }
    }
    Ok(catalog::tools_of(server, settings, listed))
}
