//! MCP servers as agents' tools, through the official SDK (`rmcp`). Each `[[mcp_server]]` of the
//! agents file is one [`McpServer`]: every replica connects to it (starting it, for a stdio
//! server), lists its tools and keeps the list current, reconnects with backoff when it goes away,
//! and calls its tools for the runs' executors. Its tools are offered to the model only while it is
//! up; their approval is the agents file's, never the server's nor the model's.

mod call;
mod catalog;
mod connection;
mod continuation;
mod live;
mod outcome;
mod settings;
mod supervisor;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::tools::Tool;

pub use call::{McpCall, McpStep, elicitation_form};
pub use catalog::{McpTool, SEPARATOR, qualified_name};
pub use continuation::Continuation;
pub use live::LiveAsker;
pub use outcome::McpOutcome;
pub use settings::{McpLimits, McpRevision, McpServerSettings, McpTransport};

/// The `_meta` key of a call's idempotency key, `<run_id>/<tool_call_id>`: a call cut short by a
/// crash is made again with the same key, which a server that cares can deduplicate on.
pub const IDEMPOTENCY_META: &str = "askuser/idempotency_key";

/// One MCP server, as this replica sees it.
pub struct McpServer {
    settings: McpServerSettings,
    /// Values no message may show (header and environment values).
    secrets: Vec<String>,
    state: RwLock<ServerState>,
    /// Woken when the server says its tool list changed.
    list_changed: Notify,
    /// Whether it is up; `None` until the first attempt to connect has ended.
    up: tokio::sync::watch::Sender<Option<bool>>,
    /// The calls in flight, to which a live input request is handed.
    in_flight: std::sync::Mutex<Vec<live::InFlight>>,
}

/// Whether the server is reachable, and what it offers.
#[derive(Clone, Default)]
struct ServerState {
    up: bool,
    /// Why it is down, without secrets.
    error: String,
    tools: Arc<[Arc<Tool>]>,
    peer: Option<Peer<RoleClient>>,
}

/// A server's state for listings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerStatus {
    pub name: String,
    pub up: bool,
    pub error: String,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.settings.name)
            .field("endpoint", &self.settings.endpoint())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server not yet connected to (down, with no tools) until [`McpServer::start`].
    pub fn new(settings: McpServerSettings) -> Arc<Self> {
        Arc::new(Self {
            secrets: settings.secrets(),
            settings,
            state: RwLock::new(ServerState {
                error: "not connected yet".into(),
                ..ServerState::default()
            }),
            list_changed: Notify::new(),
            up: tokio::sync::watch::Sender::new(None),
            in_flight: std::sync::Mutex::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    pub fn settings(&self) -> &McpServerSettings {
        &self.settings
    }

    /// Connects, and keeps connecting, until `shutdown`; the task ends then (a stdio server's
    /// process is stopped).
    pub fn start(self: &Arc<Self>, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        crate::metrics::mcp_server_up(self.name(), false);
        tokio::spawn(supervisor::supervise(Arc::clone(self), shutdown))
    }

    fn read(&self) -> ServerState {
        match self.state.read() {
            Ok(state) => state.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn write(&self, state: ServerState) {
        crate::metrics::mcp_server_up(self.name(), state.up);
        self.up.send_replace(Some(state.up));
        match self.state.write() {
            Ok(mut guard) => *guard = state,
            Err(poisoned) => *poisoned.into_inner() = state,
        }
    }

    /// Waits (at most the start's timeout) until the first attempt to connect has ended, so that
    /// a run's first step after a (re)start sees the tools of a server that comes up.
    pub async fn ready(&self) {
        let mut up = self.up.subscribe();
        let _ = tokio::time::timeout(
            self.settings.timeout.max(settings::START_TIMEOUT),
            up.wait_for(Option::is_some),
        )
        .await;
    }

    /// Waits, at most `wait`, for the server to be up; whether it is.
    async fn up_within(&self, wait: Duration) -> bool {
        let mut up = self.up.subscribe();
        matches!(
            tokio::time::timeout(wait, up.wait_for(|up| *up == Some(true))).await,
            Ok(Ok(_))
        )
    }

    /// The tools it offers now: none while it is down.
    pub fn tools(&self) -> Arc<[Arc<Tool>]> {
        let state = self.read();
        if state.up { state.tools } else { Arc::from([]) }
    }

    pub fn status(&self) -> McpServerStatus {
        let state = self.read();
        McpServerStatus {
            name: self.settings.name.clone(),
            up: state.up,
            error: state.error,
        }
    }

    /// `text` with every secret of the settings hidden.
    fn scrub(&self, text: impl Into<String>) -> String {
        let mut text = text.into();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "***");
            }
        }
        clip(&text, 2048)
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The delay before reconnecting after `failures` failed attempts in a row: 1 s doubling, at
/// most a minute.
fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1u64 << failures.saturating_sub(1).min(6)).min(Duration::from_secs(60))
}
