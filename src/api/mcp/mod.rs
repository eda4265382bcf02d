//! askuser as an MCP server: a Streamable HTTP endpoint at `/mcp` on the API's port, through
//! which an MCP host's agent asks askuser's people (`ask_user`, `ask_user_questions`,
//! `ask_user_form`, `request_approval`) and runs the agents whose entry says `mcp = true`
//! (`run_<agent_id>`). Each ask is a request as `HumanService.Ask` makes it (same decoding, same
//! limits, same tenant: the caller's), so everything that answers requests answers these.
//! A host that declares the tasks extension gets each call as a task (the request's run) to poll,
//! instead of a call that waits. Authentication, the Host and Origin rules and CORS are the
//! port's, applied before any of this.

mod errors;
mod follow;
mod outcome;
mod tasks;
mod tools;

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{MaybeSendFuture, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::tower::StreamableHttpServerConfig;
use tokio_util::sync::CancellationToken;

use super::agent_service::AgentApi;
use crate::domain::Principal;

pub use crate::auth::MCP_PATH;

/// The MCP endpoint's handler: one per session (or per request, stateless), all sharing the API.
#[derive(Clone)]
pub struct McpFace {
    api: AgentApi,
    /// How often a waiting call reports progress (the streams' heartbeat interval).
    heartbeat: Duration,
}

/// The endpoint as a tower service, to mount at [`MCP_PATH`]. The Host rule is the port's guard's
/// (`--allowed-host`), not a second list of its own.
pub fn service(
    api: AgentApi,
    heartbeat: Duration,
    max_request_bytes: usize,
    shutdown: CancellationToken,
) -> StreamableHttpService<McpFace, LocalSessionManager> {
    let face = McpFace { api, heartbeat };
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_sse_keep_alive(Some(heartbeat))
        .with_max_request_body_bytes(max_request_bytes)
        .with_cancellation_token(shutdown);
    StreamableHttpService::new(
        move || Ok(face.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Who calls: the principal the port's authentication put on the HTTP request.
fn principal(context: &RequestContext<RoleServer>) -> Result<Principal, McpError> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .ok_or_else(|| McpError::internal_error("the request carries no principal", None))
}

/// The caller's bearer credential, re-checked while a call waits.
fn credential(context: &RequestContext<RoleServer>) -> Option<crate::auth::Credential> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::auth::Credential>())
        .cloned()
}

impl ServerHandler for McpFace {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("askuser", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Ask a person and wait for the answer: ask_user (one question), ask_user_questions \
             (1-4 multiple-choice questions), ask_user_form (a form), request_approval (before \
             running a tool). Each call waits until someone answers; retry with the same \
             request_id to keep waiting for the same request."
                .into(),
        );
        info
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + MaybeSendFuture + '_ {
        let listed = principal(&context)
            .map(|principal| ListToolsResult::with_all_items(tools::list(&self.api, &principal)));
        std::future::ready(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let principal = principal(&context)?;
        tools::call(self, request, &context, principal).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        tasks::get(self, &request.task_id, &principal(&context)?).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tasks::cancel(self, &request.task_id, &principal(&context)?).await
    }
}
