//! Command line, environment and the agents file.
//!
//! Every flag can also come from an `ASKUSER_*` environment variable; agents come from a TOML file
//! (`--config`) or, without one, the built-in demo agents.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Deserialize;

use crate::api::RequestLimits;
use crate::auth::AuthArgs;
use crate::cli::{AnswerArgs, CancelArgs, PendingArgs, RunsArgs, StartArgs, WatchArgs};
use crate::keys_cli::KeysArgs;
use crate::model::{
    DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT, Model, OpenAiModel, OpenAiSettings,
    ScriptedModel, ScriptedTurn,
};
use crate::redact::redact_url;
use crate::runtime::tools::{
    ApprovalPolicy, ArgumentsSchema, HttpTool, HttpToolSettings, Tool, ToolKind, check_name,
};
use crate::runtime::{AgentDefinition, AskUserLimits, RuntimeConfig};
use crate::store::{PostgresSettings, Synchronous};
use crate::tls::TlsFiles;

/// The askuser command line.
#[derive(Debug, Parser)]
#[command(
    name = "askuser",
    version,
    about = "Runs AI agents whose tools can stop and ask a human"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the askuser gRPC API.
    Serve(Box<ServeArgs>),
    /// Create, list and revoke API keys, offline against the store (the same store flags as
    /// serve; a server on the same store sees the change at its next request).
    Keys(Box<KeysArgs>),
    /// Start a run of an agent and follow it, answering its questions here.
    Start(Box<StartArgs>),
    /// List the calls that wait for someone, across runs (live with --watch).
    Pending(Box<PendingArgs>),
    /// Answer a pending call: with a flag (--text, --select, ...), or interactively without one.
    Answer(Box<AnswerArgs>),
    /// List runs, newest first.
    Runs(Box<RunsArgs>),
    /// Follow a run's events from its start, without answering.
    Watch(Box<WatchArgs>),
    /// Cancel a run.
    Cancel(Box<CancelArgs>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// A web origin: scheme, host and optional port, nothing else.
fn web_origin(text: &str) -> Result<http::HeaderValue, String> {
    let uri: http::Uri = text.parse().map_err(|e| format!("{e}"))?;
    let whole = uri.scheme().is_some()
        && uri.host().is_some()
        && uri
            .path_and_query()
            .is_none_or(|p| p.as_str() == "/" && !text.ends_with('/'));
    match whole && !text.ends_with('/') {
        true => http::HeaderValue::from_str(text).map_err(|e| e.to_string()),
        false => Err("expected an origin such as https://inbox.example.com (no path)".into()),
    }
}

fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| e.to_string())
}

/// A duration that must be more than zero (a zero interval would spin, a zero TTL expire at once).
pub(crate) fn positive_duration(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        value if value.is_zero() => Err("must be more than 0".into()),
        value => Ok(value),
    }
}

/// A 32-bit count that must be at least 1.
fn positive_u32(text: &str) -> Result<u32, String> {
    u32::try_from(positive(text)?).map_err(|e| e.to_string())
}

/// A count or size that must be at least 1.
fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>().map_err(|e| e.to_string())? {
        0 => Err("must be at least 1".into()),
        value => Ok(value),
    }
}

/// A database URL, whose password never shows in debug output or logs.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The URL itself, for connecting.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(DatabaseUrl(text.trim().to_owned()))
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", redact_url(&self.0))
    }
}

