//! Key lookups answered from memory while the key file is unchanged. `--auth keys` looks a key up
//! when a stream opens and again before an answer is taken (a revoked key answers nothing); each
//! lookup was a statement on the key file. Whether any other connection (a server's, or
//! `askuser keys` in another process) has committed to the file since the lookups remembered were
//! read is told first by the WAL index's header ([`super::wal_index`], one read of the `-shm`
//! file) and, when that changed or cannot tell, by SQLite's `data_version`; the lookups
//! remembered are forgotten when `data_version` changed, so a key created or revoked is seen at
//! the next lookup, as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;

use super::super::{ApiKeyRecord, StoreError, StoreResult};
use super::keys::by_hash;
use super::readers::open_reader;
use super::wal_index::{Header, WalIndex};

/// Lookups remembered at most; past it they are forgotten at once (unknown hashes are remembered
/// too, and a caller may present as many as it likes).
const KEPT: usize = 1024;

/// Lookups of keys by their secrets' hashes, on one reader connection of the key file.
pub(super) struct KeyLookups {
    path: PathBuf,
    /// Opened at the first lookup; taken in turn (a lookup takes microseconds).
    state: Mutex<Option<Remembered>>,
}

struct Remembered {
    conn: Connection,
    /// The key file's `data_version` when `found` was last emptied.
    data_version: i64,
    /// The key file's WAL index, once `conn` has read from it; `None` if it cannot be opened
    /// (every lookup then asks `data_version`).
    wal_index: Option<WalIndex>,
    /// The WAL index's header read before `data_version` was last asked: while it is unchanged,
    /// so is `data_version`.
    header: Option<Header>,
    /// How many lookups asked `data_version`.
    #[cfg(test)]
    asked: usize,
    /// What a lookup found for each hash, `None` for no key.
    found: HashMap<String, Option<ApiKeyRecord>>,
}

impl KeyLookups {
    pub(super) fn new(key_file: &Path) -> Self {
        Self {
            path: key_file.to_owned(),
            state: Mutex::new(None),
        }
    }

