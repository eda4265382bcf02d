//! PostgreSQL's schema migrations (SQLite applies the same files from version 3 on).

/// The schema migrations, applied in order; never edit a released one, add the next.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!("../../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        include_str!("../../../migrations/postgres/0002_usage.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/postgres/0003_tools.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/postgres/0004_step_starts.sql"),
    ),
    (
        5,
        include_str!("../../../migrations/postgres/0005_keys.sql"),
    ),
    (
        6,
        include_str!("../../../migrations/postgres/0006_tenants.sql"),
    ),
    (
        7,
        include_str!("../../../migrations/postgres/0007_webhooks.sql"),
    ),
    (
        8,
        include_str!("../../../migrations/postgres/0008_traces_and_timings.sql"),
    ),
    (
        9,
        include_str!("../../../migrations/postgres/0009_claim_subject.sql"),
    ),
    (
        10,
        include_str!("../../../migrations/postgres/0010_webhook_subscriptions_and_secrets.sql"),
    ),
];