/// Settings of `askuser serve`.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed on stdout).
    #[arg(long, env = "ASKUSER_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// PEM certificate chain (leaf first) the server presents: gRPC is served over TLS only.
    /// Needs --tls-key. Re-read when the file changes.
    #[arg(long, env = "ASKUSER_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert. Re-read when the file changes.
    #[arg(long, env = "ASKUSER_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// PEM certificates of the authorities clients' certificates must chain to: every client must
    /// present a valid certificate (mTLS). Needs --tls-cert. Re-read when the file changes.
    #[arg(long, env = "ASKUSER_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// How often the TLS files are checked for changes.
    #[arg(long, env = "ASKUSER_TLS_RELOAD_INTERVAL", default_value = "5s", value_parser = positive_duration)]
    pub tls_reload_interval: Duration,
    /// Directory of the SQLite store (unused with --database-url).
    #[arg(long, env = "ASKUSER_DATA_DIR", default_value = "askuser-data")]
    pub data_dir: PathBuf,
    /// PostgreSQL URL (`postgres://user:password@host:port/db`): use a PostgreSQL store shared by
    /// every replica instead of the embedded SQLite file. Prefer the environment variable or
    /// --database-url-file to a command line others can read.
    #[arg(
        long,
        env = "ASKUSER_DATABASE_URL",
        conflicts_with = "database_url_file"
    )]
    pub database_url: Option<DatabaseUrl>,
    /// A file holding the PostgreSQL URL (e.g. a mounted secret), instead of --database-url.
    #[arg(long, env = "ASKUSER_DATABASE_URL_FILE")]
    pub database_url_file: Option<PathBuf>,
    /// Connections in the PostgreSQL pool.
    #[arg(long, env = "ASKUSER_DATABASE_POOL_SIZE", default_value_t = 16, value_parser = positive)]
    pub database_pool_size: usize,
    /// How long a request waits for a free connection of the PostgreSQL pool before it fails with
    /// UNAVAILABLE.
    #[arg(long, env = "ASKUSER_DATABASE_POOL_WAIT_TIMEOUT", default_value = "5s", value_parser = positive_duration)]
    pub database_pool_wait_timeout: Duration,
    /// How long opening a PostgreSQL connection may take.
    #[arg(long, env = "ASKUSER_DATABASE_CONNECT_TIMEOUT", default_value = "5s", value_parser = positive_duration)]
    pub database_connect_timeout: Duration,
    /// How long checking a pooled PostgreSQL connection before its reuse may take.
    #[arg(long, env = "ASKUSER_DATABASE_RECYCLE_TIMEOUT", default_value = "5s", value_parser = positive_duration)]
    pub database_recycle_timeout: Duration,
    /// PostgreSQL `statement_timeout` of every connection: a longer statement fails (UNAVAILABLE).
    #[arg(long, env = "ASKUSER_DATABASE_STATEMENT_TIMEOUT", default_value = "30s", value_parser = positive_duration)]
    pub database_statement_timeout: Duration,
    /// PostgreSQL `lock_timeout` of every connection: a statement that waits longer for a lock
    /// fails (UNAVAILABLE).
    #[arg(long, env = "ASKUSER_DATABASE_LOCK_TIMEOUT", default_value = "10s", value_parser = positive_duration)]
    pub database_lock_timeout: Duration,
    /// PostgreSQL `idle_in_transaction_session_timeout` of every connection: the database ends a
    /// transaction left idle this long, and its locks with it.
    #[arg(long, env = "ASKUSER_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT", default_value = "60s", value_parser = positive_duration)]
    pub database_idle_in_transaction_timeout: Duration,
    /// Health reports NOT_SERVING once the store (on PostgreSQL: also its LISTEN connection) has
    /// been unreachable this long, and SERVING again when it answers.
    #[arg(long, env = "ASKUSER_STORE_UNHEALTHY_AFTER", default_value = "10s", value_parser = positive_duration)]
    pub store_unhealthy_after: Duration,
    /// Agents file (TOML); without it the built-in demo agents are served.
    #[arg(long, env = "ASKUSER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, env = "ASKUSER_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// SQLite durability: `normal` survives a process crash, `full` also a power loss.
    #[arg(
        long,
        env = "ASKUSER_SQLITE_SYNCHRONOUS",
        value_enum,
        default_value = "normal"
    )]
    pub sqlite_synchronous: Synchronous,
    /// Most options a question may offer.
    #[arg(long, env = "ASKUSER_MAX_OPTIONS", default_value_t = 64, value_parser = positive)]
    pub max_options: usize,
    /// Longest option label, in bytes.
    #[arg(long, env = "ASKUSER_MAX_LABEL_BYTES", default_value_t = 1024, value_parser = positive)]
    pub max_label_bytes: usize,
    /// Longest question, in bytes.
    #[arg(long, env = "ASKUSER_MAX_QUESTION_BYTES", default_value_t = 16384, value_parser = positive)]
    pub max_question_bytes: usize,
    /// Longest option description, in bytes.
    #[arg(long, env = "ASKUSER_MAX_DESCRIPTION_BYTES", default_value_t = 4096, value_parser = positive)]
    pub max_description_bytes: usize,
    /// Longest free-text answer, in bytes.
    #[arg(long, env = "ASKUSER_MAX_ANSWER_BYTES", default_value_t = 65536, value_parser = positive)]
    pub max_answer_bytes: usize,
    /// Longest client tool output accepted, and the most of an HTTP tool's response kept (the rest
    /// is cut with a note), in bytes.
    #[arg(long, env = "ASKUSER_MAX_TOOL_OUTPUT_BYTES", default_value_t = 262144, value_parser = positive)]
    pub max_tool_output_bytes: usize,
    /// A step started this many times without finishing (the server stopped during it, or its
    /// result could not be stored) fails its run instead of being tried again.
    #[arg(long, env = "ASKUSER_MAX_STEP_ATTEMPTS", default_value_t = 5, value_parser = positive)]
    pub max_step_attempts: usize,
    /// Steps this server works on at once, over all runs (model turns and HTTP tool calls); the
    /// runs beyond it wait, still running, for room.
    #[arg(long, env = "ASKUSER_MAX_RUNNING_STEPS", default_value_t = 64, value_parser = positive)]
    pub max_running_steps: usize,
    /// Requests this server has in flight at once to one model endpoint (a provider's base URL).
    #[arg(long, env = "ASKUSER_MAX_MODEL_REQUESTS", default_value_t = 16, value_parser = positive)]
    pub max_model_requests: usize,
    /// Longest prompt a run may start with, in bytes.
    #[arg(long, env = "ASKUSER_MAX_PROMPT_BYTES", default_value_t = 262144, value_parser = positive)]
    pub max_prompt_bytes: usize,
    /// Longest arguments an approval's edit may give a call, in bytes.
    #[arg(long, env = "ASKUSER_MAX_ARGUMENTS_BYTES", default_value_t = 65536, value_parser = positive)]
    pub max_arguments_bytes: usize,
    /// Most entries of a run's metadata.
    #[arg(long, env = "ASKUSER_MAX_METADATA_ENTRIES", default_value_t = 64, value_parser = positive)]
    pub max_metadata_entries: usize,
    /// Most bytes of a run's metadata, keys and values together.
    #[arg(long, env = "ASKUSER_MAX_METADATA_BYTES", default_value_t = 16384, value_parser = positive)]
    pub max_metadata_bytes: usize,
    /// Longest decline, reject or cancel reason, in bytes.
    #[arg(long, env = "ASKUSER_MAX_REASON_BYTES", default_value_t = 4096, value_parser = positive)]
    pub max_reason_bytes: usize,
    /// Longest `answer_id`, in bytes.
    #[arg(long, env = "ASKUSER_MAX_ANSWER_ID_BYTES", default_value_t = 256, value_parser = positive)]
    pub max_answer_id_bytes: usize,
    /// Longest id a client sends (run, tool call and agent ids, claimants, request ids, per-run
    /// tool names), in bytes.
    #[arg(long, env = "ASKUSER_MAX_ID_BYTES", default_value_t = 256, value_parser = positive)]
    pub max_id_bytes: usize,
    /// Most agent ids, and most tool names, in a `WatchPendingCalls` filter.
    #[arg(long, env = "ASKUSER_MAX_FILTER_ENTRIES", default_value_t = 64, value_parser = positive)]
    pub max_filter_entries: usize,
    /// Most client tools a run may declare (`StartRun.tools`).
    #[arg(long, env = "ASKUSER_MAX_RUN_TOOLS", default_value_t = 64, value_parser = positive)]
    pub max_run_tools: usize,
    /// Longest JSON Schema of a run's client tool, in bytes (its description takes
    /// --max-description-bytes, its name --max-id-bytes).
    #[arg(long, env = "ASKUSER_MAX_SCHEMA_BYTES", default_value_t = 65536, value_parser = positive)]
    pub max_schema_bytes: usize,
    /// Largest gRPC message a client may send, in bytes; without it, derived from the other limits
    /// (the largest question, answer, tool output, edit, or prompt with its metadata they allow,
    /// plus 64 KiB). Responses may be four times as large.
    #[arg(long, env = "ASKUSER_MAX_MESSAGE_BYTES", value_parser = positive)]
    pub max_message_bytes: Option<usize>,
    /// A heartbeat frame goes out on a stream idle this long.
    #[arg(long, env = "ASKUSER_HEARTBEAT_INTERVAL", default_value = "20s", value_parser = positive_duration)]
    pub heartbeat_interval: Duration,
    /// The longest time to live a question may have.
    #[arg(long, env = "ASKUSER_MAX_QUESTION_TTL", default_value = "30d", value_parser = positive_duration)]
    pub max_question_ttl: Duration,
    /// How long finished runs are kept.
    #[arg(long, env = "ASKUSER_RETENTION", default_value = "7d", value_parser = duration)]
    pub retention: Duration,
    /// How often finished runs past retention are pruned.
    #[arg(long, env = "ASKUSER_PRUNE_INTERVAL", default_value = "1h", value_parser = positive_duration)]
    pub prune_interval: Duration,
    /// Runs still running or suspended this long after they started (e.g. `30d`) are cancelled at
    /// the next prune, and pruned once past retention; absent: never.
    #[arg(long, env = "ASKUSER_MAX_RUN_AGE", value_parser = positive_duration)]
    pub max_run_age: Option<Duration>,
    /// How long an executor's claim on a working run lasts unless renewed (renewed every third of
    /// it); a run whose replica died is taken over after it.
    #[arg(long, env = "ASKUSER_LEASE_TTL", default_value = "10s", value_parser = positive_duration)]
    pub lease_ttl: Duration,
    /// How long a graceful shutdown may take.
    #[arg(long, env = "ASKUSER_SHUTDOWN_TIMEOUT", default_value = "10s", value_parser = duration)]
    pub shutdown_timeout: Duration,
    /// Streams one HTTP/2 connection may have open at once.
    #[arg(long, env = "ASKUSER_MAX_CONCURRENT_STREAMS", default_value_t = 1000, value_parser = positive_u32)]
    pub max_concurrent_streams: u32,
    /// Streaming calls (RunAgent, ResumeRun, WatchRun, WatchPendingCalls) open at once on this
    /// server; one more is RESOURCE_EXHAUSTED (reason TOO_MANY_STREAMS).
    #[arg(long, env = "ASKUSER_MAX_OPEN_STREAMS", default_value_t = 100_000, value_parser = positive)]
    pub max_open_streams: usize,
    /// Streams a client may reset before the server has accepted them, per connection (the HTTP/2
    /// rapid-reset flood); past it the connection is closed.
    #[arg(long, env = "ASKUSER_HTTP2_MAX_PENDING_ACCEPT_RESET_STREAMS", default_value_t = 20, value_parser = positive)]
    pub http2_max_pending_accept_reset_streams: usize,
    /// Streams the server may reset for a client's protocol errors, per connection, before it
    /// closes the connection.
    #[arg(long, env = "ASKUSER_HTTP2_MAX_LOCAL_ERROR_RESET_STREAMS", default_value_t = 1024, value_parser = positive)]
    pub http2_max_local_error_reset_streams: usize,
    /// How long a `RunAgent` stream may wait for its first frame (start or attach).
    #[arg(long, env = "ASKUSER_FIRST_FRAME_TIMEOUT", default_value = "30s", value_parser = positive_duration)]
    pub first_frame_timeout: Duration,
    /// Connections older than this are asked to close (GOAWAY) once their calls end, so that
    /// long-lived clients rebalance across replicas; absent: never.
    #[arg(long, env = "ASKUSER_MAX_CONNECTION_AGE", value_parser = positive_duration)]
    pub max_connection_age: Option<Duration>,
    /// How long calls of a connection past its age may go on before it is closed.
    #[arg(long, env = "ASKUSER_MAX_CONNECTION_AGE_GRACE", default_value = "5m", value_parser = duration)]
    pub max_connection_age_grace: Duration,
    /// After SIGTERM, how long the server keeps serving while it reports NOT_SERVING, so that
    /// load balancers and `grpc_health_probe` see it go before its listener closes.
    #[arg(long, env = "ASKUSER_DRAIN_DELAY", default_value = "0s", value_parser = duration)]
    pub drain_delay: Duration,
    /// A web origin (e.g. `https://inbox.example.com`) whose pages may call the API with
    /// gRPC-Web; repeat it, or comma-separate in the variable. Pages served by askuser itself
    /// need none.
    #[arg(long = "cors-origin", env = "ASKUSER_CORS_ORIGINS", value_delimiter = ',', value_parser = web_origin)]
    pub cors_origins: Vec<http::HeaderValue>,
    /// HTTP/2 keepalive ping interval.
    #[arg(long, env = "ASKUSER_HTTP2_KEEPALIVE_INTERVAL", default_value = "30s", value_parser = positive_duration)]
    pub http2_keepalive_interval: Duration,
    /// How long to wait for a keepalive ping's acknowledgement before closing the connection.
    #[arg(long, env = "ASKUSER_HTTP2_KEEPALIVE_TIMEOUT", default_value = "10s", value_parser = positive_duration)]
    pub http2_keepalive_timeout: Duration,
    #[command(flatten)]
    pub auth: AuthArgs,
}

