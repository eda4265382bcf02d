//! Prometheus metrics: every name, its labels and the function that records it, in one place.
//!
//! The layers record through these functions (the `metrics` facade underneath); without
//! `--metrics-listen` no recorder is installed and every call is a no-op. Labels take bounded
//! values only: configured agents, tools, providers and models, and fixed sets of kinds, statuses,
//! reasons and operations; never run ids, tenants or free text. docs/monitoring.md says what each
//! one means.

mod endpoint;

use std::time::Duration;

use ::metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use crate::domain::{RunStatus, SuspendKind, Usage};

pub use endpoint::{MetricsEndpoint, MetricsError};

/// Gauge: server.
pub const MCP_SERVER_UP: &str = "askuser_mcp_server_up";
/// Histogram: server.
pub const MCP_TOOL_CALL_DURATION: &str = "askuser_mcp_tool_call_duration_seconds";
/// Counter: server.
pub const MCP_TOOL_CALL_ERRORS: &str = "askuser_mcp_tool_call_errors_total";
/// Counter: agent.
pub const RUNS_STARTED: &str = "askuser_runs_started_total";
/// Counter: agent, status.
pub const RUNS_FINISHED: &str = "askuser_runs_finished_total";
/// Gauge from the store: status.
pub const RUNS_UNFINISHED: &str = "askuser_runs_unfinished";
/// Gauge from the store: kind.
pub const CALLS_PENDING: &str = "askuser_calls_pending";
/// Gauge from the store: kind.
pub const CALLS_PENDING_OLDEST: &str = "askuser_calls_pending_oldest_seconds";
/// Histogram: kind.
pub const TIME_TO_ANSWER: &str = "askuser_time_to_answer_seconds";
/// Counter: kind.
pub const CALLS_EXPIRED: &str = "askuser_calls_expired_total";
/// Counter: reason.
pub const ANSWERS_REJECTED: &str = "askuser_answers_rejected_total";
/// Histogram: provider, model.
pub const MODEL_REQUEST_DURATION: &str = "askuser_model_request_duration_seconds";
/// Counter: provider, model.
pub const MODEL_REQUEST_ERRORS: &str = "askuser_model_request_errors_total";
/// Counter: provider, model.
pub const MODEL_REQUEST_RETRIES: &str = "askuser_model_request_retries_total";
/// Counter: provider, model, type.
pub const MODEL_TOKENS: &str = "askuser_model_tokens_total";
/// Histogram: tool.
pub const HTTP_TOOL_CALL_DURATION: &str = "askuser_http_tool_call_duration_seconds";
/// Counter: tool.
pub const HTTP_TOOL_CALL_ERRORS: &str = "askuser_http_tool_call_errors_total";
/// Histogram: operation.
pub const STORE_COMMIT_DURATION: &str = "askuser_store_commit_duration_seconds";
/// Gauge.
pub const OPEN_STREAMS: &str = "askuser_open_streams";
/// Counter.
pub const PENDING_FEED_READS: &str = "askuser_pending_feed_store_reads_total";
/// Counter.
pub const LEASE_TAKEOVERS: &str = "askuser_lease_takeovers_total";
/// Counter: event.
pub const WEBHOOK_DELIVERIES: &str = "askuser_webhook_deliveries_total";
/// Counter: event.
pub const WEBHOOK_DELIVERY_FAILURES: &str = "askuser_webhook_delivery_failures_total";
/// Gauge.
pub const WEBHOOK_BACKLOG: &str = "askuser_webhook_backlog";

/// Buckets of the time a person (or a client tool) takes: seconds to days.
const ANSWER_BUCKETS: &[f64] = &[
    1.0,
    5.0,
    15.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    4.0 * 3600.0,
    12.0 * 3600.0,
    86400.0,
    3.0 * 86400.0,
    7.0 * 86400.0,
];
/// Buckets of a model request: a turn streams for seconds to minutes.
const MODEL_BUCKETS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Buckets of HTTP tool calls and store commits: milliseconds to seconds.
const REQUEST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The histograms with their buckets (rendered as Prometheus histograms, not summaries).
pub(crate) const HISTOGRAMS: &[(&str, &[f64])] = &[
    (TIME_TO_ANSWER, ANSWER_BUCKETS),
    (MODEL_REQUEST_DURATION, MODEL_BUCKETS),
    (HTTP_TOOL_CALL_DURATION, REQUEST_BUCKETS),
    (MCP_TOOL_CALL_DURATION, REQUEST_BUCKETS),
    (STORE_COMMIT_DURATION, REQUEST_BUCKETS),
];

