//! Answer links: a credential that opens one call for one person, carried in a link that a
//! webhook puts in a chat message or a mail, so that answering needs no API key.
//!
//! A link token is `al1.<claims>.<tag>`: the claims (run, call, tenant, assignee, expiry) as JSON
//! in unpadded base64url, and an HMAC-SHA256 of `al1.<claims>` under the server's link secret. It
//! is checked here, and only bound: what it may open (its call, once) is decided where every
//! answer and read passes (`runtime::settle_access`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde::{Deserialize, Serialize};

use crate::domain::{LinkBinding, Principal};

/// What every link token starts with (and the version of its format).
const PREFIX: &str = "al1.";

/// The fewest bytes a link secret may have.
const MIN_SECRET_BYTES: usize = 32;

/// The file of a SQLite server's own link secret, in its data directory, made at first start.
pub const SECRET_FILE_NAME: &str = "answer-link.secret";

/// What a link token says: who may settle which call, until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkClaims {
    #[serde(rename = "r")]
    pub run_id: String,
    #[serde(rename = "c")]
    pub tool_call_id: String,
    #[serde(rename = "t")]
    pub tenant: String,
    /// The assignee the link was made for; absent for a call anyone may answer.
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Unix milliseconds after which the link opens nothing.
    #[serde(rename = "e")]
    pub expire_ms: i64,
}

/// Why a link token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("this answer link is not one this server made, or it was altered")]
    Invalid,
    #[error("this answer link has expired")]
    Expired,
}

/// Errors reading or making the link secret at start.
#[derive(Debug, thiserror::Error)]
pub enum LinkSecretError {
    #[error("answer link secret {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "answer link secret {path}: {bytes} bytes; it needs at least {MIN_SECRET_BYTES} (e.g. `head -c 32 /dev/urandom | base64`)"
    )]
    TooShort { path: PathBuf, bytes: usize },
}

/// Whether `credential` is a link token (and not an API key or a JWT).
pub fn is_link_token(credential: &str) -> bool {
    credential.starts_with(PREFIX)
}

/// Signs and checks link tokens with the server's link secret.
pub struct AnswerLinks {
    key: hmac::Key,
    ttl: Duration,
}

impl std::fmt::Debug for AnswerLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerLinks")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl AnswerLinks {
    /// Links signed with `secret`, each valid for `ttl` (or to its call's expiry, if sooner).
    pub fn new(secret: &[u8], ttl: Duration) -> AnswerLinks {
        AnswerLinks {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            ttl,
        }
    }

    /// Links with the secret in `path` (a mounted secret, the same on every replica).
    pub fn from_file(path: &Path, ttl: Duration) -> Result<AnswerLinks, LinkSecretError> {
        let secret = std::fs::read(path).map_err(|source| LinkSecretError::Io {
            path: path.to_owned(),
            source,
        })?;
        let secret = secret.trim_ascii();
        if secret.len() < MIN_SECRET_BYTES {
            return Err(LinkSecretError::TooShort {
                path: path.to_owned(),
                bytes: secret.len(),
            });
        }
        Ok(AnswerLinks::new(secret, ttl))
    }

    /// Links with the secret of a SQLite server's data directory, made (random, readable by its
    /// owner only) when there is none yet: links survive restarts with no flag to give.
    pub fn in_data_dir(data_dir: &Path, ttl: Duration) -> Result<AnswerLinks, LinkSecretError> {
        let path = data_dir.join(SECRET_FILE_NAME);
        if !path.exists() {
            make_secret(&path).map_err(|source| LinkSecretError::Io {
                path: path.clone(),
                source,
            })?;
        }
        AnswerLinks::from_file(&path, ttl)
    }

    /// The expiry of a link made at `now_ms` for a call that expires at `call_expire_ms`.
    pub fn expiry(&self, now_ms: i64, call_expire_ms: Option<i64>) -> i64 {
        let ttl = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        let own = now_ms.saturating_add(ttl);
        call_expire_ms.map_or(own, |call| call.min(own))
    }

    /// The token of `claims`.
    pub fn sign(&self, claims: &LinkClaims) -> String {
        // Serialising a struct of strings and an integer cannot fail.
        let json = serde_json::to_vec(claims).unwrap_or_default();
        let signed = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json));
        let tag = hmac::sign(&self.key, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The claims of `token` if this server signed it, unaltered, and it has not expired at
    /// `now_ms`.
    pub fn verify(&self, token: &str, now_ms: i64) -> Result<LinkClaims, LinkError> {
        let (signed, tag) = token.rsplit_once('.').ok_or(LinkError::Invalid)?;
        let claims = signed.strip_prefix(PREFIX).ok_or(LinkError::Invalid)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| LinkError::Invalid)?;
        hmac::verify(&self.key, signed.as_bytes(), &tag).map_err(|_| LinkError::Invalid)?;
        let json = URL_SAFE_NO_PAD
            .decode(claims)
            .map_err(|_| LinkError::Invalid)?;
        let claims: LinkClaims = serde_json::from_slice(&json).map_err(|_| LinkError::Invalid)?;
        if claims.expire_ms <= now_ms {
            return Err(LinkError::Expired);
        }
        Ok(claims)
    }

    /// The principal a verified token acts as.
    pub fn principal(&self, token: &str) -> Result<Principal, LinkError> {
        let claims = self.verify(token, now_ms())?;
        Ok(Principal::answer_link(
            claims.tenant,
            LinkBinding {
                run_id: claims.run_id,
                tool_call_id: claims.tool_call_id,
                assignee: claims.assignee,
            },
        ))
    }
}

