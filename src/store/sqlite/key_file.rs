//! The API keys' own SQLite file beside the store's (`askuser.keys.sqlite3` beside
//! `askuser.sqlite3`). Every commit to a WAL file makes SQLite drop each reader's page cache of
//! that file at its next read, so in the store's file a key lookup read its pages anew at every
//! call; in a file of their own the keys change only when a key does, and their pages stay cached.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::super::{StoreError, StoreResult};
use super::connect;
use super::schema::migrate_to;

/// The key file's schema versions: the store's `api_keys` table as it is, version by version.
const VERSIONS: [&str; 1] = [include_str!("../../../migrations/postgres/0005_keys.sql")];

/// The columns copied from the store's file, in the order of both tables.
const COLUMNS: &str = "key_id, tenant, name, scopes, secret_hash, created_ms, revoked_ms";

/// The key file of the store's file `db_path`.
pub(super) fn key_file_path(db_path: &Path) -> PathBuf {
    db_path.with_extension("keys.sqlite3")
}

/// Opens (creating if needed) the key file of the store's file `db_path`, with its schema up to
/// date, and takes over the keys the store's file still holds (`main`, open on it): the
/// read-write connection of those who create and revoke keys (a server, and `askuser keys` while
/// a server may run).
pub(super) fn open_key_file(db_path: &Path, main: &Connection) -> StoreResult<SharedConnection> {
    let path = key_file_path(db_path);
    let mut conn = connect(&path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // Keys are written seldom, and a revocation must survive a power loss.
    conn.pragma_update(None, "synchronous", "FULL")?;
    migrate_to(&mut conn, &VERSIONS, "key file")?;
    take_over(main, &path)?;
    Ok(SharedConnection::new(conn))
}

/// A connection that work takes in turn, each on a blocking thread.
pub(super) struct SharedConnection(Arc<Mutex<Connection>>);

impl SharedConnection {
    pub(super) fn new(conn: Connection) -> Self {
        Self(Arc::new(Mutex::new(conn)))
    }

    /// Runs `work` on the connection, on a blocking thread.
    pub(super) async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let conn = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || {
            let conn = conn
                .lock()
                .map_err(|_| StoreError::Task("a shared SQLite connection is poisoned".into()))?;
            work(&conn)
        })
        .await
        .map_err(|error| StoreError::Task(error.to_string()))?
    }
}

/// Moves the keys of a store's file written before keys had a file of their own into the key
/// file. Copied first and deleted after, in two transactions: if the process stops between them,
/// the next open copies again, which changes nothing but a revocation the copy lacked.
fn take_over(main: &Connection, key_file: &Path) -> StoreResult<()> {
    let left: bool = main.query_row("SELECT EXISTS (SELECT 1 FROM main.api_keys)", [], |row| {
        row.get(0)
    })?;
    if !left {
        return Ok(());
    }
    let key_file = key_file.to_str().ok_or_else(|| {
        StoreError::Io(std::io::Error::other(format!(
            "{}: the path is not UTF-8",
            key_file.display()
        )))
    })?;
    main.execute("ATTACH DATABASE ?1 AS key_file", [key_file])?;
    let moved = main
        .execute_batch(&format!(
            "INSERT INTO key_file.api_keys ({COLUMNS}) SELECT {COLUMNS} FROM main.api_keys \
             WHERE true ON CONFLICT (key_id) DO UPDATE \
             SET revoked_ms = coalesce(api_keys.revoked_ms, excluded.revoked_ms); \
             DELETE FROM main.api_keys;"
        ))
        .map_err(StoreError::from);
    main.execute_batch("DETACH DATABASE key_file")?;
    moved
}

#[cfg(test)]
mod tests {
    use super::super::{SqliteKeyFile, SqliteStore, Synchronous};
    use super::*;
    use crate::store::{KeyRevocation, KeyStore, NewApiKey, Tenancy};

    fn key(key_id: &str) -> NewApiKey {
        NewApiKey {
            key_id: key_id.into(),
            tenant: "acme".into(),
            name: key_id.into(),
            scopes: Vec::new(),
            secret_hash: format!("hash-of-{key_id}"),
            created_ms: 1,
        }
    }

    fn keys_in_store_file(path: &Path) -> i64 {
        Connection::open(path)
            .and_then(|conn| conn.query_row("SELECT count(*) FROM api_keys", [], |row| row.get(0)))
            .expect("count the store file's keys")
    }

    /// Keys in the store's file, as a server before the key file wrote them, are moved to the
    /// key file when the store opens: they still authenticate, and a revocation is kept, also
    /// when an earlier open stopped between the copy and the delete.
    #[tokio::test]
    async fn the_store_files_keys_move_to_the_key_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        drop(SqliteStore::open(&path, Synchronous::Normal).expect("open"));
        // Key a was copied by an open that stopped before deleting it, and revoked since in the
        // store's file; key b was never copied.
        Connection::open(key_file_path(&path))
            .and_then(|conn| {
                conn.execute(
                    "INSERT INTO api_keys (key_id, tenant, name, scopes, secret_hash, \
                     created_ms) VALUES ('a', 'acme', 'a', '', 'hash-of-a', 1)",
                    [],
                )
            })
            .expect("key a in the key file");
        Connection::open(&path)
            .and_then(|conn| {
                conn.execute_batch(
                    "INSERT INTO api_keys (key_id, tenant, name, scopes, secret_hash, \
                     created_ms, revoked_ms) VALUES ('a', 'acme', 'a', '', 'hash-of-a', 1, 5); \
                     INSERT INTO api_keys (key_id, tenant, name, scopes, secret_hash, \
                     created_ms) VALUES ('b', 'acme', 'b', '', 'hash-of-b', 1);",
                )
            })
            .expect("keys in the store's file");

        let store = SqliteStore::open(&path, Synchronous::Normal).expect("reopen");
        assert_eq!(keys_in_store_file(&path), 0);
        let a = store.key_by_hash("hash-of-a").await.expect("look up a");
        assert_eq!(a.and_then(|key| key.revoked_ms), Some(5));
        let b = store.key_by_hash("hash-of-b").await.expect("look up b");
        assert_eq!(
            b.map(|key| (key.key_id, key.revoked_ms)),
            Some(("b".into(), None))
        );
        let listed = store.list_keys(Tenancy::Any).await.expect("list");
        assert_eq!(listed.len(), 2);
    }

    /// A key created and revoked by `askuser keys` while a server holds the files is seen by the
    /// server's next lookup, and only in the key file.
    #[tokio::test]
    async fn keys_written_beside_a_running_store_are_seen_at_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        let store = SqliteStore::open(&path, Synchronous::Normal).expect("open");
        let cli = SqliteKeyFile::open(&path).expect("open beside the store");
        assert_eq!(store.key_by_hash("hash-of-k").await.expect("look up"), None);
        cli.create_key(key("k")).await.expect("create");
        let found = store.key_by_hash("hash-of-k").await.expect("look up");
        assert_eq!(found.map(|key| key.revoked_ms), Some(None));
        let revocation = KeyRevocation {
            key_id: "k",
            tenancy: Tenancy::Any,
            now_ms: 9,
        };
        assert!(cli.revoke_key(revocation).await.expect("revoke"));
        let found = store.key_by_hash("hash-of-k").await.expect("look up");
        assert_eq!(found.and_then(|key| key.revoked_ms), Some(9));
        assert_eq!(keys_in_store_file(&path), 0);
    }
}