/// The `# HELP` and `# TYPE` lines of every metric.
pub(crate) fn describe() {
    describe_counter!(RUNS_STARTED, "Runs started, by agent");
    describe_counter!(RUNS_FINISHED, "Runs that ended, by agent and final status");
    describe_gauge!(
        RUNS_UNFINISHED,
        "Runs not finished (every replica's, read from the store), by status"
    );
    describe_gauge!(
        CALLS_PENDING,
        "Calls waiting for someone (every replica's, read from the store), by kind"
    );
    describe_gauge!(
        CALLS_PENDING_OLDEST,
        Unit::Seconds,
        "How long the call waiting longest has waited since it was suspended (read from the store), by kind"
    );
    describe_histogram!(
        TIME_TO_ANSWER,
        Unit::Seconds,
        "From a call's suspension to the answer, decision or output that settled it, by kind"
    );
    describe_counter!(
        CALLS_EXPIRED,
        "Calls whose time to live ran out before anyone settled them, by kind"
    );
    describe_counter!(ANSWERS_REJECTED, "Answers refused, by reason code");
    describe_histogram!(
        MODEL_REQUEST_DURATION,
        Unit::Seconds,
        "Model turns from the request to the end of the streamed response, retries included"
    );
    describe_counter!(
        MODEL_REQUEST_ERRORS,
        "Model turns that failed after their retries"
    );
    describe_counter!(
        MODEL_REQUEST_RETRIES,
        "Model requests tried again after a failure"
    );
    describe_counter!(
        MODEL_TOKENS,
        "Tokens the providers reported, by type (input, output)"
    );
    describe_histogram!(
        HTTP_TOOL_CALL_DURATION,
        Unit::Seconds,
        "HTTP tool calls the server ran, retries included, by tool"
    );
    describe_counter!(
        HTTP_TOOL_CALL_ERRORS,
        "HTTP tool calls whose result is an error, by tool"
    );
    describe_gauge!(
        MCP_SERVER_UP,
        "1 while this replica is connected to the MCP server and offers its tools, else 0"
    );
    describe_histogram!(
        MCP_TOOL_CALL_DURATION,
        Unit::Seconds,
        "MCP tool calls the server made, by MCP server"
    );
    describe_counter!(
        MCP_TOOL_CALL_ERRORS,
        "MCP tool calls whose result is an error, by MCP server"
    );
    describe_histogram!(
        STORE_COMMIT_DURATION,
        Unit::Seconds,
        "Store writes as the server waits for them, by operation"
    );
    describe_gauge!(OPEN_STREAMS, "Streaming calls open on this server");
    describe_counter!(
        PENDING_FEED_READS,
        "Store reads made for the pending-calls feeds (snapshots, and runs read after a commit)"
    );
    describe_counter!(
        LEASE_TAKEOVERS,
        "Working runs without a live executor that this server took up"
    );
    describe_counter!(
        WEBHOOK_DELIVERIES,
        "Webhook deliveries the receiver accepted, by event"
    );
    describe_counter!(
        WEBHOOK_DELIVERY_FAILURES,
        "Webhook delivery attempts that failed, by event"
    );
    describe_gauge!(WEBHOOK_BACKLOG, "Webhook deliveries waiting in the outbox");
}

pub fn run_started(agent: &str) {
    counter!(RUNS_STARTED, "agent" => agent.to_owned()).increment(1);
}

/// A run this server ended (completed, failed or cancelled); other statuses are not ends.
pub fn run_finished(agent: &str, status: RunStatus) {
    if matches!(
        status,
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
    ) {
        counter!(RUNS_FINISHED, "agent" => agent.to_owned(), "status" => status.as_str())
            .increment(1);
    }
}

pub fn answered(kind: SuspendKind, waited: Duration) {
    histogram!(TIME_TO_ANSWER, "kind" => kind.as_str()).record(waited.as_secs_f64());
}

pub fn call_expired(kind: SuspendKind) {
    counter!(CALLS_EXPIRED, "kind" => kind.as_str()).increment(1);
}

/// `reason` is the rejection's reason code (`INVALID_ANSWER`, ...).
pub fn answer_rejected(reason: &'static str) {
    counter!(ANSWERS_REJECTED, "reason" => reason).increment(1);
}

