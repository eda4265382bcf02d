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

/// The credential the request was authenticated with, for its stream to check again; none
/// without a bearer credential (`--auth none`, a client certificate).
pub fn credential<T>(request: &Request<T>) -> Option<crate::auth::Credential> {
    request
        .extensions()
        .get::<crate::auth::Credential>()
        .cloned()
}
