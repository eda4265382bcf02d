//! W3C trace context in and out: from a request's headers, and as a run keeps it in the store.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The context a request's `traceparent` and `tracestate` headers carry; empty without them.
pub(super) fn from_headers(headers: &http::HeaderMap) -> Context {
    let carrier: HashMap<String, String> = ["traceparent", "tracestate"]
        .into_iter()
        .filter_map(|name| {
            let value = headers.get(name)?.to_str().ok()?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect();
    TraceContextPropagator::new().extract(&carrier)
}

/// The current span's context as a run keeps it (JSON of its W3C `traceparent` and
/// `tracestate`); `None` when no span is being exported.
pub fn current_context() -> Option<String> {
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    serde_json::to_string(&carrier).ok()
}

/// The context a run kept ([`current_context`]), to parent its later spans; `None` when it kept
/// none or it cannot be read.
pub fn run_parent(stored: Option<&str>) -> Option<Context> {
    let carrier: HashMap<String, String> = serde_json::from_str(stored?).ok()?;
    let context = TraceContextPropagator::new().extract(&carrier);
    context.span().span_context().is_valid().then_some(context)
}
