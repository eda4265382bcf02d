//! How an MCP server is reached and what its tools may do, as the agents file says.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::runtime::tools::ApprovalPolicy;

/// The least time a server's start (a process, the handshake) gets.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A protocol revision a server entry may pin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpRevision {
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl McpRevision {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "2025-06-18" => Some(McpRevision::V2025_06_18),
            "2025-11-25" => Some(McpRevision::V2025_11_25),
            "2026-07-28" => Some(McpRevision::V2026_07_28),
            _ => None,
        }
    }
}

/// How askuser reaches a server.
#[derive(Clone, Debug)]
pub enum McpTransport {
    /// A child process each replica starts and supervises, spoken to over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set on top of a minimal environment (the server's own is not passed on).
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// Header name → value, read from the environment when the file was loaded.
        headers: Vec<(String, String)>,
    },
}

/// The bounds a server's answers are held to, so a hostile server cannot grow this one's memory.
#[derive(Clone, Debug)]
pub struct McpLimits {
    /// Tools taken from one server; the rest are left out with a warning.
    pub max_tools: usize,
    /// A tool's input schema, as JSON text; a tool over it is left out.
    pub max_schema_bytes: usize,
    /// A tool's description; a longer one is cut.
    pub max_description_bytes: usize,
    /// The descriptions and schemas of all its tools together: they are sent with every model
    /// request and every listing; tools past it are left out.
    pub max_listing_bytes: usize,
    /// One message from the server (a listing page, a call's result).
    pub max_message_bytes: usize,
}

impl Default for McpLimits {
    fn default() -> Self {
        Self {
            max_tools: 256,
            max_schema_bytes: 64 * 1024,
            max_description_bytes: 4 * 1024,
            max_listing_bytes: 1024 * 1024,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

/// An `[[mcp_server]]`.
#[derive(Clone, Debug)]
pub struct McpServerSettings {
    /// Letters, digits and `_`: the prefix of its tools' names.
    pub name: String,
    pub transport: McpTransport,
    /// How long one request (a call, a listing) may take; the start gets at least
    /// [`START_TIMEOUT`], for a process that installs itself first (`npx -y`).
    pub timeout: Duration,
    /// How long a call waits for a person when the server elicits; `None`: as long as the
    /// question lives (its TTL).
    pub elicitation_timeout: Option<Duration>,
    /// The protocol revision spoken; `None`: the newest the server speaks (2026-07-28, else the
    /// 2025-11-25 handshake).
    pub protocol_version: Option<McpRevision>,
    /// Its tools' approval unless `tool_approval` names them; by default every call waits.
    pub approval: ApprovalPolicy,
    /// Per tool (the server's own tool name).
    pub tool_approval: BTreeMap<String, ApprovalPolicy>,
    /// Whether the server's `readOnlyHint` is believed: then its read-only tools run without
    /// approval (unless `tool_approval` says otherwise).
    pub trust_annotations: bool,
    pub limits: McpLimits,
}

impl McpServerSettings {
    /// The secrets these settings hold (header values and environment values), which no log
    /// line or message may show.
    pub fn secrets(&self) -> Vec<String> {
        match &self.transport {
            McpTransport::Stdio { env, .. } => env.values().cloned().collect::<Vec<_>>(),
            McpTransport::Http { headers, .. } => {
                headers.iter().map(|(_, value)| value.clone()).collect()
            }
        }
        .into_iter()
        // Short values ("1", "warn") would blot out ordinary words; they are no secrets.
        .filter(|value| value.len() >= 6)
        .collect()
    }

    /// Where the server is, for messages: the command, or the URL without credentials.
    pub fn endpoint(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, .. } => format!("command {command}"),
            McpTransport::Http { url, .. } => crate::redact::redact_url(url),
        }
    }
}