/// The wall clock in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// Writes 32 random bytes, base64, to a new file only its owner reads.
fn make_secret(path: &Path) -> std::io::Result<()> {
    use ring::rand::SecureRandom;
    use std::io::Write;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| std::io::Error::other("no randomness from the system"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    writeln!(
        file,
        "{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn claims(expire_ms: i64) -> LinkClaims {
        LinkClaims {
            run_id: "run-1".into(),
            tool_call_id: "call-1".into(),
            tenant: "acme".into(),
            assignee: Some("alice".into()),
            expire_ms,
        }
    }

    fn links() -> AnswerLinks {
        AnswerLinks::new(&[7u8; 32], HOUR)
    }

    #[test]
    fn a_signed_token_verifies_to_its_claims_until_it_expires() {
        let token = links().sign(&claims(2_000));
        assert!(is_link_token(&token));
        assert_eq!(links().verify(&token, 1_999), Ok(claims(2_000)));
        assert_eq!(links().verify(&token, 2_000), Err(LinkError::Expired));
    }

    #[test]
    fn an_altered_or_foreign_token_is_invalid() {
        let token = links().sign(&claims(2_000));
        let (signed, tag) = token.rsplit_once('.').expect("a tag");
        // Other claims under the first claims' tag: another call.
        let mut other = claims(2_000);
        other.tool_call_id = "call-2".into();
        let other_signed = links().sign(&other);
        let (other_claims, _) = other_signed.rsplit_once('.').expect("a tag");
        for altered in [
            format!("{other_claims}.{tag}"),
            format!("{signed}.{}", &tag[1..]),
            format!("{signed}x.{tag}"),
            token.replacen("al1.", "al2.", 1),
            AnswerLinks::new(&[8u8; 32], HOUR).sign(&claims(2_000)),
            "al1.".into(),
            "al1..".into(),
        ] {
            assert_eq!(
                links().verify(&altered, 1_000),
                Err(LinkError::Invalid),
                "{altered}"
            );
        }
    }

    #[test]
    fn a_link_lasts_its_ttl_or_to_its_calls_expiry_if_sooner() {
        let links = links();
        assert_eq!(links.expiry(1_000, None), 1_000 + 3_600_000);
        assert_eq!(links.expiry(1_000, Some(5_000)), 5_000);
        assert_eq!(links.expiry(1_000, Some(i64::MAX)), 1_000 + 3_600_000);
    }

    #[test]
    fn a_data_dir_secret_is_made_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("askuser-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = AnswerLinks::in_data_dir(&dir, HOUR).expect("made");
        let token = first.sign(&claims(i64::MAX));
        let again = AnswerLinks::in_data_dir(&dir, HOUR).expect("read");
        assert!(
            again.verify(&token, 0).is_ok(),
            "the same secret on restart"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(SECRET_FILE_NAME))
                .expect("secret file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.join("short"), "too short").expect("write");
        assert!(matches!(
            AnswerLinks::from_file(&dir.join("short"), HOUR),
            Err(LinkSecretError::TooShort { bytes: 9, .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
