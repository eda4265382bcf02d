//! Schema versions from 3 on: the same SQL on both stores, from PostgreSQL's files. Each store
//! keeps its own versions 1 and 2 and appends these; never edit a released one, add the next.

/// Versions 3, 4, ... in order.
pub(super) const SHARED: [&str; 13] = [
    include_str!("../../migrations/postgres/0003_tools.sql"),
    include_str!("../../migrations/postgres/0004_step_starts.sql"),
    include_str!("../../migrations/postgres/0005_keys.sql"),
    include_str!("../../migrations/postgres/0006_tenants.sql"),
    include_str!("../../migrations/postgres/0007_webhooks.sql"),
    include_str!("../../migrations/postgres/0008_traces_and_timings.sql"),
    include_str!("../../migrations/postgres/0009_claim_subject.sql"),
    include_str!("../../migrations/postgres/0010_webhook_subscriptions_and_secrets.sql"),
    include_str!("../../migrations/postgres/0011_pending_calls_index.sql"),
    include_str!("../../migrations/postgres/0012_call_continuation.sql"),
    include_str!("../../migrations/postgres/0013_requests.sql"),
    include_str!("../../migrations/postgres/0014_run_owners_index.sql"),
    include_str!("../../migrations/postgres/0015_call_owners.sql"),
];

/// A store's schema versions: its own first ones, then [`SHARED`]; version `n` at index `n - 1`.
pub(super) fn versions(own: &[&'static str]) -> Vec<&'static str> {
    own.iter().copied().chain(SHARED).collect()
}
