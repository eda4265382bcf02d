//! The settings of `serve` and `keys` from flags and environment, and the agents file (the command
//! tree itself is main.rs's).
//!
//! Every flag can also come from an `ASKUSER_*` environment variable; agents come from a TOML file
//! (`--config`) or, without one, the built-in demo agents.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::api::RequestLimits;
use crate::auth::AuthArgs;
use crate::runtime::{AllowPattern, AskUserLimits, RuntimeConfig, WebhookSettings};
use crate::telemetry::LogFormat;
use crate::tls::TlsFiles;
use crate::webhooks::DelivererSettings;

mod agents_file;
mod mcp_servers;
mod store_args;
pub mod values;

pub use agents_file::{DEMO_AGENTS, load_agents, parse_agents};
pub use store_args::{DatabaseUrl, StoreArgs};
use values::{duration, positive, positive_duration, positive_u32, ttl_fraction};

/// A web origin: scheme, host and optional port, nothing else.
fn web_origin(text: &str) -> Result<http::HeaderValue, String> {
    let uri: http::Uri = text.parse().map_err(|e| format!("{e}"))?;
    // `http::Uri` reads "https://a.b" with the path "/": a trailing slash in the text is a path.
    let whole = uri.scheme().is_some()
        && uri.host().is_some()
        && uri.path_and_query().is_none_or(|p| p.as_str() == "/")
        && !text.ends_with('/');
    match whole {
        true => http::HeaderValue::from_str(text).map_err(|e| e.to_string()),
        false => Err("expected an origin such as https://inbox.example.com (no path)".into()),
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
    #[command(flatten)]
    pub store: StoreArgs,
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
    /// OTLP/gRPC endpoint traces are exported to (e.g. `http://collector:4317`); without it (and
    /// without `OTEL_EXPORTER_OTLP_ENDPOINT`) no traces are made.
    #[arg(long, env = "ASKUSER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// Threads the server's async runtime runs on. Default: on SQLite, one per CPU core but one (at
    /// least one), since SQLite's writer has a thread of its own; on PostgreSQL, one per core
    /// (docs/deployment.md).
    #[arg(long, env = "ASKUSER_WORKER_THREADS", value_parser = positive)]
    pub worker_threads: Option<usize>,
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
    /// Most fields a form may have (`ask_user_questions`, `ask_user_form`).
    #[arg(long, env = "ASKUSER_MAX_FORM_FIELDS", default_value_t = 32, value_parser = positive)]
    pub max_form_fields: usize,
    /// Longest preview of a form's choice, in bytes.
    #[arg(long, env = "ASKUSER_MAX_PREVIEW_BYTES", default_value_t = 16384, value_parser = positive)]
    pub max_preview_bytes: usize,
    /// Longest pattern of a form's text field, in bytes.
    #[arg(long, env = "ASKUSER_MAX_PATTERN_BYTES", default_value_t = 1024, value_parser = positive)]
    pub max_pattern_bytes: usize,
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
    /// Streaming calls one principal (an API key, a token's subject, a client certificate) may
    /// have open at once; one more is RESOURCE_EXHAUSTED (reason TOO_MANY_PRINCIPAL_STREAMS).
    #[arg(long, env = "ASKUSER_MAX_STREAMS_PER_PRINCIPAL", default_value_t = 20_000, value_parser = positive)]
    pub max_streams_per_principal: usize,
    /// Streaming calls one tenant may have open at once, all its principals together; one more is
    /// RESOURCE_EXHAUSTED (reason TOO_MANY_TENANT_STREAMS).
    #[arg(long, env = "ASKUSER_MAX_STREAMS_PER_TENANT", default_value_t = 50_000, value_parser = positive)]
    pub max_streams_per_tenant: usize,
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
    /// With `--auth none`: a host name (or address) the server answers besides loopback ones,
    /// e.g. a sidecar proxy's `askuser.internal`; repeat it, or comma-separate in the variable.
    /// Requests naming another `Host` are refused (DNS rebinding). With `--insecure-no-auth` the
    /// Host rule applies only once this names the hosts.
    #[arg(long = "allowed-host", env = "ASKUSER_ALLOWED_HOSTS", value_delimiter = ',', value_parser = crate::web::allowed_host)]
    pub allowed_hosts: Vec<String>,
    /// Serve the web inbox at `/` on the same port: the default; it undoes an earlier `--no-ui`
    /// (e.g. one from the environment).
    #[arg(long = "ui", overrides_with = "no_ui")]
    pub serve_ui: bool,
    /// Do not serve the web inbox.
    #[arg(long = "no-ui", env = "ASKUSER_NO_UI", overrides_with = "serve_ui")]
    pub no_ui: bool,
    /// Do not serve the MCP endpoint at `/mcp` (Streamable HTTP: MCP hosts ask people through
    /// askuser, and run the agents whose entry says `mcp = true`).
    #[arg(long = "no-mcp", env = "ASKUSER_NO_MCP")]
    pub no_mcp: bool,
    /// Address to serve Prometheus metrics on, at `GET /metrics` (e.g. `127.0.0.1:9464`); absent:
    /// no metrics are kept. A listener of its own, never the gRPC port, which faces clients.
    #[arg(long, env = "ASKUSER_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// HTTP/2 keepalive ping interval.
    #[arg(long, env = "ASKUSER_HTTP2_KEEPALIVE_INTERVAL", default_value = "30s", value_parser = positive_duration)]
    pub http2_keepalive_interval: Duration,
    /// How long to wait for a keepalive ping's acknowledgement before closing the connection.
    #[arg(long, env = "ASKUSER_HTTP2_KEEPALIVE_TIMEOUT", default_value = "10s", value_parser = positive_duration)]
    pub http2_keepalive_timeout: Duration,
    /// The address people reach this server's web inbox at (e.g. https://askuser.example.com):
    /// webhooks of waiting calls link to `<it>/runs/<run>#<call>`.
    #[arg(long, env = "ASKUSER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// A file holding the secret (at least 32 bytes) that signs answer links: the `answer_url` of
    /// `call.suspended` and `call.reminder` webhooks, which open one call in the inbox without a
    /// key. Give every replica the same file. Absent: a SQLite server makes its own in --data-dir;
    /// a PostgreSQL server makes no links.
    #[arg(long, env = "ASKUSER_ANSWER_LINK_SECRET_FILE")]
    pub answer_link_secret_file: Option<PathBuf>,
    /// How long an answer link works (never past its call's expiry). A link settles its call once.
    #[arg(long, env = "ASKUSER_ANSWER_LINK_TTL", default_value = "24h", value_parser = positive_duration)]
    pub answer_link_ttl: Duration,
    /// URL patterns a run's own webhooks (`StartRun.webhooks`) must match, comma-separated:
    /// scheme, host (`*.` for one leftmost label), port and a path prefix on segment boundaries,
    /// e.g. `https://*.hooks.example.com/askuser/`. None: runs may not ask for webhooks.
    #[arg(
        long = "webhook-allow",
        env = "ASKUSER_WEBHOOK_ALLOW",
        value_delimiter = ','
    )]
    pub webhook_allow: Vec<AllowPattern>,
    /// The environment variable holding the secret (`whsec_` and base64) that signs the default
    /// tenant's runs' own webhooks until it has its own (`AdminService.RotateWebhookSecret`);
    /// other tenants always need their own.
    #[arg(long, env = "ASKUSER_WEBHOOK_SECRET_ENV")]
    pub webhook_secret_env: Option<String>,
    /// Fractions of a call's time to live at which a `call.reminder` webhook tells of a call still
    /// waiting, comma-separated.
    #[arg(long, env = "ASKUSER_WEBHOOK_REMINDERS", value_delimiter = ',', default_value = "0.5,0.9", value_parser = ttl_fraction)]
    pub webhook_reminders: Vec<f64>,
    /// How long a webhook delivery is retried before it is given up (dead).
    #[arg(long, env = "ASKUSER_WEBHOOK_MAX_AGE", default_value = "24h", value_parser = positive_duration)]
    pub webhook_max_age: Duration,
    /// The wait before a failed webhook delivery's first retry; each next one doubles (with
    /// jitter), up to an hour.
    #[arg(long, env = "ASKUSER_WEBHOOK_INITIAL_BACKOFF", default_value = "5s", value_parser = positive_duration)]
    pub webhook_initial_backoff: Duration,
    /// How long a webhook receiver may take to answer.
    #[arg(long, env = "ASKUSER_WEBHOOK_TIMEOUT", default_value = "15s", value_parser = positive_duration)]
    pub webhook_timeout: Duration,
    /// Refuse to deliver runs' own webhooks to loopback, private, link-local, shared and metadata
    /// addresses, judged on the addresses their names resolve to when delivered (and connected
    /// to); `--webhook-deny-private=false` for local development.
    #[arg(long, env = "ASKUSER_WEBHOOK_DENY_PRIVATE", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub webhook_deny_private: bool,
    /// The environment variable holding the key (the base64 of 32 bytes) that seals tenants'
    /// webhook secrets in the store; without it no tenant can have its own.
    #[arg(long, env = "ASKUSER_WEBHOOK_SECRETS_KEY_ENV")]
    pub webhook_secrets_key_env: Option<String>,
    /// How long a tenant's previous webhook secret still signs (beside the new one) after a
    /// rotation.
    #[arg(long, env = "ASKUSER_WEBHOOK_SECRET_OVERLAP", default_value = "24h", value_parser = positive_duration)]
    pub webhook_secret_overlap: Duration,
    /// The longest URL a run's own webhook may have, in bytes.
    #[arg(long, env = "ASKUSER_MAX_WEBHOOK_URL_BYTES", default_value_t = 2048)]
    pub max_webhook_url_bytes: usize,
    /// Webhook deliveries one replica attempts at once.
    #[arg(long, env = "ASKUSER_WEBHOOK_MAX_IN_FLIGHT", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_in_flight: u32,
    /// Of those, the most for the runs of one tenant.
    #[arg(long, env = "ASKUSER_WEBHOOK_MAX_IN_FLIGHT_PER_TENANT", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_in_flight_per_tenant: u32,
    /// Of those, the most to one destination host (and port).
    #[arg(long, env = "ASKUSER_WEBHOOK_MAX_IN_FLIGHT_PER_HOST", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_in_flight_per_host: u32,
    #[command(flatten)]
    pub auth: AuthArgs,
}

