//! API keys as the stores keep them: who a key acts as, and the hash of its secret.

use async_trait::async_trait;

use super::{StoreResult, Tenancy};
use crate::domain::Scope;

/// A key to store; its secret is known only by its hash.
#[derive(Clone, Debug)]
pub struct NewApiKey {
    pub key_id: String,
    pub tenant: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub secret_hash: String,
    pub created_ms: i64,
}

impl NewApiKey {
    /// The key as it reads back once stored.
    pub fn record(&self) -> ApiKeyRecord {
        ApiKeyRecord {
            key_id: self.key_id.clone(),
            tenant: self.tenant.clone(),
            name: self.name.clone(),
            scopes: self.scopes.clone(),
            created_ms: self.created_ms,
            revoked_ms: None,
        }
    }
}

/// A stored key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub key_id: String,
    pub tenant: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_ms: i64,
    pub revoked_ms: Option<i64>,
}

/// A revocation, for [`KeyStore::revoke_key`]: key `key_id` of `tenancy`'s tenant (of any tenant
/// for `Any`) revoked at `now_ms`.
#[derive(Clone, Copy, Debug)]
pub struct KeyRevocation<'a> {
    pub key_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub now_ms: i64,
}

/// Where API keys live: with the run store (PostgreSQL: its database; SQLite: a file of their own
/// beside the store's), so that every replica sees a key (and its revocation) as soon as it is
/// written. It also moves runs between tenants, which `askuser keys` does offline beside the keys.
#[async_trait]
pub trait KeyStore: Send + Sync + 'static {
    async fn create_key(&self, key: NewApiKey) -> StoreResult<()>;
    /// The keys of `tenancy`'s tenant (every tenant's for `Any`), revoked ones included, oldest
    /// first.
    async fn list_keys(&self, tenancy: Tenancy<'_>) -> StoreResult<Vec<ApiKeyRecord>>;
    /// Revokes a key as `revocation` says; false when there is no such key (in that tenant) or it
    /// was revoked before.
    async fn revoke_key(&self, revocation: KeyRevocation<'_>) -> StoreResult<bool>;
    /// The key whose secret hashes to `secret_hash`, revoked or not.
    async fn key_by_hash(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>>;
    /// How many runs belong to `tenant`.
    async fn tenant_runs(&self, tenant: &str) -> StoreResult<u64>;
    /// Moves every run of tenant `from` to tenant `to`, but those whose request id `to` uses
    /// already; how many moved.
    async fn move_runs(&self, from: &str, to: &str) -> StoreResult<u64>;
}
