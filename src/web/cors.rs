//! Pages of other origins reach the API (and `/mcp`) only when `--cors-origin` names them.

use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may cache a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The headers gRPC-Web pages send, and MCP hosts in a browser (`/mcp`).
const REQUEST_HEADERS: [&str; 12] = [
    "authorization",
    "content-type",
    "grpc-timeout",
    "x-grpc-web",
    "x-user-agent",
    "traceparent",
    "accept",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "mcp-method",
    "mcp-name",
];

/// The headers a page must be able to read: a gRPC-Web call's status and its details, and the
/// session an MCP endpoint gives.
const RESPONSE_HEADERS: [&str; 4] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "mcp-session-id",
];

/// The CORS policy for `origins`: exactly those origins may call, with the headers gRPC-Web needs;
/// no origin at all when the list is empty (same-origin pages need no CORS).
pub fn cors(origins: &[HeaderValue]) -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins.iter().cloned()))
        // GET and DELETE: an MCP host's event stream and the end of its session.
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers(REQUEST_HEADERS.map(HeaderName::from_static))
        .expose_headers(RESPONSE_HEADERS.map(HeaderName::from_static))
        .max_age(PREFLIGHT_MAX_AGE)
}
