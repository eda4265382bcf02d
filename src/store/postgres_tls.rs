//! PostgreSQL over TLS as libpq's `sslmode` and `sslrootcert` say, through rustls.
//!
//! tokio-postgres itself knows `disable`, `prefer` and `require`, and neither `verify-*` nor
//! `sslrootcert`: those two are taken out of the URL here and become the certificate verifier.
//!
//! | sslmode       | TLS                        | the server's certificate                       |
//! |---------------|----------------------------|------------------------------------------------|
//! | `disable`     | never                      | -                                              |
//! | `prefer`      | if the server offers it    | not verified                                   |
//! | `require`     | always                     | not verified; with `sslrootcert`, as verify-ca |
//! | `verify-ca`   | always                     | chains to `sslrootcert` (or the public roots)  |
//! | `verify-full` | always                     | as verify-ca, and names the host connected to  |

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{
    CryptoProvider, ring, verify_tls12_signature, verify_tls13_signature,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error as RustlsError, RootCertStore,
    SignatureScheme,
};

use super::StoreError;

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verification {
    /// Encryption only, as libpq's `prefer` and `require`: open to an active man in the middle.
    None,
    /// The certificate chains to a trusted root (`verify-ca`).
    Chain,
    /// And it names the host connected to (`verify-full`).
    ChainAndName,
}

/// A database URL's TLS settings, taken out of it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct DatabaseTls {
    /// The URL without the settings tokio-postgres does not know.
    pub url: String,
    /// `sslmode=verify-*` given: TLS is required, whatever tokio-postgres read.
    required: bool,
    verification: Verification,
    root_certificates: Option<PathBuf>,
}

impl DatabaseTls {
    /// The TLS settings of `url`, a `postgres://` URL or a `key=value` connection string.
    pub fn of(url: &str) -> Self {
        let (url, taken) = take_settings(url);
        let mut mode = None;
        let mut root_certificates = None;
        for (key, value) in taken {
            match key {
                "sslmode" => mode = Some(value),
                _ => root_certificates = Some(PathBuf::from(value)),
            }
        }
        let with_root = root_certificates.is_some();
        let (required, verification) = match mode.as_deref() {
            Some("verify-full") => (true, Verification::ChainAndName),
            Some("verify-ca") => (true, Verification::Chain),
            Some("require") if with_root => (false, Verification::Chain),
            Some(_) | None => (false, Verification::None),
        };
        let mut settings = DatabaseTls {
            url,
            required,
            verification,
            root_certificates,
        };
        // Other modes stay in the URL for tokio-postgres, which refuses unknown ones.
        if let Some(other) = mode.filter(|mode| !mode.starts_with("verify-")) {
            settings.url = put_back(&settings.url, &other);
        }
        settings
    }

    /// Requires TLS of `config` when a `verify-*` mode was given.
    pub fn apply(&self, config: &mut tokio_postgres::Config) {
        if self.required {
            config.ssl_mode(SslMode::Require);
        }
    }

    /// The connector that makes TLS connections as the settings say.
    pub fn connector(&self) -> Result<MakeRustlsConnect, StoreError> {
        let provider = Arc::new(ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Postgres(format!("TLS: {e}")))?;
        let config = match self.verification {
            Verification::None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth(),
            Verification::Chain | Verification::ChainAndName => {
                let roots = Arc::new(self.roots()?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| StoreError::Postgres(format!("TLS: {e}")))?;
                if self.verification == Verification::Chain {
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
                        .with_no_client_auth()
                } else {
                    builder.with_webpki_verifier(webpki).with_no_client_auth()
                }
            }
        };
        Ok(MakeRustlsConnect::new(config))
    }

