//! Each tenant's own secret for its runs' own webhooks: made and rotated through
//! `AdminService.RotateWebhookSecret` (shown once), stored sealed with ChaCha20-Poly1305 under
//! the server's key (`--webhook-secrets-key-env`; the tenant is the associated data, so a sealed
//! secret moved to another tenant's row does not open), and the one a rotation replaced signing
//! beside the new one for `--webhook-secret-overlap`. HMAC needs the secret itself, so it cannot
//! be stored hashed.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use standardwebhooks::Webhook;

use crate::store::{DeliveryStore, SecretRotation, StoreError};

/// Bytes of a secret made here (Standard Webhooks takes 24 to 64).
const SECRET_BYTES: usize = 32;

/// Why a tenant's secret cannot be made, rotated or used.
#[derive(Debug, thiserror::Error)]
pub enum TenantSecretError {
    #[error("this server has no key to seal webhook secrets with (see --webhook-secrets-key-env)")]
    NoKey,
    #[error("a stored webhook secret does not open with this server's key")]
    Unsealable,
    #[error("cannot make a secret: no random bytes")]
    Random,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The tenants' secrets, through the store.
pub struct TenantSecrets {
    store: Arc<dyn DeliveryStore>,
    sealer: Option<Sealer>,
    overlap: Duration,
}

/// Seals and opens secrets with the server's key.
pub struct Sealer {
    key: LessSafeKey,
    random: SystemRandom,
}

impl Sealer {
    /// The key in the environment variable `name`: the base64 of 32 bytes.
    pub fn from_env(name: &str) -> Result<Sealer, String> {
        let value = std::env::var(name).map_err(|_| format!("{name} is not set"))?;
        let bytes = STANDARD
            .decode(value.trim())
            .map_err(|_| format!("{name} is not base64"))?;
        Sealer::new(&bytes).ok_or_else(|| format!("{name} must hold the base64 of 32 bytes"))
    }

    fn new(key: &[u8]) -> Option<Sealer> {
        let key = UnboundKey::new(&CHACHA20_POLY1305, key).ok()?;
        Some(Sealer {
            key: LessSafeKey::new(key),
            random: SystemRandom::new(),
        })
    }

    fn seal(&self, tenant: &str, secret: &str) -> Result<String, TenantSecretError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| TenantSecretError::Random)?;
        let mut sealed = secret.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(tenant.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| TenantSecretError::Unsealable)?;
        let mut stored = nonce.to_vec();
        stored.extend_from_slice(&sealed);
        Ok(STANDARD.encode(stored))
    }

    fn open(&self, tenant: &str, stored: &str) -> Result<Webhook, TenantSecretError> {
        let bytes = STANDARD
            .decode(stored)
            .map_err(|_| TenantSecretError::Unsealable)?;
        if bytes.len() < NONCE_LEN {
            return Err(TenantSecretError::Unsealable);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce =
            Nonce::try_assume_unique_for_key(nonce).map_err(|_| TenantSecretError::Unsealable)?;
        let mut sealed = sealed.to_vec();
        let secret = self
            .key
            .open_in_place(nonce, Aad::from(tenant.as_bytes()), &mut sealed)
            .map_err(|_| TenantSecretError::Unsealable)?;
        let secret = std::str::from_utf8(secret).map_err(|_| TenantSecretError::Unsealable)?;
        Webhook::new(secret).map_err(|_| TenantSecretError::Unsealable)
    }
}

impl TenantSecrets {
    pub fn new(store: Arc<dyn DeliveryStore>, sealer: Option<Sealer>, overlap: Duration) -> Self {
        TenantSecrets {
            store,
            sealer,
            overlap,
        }
    }

    fn sealer(&self) -> Result<&Sealer, TenantSecretError> {
        self.sealer.as_ref().ok_or(TenantSecretError::NoKey)
    }

    /// Makes a new secret for `tenant` at `now_ms` and returns it (`whsec_…`), with when the one it
    /// replaced stops signing (`None`: there was none).
    pub async fn rotate(
        &self,
        tenant: &str,
        now_ms: i64,
    ) -> Result<(String, Option<i64>), TenantSecretError> {
        let sealer = self.sealer()?;
        let mut bytes = [0u8; SECRET_BYTES];
        sealer
            .random
            .fill(&mut bytes)
            .map_err(|_| TenantSecretError::Random)?;
        let secret = format!("whsec_{}", STANDARD.encode(bytes));
        let sealed = sealer.seal(tenant, &secret)?;
        let had_one = self.store.webhook_secrets(tenant).await?.is_some();
        let until_ms = now_ms + i64::try_from(self.overlap.as_millis()).unwrap_or(i64::MAX);
        self.store
            .rotate_webhook_secret(SecretRotation {
                tenant,
                sealed: &sealed,
                now_ms,
                previous_until_ms: until_ms,
            })
            .await?;
        Ok((secret, had_one.then_some(until_ms)))
    }

    /// Whether `tenant` has a secret of its own.
    pub async fn has_secret(&self, tenant: &str) -> Result<bool, TenantSecretError> {
        Ok(self.store.webhook_secrets(tenant).await?.is_some())
    }

    /// The secrets that sign `tenant`'s deliveries at `now_ms`: its current one, and the one it
    /// replaced while that still overlaps; `None` when it has none.
    pub async fn signers(
        &self,
        tenant: &str,
        now_ms: i64,
    ) -> Result<Option<Vec<Webhook>>, TenantSecretError> {
        let Some(stored) = self.store.webhook_secrets(tenant).await? else {
            return Ok(None);
        };
        let sealer = self.sealer()?;
        let mut signers = vec![sealer.open(tenant, &stored.sealed)?];
        if let Some((previous, until_ms)) = stored.previous
            && until_ms > now_ms
        {
            signers.push(sealer.open(tenant, &previous)?);
        }
        Ok(Some(signers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_for_its_tenant_only() {
        let secrets = Sealer::new(&[7; 32]).expect("key");
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let sealed = secrets.seal("acme", secret).expect("seal");
        assert!(!sealed.contains("MfKQ9r8"));
        assert!(secrets.open("acme", &sealed).is_ok());
        assert!(
            Sealer::new(&[8; 32])
                .expect("key")
                .open("acme", &sealed)
                .is_err()
        );
        assert!(matches!(
            secrets.open("globex", &sealed),
            Err(TenantSecretError::Unsealable)
        ));
    }
}
