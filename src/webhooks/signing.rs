//! Standard Webhooks signatures (`webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>`)
//! with the specification's own library; secrets are `whsec_` and base64, read from the
//! environment.

use standardwebhooks::Webhook;

/// Why a secret cannot sign.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error("the environment variable {0} is not set")]
    Unset(String),
    #[error("the environment variable {0} is not a webhook secret (whsec_ and base64)")]
    Malformed(String),
    #[error("cannot sign: {0}")]
    Sign(String),
}

/// The secret the environment variable `name` holds.
pub fn secret_from_env(name: &str) -> Result<Webhook, SigningError> {
    let value = std::env::var(name).map_err(|_| SigningError::Unset(name.to_owned()))?;
    value
        .strip_prefix("whsec_")
        .filter(|key| !key.is_empty())
        .and_then(|_| Webhook::new(&value).ok())
        .ok_or_else(|| SigningError::Malformed(name.to_owned()))
}

/// The `webhook-signature` header of `body` sent as `webhook_id` at `timestamp` (Unix seconds).
pub fn sign(
    secret: &Webhook,
    webhook_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, SigningError> {
    secret
        .sign(webhook_id, timestamp, body)
        .map_err(|error| SigningError::Sign(error.to_string()))
}

/// The `webhook-signature` header signed with each of `secrets` (Standard Webhooks: several
/// space-separated signatures, any of which a receiver accepts), as during a rotation's overlap.
pub fn sign_all(
    secrets: &[Webhook],
    webhook_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, SigningError> {
    let signatures: Vec<String> = secrets
        .iter()
        .map(|secret| sign(secret, webhook_id, timestamp, body))
        .collect::<Result<_, _>>()?;
    Ok(signatures.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector the Standard Webhooks libraries publish (their `test_sign`).
    #[test]
    fn signs_the_published_test_vector() {
        let secret = Webhook::new("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").expect("secret");
        let signature = sign(
            &secret,
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            br#"{"email":"test@example.com","username":"test_user"}"#,
        )
        .expect("signature");
        assert_eq!(signature, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
    }
}
