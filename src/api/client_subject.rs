//! Who a verified client certificate names, as a handler sees it on its request.

use tonic::Request;

use crate::tls::common_name;

/// The common name (CN) of the certificate the client presented on this request's connection,
/// when the listener verified one (mTLS, `--tls-client-ca`); `None` without TLS, without a client
/// certificate, or when its subject has no common name.
pub fn client_subject<T>(request: &Request<T>) -> Option<String> {
    let certificates = request.peer_certs()?;
    common_name(certificates.first()?.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_tls_has_no_client_subject() {
        assert_eq!(client_subject(&Request::new(())), None);
    }
}
