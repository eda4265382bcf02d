//! JWTs signed by an identity provider, verified against its JWKS (a URL or a file), which is
//! cached and read again when a token names a key id it does not hold (key rotation).

use std::path::PathBuf;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;
use tokio::sync::Mutex;
use tracing::{info, warn};

use super::AuthError;
use crate::domain::{AuthMethod, Principal, Scope};

/// The JWKS is read again on an unknown key id at most this often, so that tokens with made-up
/// key ids cannot make the server hammer the identity provider.
const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(2);

/// Where the JWKS comes from.
#[derive(Clone, Debug)]
pub enum JwksSource {
    Url(String),
    File(PathBuf),
}

/// The claims a principal is made of, by name.
#[derive(Clone, Debug)]
pub struct ClaimNames {
    pub tenant: String,
    pub subject: String,
    /// Space-separated scope names (or an array of them).
    pub scopes: String,
    pub groups: String,
}

/// What a token must satisfy besides its signature and expiry.
#[derive(Clone, Debug)]
pub struct JwtSettings {
    pub source: JwksSource,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    pub claims: ClaimNames,
}

/// Verifies JWTs into principals.
pub struct JwtVerifier {
    settings: JwtSettings,
    keys: RwLock<JwkSet>,
    /// When the JWKS was last read; held while it is read again, so one refresh runs at a time.
    refreshed: Mutex<Instant>,
    http: reqwest::Client,
}

impl JwtVerifier {
    /// Reads the JWKS once: a server that cannot verify any token fails at start.
    pub async fn new(settings: JwtSettings) -> Result<JwtVerifier, AuthError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|error| AuthError::Jwks(error.to_string()))?;
        let keys = fetch(&http, &settings.source).await?;
        Ok(JwtVerifier {
            settings,
            keys: RwLock::new(keys),
            refreshed: Mutex::new(Instant::now()),
            http,
        })
    }

    pub async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let header = decode_header(token).map_err(|error| AuthError::invalid(&error))?;
        let kid = header
            .kid
            .ok_or_else(|| AuthError::InvalidCredentials("the token names no key id".into()))?;
        let (key, algorithm) = match self.key(&kid)? {
            Some(key) => key,
            None => {
                self.refresh().await;
                self.key(&kid)?.ok_or_else(|| {
                    AuthError::InvalidCredentials(format!("no signing key with id {kid}"))
                })?
            }
        };
        // The key says which algorithm it signs with; the token's header does not get to choose
        // another (a PS256 token for an RS256 key). A key without `alg` admits its type's family,
        // which `decode` checks.
        if let Some(algorithm) = algorithm
            && algorithm != header.alg
        {
            return Err(AuthError::InvalidCredentials(format!(
                "the token is signed with {:?}, its key {kid} signs with {algorithm:?}",
                header.alg
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.settings.leeway.as_secs();
        validation.validate_nbf = true;
        let mut required = vec!["exp"];
        match &self.settings.issuer {
            Some(issuer) => {
                validation.set_issuer(&[issuer]);
                required.push("iss");
            }
            None => validation.iss = None,
        }
        match &self.settings.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        let claims = decode::<serde_json::Map<String, Value>>(token, &key, &validation)
            .map_err(|error| AuthError::invalid(&error))?
            .claims;
        self.principal(&claims)
    }

    /// The key with id `kid`, and the algorithm it names (its `alg`), if any.
    fn key(&self, kid: &str) -> Result<Option<(DecodingKey, Option<Algorithm>)>, AuthError> {
        let keys = self
            .keys
            .read()
            .map_err(|_| AuthError::Jwks("the key cache is poisoned".into()))?;
        keys.find(kid)
            .map(|jwk| {
                let key = DecodingKey::from_jwk(jwk)
                    .map_err(|error| AuthError::Jwks(error.to_string()))?;
                Ok((key, signing_algorithm(jwk)?))
            })
            .transpose()
    }

    /// Reads the JWKS again, unless it was read moments ago; a failure keeps the keys held.
    async fn refresh(&self) {
        let mut refreshed = self.refreshed.lock().await;
        if refreshed.elapsed() < MIN_REFRESH_INTERVAL {
            return;
        }
        *refreshed = Instant::now();
        match fetch(&self.http, &self.settings.source).await {
            Ok(keys) => {
                info!(keys = keys.keys.len(), "JWKS read again");
                if let Ok(mut held) = self.keys.write() {
                    *held = keys;
                }
            }
            Err(error) => warn!(%error, "cannot read the JWKS again; keeping the keys held"),
        }
    }

    fn principal(&self, claims: &serde_json::Map<String, Value>) -> Result<Principal, AuthError> {
        let names = &self.settings.claims;
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    AuthError::InvalidCredentials(format!("the token has no {name} claim"))
                })
        };
        let scopes = words(claims.get(&names.scopes))
            .iter()
            .filter_map(|name| Scope::parse(name))
            // Managing every tenant's keys is given by keys only, never by a provider's claim.
            .filter(|scope| *scope != Scope::Operator)
            .collect();
        Ok(Principal {
            tenant: text(&names.tenant)?,
            subject: text(&names.subject)?,
            scopes,
            groups: words(claims.get(&names.groups)),
            method: AuthMethod::Jwt,
            link: None,
        })
    }
}

/// The signing algorithm a JWK names; an `alg` that is no signing algorithm (`RSA-OAEP`, an
/// encryption key's) verifies nothing.
fn signing_algorithm(jwk: &Jwk) -> Result<Option<Algorithm>, AuthError> {
    jwk.common
        .key_algorithm
        .map(|named| {
            named.to_string().parse::<Algorithm>().map_err(|_| {
                AuthError::InvalidCredentials(format!(
                    "the token's key is for {named}, not signing"
                ))
            })
        })
        .transpose()
}

/// A claim that is a space-separated string or an array of strings, as its words.
fn words(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(text)) => text.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

async fn fetch(http: &reqwest::Client, source: &JwksSource) -> Result<JwkSet, AuthError> {
    let text = match source {
        JwksSource::File(path) => tokio::fs::read_to_string(path)
            .await
            .map_err(|error| AuthError::Jwks(format!("{}: {error}", path.display())))?,
        JwksSource::Url(url) => http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|error| AuthError::Jwks(error.without_url().to_string()))?
            .text()
            .await
            .map_err(|error| AuthError::Jwks(error.without_url().to_string()))?,
    };
    serde_json::from_str(&text).map_err(|error| AuthError::Jwks(format!("not a JWKS: {error}")))
}