    /// The roots of `sslrootcert`, or the public web's (Mozilla's) when none is named, so that a
    /// database with a publicly trusted certificate needs no file.
    fn roots(&self) -> Result<RootCertStore, StoreError> {
        let Some(path) = &self.root_certificates else {
            return Ok(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            });
        };
        let mut roots = RootCertStore::empty();
        for certificate in read_certificates(path)? {
            roots.add(certificate).map_err(|e| {
                StoreError::Postgres(format!("sslrootcert {}: {e}", path.display()))
            })?;
        }
        Ok(roots)
    }
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, StoreError> {
    let unusable =
        |reason: String| StoreError::Postgres(format!("sslrootcert {}: {reason}", path.display()));
    let pem = std::fs::read(path).map_err(|e| unusable(e.to_string()))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(e.to_string()))?;
    if certificates.is_empty() {
        return Err(unusable("holds no PEM certificate".into()));
    }
    Ok(certificates)
}

/// The settings taken out of connection strings.
const TAKEN: [&str; 2] = ["sslmode", "sslrootcert"];

/// `url` without `sslmode` and `sslrootcert`, and their values (decoded).
fn take_settings(url: &str) -> (String, Vec<(&'static str, String)>) {
    let mut taken = Vec::new();
    let mut keep = |pair: &str, decode: fn(&str) -> String| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match TAKEN.iter().find(|taken| **taken == key) {
            Some(name) => {
                taken.push((*name, decode(value)));
                false
            }
            None => true,
        }
    };
    let rest = if url.contains("://") {
        match url.split_once('?') {
            Some((location, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| keep(pair, percent_decoded))
                    .collect();
                if kept.is_empty() {
                    location.to_owned()
                } else {
                    format!("{location}?{}", kept.join("&"))
                }
            }
            None => url.to_owned(),
        }
    } else {
        url.split_whitespace()
            .filter(|pair| keep(pair, unquoted))
            .collect::<Vec<_>>()
            .join(" ")
    };
    (rest, taken)
}

/// `url` with `sslmode=mode` added back.
fn put_back(url: &str, mode: &str) -> String {
    if !url.contains("://") {
        return format!("{url} sslmode={mode}");
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}sslmode={mode}")
}

fn percent_decoded(value: &str) -> String {
    percent_encoding::percent_decode_str(value)
        .decode_utf8_lossy()
        .into_owned()
}

fn unquoted(value: &str) -> String {
    value.trim_matches('\'').to_owned()
}

/// Accepts any certificate (`prefer`, `require`): the connection is encrypted, and the handshake's
/// signatures are still checked against the certificate presented.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, RustlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must reach a trusted root; the name in the certificate is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, RustlsError> {
        // The name is checked after the chain: a wrong name means the chain was good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(RustlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, RustlsError> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_and_root_files_leave_the_url_tokio_postgres_reads() {
        let tls = DatabaseTls::of(
            "postgres://u:p@db:5432/x?sslmode=verify-full&application_name=a&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(tls.url, "postgres://u:p@db:5432/x?application_name=a");
        assert!(tls.required);
        assert_eq!(tls.verification, Verification::ChainAndName);
        assert_eq!(tls.root_certificates, Some(PathBuf::from("/tmp/ca.pem")));
    }

    #[test]
    fn modes_tokio_postgres_knows_stay_in_the_url() {
        let tls = DatabaseTls::of("postgres://db/x?sslmode=require");
        assert_eq!(tls.url, "postgres://db/x?sslmode=require");
        assert!(!tls.required);
        assert_eq!(tls.verification, Verification::None);
        let tls = DatabaseTls::of("postgres://db/x?sslmode=require&sslrootcert=ca.pem");
        assert_eq!(tls.verification, Verification::Chain);
        let tls = DatabaseTls::of("postgres://db/x");
        assert_eq!(tls.url, "postgres://db/x");
        assert_eq!(tls.verification, Verification::None);
    }

    #[test]
    fn key_value_strings_are_read_too() {
        let tls = DatabaseTls::of("host=db user=u sslmode=verify-ca sslrootcert='/ca.pem'");
        assert_eq!(tls.url, "host=db user=u");
        assert_eq!(tls.verification, Verification::Chain);
        assert_eq!(tls.root_certificates, Some(PathBuf::from("/ca.pem")));
    }
}
