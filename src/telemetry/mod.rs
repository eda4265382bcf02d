//! Logs, and traces over OTLP when an endpoint is given.
//!
//! Spans: one per RPC (named after its gRPC method, a child of the caller's W3C `traceparent`),
//! one per agent step (`askuser.step`), per model call (`askuser.model`) and per tool call
//! (`askuser.tool`). A run keeps the trace context it started in (`runs.trace_context`): each of
//! its steps, whenever and on whichever replica it runs, is a child of that context, so the run's
//! work is one trace; a step caused by a later RPC (an answer) carries a link to that RPC's span,
//! which stays in its caller's trace.

mod propagation;
mod spans;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{FilterExt, LevelFilter, Targets, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use propagation::{current_context, run_parent};
pub use spans::{current_span_context, model_span, record_usage, rpc_span, step_span, tool_span};

/// How log lines on stderr are written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Errors of setting up telemetry.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    #[error("a global subscriber is already set: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
}

/// What exports traces while the server runs; [`Telemetry::shutdown`] flushes what is left.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Where this crate's spans come from: only they are exported.
const SPAN_TARGETS: &str = "askuser";

/// Installs the global subscriber: logs to stderr in `format` (filtered by `RUST_LOG`, events only,
/// so log lines look the same with or without traces), and with `otlp_endpoint` this crate's spans
/// exported over OTLP/gRPC in batches (`OTEL_BSP_*` variables tune them).
pub fn init(format: LogFormat, otlp_endpoint: Option<&str>) -> Result<Telemetry, TelemetryError> {
    // rmcp logs each MCP request's session at info: noise in a server's log.
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let events = filter.and(filter_fn(|metadata| metadata.is_event()));
    // A log line that cannot be written (stderr on a full disk) is dropped: reporting that with
    // `eprintln!`, which panics when stderr fails, would panic whichever task logged.
    // Colours for a terminal only: escape codes in a log file or a collector are noise.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .log_internal_errors(false);
    let logs = match format {
        LogFormat::Text => logs.with_filter(events).boxed(),
        LogFormat::Json => logs.json().with_filter(events).boxed(),
    };
    let provider = otlp_endpoint
        .map(|endpoint| {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint)
                .build()?;
            Ok::<_, TelemetryError>(
                SdkTracerProvider::builder()
                    .with_resource(
                        opentelemetry_sdk::Resource::builder()
                            .with_service_name("askuser")
                            .build(),
                    )
                    .with_batch_exporter(exporter)
                    .build(),
            )
        })
        .transpose()?;
    if provider.is_some() {
        spans::export_spans();
    }
    let traces = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("askuser"))
            .with_filter(Targets::new().with_target(SPAN_TARGETS, LevelFilter::INFO))
    });
    // Without an exporter the registry holds the log layer alone. An absent `Option` layer says it
    // wants every callsite, which made h2's trace-level spans live on every frame.
    match traces {
        Some(traces) => tracing_subscriber::registry()
            .with(logs)
            .with(traces)
            .try_init()?,
        None => tracing_subscriber::registry().with(logs).try_init()?,
    }
    Ok(Telemetry { provider })
}

impl Telemetry {
    /// Exports the spans still buffered and stops exporting.
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else {
            return;
        };
        // Blocks until the exporter's thread is done; its requests run on this runtime.
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = flushed {
            tracing::warn!(%error, "exporting the last spans failed");
        }
    }
}
