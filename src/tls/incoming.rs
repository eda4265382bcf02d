//! The TLS listener: TCP connections from the listener are handshaken concurrently, each with the
//! configuration current when it arrived, and handed to the gRPC server once secured.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::TcpIncoming;
use tracing::debug;

/// How long a client may take to complete its handshake: one that stalls holds no task longer.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshaken connections waiting for the server to take them.
const READY_BACKLOG: usize = 64;

/// The secured connections of `tcp`. A failed handshake is logged and dropped: it is the client's
/// problem and must not stop the server.
pub fn tls_incoming(
    mut tcp: TcpIncoming,
    configs: watch::Receiver<Arc<ServerConfig>>,
) -> impl Stream<Item = Result<TlsStream<TcpStream>, std::io::Error>> {
    let (ready, incoming) = mpsc::channel(READY_BACKLOG);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                // The server stopped accepting (shutdown): close the listener too.
                () = ready.closed() => return,
                accepted = tcp.next() => accepted,
            };
            let stream = match accepted {
                Some(Ok(stream)) => stream,
                Some(Err(error)) => {
                    // Already retried by TcpIncoming where that helps (e.g. too many open files).
                    debug!(%error, "accept failed");
                    continue;
                }
                None => return,
            };
            let acceptor = TlsAcceptor::from(Arc::clone(&configs.borrow()));
            let ready = ready.clone();
            tokio::spawn(async move {
                let peer = stream.peer_addr().ok();
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(secured)) => {
                        let _ = ready.send(Ok(secured)).await;
                    }
                    Ok(Err(error)) => debug!(?peer, %error, "TLS handshake failed"),
                    Err(_) => debug!(?peer, "TLS handshake timed out"),
                }
            });
        }
    });
    ReceiverStream::new(incoming)
}
