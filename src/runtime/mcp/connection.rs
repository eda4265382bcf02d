//! Connecting to a server: a child process over stdio, or Streamable HTTP. askuser declares no
//! sampling and no roots (a server that asks gets a JSON-RPC error).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Weak};

use rmcp::ClientHandler;
use rmcp::model::ProtocolVersion;
#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    ListRootsRequestMethod, ListRootsResult, UrlElicitationCapability,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, AsyncReadExt as _, BufReader};
use tracing::{info, warn};

use super::McpServer;
use super::live::LiveAsk;
use super::settings::{McpRevision, McpTransport};

/// The environment a stdio server starts with, before its own `env`: enough to find programs
/// and a home, and none of this server's own settings or credentials.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "TMPDIR",
    "SYSTEMROOT",
];

/// The longest stderr line logged; the rest is cut.
const MAX_STDERR_LINE: usize = 4096;

/// askuser's side of a connection.
pub(super) struct Handler {
    server: Weak<McpServer>,
    /// The revision the handshake offers.
    protocol: ProtocolVersion,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Elicitation in form and URL modes: a person answers, through askuser's forms.
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::default())
                .with_url(UrlElicitationCapability::new()),
        );
        ClientConfig::new(
            capabilities,
            Implementation::new("askuser", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(self.protocol.clone())
    }

    // Roots are not offered: the SDK's default answers with an empty list instead of an error.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListRootsRequestMethod>())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let cancel = || ElicitResult::new(ElicitationAction::Cancel);
        let Some(server) = self.server.upgrade() else {
            return Ok(cancel());
        };
        let asks = match server.asker_of_request() {
            Ok(asks) => asks,
            Err(in_flight) => {
                warn!(mcp_server = %server.name(), in_flight, "an MCP server asked for input within a call, but not one call is in flight to tell which asked; it is told the person cancelled");
                return Ok(cancel());
            }
        };
        let params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        if asks.send(LiveAsk { params, reply }).await.is_err() {
            return Ok(cancel());
        }
        Ok(answer
            .await
            .ok()
            .and_then(|answer| serde_json::from_value(answer).ok())
            .unwrap_or_else(cancel))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            server.list_changed.notify_one();
        }
    }
}

pub(super) type Connection = RunningService<RoleClient, Handler>;

/// Connects and completes the start handshake within the server's timeout.
pub(super) async fn connect(server: &Arc<McpServer>) -> Result<Connection, String> {
    let settings = server.settings();
    let (lifecycle, protocol) = lifecycle(settings.protocol_version);
    let handler = Handler {
        server: Arc::downgrade(server),
        protocol,
    };
    let timeout = settings.timeout.max(super::settings::START_TIMEOUT);
    let started = match &settings.transport {
        McpTransport::Stdio { command, args, env } => {
            let mut process = tokio::process::Command::new(command);
            process.args(args).env_clear();
            for name in PASSED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    process.env(name, value);
                }
            }
            process.envs(env);
            let (transport, stderr) = TokioChildProcess::builder(process)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start {command}: {e}"))?;
            if let Some(stderr) = stderr {
                tokio::spawn(log_stderr(settings.name.clone(), stderr));
            }
            tokio::time::timeout(
                timeout,
                handler.serve_with_lifecycle(transport, lifecycle.clone()),
            )
            .await
        }
        McpTransport::Http { url, headers } => {
            // The HTTP client is built on rustls without a provider of its own: the ring one this
            // server uses everywhere (installing it twice is harmless).
            let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("header name \"{name}\" is not valid"))?;
                let mut value = http::HeaderValue::from_str(value)
                    .map_err(|_| format!("the value of header {name} is not valid"))?;
                value.set_sensitive(true);
                custom.insert(name, value);
            }
            let limit = settings.limits.max_message_bytes;
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(custom)
                .max_json_response_size(limit)
                .max_sse_event_size(limit);
            let transport = StreamableHttpClientTransport::from_config(config);
            tokio::time::timeout(
                timeout,
                handler.serve_with_lifecycle(transport, lifecycle.clone()),
            )
            .await
        }
    };
    match started {
        Err(_) => Err(format!(
            "no answer to the start handshake within {}",
            humantime::format_duration(timeout)
        )),
        Ok(Err(error)) => Err(server.scrub(format!("the start handshake failed: {error}"))),
        Ok(Ok(connection)) => Ok(connection),
    }
}

/// How a connection starts, and the revision its handshake offers: by default the newest
/// (2026-07-28: no handshake, input asked for by multi round-trip results), falling back to the
/// handshake of 2025-11-25 for a server that does not speak it; or the revision the entry pins.
fn lifecycle(pinned: Option<McpRevision>) -> (ClientLifecycleMode, ProtocolVersion) {
    let legacy = |version: ProtocolVersion| (ClientLifecycleMode::Initialize, version);
    match pinned {
        Some(McpRevision::V2025_06_18) => legacy(ProtocolVersion::V_2025_06_18),
        Some(McpRevision::V2025_11_25) => legacy(ProtocolVersion::V_2025_11_25),
        Some(McpRevision::V2026_07_28) => (
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            ProtocolVersion::V_2026_07_28,
        ),
        None => (
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            ProtocolVersion::V_2025_11_25,
        ),
    }
}

/// Logs a stdio server's stderr, line by line, under its name.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: a line without an end is read (and logged) in pieces.
        match (&mut lines)
            .take(MAX_STDERR_LINE as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    info!(mcp_server = %server, "{text}");
                }
            }
        }
    }
}
