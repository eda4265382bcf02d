//! API keys as callers send them: `ak_<id>_<secret>`, of which only a SHA-256 hash is stored.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::domain::{Scope, now_millis};
use crate::store::NewApiKey;

/// What every key starts with, so that a leaked one is recognisable (secret scanners).
const PREFIX: &str = "ak_";

/// A new key: the row to store and the whole key (shown once, never stored).
pub struct GeneratedKey {
    pub stored: NewApiKey,
    pub key: String,
}

/// A key with a fresh 32-byte random secret: high entropy, so one SHA-256 is hash enough (no
/// password stretching is needed against guessing).
pub fn generate(tenant: String, name: String, scopes: Vec<Scope>) -> GeneratedKey {
    let key_id = uuid::Uuid::now_v7().simple().to_string();
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let key = format!("{PREFIX}{key_id}_{}", URL_SAFE_NO_PAD.encode(secret));
    GeneratedKey {
        stored: NewApiKey {
            key_id,
            tenant,
            name,
            scopes,
            secret_hash: hash(&key),
            created_ms: now_millis(),
        },
        key,
    }
}

/// Whether a bearer credential is shaped like an API key (rather than a JWT).
pub fn looks_like_key(credential: &str) -> bool {
    credential.starts_with(PREFIX)
}

/// The hash a key is stored and looked up by, in hex.
pub fn hash(key: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(key.as_bytes());
    let mut hex = String::with_capacity(2 * digest.len());
    for byte in digest {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_hash_stably() {
        let new = || generate("acme".into(), "ci".into(), vec![Scope::RunsRead]);
        let (first, second) = (new(), new());
        assert_ne!(first.key, second.key);
        assert!(looks_like_key(&first.key));
        assert!(first.key.contains(&first.stored.key_id));
        assert_eq!(hash(&first.key), first.stored.secret_hash);
        assert_ne!(first.stored.secret_hash, second.stored.secret_hash);
        assert_eq!(first.stored.secret_hash.len(), 64);
        // SHA-256 of "abc" (FIPS 180-2, appendix B.1): the hex is the digest's, in order.
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