impl ServeArgs {
    /// The async runtime's worker threads ([`Self::worker_threads`] or its default) on a machine
    /// of `cores` cores. On SQLite one core is left to the store's writer thread: on 2 cores, one
    /// worker beside the writer ran 6 % more round trips at 64 streams than two (server CPU per
    /// round trip 116–118 µs against 129–134) and 8 % more one at a time (two interleaved rounds
    /// of three repeats on 7 December 2026), and more at 16 and 256 streams too.
    pub fn runtime_workers(&self, cores: usize) -> usize {
        self.worker_threads.unwrap_or(if self.store.is_sqlite() {
            cores.saturating_sub(1).max(1)
        } else {
            cores.max(1)
        })
    }

    /// Whether the web inbox is served.
    pub fn ui(&self) -> bool {
        !self.no_ui
    }

    /// Whether the MCP endpoint is served.
    pub fn mcp(&self) -> bool {
        !self.no_mcp
    }

    pub fn limits(&self) -> AskUserLimits {
        AskUserLimits {
            max_options: self.max_options,
            max_label_bytes: self.max_label_bytes,
            max_question_bytes: self.max_question_bytes,
            max_description_bytes: self.max_description_bytes,
            max_answer_bytes: self.max_answer_bytes,
            max_form_fields: self.max_form_fields,
            max_preview_bytes: self.max_preview_bytes,
            max_pattern_bytes: self.max_pattern_bytes,
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

    /// Where traces go: `--otlp-endpoint`, else the OpenTelemetry standard
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; `None`: traces are off.
    pub fn otlp_endpoint(&self) -> Option<String> {
        self.otlp_endpoint
            .clone()
            .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
            .filter(|endpoint| !endpoint.is_empty())
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
            metrics: self.metrics_listen.is_some(),
            webhooks: WebhookSettings {
                allow: self.webhook_allow.clone(),
                secret_env: self.webhook_secret_env.clone(),
                reminders: self.webhook_reminders.clone(),
                max_url_bytes: self.max_webhook_url_bytes,
            },
        }
    }

    /// Settings of the webhook deliverer.
    pub fn deliverer_settings(&self) -> DelivererSettings {
        DelivererSettings {
            public_url: self.public_url.clone(),
            answer_links: None,
            max_age: self.webhook_max_age,
            initial_backoff: self.webhook_initial_backoff,
            timeout: self.webhook_timeout,
            deny_private: self.webhook_deny_private,
            max_in_flight: self.webhook_max_in_flight as usize,
            max_in_flight_per_tenant: self.webhook_max_in_flight_per_tenant as usize,
            max_in_flight_per_host: self.webhook_max_in_flight_per_host as usize,
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
    #[error("{origin}: mcp_server \"{server}\": {message}")]
    McpServer {
        origin: String,
        server: String,
        message: String,
    },
    #[error("{origin}: agent \"{agent}\": {message}")]
    Agent {
        origin: String,
        agent: String,
        message: String,
    },
    #[error("{origin}: webhook {index} ({url}): {message}")]
    Webhook {
        origin: String,
        index: usize,
        url: String,
        message: String,
    },
    /// The flags' webhook secret is unusable.
    #[error("--webhook-secret-env / --webhook-secrets-key-env: {0}")]
    WebhookSecret(String),
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

    /// `askuser serve`'s flags alone (the command tree is main.rs's).
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn serve_args(flags: &[&str]) -> ServeArgs {
        use clap::Parser;
        Serve::try_parse_from(["serve"].iter().chain(flags))
            .expect("valid flags")
            .args
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
    fn the_inbox_is_served_unless_no_ui() {
        assert!(serve_args(&[]).ui());
        assert!(!serve_args(&["--no-ui"]).ui());
        assert!(serve_args(&["--no-ui", "--ui"]).ui());
        assert!(!serve_args(&["--ui", "--no-ui"]).ui());
    }
}
