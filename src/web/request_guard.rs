//! The one guard in front of every HTTP face of the port (the API, gRPC-Web, the inbox's pages,
//! whatever is added later), before authentication reads anything:
//!
//! - an RPC path (`/package.Service/Method`) takes only gRPC content types, anything else is
//!   HTTP 415: a page of any origin can POST `text/plain` without a preflight, and tonic would run
//!   the call whatever the content type;
//! - with `--auth none`, where no credential stands between a browser and the API, the `Host` (or
//!   `:authority`) must be a loopback name or address, or one `--allowed-host` names (DNS
//!   rebinding gives a page another name for 127.0.0.1), and an `Origin`, when sent, must be the
//!   server's own or a `--cors-origin`. Refused: PERMISSION_DENIED (`HOST_NOT_ALLOWED`,
//!   `ORIGIN_NOT_ALLOWED`) for gRPC, HTTP 403 otherwise. Health is exempt: probes address the
//!   server by whatever name they have, and it tells nothing.
//!
//! See docs/security.md, "Browsers and the Host header".

use std::net::IpAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::uri::Authority;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri, header};
use tonic::body::Body;
use tower::{Layer, Service};
use tracing::debug;

/// Why a request is refused before any handler.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error(
        "content type {0:?} is not gRPC: RPC paths take application/grpc or application/grpc-web"
    )]
    NotGrpc(String),
    #[error(
        "host {0:?} is not allowed: an unauthenticated server answers loopback names and the \
         names --allowed-host gives"
    )]
    HostNotAllowed(String),
    #[error("origin {0:?} is not allowed: only the server's own and those --cors-origin names")]
    OriginNotAllowed(String),
}

/// What the guard lets through (`serve` flags).
#[derive(Clone, Debug, Default)]
pub struct GuardSettings {
    /// `--auth none`: the Host and Origin rules apply.
    pub open: bool,
    /// `--insecure-no-auth`: the server faces a network through something that authenticates
    /// callers; the Host rule then applies only once `--allowed-host` names the hosts.
    pub insecure_no_auth: bool,
    /// `--allowed-host`: names (or addresses) admitted besides loopback, lowercase.
    pub allowed_hosts: Vec<String>,
    /// `--cors-origin`: origins whose pages may call.
    pub cors_origins: Vec<HeaderValue>,
}

impl GuardSettings {
    /// Whether a request to `uri` with `headers` may go on.
    pub fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), GuardError> {
        let rpc = rpc_service(uri.path());
        if rpc.is_some() && !is_grpc_content_type(headers) {
            let content_type = headers
                .get(header::CONTENT_TYPE)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                .unwrap_or_default();
            return Err(GuardError::NotGrpc(content_type));
        }
        if !self.open || rpc == Some("grpc.health.v1.Health") {
            return Ok(());
        }
        // HTTP/2 names the host in `:authority` (the URI), HTTP/1.1 in `Host` (or an absolute
        // URI): each one given must pass. None at all: no browser sends such a request.
        let hosts: Vec<&str> = uri
            .authority()
            .map(Authority::as_str)
            .into_iter()
            .chain(
                headers
                    .get_all(header::HOST)
                    .iter()
                    .map(|value| value.to_str().unwrap_or("\u{fffd}")),
            )
            .collect();
        let host_rule = !self.insecure_no_auth || !self.allowed_hosts.is_empty();
        let mut host = None;
        for text in &hosts {
            let parsed = text
                .parse::<Authority>()
                .ok()
                .filter(|a| !a.as_str().contains('@'));
            match parsed {
                Some(parsed) if !host_rule || self.host_allowed(parsed.host()) => {
                    host.get_or_insert(parsed);
                }
                _ => return Err(GuardError::HostNotAllowed((*text).to_owned())),
            }
        }
        match headers.get(header::ORIGIN) {
            Some(origin) if !self.origin_allowed(origin, host.as_ref()) => Err(
                GuardError::OriginNotAllowed(String::from_utf8_lossy(origin.as_bytes()).into()),
            ),
            _ => Ok(()),
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = normalise_host(host);
        is_loopback(&host) || self.allowed_hosts.contains(&host)
    }

    /// A `--cors-origin`, or the origin of the host the request addressed (its scheme's default
    /// port when the Host names none).
    fn origin_allowed(&self, origin: &HeaderValue, host: Option<&Authority>) -> bool {
        if self
            .cors_origins
            .iter()
            .any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(origin.as_bytes()))
        {
            return true;
        }
        let (Some(host), Ok(origin)) = (host, origin.to_str().unwrap_or("").parse::<Uri>()) else {
            return false;
        };
        let default_port = match origin.scheme_str() {
            Some("http") => 80,
            Some("https") => 443,
            _ => return false,
        };
        origin.host().map(normalise_host) == Some(normalise_host(host.host()))
            && origin.port_u16().unwrap_or(default_port) == host.port_u16().unwrap_or(default_port)
    }
}

