//! TLS of the gRPC listener: the server's certificate and, for mTLS, the authority its clients'
//! certificates must chain to, all re-read from their PEM files when the files change.

mod common_name;
mod incoming;
mod reload;
mod server_config;

use std::path::PathBuf;

pub use common_name::common_name;
pub use incoming::tls_incoming;
pub use reload::watch_files;
pub use server_config::load_server_config;

/// The PEM files the listener's TLS is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain the server presents, leaf first.
    pub cert: PathBuf,
    /// The private key of the leaf certificate.
    pub key: PathBuf,
    /// Certificates of the authorities a client's certificate must chain to; `None`: clients
    /// present none.
    pub client_ca: Option<PathBuf>,
}

/// Why the TLS files cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("{path} holds no PEM private key: {reason}")]
    NoKey { path: PathBuf, reason: String },
    #[error("{path}: {reason}")]
    BadPem { path: PathBuf, reason: String },
    #[error("client CA {path}: {reason}")]
    ClientCa { path: PathBuf, reason: String },
    #[error("TLS: {0}")]
    Rustls(#[from] tokio_rustls::rustls::Error),
}
