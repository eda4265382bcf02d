//! The SQLite schema: its versions as migrations (v1 and v2 here, v3 on shared with PostgreSQL's,
//! `crate::store::migrations`), applied when a connection opens the file.

use super::*;
use rusqlite::config::DbConfig;

use crate::store::migrations::Dialect;

/// The schema's versions, each the statements that bring the previous one to it (the first from
/// an empty file); never edit a released one, add the next.
pub(super) static MIGRATIONS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| crate::store::migrations::versions(&[SCHEMA_V1, USAGE_V2], Dialect::Sqlite));

/// Version 2: the tokens each run has used so far. (Version 3 is PostgreSQL's own file: its SQL is
/// the same on both.)
pub(super) const USAGE_V2: &str = "
ALTER TABLE runs ADD COLUMN input_tokens INTEGER;
ALTER TABLE runs ADD COLUMN output_tokens INTEGER;
";

pub(super) const SCHEMA_V1: &str = "
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL,
    prompt TEXT NOT NULL,
    metadata TEXT NOT NULL,
    output_text TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    last_sequence INTEGER NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    question_ttl_ms INTEGER,
    step_attempt INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_ms INTEGER,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX runs_by_status ON runs (status, run_id);
CREATE INDEX runs_by_agent ON runs (agent_id, run_id);
CREATE TABLE turns (
    run_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (run_id, turn)
) WITHOUT ROWID;
CREATE TABLE tool_calls (
    run_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    position INTEGER NOT NULL,
    tool_name TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    status TEXT NOT NULL,
    payload TEXT,
    expire_ms INTEGER,
    answer TEXT,
    answer_id TEXT NOT NULL DEFAULT '',
    result_content TEXT,
    result_is_error INTEGER NOT NULL DEFAULT 0,
    result_kind TEXT,
    result_sequence INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, tool_call_id)
) WITHOUT ROWID;
CREATE INDEX tool_calls_by_expiry ON tool_calls (expire_ms) WHERE status = 'pending' AND expire_ms IS NOT NULL;
CREATE TABLE events (
    run_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    time_ms INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence)
) WITHOUT ROWID;
";

/// Opens a connection that waits out the other's short locks: the checkpointer's restart waits
/// for the writer's batch, the writer for a restart.
pub(super) fn connect(path: &Path) -> StoreResult<Connection> {
    configure(Connection::open(path)?)
}

/// [`connect`] for the connection that writes the store: its WAL frames go to the file one
/// commit at a time ([`super::wal_writes`]).
pub(super) fn connect_writer(path: &Path) -> StoreResult<Connection> {
    if !super::wal_writes::register() {
        return connect(path);
    }
    configure(Connection::open_with_flags_and_vfs(
        path,
        rusqlite::OpenFlags::default(),
        super::wal_writes::VFS_NAME,
    )?)
}

thread_local! {
    /// Set while a runtime worker begins a commit of its own: it takes the lock at once or not at
    /// all, and never sleeps in the busy handler.
    static NO_WAITING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `work`, in which a lock held elsewhere fails at once (`SQLITE_BUSY`) instead of being
/// waited for.
pub(super) fn without_waiting<T>(work: impl FnOnce() -> T) -> T {
    /// Lets the busy handler wait again however `work` ends: the flag belongs to a runtime worker
    /// that goes on running other tasks.
    struct WaitAgain;
    impl Drop for WaitAgain {
        fn drop(&mut self) {
            NO_WAITING.set(false);
        }
    }
    NO_WAITING.set(true);
    let _wait_again = WaitAgain;
    work()
}

/// What every connection of the store has: plans kept, and a busy handler.
fn configure(conn: Connection) -> StoreResult<Connection> {
    keep_plans(&conn)?;
    conn.busy_handler(Some(|attempt| {
        if NO_WAITING.get() {
            return false;
        }
        // Polls every 100 µs for up to 5 s: the locks are held for a batch or a restart at most.
        std::thread::sleep(std::time::Duration::from_micros(100));
        attempt < 50_000
    }))?;
    Ok(conn)
}

/// Has a prepared statement keep its plan whatever values are bound to it. Otherwise SQLite
/// prepares a statement again at every run in which a value is bound to a parameter it might plan
/// on, such as `LIMIT ?`: every page of a feed's snapshot was parsed and planned anew.
pub(super) fn keep_plans(conn: &Connection) -> StoreResult<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

pub(super) fn migrate(conn: &mut Connection) -> StoreResult<()> {
    migrate_to(conn, &MIGRATIONS, "database")
}

/// Brings the file of `conn` (`what` names it in an error) to the newest of `versions`, which
/// are the statements of version 1, 2, ... in order; its `user_version` is its current version.
pub(super) fn migrate_to(conn: &mut Connection, versions: &[&str], what: &str) -> StoreResult<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let newest = versions.len() as i64;
    if version > newest {
        return Err(StoreError::Corrupt(format!(
            "{what} schema version {version} is newer than this server's {newest}"
        )));
    }
    if version == newest {
        return Ok(());
    }
    let tx = conn.transaction()?;
    for sql in &versions[usize::try_from(version).unwrap_or(0)..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", newest)?;
    tx.commit()?;
    Ok(())
}
