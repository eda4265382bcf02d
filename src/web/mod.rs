//! Browsers: the web inbox's pages served at `/` on the gRPC port, and the API reached with
//! gRPC-Web on the same port (HTTP/1.1 accepted), from pages of other origins only when
//! `--cors-origin` names them.

mod browser;
mod cors;
mod pages;
mod request_guard;

pub use browser::{BrowserLayer, BrowserService};
pub use cors::cors;
pub use pages::{is_page_path, respond};
pub use request_guard::{GuardError, GuardSettings, RequestGuardLayer, allowed_host};

/// A short plain-text answer of the port's own (a page not found, a request the guard refuses),
/// with whichever body type its router speaks.
fn plain_text<B>(status: http::StatusCode, body: B) -> http::Response<B> {
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