/// A `--allowed-host` value: a name or address without port, scheme or path, lowercase.
pub fn allowed_host(text: &str) -> Result<String, String> {
    let plain = text.parse::<Authority>().is_ok_and(|authority| {
        authority.port().is_none() && authority.as_str() == authority.host()
    });
    match plain && !text.is_empty() {
        true => Ok(normalise_host(text)),
        false => Err("expected a host name or address, such as askuser.internal (no port)".into()),
    }
}

/// Lowercase, without the trailing dot of a fully qualified name.
fn normalise_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// `localhost`, a name under `localhost.` (RFC 6761 keeps them on this machine), `127.0.0.0/8`,
/// `[::1]`.
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host)
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The service of an RPC path `/package.Service/Method` (a gRPC service's name always has its
/// package); `None` for the pages' paths.
fn rpc_service(path: &str) -> Option<&str> {
    let (service, _method) = path.strip_prefix('/')?.split_once('/')?;
    service.contains('.').then_some(service)
}

/// `application/grpc`, `application/grpc-web` or `application/grpc-web-text`, each alone or with
/// a `+codec`.
fn is_grpc_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let media = String::from_utf8_lossy(value.as_bytes());
    let media = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    [
        "application/grpc",
        "application/grpc-web",
        "application/grpc-web-text",
    ]
    .iter()
    .any(|kind| {
        media
            .strip_prefix(kind)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('+'))
    })
}

/// Wraps the router in [`RequestGuard`].
#[derive(Clone, Debug)]
pub struct RequestGuardLayer {
    settings: Arc<GuardSettings>,
}

impl RequestGuardLayer {
    pub fn new(settings: GuardSettings) -> RequestGuardLayer {
        RequestGuardLayer {
            settings: Arc::new(settings),
        }
    }
}

impl<S> Layer<S> for RequestGuardLayer {
    type Service = RequestGuard<S>;

    fn layer(&self, inner: S) -> RequestGuard<S> {
        RequestGuard {
            inner,
            settings: Arc::clone(&self.settings),
        }
    }
}

/// Answers a refused request itself; `S` sees only the others.
#[derive(Clone, Debug)]
pub struct RequestGuard<S> {
    inner: S,
    settings: Arc<GuardSettings>,
}

impl<S, ReqBody> Service<Request<ReqBody>> for RequestGuard<S>
where
    S: Service<Request<ReqBody>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    ReqBody: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        match self.settings.check(request.uri(), request.headers()) {
            Ok(()) => {
                // The clone that was made ready serves this request; a fresh one waits for the next.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                Box::pin(async move { inner.call(request).await })
            }
            Err(error) => {
                debug!(%error, path = request.uri().path(), "refused by the request guard");
                let response = refusal(error, is_grpc_content_type(request.headers()));
                Box::pin(async move { Ok(response) })
            }
        }
    }
}