impl ServeArgs {
    pub fn limits(&self) -> AskUserLimits {
        AskUserLimits {
            max_options: self.max_options,
            max_label_bytes: self.max_label_bytes,
            max_question_bytes: self.max_question_bytes,
            max_description_bytes: self.max_description_bytes,
            max_answer_bytes: self.max_answer_bytes,
        }
    }

    /// The listener's TLS files; `None`: plaintext gRPC.
    pub fn tls_files(&self) -> Option<TlsFiles> {
        Some(TlsFiles {
            cert: self.tls_cert.clone()?,
            key: self.tls_key.clone()?,
            client_ca: self.tls_client_ca.clone(),
        })
    }

    /// The PostgreSQL URL, from --database-url or --database-url-file; `None`: SQLite.
    pub fn database_url(&self) -> Result<Option<DatabaseUrl>, ConfigError> {
        match (&self.database_url, &self.database_url_file) {
            (Some(url), _) => Ok(Some(url.clone())),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map(|text| Some(DatabaseUrl(text.trim().to_owned())))
                .map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                }),
            (None, None) => Ok(None),
        }
    }

    /// What a request may hold.
    pub fn request_limits(&self) -> RequestLimits {
        RequestLimits {
            ask_user: self.limits(),
            max_prompt_bytes: self.max_prompt_bytes,
            max_tool_output_bytes: self.max_tool_output_bytes,
            max_arguments_bytes: self.max_arguments_bytes,
            max_metadata_entries: self.max_metadata_entries,
            max_metadata_bytes: self.max_metadata_bytes,
            max_reason_bytes: self.max_reason_bytes,
            max_answer_id_bytes: self.max_answer_id_bytes,
            max_id_bytes: self.max_id_bytes,
            max_filter_entries: self.max_filter_entries,
            max_run_tools: self.max_run_tools,
            max_schema_bytes: self.max_schema_bytes,
        }
    }

    /// The largest message a client may send: the flag, or what the limits need plus room for the
    /// rest of the message (ids and reasons, a few KiB with the defaults). A run's client tools
    /// are not counted in: each is bounded, all of them together by this.
    pub fn max_message_bytes(&self) -> usize {
        const ROOM: usize = 64 * 1024;
        self.max_message_bytes.unwrap_or_else(|| {
            let question = self.max_question_bytes
                + self.max_options * (self.max_label_bytes + self.max_description_bytes);
            let selections = self.max_options * self.max_label_bytes;
            // Metadata entries cost a few bytes of framing each, beyond their keys and values.
            let start =
                self.max_prompt_bytes + self.max_metadata_bytes + self.max_metadata_entries * 8;
            [
                question,
                selections,
                self.max_answer_bytes,
                self.max_tool_output_bytes,
                self.max_arguments_bytes,
                start,
            ]
            .into_iter()
            .max()
            .unwrap_or(0)
            .saturating_add(ROOM)
        })
    }

    pub fn postgres_settings(&self) -> PostgresSettings {
        PostgresSettings {
            pool_size: self.database_pool_size,
            wait_timeout: self.database_pool_wait_timeout,
            create_timeout: self.database_connect_timeout,
            recycle_timeout: self.database_recycle_timeout,
            statement_timeout: self.database_statement_timeout,
            lock_timeout: self.database_lock_timeout,
            idle_in_transaction_timeout: self.database_idle_in_transaction_timeout,
        }
    }

    pub fn runtime_config(&self) -> RuntimeConfig {
        RuntimeConfig {
            limits: self.limits(),
            max_question_ttl: self.max_question_ttl,
            retention: self.retention,
            prune_interval: self.prune_interval,
            max_run_age: self.max_run_age,
            lease_ttl: self.lease_ttl,
            max_tool_output_bytes: self.max_tool_output_bytes,
            max_step_attempts: u32::try_from(self.max_step_attempts).unwrap_or(u32::MAX),
            max_running_steps: self.max_running_steps,
            max_model_requests: self.max_model_requests,
        }
    }
}