    /// The key whose secret hashes to `secret_hash`, as the key file holds it now.
    pub(super) fn by_hash(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| StoreError::Task("the key lookups' lock is poisoned".into()))?;
        let remembered = match &mut *state {
            Some(remembered) => remembered,
            None => state.insert(Remembered {
                conn: open_reader(&self.path, None)?,
                data_version: i64::MIN,
                wal_index: None,
                header: None,
                #[cfg(test)]
                asked: 0,
                found: HashMap::new(),
            }),
        };
        let header = remembered.wal_index.as_ref().and_then(WalIndex::header);
        if header.is_none() || header != remembered.header {
            // Read before `data_version`: a commit between the two changes the header again, so
            // the next lookup asks `data_version` again.
            remembered.header = header;
            #[cfg(test)]
            {
                remembered.asked += 1;
            }
            let data_version: i64 = remembered
                .conn
                .prepare_cached("PRAGMA data_version")?
                .query_row([], |row| row.get(0))?;
            if data_version != remembered.data_version {
                remembered.found.clear();
                remembered.data_version = data_version;
            }
            if remembered.wal_index.is_none() {
                // `conn` has read the file: its `-shm` file exists, and lasts while `conn` does.
                remembered.wal_index = WalIndex::open(&self.path).ok();
            }
        }
        if let Some(found) = remembered.found.get(secret_hash) {
            return Ok(found.clone());
        }
        // Read after `data_version`: a commit between the two is in what is read, and changes
        // `data_version` again, so it is forgotten at the next lookup rather than kept stale.
        let found = by_hash(&remembered.conn, secret_hash)?;
        if remembered.found.len() >= KEPT {
            remembered.found.clear();
        }
        remembered
            .found
            .insert(secret_hash.to_owned(), found.clone());
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SqliteStore, Synchronous, key_file_path};
    use super::*;
    use crate::store::{KeyRevocation, KeyStore, NewApiKey, Tenancy};

    impl KeyLookups {
        fn remembered(&self) -> usize {
            let state = self.state.lock().expect("lock");
            state
                .as_ref()
                .map_or(0, |remembered| remembered.found.len())
        }

        fn asked_data_version(&self) -> usize {
            let state = self.state.lock().expect("lock");
            state.as_ref().map_or(0, |remembered| remembered.asked)
        }
    }

    /// Creates key `k`, whose secret's hash is `hash-of-k`.
    async fn create_k(store: &SqliteStore) {
        store
            .create_key(NewApiKey {
                key_id: "k".into(),
                tenant: "acme".into(),
                name: "k".into(),
                scopes: Vec::new(),
                secret_hash: "hash-of-k".into(),
                created_ms: 1,
            })
            .await
            .expect("create");
    }

    /// A lookup answered from memory is never older than the key file: a key revoked through the
    /// server's own connection to it (not the lookups') is refused at the next lookup, and so is
    /// one created after a lookup that found none. Unknown hashes fill no more than `KEPT`.
    #[tokio::test]
    async fn a_remembered_lookup_sees_every_change_to_the_key_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        let store = SqliteStore::open(&path, Synchronous::Normal).expect("open");
        let lookups = KeyLookups::new(&key_file_path(&path));
        assert_eq!(lookups.by_hash("hash-of-k").expect("look up"), None);
        create_k(&store).await;
        for _ in 0..3 {
            let found = lookups.by_hash("hash-of-k").expect("look up");
            assert_eq!(found.map(|key| key.revoked_ms), Some(None));
        }
        assert_eq!(lookups.remembered(), 1);
        let revocation = KeyRevocation {
            key_id: "k",
            tenancy: Tenancy::Any,
            now_ms: 9,
        };
        assert!(store.revoke_key(revocation).await.expect("revoke"));
        let found = lookups.by_hash("hash-of-k").expect("look up");
        assert_eq!(found.and_then(|key| key.revoked_ms), Some(9));

        for unknown in 0..KEPT + 10 {
            let hash = format!("unknown-{unknown}");
            assert_eq!(lookups.by_hash(&hash).expect("look up"), None);
        }
        assert!(lookups.remembered() <= KEPT, "{}", lookups.remembered());
        let found = lookups.by_hash("hash-of-k").expect("look up");
        assert_eq!(found.and_then(|key| key.revoked_ms), Some(9));
    }

    /// Commits of connections of their own, as `askuser keys` in another process makes them (each
    /// opened, written through and closed), are seen at the next lookup; while nothing commits,
    /// lookups are answered without asking SQLite's `data_version`.
    #[tokio::test]
    async fn another_connection_s_commits_are_seen_at_the_next_lookup() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        let store = SqliteStore::open(&path, Synchronous::Normal).expect("open");
        create_k(&store).await;
        let lookups = KeyLookups::new(&key_file_path(&path));
        let revoked = || {
            let found = lookups.by_hash("hash-of-k").expect("look up");
            found.expect("the key").revoked_ms
        };
        assert_eq!(revoked(), None);
        assert_eq!(revoked(), None);
        let asked = lookups.asked_data_version();
        for _ in 0..20 {
            assert_eq!(revoked(), None);
        }
        assert_eq!(lookups.asked_data_version(), asked, "nothing committed");

        for (round, revoked_ms) in [Some(5), None, Some(7)].into_iter().enumerate() {
            let other = Connection::open(key_file_path(&path)).expect("open");
            other
                .execute(
                    "UPDATE api_keys SET revoked_ms = ?1 WHERE key_id = 'k'",
                    [revoked_ms],
                )
                .expect("update");
            if round == 1 {
                other
                    .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                    .expect("checkpoint");
            }
            drop(other);
            assert_eq!(revoked(), revoked_ms, "round {round}");
            assert_eq!(revoked(), revoked_ms, "round {round}, remembered");
        }
        drop(store);
    }
}