/// One model turn: how long it took, whether it failed, and the tokens it used.
pub fn model_request(
    provider: &str,
    model: &str,
    took: Duration,
    failed: bool,
    usage: Option<Usage>,
) {
    let labels = [
        ("provider", provider.to_owned()),
        ("model", model.to_owned()),
    ];
    histogram!(MODEL_REQUEST_DURATION, &labels).record(took.as_secs_f64());
    if failed {
        counter!(MODEL_REQUEST_ERRORS, &labels).increment(1);
    }
    if let Some(usage) = usage {
        let tokens = |kind: &'static str| counter!(MODEL_TOKENS, "provider" => provider.to_owned(), "model" => model.to_owned(), "type" => kind);
        tokens("input").increment(usage.input_tokens);
        tokens("output").increment(usage.output_tokens);
    }
}

pub fn model_retry(provider: &str, model: &str) {
    counter!(MODEL_REQUEST_RETRIES, "provider" => provider.to_owned(), "model" => model.to_owned())
        .increment(1);
}

/// Whether this replica is connected to the MCP server `server` and has its tools.
pub fn mcp_server_up(server: &str, up: bool) {
    gauge!(MCP_SERVER_UP, "server" => server.to_owned()).set(if up { 1.0 } else { 0.0 });
}

pub fn mcp_tool_call(server: &str, took: Duration, is_error: bool) {
    histogram!(MCP_TOOL_CALL_DURATION, "server" => server.to_owned()).record(took.as_secs_f64());
    if is_error {
        counter!(MCP_TOOL_CALL_ERRORS, "server" => server.to_owned()).increment(1);
    }
}

pub fn http_tool_call(tool: &str, took: Duration, is_error: bool) {
    histogram!(HTTP_TOOL_CALL_DURATION, "tool" => tool.to_owned()).record(took.as_secs_f64());
    if is_error {
        counter!(HTTP_TOOL_CALL_ERRORS, "tool" => tool.to_owned()).increment(1);
    }
}

/// `operation` is the store method (`commit_turn`, `settle_tool_call`, ...).
pub fn store_commit(operation: &'static str, took: Duration) {
    histogram!(STORE_COMMIT_DURATION, "operation" => operation).record(took.as_secs_f64());
}

/// One store read made for the pending-calls feeds.
pub fn pending_feed_read() {
    counter!(PENDING_FEED_READS).increment(1);
}

/// One more open stream, counted until the returned guard is dropped.
pub fn stream_opened() -> OpenStream {
    gauge!(OPEN_STREAMS).increment(1);
    OpenStream(())
}

/// An open stream, counted in [`OPEN_STREAMS`] while it lives.
#[derive(Debug)]
pub struct OpenStream(());

impl Drop for OpenStream {
    fn drop(&mut self) {
        gauge!(OPEN_STREAMS).decrement(1);
    }
}

pub fn lease_takeovers(runs: usize) {
    counter!(LEASE_TAKEOVERS).increment(u64::try_from(runs).unwrap_or(u64::MAX));
}

/// One webhook delivery attempt of an event of kind `event` (`call.suspended`, `run.completed`,
/// ...), accepted by the receiver or not.
pub fn webhook_attempt(event: &'static str, delivered: bool) {
    match delivered {
        true => counter!(WEBHOOK_DELIVERIES, "event" => event).increment(1),
        false => counter!(WEBHOOK_DELIVERY_FAILURES, "event" => event).increment(1),
    }
}

/// Runs of `status` not finished, as the store counts them (runtime's `refresh_store_gauges`).
pub fn runs_unfinished(status: RunStatus, count: u64) {
    gauge!(RUNS_UNFINISHED, "status" => status.as_str()).set(count as f64);
}

/// Calls of `kind` waiting, and how long the oldest of them has waited, as the store counts them.
pub fn calls_pending(kind: SuspendKind, count: u64, oldest_waited_ms: i64) {
    gauge!(CALLS_PENDING, "kind" => kind.as_str()).set(count as f64);
    gauge!(CALLS_PENDING_OLDEST, "kind" => kind.as_str()).set(oldest_waited_ms as f64 / 1000.0);
}

/// Webhook deliveries due and not delivered yet, as the store counts them.
pub fn webhook_backlog(waiting: u64) {
    gauge!(WEBHOOK_BACKLOG).set(waiting as f64);
}
