//! API keys in SQLite: the statements, run on the key file ([`open_key_file`]) by the server's
//! store and by [`SqliteKeyFile`], which `askuser keys` uses while a server may hold the files. A
//! tenant's runs are in the store's file.

use std::path::Path;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::super::records::{
    COUNT_TENANT_RUNS, INSERT_KEY, KEY_BY_HASH_QUERY, KeyRow, LIST_KEYS_QUERY, MOVE_TENANT_CALLS,
    MOVE_TENANT_RUNS, REVOKE_KEY, scopes_text,
};
use super::super::{ApiKeyRecord, KeyRevocation, KeyStore, NewApiKey, StoreResult, Tenancy};
use super::key_file::{SharedConnection, open_key_file};
use super::{SqliteStore, connect, migrate};

fn insert(conn: &Connection, key: &NewApiKey) -> StoreResult<()> {
    conn.prepare_cached(INSERT_KEY)?.execute(params![
        key.key_id,
        key.tenant,
        key.name,
        scopes_text(&key.scopes),
        key.secret_hash,
        key.created_ms
    ])?;
    Ok(())
}

fn read_key_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyRow> {
    Ok(KeyRow {
        key_id: row.get(0)?,
        tenant: row.get(1)?,
        name: row.get(2)?,
        scopes: row.get(3)?,
        created_ms: row.get(4)?,
        revoked_ms: row.get(5)?,
    })
}

fn list(conn: &Connection, tenant: Option<&str>) -> StoreResult<Vec<ApiKeyRecord>> {
    conn.prepare_cached(&LIST_KEYS_QUERY)?
        .query_map([tenant], read_key_row)?
        .map(|row| row?.into_record())
        .collect()
}

fn revoke(conn: &Connection, key_id: &str, tenant: Option<&str>, now_ms: i64) -> StoreResult<bool> {
    Ok(conn
        .prepare_cached(REVOKE_KEY)?
        .execute(params![now_ms, key_id, tenant])?
        > 0)
}

pub(super) fn by_hash(conn: &Connection, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
    conn.prepare_cached(&KEY_BY_HASH_QUERY)?
        .query_row([secret_hash], read_key_row)
        .optional()?
        .map(KeyRow::into_record)
        .transpose()
}

fn tenant_runs(conn: &Connection, tenant: &str) -> StoreResult<u64> {
    let count: i64 = conn
        .prepare_cached(COUNT_TENANT_RUNS)?
        .query_row([tenant], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or_default())
}

/// Moves tenant `from`'s runs and their calls to tenant `to`; within a transaction (the caller's).
fn move_runs(conn: &Connection, from: &str, to: &str) -> StoreResult<u64> {
    conn.prepare_cached(MOVE_TENANT_CALLS)?
        .execute(params![to, from])?;
    let moved = conn
        .prepare_cached(MOVE_TENANT_RUNS)?
        .execute(params![to, from])?;
    Ok(moved as u64)
}

#[async_trait]
impl KeyStore for SqliteStore {
    async fn create_key(&self, key: NewApiKey) -> StoreResult<()> {
        let creating = self.keys.with(move |conn| insert(conn, &key));
        crate::store::timed("create_key", creating).await
    }

    async fn list_keys(&self, tenancy: Tenancy<'_>) -> StoreResult<Vec<ApiKeyRecord>> {
        let tenant = tenancy.param();
        self.key_readers
            .run(move |conn| list(conn, tenant.as_deref()))
            .await
    }

    async fn revoke_key(&self, revocation: KeyRevocation<'_>) -> StoreResult<bool> {
        let now_ms = revocation.now_ms;
        let (key_id, tenant) = (revocation.key_id.to_owned(), revocation.tenancy.param());
        let revoking = self
            .keys
            .with(move |conn| revoke(conn, &key_id, tenant.as_deref(), now_ms));
        crate::store::timed("revoke_key", revoking).await
    }

    async fn key_by_hash(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        self.key_lookups.by_hash(secret_hash)
    }

    async fn tenant_runs(&self, tenant: &str) -> StoreResult<u64> {
        let tenant = tenant.to_owned();
        self.readers
            .run(move |conn| tenant_runs(conn, &tenant))
            .await
    }

    async fn move_runs(&self, from: &str, to: &str) -> StoreResult<u64> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.db
            .commit_large("move_runs", move |conn| move_runs(conn, &from, &to))
            .await
    }
}

/// The keys of a store's SQLite files, without taking them as a server does: keys are created and
/// revoked through it while a server runs on the same files, which sees them at its next lookup.
pub struct SqliteKeyFile {
    /// The store's file, for its runs' tenants.
    main: SharedConnection,
    /// The key file.
    keys: SharedConnection,
}

impl SqliteKeyFile {
    /// Opens (creating if needed) the store's file `path` and its key file, and brings their
    /// schemas up to date.
    pub fn open(path: &Path) -> StoreResult<Self> {
        super::memory::configure();
        super::data_dir(path)?;
        let mut main = connect(path)?;
        main.pragma_update(None, "journal_mode", "WAL")?;
        migrate(&mut main)?;
        let keys = open_key_file(path, &main)?;
        Ok(Self {
            main: SharedConnection::new(main),
            keys,
        })
    }
}

#[async_trait]
impl KeyStore for SqliteKeyFile {
    async fn create_key(&self, key: NewApiKey) -> StoreResult<()> {
        self.keys.with(move |conn| insert(conn, &key)).await
    }

    async fn list_keys(&self, tenancy: Tenancy<'_>) -> StoreResult<Vec<ApiKeyRecord>> {
        let tenant = tenancy.param();
        self.keys
            .with(move |conn| list(conn, tenant.as_deref()))
            .await
    }

    async fn revoke_key(&self, revocation: KeyRevocation<'_>) -> StoreResult<bool> {
        let now_ms = revocation.now_ms;
        let (key_id, tenant) = (revocation.key_id.to_owned(), revocation.tenancy.param());
        self.keys
            .with(move |conn| revoke(conn, &key_id, tenant.as_deref(), now_ms))
            .await
    }

    async fn key_by_hash(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        let secret_hash = secret_hash.to_owned();
        self.keys
            .with(move |conn| by_hash(conn, &secret_hash))
            .await
    }

    async fn tenant_runs(&self, tenant: &str) -> StoreResult<u64> {
        let tenant = tenant.to_owned();
        self.main.with(move |conn| tenant_runs(conn, &tenant)).await
    }

    async fn move_runs(&self, from: &str, to: &str) -> StoreResult<u64> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.main
            .with(move |conn| {
                let transaction = conn.unchecked_transaction()?;
                let moved = move_runs(&transaction, &from, &to)?;
                transaction.commit()?;
                Ok(moved)
            })
            .await
    }
}
