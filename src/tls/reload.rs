//! Certificates are rotated by replacing their files (cert-manager, a mounted secret): the files'
//! modification times and sizes are polled, and a changed set is loaded and swapped in for new
//! connections. Connections already open keep the configuration they were made with.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio_rustls::rustls::ServerConfig;
use tracing::{info, warn};

use super::{TlsError, TlsFiles, load_server_config};

/// What tells that a file changed: its modification time and size (`None` while unreadable).
type Fingerprint = Vec<Option<(SystemTime, u64)>>;

/// Loads the files now (failing if they are unusable), then re-loads them every `interval` after
/// they change; the receiver always holds the latest usable configuration. The polling ends when
/// every receiver is gone.
pub fn watch_files(
    files: TlsFiles,
    interval: Duration,
) -> Result<watch::Receiver<Arc<ServerConfig>>, TlsError> {
    let mut seen = fingerprint(&files);
    let (configs, receiver) = watch::channel(load_server_config(&files)?);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = configs.closed() => return,
                () = tokio::time::sleep(interval) => {}
            }
            let now = fingerprint(&files);
            if now == seen {
                continue;
            }
            // Remembered even when loading fails: a certificate written before its key fails once,
            // and the key's write is the next change.
            seen = now;
            match load_server_config(&files) {
                Ok(config) => {
                    info!(cert = %files.cert.display(), "TLS certificates reloaded");
                    configs.send_replace(config);
                }
                Err(error) => {
                    warn!(%error, "TLS files changed but cannot be used; keeping the previous ones");
                }
            }
        }
    });
    Ok(receiver)
}

fn fingerprint(files: &TlsFiles) -> Fingerprint {
    [
        Some(&files.cert),
        Some(&files.key),
        files.client_ca.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|path| {
        // `metadata` follows symbolic links, so a swapped link target (Kubernetes secrets)
        // shows as a change.
        let metadata = std::fs::metadata(path).ok()?;
        Some((metadata.modified().ok()?, metadata.len()))
    })
    .collect()
}