/// 415 for a content type that is not gRPC; a gRPC status for a gRPC call, else 403.
fn refusal(error: GuardError, grpc: bool) -> Response<Body> {
    let status = match &error {
        GuardError::NotGrpc(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        _ if grpc => return tonic::Status::from(error).into_http(),
        _ => StatusCode::FORBIDDEN,
    };
    super::plain_text(status, Body::new(format!("{error}\n")))
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    http::HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                )
            })
            .collect()
    }

    fn open() -> GuardSettings {
        GuardSettings {
            open: true,
            ..GuardSettings::default()
        }
    }

    const RUN: &str = "/askuser.v1.AgentService/RunAgent";

    #[test]
    fn rpc_paths_take_only_grpc_content_types() {
        let guard = GuardSettings::default();
        let uri: Uri = RUN.parse().expect("uri");
        for kind in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc-web",
            "application/grpc-web+proto",
            "application/grpc-web-text",
            "application/grpc-web-text+proto",
        ] {
            let mut map = HeaderMap::new();
            map.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
            assert_eq!(guard.check(&uri, &map), Ok(()), "{kind}");
        }
        for kind in ["text/plain", "application/grpcx", "application/json"] {
            let mut map = HeaderMap::new();
            map.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
            assert!(
                matches!(guard.check(&uri, &map), Err(GuardError::NotGrpc(_))),
                "{kind}"
            );
        }
        assert!(guard.check(&uri, &HeaderMap::new()).is_err());
        // The pages' paths take what browsers send.
        let page: Uri = "/runs/abc".parse().expect("uri");
        assert_eq!(guard.check(&page, &HeaderMap::new()), Ok(()));
    }

    #[test]
    fn an_open_server_answers_loopback_hosts_and_the_named_ones() {
        let uri: Uri = "/".parse().expect("uri");
        let guard = open();
        for host in [
            "localhost",
            "localhost:50051",
            "inbox.localhost:8080",
            "127.0.0.1:50051",
            "127.3.4.5",
            "[::1]:50051",
            "LOCALHOST.",
        ] {
            let mut map = HeaderMap::new();
            map.insert(header::HOST, HeaderValue::from_static(host));
            assert_eq!(guard.check(&uri, &map), Ok(()), "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1",
            "user@localhost",
        ] {
            let mut map = HeaderMap::new();
            map.insert(header::HOST, HeaderValue::from_static(host));
            assert!(
                matches!(guard.check(&uri, &map), Err(GuardError::HostNotAllowed(_))),
                "{host}"
            );
        }
        let named = GuardSettings {
            allowed_hosts: vec!["askuser.internal".into()],
            ..open()
        };
        let map = headers(&[("host", "askuser.internal:8080")]);
        assert_eq!(named.check(&uri, &map), Ok(()));
        // The HTTP/2 authority counts too.
        let absolute: Uri = "http://evil.example/".parse().expect("uri");
        assert!(named.check(&absolute, &map).is_err());
    }

    #[test]
    fn origins_are_the_servers_own_or_named() {
        let uri: Uri = "/".parse().expect("uri");
        let guard = GuardSettings {
            cors_origins: vec![HeaderValue::from_static("https://inbox.example.com")],
            ..open()
        };
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert_eq!(guard.check(&uri, &own), Ok(()));
        let named = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://inbox.example.com"),
        ]);
        assert_eq!(guard.check(&uri, &named), Ok(()));
        for origin in ["http://evil.example", "http://127.0.0.1:3000", "null"] {
            let mut map = headers(&[("host", "127.0.0.1:8080")]);
            map.insert(header::ORIGIN, HeaderValue::from_static(origin));
            assert!(
                matches!(
                    guard.check(&uri, &map),
                    Err(GuardError::OriginNotAllowed(_))
                ),
                "{origin}"
            );
        }
    }

    #[test]
    fn insecure_no_auth_checks_hosts_only_once_named_and_health_always_passes() {
        let uri: Uri = "/".parse().expect("uri");
        let insecure = GuardSettings {
            insecure_no_auth: true,
            ..open()
        };
        let map = headers(&[("host", "askuser.internal")]);
        assert_eq!(insecure.check(&uri, &map), Ok(()));
        let foreign = headers(&[
            ("host", "askuser.internal"),
            ("origin", "http://evil.example"),
        ]);
        assert!(insecure.check(&uri, &foreign).is_err());
        let named = GuardSettings {
            allowed_hosts: vec!["askuser.example.com".into()],
            ..insecure
        };
        assert!(named.check(&uri, &map).is_err());
        let health: Uri = "/grpc.health.v1.Health/Check".parse().expect("uri");
        let probe = headers(&[
            ("host", "10.1.2.3:50051"),
            ("content-type", "application/grpc"),
        ]);
        assert_eq!(named.check(&health, &probe), Ok(()));
    }

    #[test]
    fn allowed_hosts_are_plain_names() {
        assert_eq!(
            allowed_host("AskUser.Internal"),
            Ok("askuser.internal".into())
        );
        assert_eq!(allowed_host("10.0.0.5"), Ok("10.0.0.5".into()));
        for bad in ["", "a:80", "http://a", "a/b", "u@a"] {
            assert!(allowed_host(bad).is_err(), "{bad}");
        }
    }
}
