//! Who is calling: a tower layer around every service that authenticates each request into a
//! [`Principal`] (put in the request's extensions for the handlers) and checks the scope its RPC
//! needs (see `docs/security.md`).

pub mod answer_link;
pub mod api_key;
mod jwt;
mod recheck;
mod scopes;
mod settings;

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use tracing::{debug, warn};

pub use answer_link::{AnswerLinks, LinkClaims, LinkError, LinkSecretError};
pub use jwt::{ClaimNames, JwksSource, JwtSettings, JwtVerifier};
pub use recheck::Credential;
pub use scopes::{Access, MCP_PATH, access};
pub use settings::{AuthArgs, AuthConfigError, AuthMethods, parse_scope};

use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};

use crate::domain::{AuthMethod, Principal, Scope};
use crate::store::{KeyStore, StoreError};
use crate::tls::common_name;

/// Errors of authentication: each becomes a status in `api::error`.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no credentials: send `authorization: Bearer <API key or token>`")]
    MissingCredentials,
    #[error("invalid credentials: {0}")]
    InvalidCredentials(String),
    #[error("this call needs the scope {}", .0.as_str())]
    MissingScope(Scope),
    #[error("{0}: ask for a new one")]
    AnswerLink(LinkError),
    #[error("an answer link opens GetRun of its run and ResumeRun of its call, nothing else")]
    AnswerLinkOtherRpc,
    #[error("JWKS: {0}")]
    Jwks(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AuthError {
    fn invalid(error: &impl std::fmt::Display) -> AuthError {
        AuthError::InvalidCredentials(error.to_string())
    }
}

/// How callers may prove who they are (`--auth`).
#[derive(Default)]
pub struct Authenticator {
    /// API keys, looked up in the store on every request: a revoked key fails at once, on every
    /// replica.
    pub keys: Option<Arc<dyn KeyStore>>,
    pub jwt: Option<JwtVerifier>,
    /// Callers named by a verified client certificate (`--auth cert`), when they send no bearer
    /// credential.
    pub certificates: Option<CertificatePrincipals>,
    /// Reflection needs no principal (`--public-reflection`, or a loopback listener).
    pub public_reflection: bool,
    /// The web inbox's page and assets need no principal (served unless `--no-ui`).
    pub public_pages: bool,
    /// How often open streams authenticate their credential again (`--principal-recheck`).
    pub principal_recheck: Duration,
    /// Answer links' signer, when links are on: a link token is taken whatever `--auth` says.
    pub answer_links: Option<Arc<AnswerLinks>>,
}

/// The RPCs an answer link may call: reading its run (the page shows the call) and answering.
const LINK_PATHS: [&str; 2] = [
    "/askuser.v1.AgentService/GetRun",
    "/askuser.v1.AgentService/ResumeRun",
];

impl Authenticator {
    /// Whether any method is on; without one every caller is [`Principal::anonymous`].
    fn enabled(&self) -> bool {
        self.keys.is_some() || self.jwt.is_some() || self.certificates.is_some()
    }

    async fn principal(&self, credential: &str) -> Result<Principal, AuthError> {
        match (&self.keys, &self.jwt) {
            (Some(keys), _) if api_key::looks_like_key(credential) => {
                let record = keys
                    .key_by_hash(&api_key::hash(credential))
                    .await?
                    .filter(|record| record.revoked_ms.is_none())
                    .ok_or_else(|| {
                        AuthError::InvalidCredentials("unknown or revoked API key".into())
                    })?;
                Ok(Principal {
                    tenant: record.tenant,
                    subject: format!("key:{}", record.name),
                    scopes: record.scopes,
                    groups: Vec::new(),
                    method: AuthMethod::ApiKey,
                    link: None,
                })
            }
            (_, Some(jwt)) => jwt.verify(credential).await,
            _ => Err(AuthError::InvalidCredentials(
                "not a credential this server accepts".into(),
            )),
        }
    }

    /// The principal a request acts as, if its RPC lets it through: none for what is open to
    /// anyone (health, public reflection, the inbox's pages), which reads no principal.
    pub async fn authorize(
        &self,
        method: &http::Method,
        path: &str,
        authorization: Option<&str>,
        client_name: Option<String>,
    ) -> Result<Option<Principal>, AuthError> {
        let access = access(method, path);
        // An answer link stands for one call, with or without `--auth`: who it was made for is
        // recorded as the settler, and it opens nothing else.
        if let (Some(links), Some(token)) = (
            &self.answer_links,
            bearer(authorization).filter(|credential| answer_link::is_link_token(credential)),
        ) {
            let principal = links.principal(token).map_err(AuthError::AnswerLink)?;
            if !LINK_PATHS.contains(&path) {
                return Err(AuthError::AnswerLinkOtherRpc);
            }
            return Ok(Some(principal));
        }
        if !self.enabled() {
            return Ok(Some(Principal::anonymous()));
        }
        let open = match access {
            Access::Open => true,
            Access::Reflection => self.public_reflection,
            Access::Page => self.public_pages,
            Access::Scope(_) | Access::AnyScope(_) | Access::Unknown => false,
        };
        if open {
            return Ok(None);
        }
        let credential = bearer(authorization);
        let principal = match (credential, &self.certificates, client_name) {
            (Some(credential), _, _) => self.principal(credential).await?,
            (None, Some(certificates), Some(name)) => certificates.principal(name),
            (None, _, _) => return Err(AuthError::MissingCredentials),
        };
        let needed: &[Scope] = match access {
            Access::Scope(ref scope) => std::slice::from_ref(scope),
            Access::AnyScope(scopes) => scopes,
            // Pages without the inbox are paths of no service.
            Access::Unknown | Access::Page => &[Scope::Admin],
            Access::Open | Access::Reflection => &[],
        };
        match needed.first() {
            Some(&first) if !needed.iter().any(|&scope| principal.may(scope)) => {
                Err(AuthError::MissingScope(first))
            }
            _ => Ok(Some(principal)),
        }
    }
}

/// The credential of an `authorization: Bearer <credential>` header, if any.
fn bearer(authorization: Option<&str>) -> Option<&str> {
    authorization
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|credential| !credential.is_empty())
}

