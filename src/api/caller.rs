//! The principal a request acts as.

use tonic::Request;

use crate::domain::Principal;

/// The principal authentication put on the request; the anonymous principal of a server without
/// authentication when there is none (authentication, when on, always puts one or refuses).
pub fn caller<T>(request: &Request<T>) -> Principal {
    request
        .extensions()
        .get::<Principal>()
        .cloned()
        .unwrap_or_else(Principal::anonymous)
}
