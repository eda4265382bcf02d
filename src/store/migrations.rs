//! Schema versions from 3 on, shared by both stores: the same SQL from PostgreSQL's files, or a
//! file for each store where what one needs the other cannot take. Each store keeps its own
//! versions 1 and 2 and appends these, so a version number means the same change on both; never
//! edit a released one, add the next.

/// A shared version's SQL on each store.
struct Shared {
    postgres: &'static str,
    sqlite: &'static str,
}

impl Shared {
    /// One file for both.
    const fn same(sql: &'static str) -> Self {
        Shared {
            postgres: sql,
            sqlite: sql,
        }
    }
}

/// The store whose SQL [`versions`] picks.
#[derive(Clone, Copy)]
pub(super) enum Dialect {
    Postgres,
    Sqlite,
}

/// Versions 3, 4, ... in order.
const SHARED: [Shared; 14] = [
    Shared::same(include_str!("../../migrations/postgres/0003_tools.sql")),
    Shared::same(include_str!(
        "../../migrations/postgres/0004_step_starts.sql"
    )),
    Shared::same(include_str!("../../migrations/postgres/0005_keys.sql")),
    Shared::same(include_str!("../../migrations/postgres/0006_tenants.sql")),
    Shared::same(include_str!("../../migrations/postgres/0007_webhooks.sql")),
    Shared::same(include_str!(
        "../../migrations/postgres/0008_traces_and_timings.sql"
    )),
    Shared::same(include_str!(
        "../../migrations/postgres/0009_claim_subject.sql"
    )),
    Shared::same(include_str!(
        "../../migrations/postgres/0010_webhook_subscriptions_and_secrets.sql"
    )),
    Shared::same(include_str!(
        "../../migrations/postgres/0011_pending_calls_index.sql"
    )),
    Shared::same(include_str!(
        "../../migrations/postgres/0012_call_continuation.sql"
    )),
    Shared::same(include_str!("../../migrations/postgres/0013_requests.sql")),
    Shared::same(include_str!(
        "../../migrations/postgres/0014_run_owners_index.sql"
    )),
    Shared::same(include_str!(
        "../../migrations/postgres/0015_call_owners.sql"
    )),
    Shared {
        postgres: include_str!("../../migrations/postgres/0016_pending_calls_covering.sql"),
        sqlite: include_str!("../../migrations/sqlite/0016_pending_calls_covering.sql"),
    },
];

/// A store's schema versions: its own first ones, then [`SHARED`] in its `dialect`; version `n`
/// at index `n - 1`.
pub(super) fn versions(own: &[&'static str], dialect: Dialect) -> Vec<&'static str> {
    let shared = SHARED.iter().map(|version| match dialect {
        Dialect::Postgres => version.postgres,
        Dialect::Sqlite => version.sqlite,
    });
    own.iter().copied().chain(shared).collect()
}