/// Who a verified client certificate names (`--auth cert`): its common name is the subject
/// (`cert:<CN>`); the tenant and scopes are the server's settings for every certificate.
#[derive(Clone, Debug)]
pub struct CertificatePrincipals {
    pub tenant: String,
    pub scopes: Vec<Scope>,
}

impl CertificatePrincipals {
    fn principal(&self, common_name: String) -> Principal {
        Principal {
            tenant: self.tenant.clone(),
            subject: format!("cert:{common_name}"),
            scopes: self.scopes.clone(),
            groups: Vec::new(),
            method: AuthMethod::Certificate,
            link: None,
        }
    }
}

/// Wraps every service in [`AuthService`].
#[derive(Clone)]
pub struct AuthLayer {
    authenticator: Arc<Authenticator>,
}

impl AuthLayer {
    pub fn new(authenticator: Authenticator) -> AuthLayer {
        AuthLayer {
            authenticator: Arc::new(authenticator),
        }
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService {
            inner,
            authenticator: Arc::clone(&self.authenticator),
        }
    }
}

/// Authenticates and authorizes each request before `S` sees it; a refused one is answered
/// with its status here.
#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    authenticator: Arc<Authenticator>,
}

impl<S, ReqBody, ResBody> tower::Service<http::Request<ReqBody>> for AuthService<S>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<ReqBody>) -> Self::Future {
        // The clone that was made ready serves this request; a fresh clone waits for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let authenticator = Arc::clone(&self.authenticator);
        Box::pin(async move {
            let authorization = request
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok());
            let path = request.uri().path().to_owned();
            let client_name = client_common_name(&request);
            match authenticator
                .authorize(request.method(), &path, authorization, client_name)
                .await
            {
                Ok(principal) => {
                    // Streams authenticate a bearer credential again while they live.
                    let recheck = match principal.as_ref().map(|principal| principal.method) {
                        Some(AuthMethod::ApiKey | AuthMethod::Jwt) => bearer(authorization)
                            .map(|bearer| Credential::new(Arc::clone(&authenticator), bearer)),
                        _ => None,
                    };
                    if let Some(principal) = principal {
                        request.extensions_mut().insert(principal);
                    }
                    if let Some(credential) = recheck {
                        request.extensions_mut().insert(credential);
                    }
                    inner.call(request).await
                }
                Err(error) => {
                    match &error {
                        AuthError::Store(_) | AuthError::Jwks(_) => {
                            warn!(%error, path, "cannot authenticate")
                        }
                        _ => debug!(%error, path, "refused"),
                    }
                    // MCP hosts speak HTTP: a refusal is a 401 (or 403) they understand.
                    if path == scopes::MCP_PATH {
                        return Ok(mcp_refusal(&error));
                    }
                    Ok(tonic::Status::from(error).into_http())
                }
            }
        })
    }
}

/// An HTTP refusal of the MCP endpoint: 403 when the credential lacks the scope, 401 (with the
/// challenge MCP clients look for) otherwise.
fn mcp_refusal<B: Default>(error: &AuthError) -> http::Response<B> {
    let status = match error {
        AuthError::MissingScope(_) | AuthError::AnswerLinkOtherRpc => http::StatusCode::FORBIDDEN,
        AuthError::Store(_) | AuthError::Jwks(_) => http::StatusCode::SERVICE_UNAVAILABLE,
        _ => http::StatusCode::UNAUTHORIZED,
    };
    let mut response = http::Response::new(B::default());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer realm=\"askuser\""),
    );
    response
}

/// The common name of the client certificate the listener verified on this request's connection
/// (mTLS), if any.
fn client_common_name<B>(request: &http::Request<B>) -> Option<String> {
    let info = request
        .extensions()
        .get::<TlsConnectInfo<TcpConnectInfo>>()?;
    let certificates = info.peer_certs()?;
    common_name(certificates.first()?.as_ref())
}
