//! PostgreSQL's schema versions: its own 1 and 2, then those shared with SQLite.

use std::sync::LazyLock;

/// The schema versions, applied in order; version `n` at index `n - 1`.
pub(super) static MIGRATIONS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    crate::store::migrations::versions(
        &[
            include_str!("../../../migrations/postgres/0001_init.sql"),
            include_str!("../../../migrations/postgres/0002_usage.sql"),
        ],
        crate::store::migrations::Dialect::Postgres,
    )
});
