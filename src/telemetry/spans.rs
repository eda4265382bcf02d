//! The spans askuser makes, with their names and attributes (see docs/monitoring.md).

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::{SpanContext, TraceContextExt};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::propagation;
use crate::domain::Usage;

/// Whether spans go anywhere (`--otlp-endpoint`). Log lines carry no span context, so without an
/// exporter a span is work nobody reads: every function here then returns [`Span::none`], and a
/// request pays nothing for tracing.
static EXPORTED: AtomicBool = AtomicBool::new(false);

/// Called once by [`super::init`] when spans are exported.
pub(super) fn export_spans() {
    EXPORTED.store(true, Ordering::Relaxed);
}

fn exported() -> bool {
    EXPORTED.load(Ordering::Relaxed)
}

/// The span of one request: a gRPC call is named `package.Service/Method`, a child of the
/// caller's `traceparent` when it sent one.
pub fn rpc_span(request: &http::Request<()>) -> Span {
    if !exported() {
        return Span::none();
    }
    let path = request.uri().path();
    let (service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or_default();
    let grpc = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"));
    let name = if grpc {
        format!("{service}/{method}")
    } else {
        // Pages of the web inbox: the method only, not one name per run.
        format!("HTTP {}", request.method())
    };
    let span = tracing::info_span!(
        target: "askuser::rpc",
        parent: None,
        "rpc",
        otel.name = name,
        otel.kind = "server",
        rpc.system = if grpc { "grpc" } else { "http" },
        rpc.service = service,
        rpc.method = method,
    );
    let parent = propagation::from_headers(request.headers());
    if parent.span().span_context().is_valid() {
        // Fails only when no span is exported: nothing to parent then.
        let _ = span.set_parent(parent);
    }
    span
}

/// The span of one step of a run: a child of the context the run started in (`stored`), linked to
/// the span that caused the step (an answer's RPC), when there is one.
pub fn step_span(
    run_id: &str,
    agent_id: &str,
    turn: u32,
    stored: Option<&str>,
    cause: Option<&SpanContext>,
) -> Span {
    if !exported() {
        return Span::none();
    }
    let span = tracing::info_span!(
        target: "askuser::runtime",
        parent: None,
        "step",
        otel.name = "askuser.step",
        askuser.run_id = run_id,
        askuser.agent_id = agent_id,
        askuser.turn = turn,
    );
    let parent = propagation::run_parent(stored);
    let run_trace = parent
        .as_ref()
        .map(|parent| parent.span().span_context().trace_id());
    if let Some(parent) = parent {
        let _ = span.set_parent(parent);
    }
    // A cause in the run's own trace (the start) is its parent already.
    if let Some(cause) = cause.filter(|cause| Some(cause.trace_id()) != run_trace) {
        span.add_link(cause.clone());
    }
    span
}

/// The span of one model call, within the current step; [`record_usage`] adds its tokens.
pub fn model_span(provider: &str, model: &str) -> Span {
    if !exported() {
        return Span::none();
    }
    tracing::info_span!(
        target: "askuser::model",
        "model",
        otel.name = "askuser.model",
        otel.kind = "client",
        gen_ai.system = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    )
}

/// Records the tokens a model call used on its span.
pub fn record_usage(span: &Span, usage: Option<Usage>) {
    if let Some(usage) = usage {
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    }
}

/// The span of one tool call a step handles: `kind` is who runs the tool (`ask_user`, `client`,
/// `http`), `outcome` what the step did with it (`suspended`, `executed`, `invalid`).
pub fn tool_span(tool: &str, kind: &str, tool_call_id: &str, outcome: &str) -> Span {
    if !exported() {
        return Span::none();
    }
    tracing::info_span!(
        target: "askuser::tools",
        "tool",
        otel.name = "askuser.tool",
        askuser.tool.name = tool,
        askuser.tool.kind = kind,
        askuser.tool_call_id = tool_call_id,
        askuser.tool.outcome = outcome,
    )
}

/// The context of the current span, when it is exported: what a step links to as its cause.
pub fn current_span_context() -> Option<SpanContext> {
    if !exported() {
        return None;
    }
    let context = Span::current().context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}
