//! The web inbox's files, embedded in the binary from `ui/dist/` and served where no gRPC service
//! answers: the page at `/` and `/runs/<run_id>` (it routes on the client side) and its assets.
//! Every page response carries headers that let the page load nothing but its own files and call
//! nothing but its own origin.

use std::sync::LazyLock;

use axum::body::Body;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use sha2::{Digest, Sha256};

/// The page's own scripts, styles and images (and `data:` images), calls to its own origin only;
/// no `<base>`, no form posts, no framing by other pages.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// Headers of every page response. `no-cache`: a browser revalidates each file (a 304 while its
/// ETag matches), so a new build shows at the next load.
const PAGE_HEADERS: [(&str, &str); 4] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-cache"),
];

/// The bytes of `ui/dist/<path>`, built into the binary.
macro_rules! dist_file {
    ($path:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/ui/dist/", $path))
    };
}

/// A file of the inbox.
struct Asset {
    bytes: &'static [u8],
    content_type: &'static str,
    /// A strong ETag: the SHA-256 of the bytes, quoted.
    etag: HeaderValue,
}

impl Asset {
    fn new(bytes: &'static [u8], content_type: &'static str) -> Asset {
        let digest = URL_SAFE_NO_PAD.encode(Sha256::digest(bytes));
        let etag = HeaderValue::from_str(&format!("\"{digest}\""))
            .expect("a quoted base64url digest is a valid header value");
        Asset {
            bytes,
            content_type,
            etag,
        }
    }
}

/// The inbox's files, hashed once.
struct Assets {
    index: Asset,
    script: Asset,
    style: Asset,
    icon: Asset,
}

static ASSETS: LazyLock<Assets> = LazyLock::new(|| Assets {
    index: Asset::new(dist_file!("index.html"), "text/html; charset=utf-8"),
    script: Asset::new(
        dist_file!("assets/app.js"),
        "text/javascript; charset=utf-8",
    ),
    style: Asset::new(dist_file!("assets/app.css"), "text/css; charset=utf-8"),
    icon: Asset::new(dist_file!("assets/icon.svg"), "image/svg+xml"),
});

/// Whether `path` is the page's or one of its assets': a GET or HEAD of it needs no credential.
pub fn is_page_path(path: &str) -> bool {
    is_page_route(path) || path.starts_with("/assets/")
}

/// The page's own routes: the inbox at `/`, a run at `/runs/<run_id>`, an answer link's call at
/// `/answer` (its token after `#`, which browsers never send).
fn is_page_route(path: &str) -> bool {
    path == "/"
        || path == "/answer"
        || path
            .strip_prefix("/runs/")
            .is_some_and(|run_id| !run_id.is_empty() && !run_id.contains('/'))
}

/// The file served at `path`, if any.
fn asset(path: &str) -> Option<&'static Asset> {
    let assets = &*ASSETS;
    match path {
        "/assets/app.js" => Some(&assets.script),
        "/assets/app.css" => Some(&assets.style),
        "/assets/icon.svg" => Some(&assets.icon),
        path if is_page_route(path) => Some(&assets.index),
        _ => None,
    }
}

/// Answers a request no gRPC service took: a page or asset for a GET or HEAD, 404 for any other
/// path, 405 for any other method.
pub async fn respond(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if is_grpc(&headers) {
        // A gRPC client calling a service this server lacks gets gRPC's answer, as without pages.
        return tonic::Status::unimplemented("").into_http();
    }
    let mut response = match (
        method == Method::GET || method == Method::HEAD,
        asset(uri.path()),
    ) {
        (false, _) => {
            let mut refused = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            refused
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            refused
        }
        (true, None) => text(StatusCode::NOT_FOUND, "not found\n"),
        (true, Some(asset)) if matches_etag(&headers, &asset.etag) => {
            let mut unchanged = Response::new(Body::empty());
            *unchanged.status_mut() = StatusCode::NOT_MODIFIED;
            unchanged
                .headers_mut()
                .insert(header::ETAG, asset.etag.clone());
            unchanged
        }
        (true, Some(asset)) => file(asset, method == Method::HEAD),
    };
    for (name, value) in PAGE_HEADERS {
        response.headers_mut().insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

/// Whether the request is gRPC or gRPC-Web (which is gRPC by the time it is routed).
pub(super) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"))
}

/// Whether `If-None-Match` names `etag` (or `*`): the browser's copy is current.
fn matches_etag(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        // If-None-Match compares weakly: a `W/` tag of the same bytes matches too.
        .map(|tag| tag.strip_prefix("W/").unwrap_or(tag))
        .any(|tag| tag == "*" || tag.as_bytes() == etag.as_bytes())
}

/// `asset` with its type, length and ETag; without its bytes for a HEAD.
fn file(asset: &Asset, head: bool) -> Response {
    let body = match head {
        true => Body::empty(),
        false => Body::from(asset.bytes),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(asset.bytes.len()));
    headers.insert(header::ETAG, asset.etag.clone());
    response
}

/// A short plain-text answer.
fn text(status: StatusCode, message: &'static str) -> Response {
    super::plain_text(status, Body::from(message))
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn page_paths_are_the_routes_and_the_assets() {
        for path in [
            "/",
            "/answer",
            "/runs/01J9",
            "/assets/app.js",
            "/assets/anything",
        ] {
            assert!(is_page_path(path), "{path}");
        }
        for path in [
            "/runs/",
            "/runs/a/b",
            "/runs",
            "/nope",
            "/askuser.v1.AgentService/ListRuns",
        ] {
            assert!(!is_page_path(path), "{path}");
        }
    }

    #[test]
    fn an_etag_in_if_none_match_matches_weakly_or_in_a_list() {
        let etag = &ASSETS.index.etag;
        let tag = etag.to_str().expect("ascii");
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::IF_NONE_MATCH,
                HeaderValue::from_str(value).expect("value"),
            );
            headers
        };
        assert!(matches_etag(&headers(tag), etag));
        assert!(matches_etag(&headers(&format!("\"x\", W/{tag}")), etag));
        assert!(matches_etag(&headers("*"), etag));
        assert!(!matches_etag(&headers("\"x\""), etag));
        assert!(!matches_etag(&HeaderMap::new(), etag));
        assert_ne!(ASSETS.index.etag, ASSETS.script.etag);
    }
}
