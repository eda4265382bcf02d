//! API keys as callers send them: `ak_<id>_<secret>`, of which only a SHA-256 hash is stored.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// What every key starts with, so that a leaked one is recognisable (secret scanners).
const PREFIX: &str = "ak_";

/// A new key: its id (shown in listings) and the whole key (shown once).
pub struct GeneratedKey {
    pub key_id: String,
    pub key: String,
}

/// A key with a fresh 32-byte random secret: high entropy, so one SHA-256 is hash enough (no
/// password stretching is needed against guessing).
pub fn generate() -> GeneratedKey {
    let key_id = uuid::Uuid::now_v7().simple().to_string();
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let key = format!("{PREFIX}{key_id}_{}", URL_SAFE_NO_PAD.encode(secret));
    GeneratedKey { key_id, key }
}

/// Whether a bearer credential is shaped like an API key (rather than a JWT).
pub fn looks_like_key(credential: &str) -> bool {
    credential.starts_with(PREFIX)
}

/// The hash a key is stored and looked up by, in hex.
pub fn hash(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_hash_stably() {
        let (first, second) = (generate(), generate());
        assert_ne!(first.key, second.key);
        assert!(looks_like_key(&first.key));
        assert!(first.key.contains(&first.key_id));
        assert_eq!(hash(&first.key), hash(&first.key));
        assert_ne!(hash(&first.key), hash(&second.key));
        assert_eq!(hash(&first.key).len(), 64);
    }
}
