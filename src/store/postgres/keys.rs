//! API keys in PostgreSQL: the same `api_keys` table and SQL as SQLite's (`records`).

use async_trait::async_trait;
use tokio_postgres::Row;

use super::PostgresStore;
use crate::store::records::{
    COUNT_TENANT_RUNS, INSERT_KEY, KEY_BY_HASH_QUERY, KeyRow, LIST_KEYS_QUERY, MOVE_TENANT_CALLS,
    MOVE_TENANT_RUNS, REVOKE_KEY, scopes_text,
};
use crate::store::timed;
use crate::store::{ApiKeyRecord, KeyRevocation, KeyStore, NewApiKey, StoreResult, Tenancy};

fn key_row(row: &Row) -> KeyRow {
    KeyRow {
        key_id: row.get(0),
        tenant: row.get(1),
        name: row.get(2),
        scopes: row.get(3),
        created_ms: row.get(4),
        revoked_ms: row.get(5),
    }
}

#[async_trait]
impl KeyStore for PostgresStore {
    async fn create_key(&self, key: NewApiKey) -> StoreResult<()> {
        timed("create_key", async {
            let client = self.pool.get().await?;
            let statement = client.prepare_cached(INSERT_KEY).await?;
            client
                .execute(
                    &statement,
                    &[
                        &key.key_id,
                        &key.tenant,
                        &key.name,
                        &scopes_text(&key.scopes),
                        &key.secret_hash,
                        &key.created_ms,
                    ],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn list_keys(&self, tenancy: Tenancy<'_>) -> StoreResult<Vec<ApiKeyRecord>> {
        let client = self.pool.get().await?;
        let statement = client.prepare_cached(&LIST_KEYS_QUERY).await?;
        client
            .query(&statement, &[&tenancy.param()])
            .await?
            .iter()
            .map(|row| key_row(row).into_record())
            .collect()
    }

    async fn revoke_key(&self, revocation: KeyRevocation<'_>) -> StoreResult<bool> {
        let KeyRevocation {
            key_id,
            tenancy,
            now_ms,
        } = revocation;
        timed("revoke_key", async {
            let client = self.pool.get().await?;
            let statement = client.prepare_cached(REVOKE_KEY).await?;
            let tenant = tenancy.param();
            Ok(client
                .execute(&statement, &[&now_ms, &key_id, &tenant])
                .await?
                > 0)
        })
        .await
    }

    async fn key_by_hash(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        let client = self.pool.get().await?;
        let statement = client.prepare_cached(&KEY_BY_HASH_QUERY).await?;
        client
            .query_opt(&statement, &[&secret_hash])
            .await?
            .map(|row| key_row(&row).into_record())
            .transpose()
    }

    async fn tenant_runs(&self, tenant: &str) -> StoreResult<u64> {
        let client = self.pool.get().await?;
        let statement = client.prepare_cached(COUNT_TENANT_RUNS).await?;
        let count: i64 = client.query_one(&statement, &[&tenant]).await?.get(0);
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn move_runs(&self, from: &str, to: &str) -> StoreResult<u64> {
        timed("move_runs", async {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            let calls = transaction.prepare_cached(MOVE_TENANT_CALLS).await?;
            transaction.execute(&calls, &[&to, &from]).await?;
            let runs = transaction.prepare_cached(MOVE_TENANT_RUNS).await?;
            let moved = transaction.execute(&runs, &[&to, &from]).await?;
            transaction.commit().await?;
            Ok(moved)
        })
        .await
    }
}
