//! Pages of other origins reach the API only when `--cors-origin` names them.

use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may cache a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The headers gRPC-Web pages send.
const REQUEST_HEADERS: [&str; 6] = [
    "authorization",
    "content-type",
    "grpc-timeout",
    "x-grpc-web",
    "x-user-agent",
    "traceparent",
];

/// The headers a gRPC-Web page must be able to read: the call's status and its details.
const RESPONSE_HEADERS: [&str; 3] = ["grpc-status", "grpc-message", "grpc-status-details-bin"];

/// The CORS policy for `origins`: exactly those origins may call, with the headers gRPC-Web needs;
/// no origin at all when the list is empty (same-origin pages need no CORS).
pub fn cors(origins: &[HeaderValue]) -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins.iter().cloned()))
        .allow_methods([Method::POST, Method::OPTIONS])
        .allow_headers(REQUEST_HEADERS.map(HeaderName::from_static))
        .expose_headers(RESPONSE_HEADERS.map(HeaderName::from_static))
        .max_age(PREFLIGHT_MAX_AGE)
}