/// Errors in the agents file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: {source}")]
    Parse {
        origin: String,
        source: Box<toml::de::Error>,
    },
    #[error("{origin}: tool \"{tool}\": {message}")]
    Tool {
        origin: String,
        tool: String,
        message: String,
    },
    #[error("{origin}: agent \"{agent}\": {message}")]
    Agent {
        origin: String,
        agent: String,
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    #[serde(default)]
    tool: Vec<ToolEntry>,
    #[serde(default)]
    agent: Vec<AgentEntry>,
}

/// A `[[tool]]`: declared once, listed by name in each agent that may call it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolEntry {
    name: String,
    kind: ToolEntryKind,
    #[serde(default)]
    description: String,
    /// JSON Schema of the arguments (a TOML table); absent: any object.
    #[serde(default)]
    parameters: Option<toml::Value>,
    /// `never` (the default), `always`, or a CEL expression over `args` and `run.metadata`.
    #[serde(default)]
    approval: Option<String>,
    /// Who may decide its approvals (subjects, and groups as `group:NAME`); absent: the agent's
    /// `assignees`.
    #[serde(default)]
    assignees: Vec<String>,
    /// HTTP tools: where the arguments go.
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    method: Option<String>,
    /// HTTP tools: header name → the environment variable holding its value (never the value).
    #[serde(default)]
    headers_env: BTreeMap<String, String>,
    /// HTTP tools: each request's timeout; client tools: how long a call waits for its output.
    #[serde(default)]
    timeout: Option<String>,
    /// HTTP tools: retries after the first attempt.
    #[serde(default)]
    max_retries: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToolEntryKind {
    Client,
    Http,
}

