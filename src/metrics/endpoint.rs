//! The Prometheus endpoint: `GET /metrics` on a listener of its own (`--metrics-listen`).
//!
//! Not on the gRPC port: that one faces clients (and, with `--auth`, every request there must
//! authenticate), while a scrape comes from inside the operator's network with no credentials.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

/// How often histograms' recent samples are folded into what a scrape renders.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The text exposition format, version 0.0.4.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot record metrics: {0}")]
    Install(#[from] BuildError),
    #[error("cannot listen for metrics scrapes on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The process's metrics recorder with the listener its scrapes come to.
pub struct MetricsEndpoint {
    handle: PrometheusHandle,
    listener: TcpListener,
}

impl MetricsEndpoint {
    /// Installs the process-wide recorder (from here on the layers' metrics are kept) and binds
    /// the listener.
    pub async fn bind(addr: SocketAddr) -> Result<Self, MetricsError> {
        let mut builder = PrometheusBuilder::new();
        for (name, buckets) in super::HISTOGRAMS {
            builder = builder.set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)?;
        }
        let handle = builder.install_recorder()?;
        super::describe();
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| MetricsError::Listen { addr, source })?;
        Ok(Self { handle, listener })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves scrapes until `shutdown` completes.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let upkeep = self.handle.clone();
        let upkeep = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(UPKEEP_INTERVAL);
            loop {
                ticks.tick().await;
                upkeep.run_upkeep();
            }
        });
        let handle = self.handle;
        let router = Router::new().route(
            "/metrics",
            get(move || {
                let handle = handle.clone();
                async move { ([(CONTENT_TYPE, TEXT_FORMAT)], handle.render()) }
            }),
        );
        if let Err(error) = axum::serve(self.listener, router)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::warn!(%error, "the metrics endpoint stopped");
        }
        upkeep.abort();
    }
}
