//! Reads on connections of their own, on blocking threads: in WAL mode they see every committed
//! write and never wait for the writer, so a long read (a replay page, a listing, the pending-calls
//! snapshot) delays no commit, nor does it hold one of the runtime's async workers.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::super::{StoreError, StoreResult};
use super::statements::Db;

/// Idle reader connections kept for reuse; more are opened while reads run at once.
const KEPT: usize = 4;

/// The page cache of a reader of the store's file, in KiB. Every commit changes the WAL, and a
/// reader that finds it changed empties its page cache at its next read: under writes a large
/// cache only holds memory (SQLite's default of 2 MB per connection was kept by each reader that a
/// feed's snapshot or a listing had filled).
const STORE_READER_CACHE_KIB: i64 = 256;

pub(super) struct Readers {
    path: PathBuf,
    /// The page cache of each connection, in KiB; `None` for SQLite's default.
    cache_kib: Option<i64>,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    /// Readers of the store's file, whose commits empty their caches (a small one each).
    pub(super) fn of_store(path: &Path) -> Self {
        Self::new(path, Some(STORE_READER_CACHE_KIB))
    }

    /// Readers of a file that is seldom written (the keys'), whose pages stay cached (SQLite's
    /// default cache each).
    pub(super) fn of_seldom_written(path: &Path) -> Self {
        Self::new(path, None)
    }

    fn new(path: &Path, cache_kib: Option<i64>) -> Self {
        Self {
            path: path.to_owned(),
            cache_kib,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `work` in one read transaction, so that its statements see one state of the store.
    pub(super) async fn run<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.run_each(move |conn| read(conn, work)).await
    }

    /// Runs `work` on a blocking thread in no transaction: each of its statements is its own read,
    /// so that work reading page after page holds no snapshot of the store between them.
    pub(super) async fn run_each<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        let conn = self.take()?;
        let (conn, outcome) = tokio::task::spawn_blocking(move || {
            let outcome = work(&Db::new(&conn));
            super::memory::release_thread_memory();
            (conn, outcome)
        })
        .await
        .map_err(|error| StoreError::Task(format!("a read failed: {error}")))?;
        self.give_back(conn);
        outcome
    }

    fn take(&self) -> StoreResult<Connection> {
        match self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            Some(conn) => Ok(conn),
            None => open_reader(&self.path, self.cache_kib),
        }
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < KEPT
            && conn.is_autocommit()
        {
            idle.push(conn);
        }
    }
}

fn read<T>(conn: &Db<'_>, work: impl FnOnce(&Db<'_>) -> StoreResult<T>) -> StoreResult<T> {
    conn.statement("BEGIN")?.execute([])?;
    let outcome = work(conn);
    // A read transaction has nothing to keep: ending it only lets the WAL be checkpointed.
    conn.statement("COMMIT")?.execute([])?;
    outcome
}

/// A read-only connection to `path`, its page cache `cache_kib` KiB (`None`: SQLite's default).
pub(super) fn open_reader(path: &Path, cache_kib: Option<i64>) -> StoreResult<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    super::schema::keep_plans(&conn)?;
    // A reader waits only for a checkpoint's brief restart of the WAL.
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.set_prepared_statement_cache_capacity(32);
    if let Some(kib) = cache_kib {
        // A negative size is in KiB.
        conn.pragma_update(None, "cache_size", -kib)?;
    }
    Ok(conn)
}