/// The default timeout of an HTTP tool's request.
const DEFAULT_HTTP_TOOL_TIMEOUT: Duration = Duration::from_secs(30);
/// Retries of an HTTP tool's request after the first attempt, by default.
const DEFAULT_HTTP_TOOL_RETRIES: u32 = 3;

/// Checks a `[[tool]]` entry, compiles its schema and policy and, for an HTTP tool, reads its
/// header values from the environment.
fn tool_from_entry(entry: ToolEntry) -> Result<Tool, String> {
    check_name(&entry.name)?;
    if entry.name == crate::runtime::ask_user::TOOL_NAME {
        return Err(
            "ask_user is built in; list it in an agent's tools without declaring it".into(),
        );
    }
    let parameters = match entry.parameters {
        Some(value) => serde_json::to_value(value).map_err(|e| format!("parameters: {e}"))?,
        None => serde_json::json!({ "type": "object" }),
    };
    let schema = ArgumentsSchema::compile(parameters)
        .map_err(|e| format!("parameters is not a usable JSON Schema: {e}"))?;
    let approval = ApprovalPolicy::parse(entry.approval.as_deref().unwrap_or("never"))
        .map_err(|e| format!("approval is not a valid CEL expression: {e}"))?;
    let timeout = entry
        .timeout
        .as_deref()
        .map(|text| match humantime::parse_duration(text) {
            Ok(timeout) if !timeout.is_zero() => Ok(timeout),
            Ok(_) => Err("timeout must be more than 0".to_owned()),
            Err(e) => Err(format!("timeout \"{text}\": {e}")),
        })
        .transpose()?;
    let http_only = entry.url.is_some()
        || entry.method.is_some()
        || !entry.headers_env.is_empty()
        || entry.max_retries.is_some();
    let kind = match entry.kind {
        ToolEntryKind::Client if http_only => {
            return Err("url, method, headers_env and max_retries are for HTTP tools".into());
        }
        ToolEntryKind::Client => ToolKind::Client,
        ToolEntryKind::Http => {
            let url = entry.url.ok_or("an HTTP tool needs a url")?;
            let headers = entry
                .headers_env
                .into_iter()
                .map(|(header, variable)| {
                    std::env::var(&variable)
                        .ok()
                        .filter(|value| !value.is_empty())
                        .map(|value| (header.clone(), value))
                        .ok_or_else(|| {
                            format!("headers_env: the environment variable {variable} (header {header}) is not set or empty")
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            ToolKind::Http(Box::new(HttpTool::new(HttpToolSettings {
                url,
                method: entry.method.unwrap_or_default(),
                headers,
                timeout: timeout.unwrap_or(DEFAULT_HTTP_TOOL_TIMEOUT),
                max_retries: entry.max_retries.unwrap_or(DEFAULT_HTTP_TOOL_RETRIES),
            })?))
        }
    };
    check_assignees(&entry.assignees)?;
    Ok(Tool {
        name: entry.name,
        description: entry.description,
        assignees: entry.assignees,
        schema,
        timeout: match kind {
            ToolKind::Client => timeout,
            _ => None,
        },
        kind,
        approval,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    instructions: String,
    #[serde(default = "default_tools")]
    tools: Vec<String>,
    #[serde(default = "default_max_steps")]
    max_steps: u32,
    /// Steps of this agent's runs worked on at once; unlimited (but for the server's own limit)
    /// when absent.
    #[serde(default)]
    max_concurrent_steps: Option<usize>,
    /// Tokens (input and output, as the provider reports them) a run of this agent may use; past
    /// it the run fails before its next model request.
    #[serde(default)]
    max_tokens_per_run: Option<u64>,
    /// Default time to live of the agent's questions, e.g. `10m` or `7d`.
    #[serde(default)]
    question_ttl: Option<String>,
    /// The tenants that may see and run the agent; absent: every tenant.
    #[serde(default)]
    tenants: Vec<String>,
    /// Who may answer its questions and decide its approvals (subjects, and groups as
    /// `group:NAME`); absent: anyone with the scope to answer.
    #[serde(default)]
    assignees: Vec<String>,
    model: ModelEntry,
}

/// Checks a list of assignees: subjects, or groups written `group:NAME`, none empty.
fn check_assignees(assignees: &[String]) -> Result<(), String> {
    match assignees
        .iter()
        .find(|a| a.is_empty() || a.as_str() == "group:")
    {
        Some(_) => Err("assignees must not be empty (a subject, or group:NAME)".into()),
        None => Ok(()),
    }
}

fn default_tools() -> Vec<String> {
    vec!["ask_user".to_owned()]
}

fn default_max_steps() -> u32 {
    8
}

#[derive(Debug, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case", deny_unknown_fields)]
enum ModelEntry {
    Scripted {
        #[serde(default)]
        turns: Vec<ScriptedTurn>,
    },
    Openai(OpenAiEntry),
}

/// An OpenAI-compatible chat completions model.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenAiEntry {
    model: String,
    base_url: String,
    /// The environment variable holding the API key: the key never sits in the file.
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// e.g. `60s`.
    #[serde(default)]
    request_timeout: Option<String>,
    #[serde(default)]
    max_retries: Option<u32>,
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
}

/// Checks an `openai` entry, reads its API key from the environment and builds the model.
fn openai_model(entry: OpenAiEntry) -> Result<OpenAiModel, String> {
    if entry.model.is_empty() {
        return Err("model must not be empty".into());
    }
    if let Some(temperature) = entry.temperature.filter(|t| !(t.is_finite() && *t >= 0.0)) {
        return Err(format!(
            "temperature must be a number of at least 0, not {temperature}"
        ));
    }
    let api_key = entry
        .api_key_env
        .map(|name| {
            std::env::var(&name)
                .ok()
                .filter(|key| !key.is_empty())
                .ok_or_else(|| {
                    format!("api_key_env: the environment variable {name} is not set or empty")
                })
        })
        .transpose()?;
    let request_timeout = match entry.request_timeout.as_deref() {
        None => DEFAULT_REQUEST_TIMEOUT,
        Some(text) => match humantime::parse_duration(text) {
            Ok(timeout) if !timeout.is_zero() => timeout,
            Ok(_) => return Err("request_timeout must be more than 0".into()),
            Err(e) => return Err(format!("request_timeout \"{text}\": {e}")),
        },
    };
    OpenAiModel::new(OpenAiSettings {
        model: entry.model,
        base_url: entry.base_url,
        api_key,
        temperature: entry.temperature,
        max_tokens: entry.max_tokens,
        headers: entry.headers,
        request_timeout,
        max_retries: entry.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
        parallel_tool_calls: entry.parallel_tool_calls,
    })
    .map_err(|e| e.to_string())
}

/// The built-in demo agents.
pub const DEMO_AGENTS: &str = include_str!("demo_agents.toml");

/// Reads the agents file, or the demo agents without one.
pub fn load_agents(
    path: Option<&Path>,
    limits: &AskUserLimits,
) -> Result<Vec<AgentDefinition>, ConfigError> {
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            parse_agents(&text, &path.display().to_string(), limits)
        }
        None => parse_agents(DEMO_AGENTS, "built-in demo agents", limits),
    }
}

/// Parses an agents file; `origin` names it in errors.
pub fn parse_agents(
    text: &str,
    origin: &str,
    limits: &AskUserLimits,
) -> Result<Vec<AgentDefinition>, ConfigError> {
    let file: AgentsFile = toml::from_str(text).map_err(|source| ConfigError::Parse {
        origin: origin.to_owned(),
        source: Box::new(source),
    })?;
    let mut tools: BTreeMap<String, Arc<Tool>> = BTreeMap::new();
    let ask_user = Tool::ask_user(limits).map_err(|message| ConfigError::Tool {
        origin: origin.to_owned(),
        tool: "ask_user".into(),
        message,
    })?;
    tools.insert(ask_user.name.clone(), Arc::new(ask_user));
    for entry in file.tool {
        let name = entry.name.clone();
        let invalid = |message: String| ConfigError::Tool {
            origin: origin.to_owned(),
            tool: name.clone(),
            message,
        };
        let tool = tool_from_entry(entry).map_err(invalid)?;
        if tools.contains_key(&name) {
            return Err(invalid("the name is used by another tool".into()));
        }
        tools.insert(name, Arc::new(tool));
    }
    let mut seen = HashSet::new();
    file.agent
        .into_iter()
        .map(|entry| {
            let invalid = |message: String| ConfigError::Agent {
                origin: origin.to_owned(),
                agent: entry.id.clone(),
                message,
            };
            if entry.id.is_empty() {
                return Err(invalid("id must not be empty".into()));
            }
            if !seen.insert(entry.id.clone()) {
                return Err(invalid("id is used by another agent".into()));
            }
            if entry.max_steps == 0 {
                return Err(invalid("max_steps must be at least 1".into()));
            }
            if entry.max_concurrent_steps == Some(0) {
                return Err(invalid("max_concurrent_steps must be at least 1".into()));
            }
            if entry.max_tokens_per_run == Some(0) {
                return Err(invalid("max_tokens_per_run must be at least 1".into()));
            }
            check_assignees(&entry.assignees).map_err(invalid)?;
            if entry.tenants.iter().any(String::is_empty) {
                return Err(invalid("tenants must not be empty".into()));
            }
            let mut listed = HashSet::new();
            let agent_tools = entry
                .tools
                .iter()
                .map(|name| {
                    if !listed.insert(name) {
                        return Err(invalid(format!("tool \"{name}\" is listed twice")));
                    }
                    tools.get(name).cloned().ok_or_else(|| {
                        invalid(format!(
                            "unknown tool \"{name}\" (known: {})",
                            tools.keys().cloned().collect::<Vec<_>>().join(", ")
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let question_ttl = entry
                .question_ttl
                .as_deref()
                .map(|text| {
                    humantime::parse_duration(text)
                        .map_err(|e| invalid(format!("question_ttl \"{text}\": {e}")))
                })
                .transpose()?;
            let model: Arc<dyn Model> = match entry.model {
                ModelEntry::Scripted { turns } => {
                    for (index, turn) in turns.iter().enumerate() {
                        let calls = !turn.ask.is_empty() || !turn.call.is_empty();
                        let kinds = usize::from(calls)
                            + usize::from(turn.say.is_some())
                            + usize::from(turn.fail.is_some());
                        if kinds != 1 {
                            return Err(invalid(format!(
                                "scripted turn {} must have exactly one of ask/call, say, fail",
                                index + 1
                            )));
                        }
                    }
                    Arc::new(ScriptedModel::new(turns))
                }
                ModelEntry::Openai(openai) => Arc::new(openai_model(openai).map_err(invalid)?),
            };
            Ok(AgentDefinition {
                name: entry.name.unwrap_or_else(|| entry.id.clone()),
                id: entry.id,
                instructions: entry.instructions,
                tools: agent_tools,
                max_steps: entry.max_steps,
                max_concurrent_steps: entry.max_concurrent_steps,
                max_tokens_per_run: entry.max_tokens_per_run,
                question_ttl,
                model,
                tenants: entry.tenants,
                assignees: entry.assignees,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cors_origins_are_whole_origins() {
        for origin in ["https://inbox.example.com", "http://127.0.0.1:8080"] {
            assert!(web_origin(origin).is_ok(), "{origin}");
        }
        for not_origin in [
            "inbox.example.com",
            "https://inbox.example.com/",
            "https://a.b/path",
            "*",
        ] {
            assert!(web_origin(not_origin).is_err(), "{not_origin}");
        }
    }

    #[test]
    fn demo_agents_parse() {
        let agents =
            parse_agents(DEMO_AGENTS, "demo", &AskUserLimits::default()).expect("demo agents");
        let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "deploy",
                "environment",
                "greeter",
                "deployer",
                "status_check"
            ]
        );
    }

    #[test]
    fn rejects_unknown_tools_and_mixed_turns() {
        let limits = AskUserLimits::default();
        let unknown =
            "[[agent]]\nid = \"a\"\ntools = [\"shell\"]\n[agent.model]\nprovider = \"scripted\"\n";
        let error = parse_agents(unknown, "t", &limits).err().expect("error");
        assert!(
            error.to_string().contains("unknown tool \"shell\""),
            "{error}"
        );
        let mixed = "[[agent]]\nid = \"a\"\n[agent.model]\nprovider = \"scripted\"\n[[agent.model.turns]]\nsay = \"x\"\nfail = \"y\"\n";
        let error = parse_agents(mixed, "t", &limits).err().expect("error");
        assert!(
            error
                .to_string()
                .contains("exactly one of ask/call, say, fail"),
            "{error}"
        );
    }

    fn serve_args(flags: &[&str]) -> ServeArgs {
        let cli =
            Cli::try_parse_from(["askuser", "serve"].iter().chain(flags)).expect("valid flags");
        match cli.command {
            Command::Serve(args) => *args,
            other => panic!("parsed as another command: {other:?}"),
        }
    }

    #[test]
    fn the_message_limit_follows_the_largest_thing_a_request_may_hold() {
        // By default a question with its 64 options is the largest: 16 KiB + 64 × 5 KiB + 64 KiB.
        assert_eq!(serve_args(&[]).max_message_bytes(), 409_600);
        // A start holds its prompt and its metadata together.
        let start = serve_args(&[
            "--max-prompt-bytes",
            "400000",
            "--max-metadata-bytes",
            "100000",
        ]);
        assert_eq!(
            start.max_message_bytes(),
            400_000 + 100_000 + 64 * 8 + 64 * 1024
        );
        let set = serve_args(&["--max-message-bytes", "1000"]);
        assert_eq!(set.max_message_bytes(), 1000);
    }

    #[test]
    fn database_urls_never_show_their_userinfo_or_query() {
        let url: DatabaseUrl = "postgres://askuser:s3cret@db.internal:5432/askuser?sslpassword=k3y"
            .parse()
            .expect("url");
        let shown = format!("{url:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("k3y"),
            "{shown}"
        );
        assert!(shown.contains("db.internal"), "{shown}");
        assert!(!shown.contains("askuser:"), "the user shows: {shown}");
        assert_eq!(
            url.expose(),
            "postgres://askuser:s3cret@db.internal:5432/askuser?sslpassword=k3y"
        );
    }

    #[test]
    fn a_bad_tool_stops_loading_naming_the_tool() {
        let limits = AskUserLimits::default();
        let tool = |body: &str| format!("[[tool]]\nname = \"deploy\"\n{body}\n");
        let cases = [
            (
                tool("kind = \"client\"\nparameters = { type = 12 }"),
                "JSON Schema",
            ),
            (
                tool("kind = \"client\"\napproval = 'args.environment =='"),
                "CEL",
            ),
            (tool("kind = \"http\""), "needs a url"),
            (
                tool("kind = \"client\"\nurl = \"http://127.0.0.1:1/x\""),
                "for HTTP tools",
            ),
            (
                tool("kind = \"http\"\nurl = \"http://127.0.0.1:1/x\"\nmethod = \"GET\""),
                "POST, PUT, PATCH or DELETE",
            ),
            (
                tool("kind = \"client\"\n[[tool]]\nname = \"deploy\"\nkind = \"client\""),
                "used by another tool",
            ),
            (
                "[[tool]]\nname = \"ask_user\"\nkind = \"client\"\n".to_owned(),
                "built in",
            ),
        ];
        for (text, expected) in cases {
            let error = parse_agents(&text, "t", &limits)
                .err()
                .expect("error")
                .to_string();
            assert!(error.contains("tool \""), "{text}: {error}");
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    fn openai_agent(model_table: &str) -> String {
        format!("[[agent]]\nid = \"a\"\n[agent.model]\nprovider = \"openai\"\n{model_table}")
    }

    fn openai_error(model_table: &str) -> String {
        parse_agents(&openai_agent(model_table), "t", &AskUserLimits::default())
            .err()
            .expect("error")
            .to_string()
    }

    #[test]
    fn openai_accepts_every_setting() {
        let text = openai_agent(
            "model = \"gpt-4o-mini\"\nbase_url = \"http://127.0.0.1:11434/v1\"\ntemperature = 0.2\n\
             max_tokens = 512\nrequest_timeout = \"90s\"\nmax_retries = 4\nparallel_tool_calls = false\n\
             [agent.model.headers]\nOpenAI-Organization = \"org-1\"\n",
        );
        let agents = parse_agents(&text, "t", &AskUserLimits::default()).expect("valid");
        assert_eq!(agents[0].model.provider(), "openai");
    }

    #[test]
    fn openai_rejects_bad_settings() {
        let base = "model = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\n";
        let cases = [
            (
                format!("{base}api_key = \"sk-in-the-file\"\n"),
                "unknown field `api_key`",
            ),
            (
                format!("{base}api_key_env = \"ASKUSER_TEST_NEVER_SET_KEY\"\n"),
                "environment variable ASKUSER_TEST_NEVER_SET_KEY",
            ),
            (
                "model = \"m\"\nbase_url = \"127.0.0.1:1/v1\"\n".to_owned(),
                "base_url \"<an unparsable URL, not shown>\": relative URL",
            ),
            (
                format!("{base}request_timeout = \"soon\"\n"),
                "request_timeout",
            ),
            (format!("{base}temperature = -1.0\n"), "temperature"),
            (
                format!("{base}[agent.model.headers]\n\"bad name\" = \"x\"\n"),
                "header name \"bad name\"",
            ),
        ];
        for (table, expected) in cases {
            let error = openai_error(&table);
            assert!(error.contains(expected), "{table}: {error}");
        }
    }
}
