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
