//! Key lookups answered from memory while the key file is unchanged. `--auth keys` looks a key up
//! when a stream opens and again before an answer is taken (a revoked key answers nothing); each
//! lookup was a statement on the key file. SQLite's `data_version` tells, by a read of the WAL's
//! header alone, whether any other connection (a server's, or `askuser keys` in another process)
//! has committed to the file since it was last asked: the lookups remembered are forgotten then,
//! so a key created or revoked is seen at the next lookup, as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;

use super::super::{ApiKeyRecord, StoreError, StoreResult};
use super::keys::by_hash;
use super::readers::open_reader;

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
                found: HashMap::new(),
            }),
        };
        let data_version: i64 = remembered
            .conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))?;
        if data_version != remembered.data_version {
            remembered.found.clear();
            remembered.data_version = data_version;
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
}
