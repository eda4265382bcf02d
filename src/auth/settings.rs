//! The authentication flags of `serve`, and the [`Authenticator`] they make.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{
    AuthError, Authenticator, CertificatePrincipals, ClaimNames, JwksSource, JwtSettings,
    JwtVerifier,
};
use crate::domain::Scope;
use crate::store::KeyStore;

/// The ways a caller may authenticate (`--auth`): `none`, or some of `keys`, `jwt` and `cert`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuthMethods {
    pub keys: bool,
    pub jwt: bool,
    /// A verified client certificate (mTLS) names the caller when it sends no bearer credential.
    pub cert: bool,
}

impl std::str::FromStr for AuthMethods {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut methods = AuthMethods::default();
        for name in text.split(',').map(str::trim) {
            match name {
                "none" if text.trim() == "none" => {}
                "keys" => methods.keys = true,
                "jwt" => methods.jwt = true,
                "cert" => methods.cert = true,
                _ => {
                    return Err(
                        "expected none, or some of keys, jwt and cert joined by commas".into(),
                    );
                }
            }
        }
        Ok(methods)
    }
}

/// Why the authentication flags cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error(
        "--auth none on {0}: anyone who reaches it could read and answer every run; listen on a \
         loopback address, turn authentication on (--auth keys or jwt), or pass \
         --insecure-no-auth if something in front of the server authenticates callers"
    )]
    OpenListener(SocketAddr),
    #[error("--auth jwt needs --jwt-jwks-url or --jwt-jwks-file")]
    NoJwks,
    #[error("--auth cert needs --tls-client-ca: only a verified client certificate names a caller")]
    CertWithoutClientCa,
    #[error("--cert-scopes cannot hold operator: only API keys manage every tenant's keys")]
    OperatorCertificates,
    #[error(transparent)]
    Jwks(#[from] AuthError),
}

/// Authentication flags of `serve`.
#[derive(Clone, Debug, clap::Args)]
pub struct AuthArgs {
    /// How callers authenticate: `none` (every caller may do everything; loopback only unless
    /// --insecure-no-auth), or some of `keys` (API keys), `jwt` (tokens of an identity provider)
    /// and `cert` (mTLS client certificates, see --cert-tenant), joined by commas.
    #[arg(long, env = "ASKUSER_AUTH", default_value = "none")]
    pub auth: AuthMethods,
    /// Allow --auth none on an address other than loopback (something in front authenticates).
    #[arg(long, env = "ASKUSER_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,
    /// Serve reflection without credentials on any address (on loopback it always is).
    #[arg(long, env = "ASKUSER_PUBLIC_REFLECTION")]
    pub public_reflection: bool,
    /// URL of the identity provider's JWKS (fetched at start, again on an unknown key id).
    #[arg(long, env = "ASKUSER_JWT_JWKS_URL", conflicts_with = "jwt_jwks_file")]
    pub jwt_jwks_url: Option<String>,
    /// A file holding the JWKS, instead of --jwt-jwks-url (read again on an unknown key id).
    #[arg(long, env = "ASKUSER_JWT_JWKS_FILE")]
    pub jwt_jwks_file: Option<PathBuf>,
    /// The `iss` tokens must carry (a token without one is refused); absent: not checked.
    #[arg(long, env = "ASKUSER_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// An `aud` tokens must carry (a token without one is refused); absent: not checked.
    #[arg(long, env = "ASKUSER_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Clock skew allowed when checking a token's `exp` and `nbf`.
    #[arg(long, env = "ASKUSER_JWT_LEEWAY", default_value = "60s", value_parser = duration)]
    pub jwt_leeway: Duration,
    /// How often an open stream (RunAgent, ResumeRun, WatchRun, WatchPendingCalls) authenticates
    /// its API key or token again: a revoked key or an expired token ends it (UNAUTHENTICATED).
    /// Answer frames on RunAgent are checked each, at once.
    #[arg(long, env = "ASKUSER_PRINCIPAL_RECHECK", default_value = "30s", value_parser = duration)]
    pub principal_recheck: Duration,
    /// The claim naming the caller's tenant.
    #[arg(long, env = "ASKUSER_JWT_TENANT_CLAIM", default_value = "tenant")]
    pub jwt_tenant_claim: String,
    /// The claim naming the caller.
    #[arg(long, env = "ASKUSER_JWT_SUBJECT_CLAIM", default_value = "sub")]
    pub jwt_subject_claim: String,
    /// The claim holding the caller's scopes (space-separated, or an array).
    #[arg(long, env = "ASKUSER_JWT_SCOPES_CLAIM", default_value = "scope")]
    pub jwt_scopes_claim: String,
    /// The claim holding the caller's groups (an array, or space-separated).
    #[arg(long, env = "ASKUSER_JWT_GROUPS_CLAIM", default_value = "groups")]
    pub jwt_groups_claim: String,
    /// With `--auth cert`: the tenant of callers named by their client certificate.
    #[arg(long, env = "ASKUSER_CERT_TENANT", default_value = crate::domain::DEFAULT_TENANT)]
    pub cert_tenant: String,
    /// With `--auth cert`: the scopes of callers named by their client certificate.
    #[arg(
        long,
        env = "ASKUSER_CERT_SCOPES",
        value_delimiter = ',',
        value_parser = parse_scope,
        default_value = "runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read"
    )]
    pub cert_scopes: Vec<Scope>,
}

fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|error| error.to_string())
}

/// A scope by its name, for flags.
pub fn parse_scope(name: &str) -> Result<Scope, String> {
    Scope::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Scope::ALL.iter().map(|scope| scope.as_str()).collect();
        format!("unknown scope; expected one of {}", known.join(", "))
    })
}

impl AuthArgs {
    /// Whether serving on `listen` with these flags is allowed at all (checked before binding).
    pub fn check_listener(
        &self,
        listen: SocketAddr,
        client_ca: bool,
    ) -> Result<(), AuthConfigError> {
        if self.auth.cert && !client_ca {
            return Err(AuthConfigError::CertWithoutClientCa);
        }
        if self.auth.cert && self.cert_scopes.contains(&Scope::Operator) {
            return Err(AuthConfigError::OperatorCertificates);
        }
        let open = self.auth == AuthMethods::default();
        if open && !listen.ip().is_loopback() && !self.insecure_no_auth {
            return Err(AuthConfigError::OpenListener(listen));
        }
        Ok(())
    }

    /// The authenticator of a server on `listen` whose keys are in `keys`, serving the web inbox's
    /// pages if `pages`.
    pub async fn authenticator(
        &self,
        listen: SocketAddr,
        keys: Arc<dyn KeyStore>,
        pages: bool,
    ) -> Result<Authenticator, AuthConfigError> {
        let jwt = match self.auth.jwt {
            true => Some(JwtVerifier::new(self.jwt_settings()?).await?),
            false => None,
        };
        Ok(Authenticator {
            keys: self.auth.keys.then_some(keys),
            jwt,
            certificates: self.auth.cert.then(|| CertificatePrincipals {
                tenant: self.cert_tenant.clone(),
                scopes: self.cert_scopes.clone(),
            }),
            public_reflection: self.public_reflection || listen.ip().is_loopback(),
            public_pages: pages,
            principal_recheck: self.principal_recheck,
            answer_links: None,
        })
    }

    fn jwt_settings(&self) -> Result<JwtSettings, AuthConfigError> {
        let source = match (&self.jwt_jwks_url, &self.jwt_jwks_file) {
            (Some(url), _) => JwksSource::Url(url.clone()),
            (None, Some(path)) => JwksSource::File(path.clone()),
            (None, None) => return Err(AuthConfigError::NoJwks),
        };
        Ok(JwtSettings {
            source,
            issuer: self.jwt_issuer.clone(),
            audience: self.jwt_audience.clone(),
            leeway: self.jwt_leeway,
            claims: ClaimNames {
                tenant: self.jwt_tenant_claim.clone(),
                subject: self.jwt_subject_claim.clone(),
                scopes: self.jwt_scopes_claim.clone(),
                groups: self.jwt_groups_claim.clone(),
            },
        })
    }
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn methods_parse() {
        assert_eq!("none".parse(), Ok(AuthMethods::default()));
        assert_eq!(
            "keys,jwt".parse(),
            Ok(AuthMethods {
                keys: true,
                jwt: true,
                cert: false,
            })
        );
        assert_eq!(
            "cert".parse(),
            Ok(AuthMethods {
                cert: true,
                ..AuthMethods::default()
            })
        );
        assert!("none,keys".parse::<AuthMethods>().is_err());
        assert!("password".parse::<AuthMethods>().is_err());
    }
}
