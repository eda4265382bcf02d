//! Wires the layers together and serves them: store → runtime → gRPC services, health and
//! reflection, graceful shutdown.

use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tracing::{info, warn};

use crate::api::{AdminApi, AgentApi, StreamSettings, ToolApi};
use crate::auth::AuthLayer;
use crate::config::{ServeArgs, load_agents};
use crate::health::Health;
use crate::metrics::MetricsEndpoint;
use crate::proto::v1::admin_service_server::AdminServiceServer;
use crate::proto::v1::agent_service_server::AgentServiceServer;
use crate::proto::v1::human_service_server::HumanServiceServer;
use crate::proto::v1::tool_service_server::ToolServiceServer;
use crate::runtime::Runtime;
use crate::store::{DeliveryStore, KeyStore, PostgresStore, RunStore, SqliteStore};

/// Errors that stop the server from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("runtime: {0}")]
    Runtime(#[from] crate::runtime::RuntimeError),
    #[error("cannot listen on {addr}: {source}{}", listen_hint(source))]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("tls: {0}")]
    Tls(#[from] crate::tls::TlsError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthConfigError),
    #[error("webhooks: {0}")]
    Webhooks(String),
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    #[error(transparent)]
    AnswerLinks(#[from] crate::auth::LinkSecretError),
}

/// What signs answer links: the secret of --answer-link-secret-file; else a SQLite server's own,
/// kept in its data directory; else none (PostgreSQL replicas must share a secret, so one is not
/// made up per process).
fn answer_links(
    args: &ServeArgs,
    postgres: bool,
) -> Result<Option<Arc<crate::auth::AnswerLinks>>, ServeError> {
    use crate::auth::AnswerLinks;
    let links = match (&args.answer_link_secret_file, postgres) {
        (Some(path), _) => AnswerLinks::from_file(path, args.answer_link_ttl)?,
        (None, false) => AnswerLinks::in_data_dir(&args.store.data_dir, args.answer_link_ttl)?,
        (None, true) => {
            tracing::info!(
                "answer links are off: give --answer-link-secret-file (the same file on every replica) to put them in webhooks"
            );
            return Ok(None);
        }
    };
    Ok(Some(Arc::new(links)))
}

/// What to do about a listener that cannot bind.
fn listen_hint(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::AddrInUse => {
            ": another process listens there (another askuser?); stop it, or give another address \
             with --listen HOST:PORT"
        }
        std::io::ErrorKind::PermissionDenied => {
            ": ports below 1024 need privileges; give another address with --listen HOST:PORT"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            ": no interface of this machine has that address; give another with --listen HOST:PORT"
        }
        _ => "",
    }
}

/// Runs the server until SIGINT or SIGTERM, then shuts down gracefully: builds it, binds
/// `--listen`, announces the address on stdout and serves.
pub async fn serve(args: ServeArgs) -> Result<(), ServeError> {
    ignore_file_size_signal();
    let listen = args.listen;
    let built = Built::build(args).await?;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| ServeError::Listen {
            addr: listen,
            source,
        })?;
    // Tests and scripts read this line to find a port chosen by the OS (`announced_address`).
    let mut stdout = std::io::stdout();
    let addr = listener.local_addr()?;
    writeln!(stdout, "{LISTENING}{addr}")?;
    stdout.flush()?;
    // For a person; a reader that took the first line may have closed the pipe since.
    let _ = write!(stdout, "{}", built.banner(addr));
    let _ = stdout.flush();
    built.run(listener, wait_for_signal()).await
}

/// What `serve` prints on stdout, before its address, once it listens.
pub const LISTENING: &str = "askuser listening on ";

/// The address an `askuser serve` child process announces on `stdout` (its first line), waited
/// for at most `timeout`: how the tests, the conformance runner and the bench find the port the
/// OS chose. The error says what came instead (nothing, when the server exited).
pub fn announced_address(
    stdout: std::process::ChildStdout,
    timeout: std::time::Duration,
) -> Result<std::net::SocketAddr, String> {
    use std::io::BufRead;
    let (lines, first_line) = std::sync::mpsc::channel();
    // A thread, so that a server that neither prints nor exits cannot hold the caller forever.
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = lines.send(line);
    });
    let line = first_line
        .recv_timeout(timeout)
        .map_err(|_| format!("the server did not announce its address within {timeout:?}"))?;
    line.trim()
        .strip_prefix(LISTENING)
        .and_then(|addr| addr.parse().ok())
        .ok_or_else(|| format!("the server did not start: its first line is {line:?}"))
}

/// Builds the server and serves on `listener` until `shutdown` completes, then drains and stops
/// as after a signal. What `serve` does past its listener and the signals: tests run it in-process.
pub async fn run(
    listener: TcpListener,
    args: ServeArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    Built::build(args).await?.run(listener, shutdown).await
}

/// A server built and started (store open, runtime and deliverer running), not yet listening.
pub struct Built {
    args: ServeArgs,
    store: Arc<dyn RunStore>,
    runtime: Runtime,
    auth: AuthLayer,
    health: Arc<Health>,
    /// Health, reflection and the askuser services, the web inbox's pages with `--ui`.
    routes: Routes,
    /// The TLS settings, reloaded as the files change.
    tls_configs: Option<tokio::sync::watch::Receiver<Arc<tokio_rustls::rustls::ServerConfig>>>,
    metrics: Option<MetricsEndpoint>,
    postgres: bool,
    store_watch: tokio::task::JoinHandle<()>,
    deliverer: tokio::task::JoinHandle<()>,
    stop_deliveries: tokio_util::sync::CancellationToken,
}

impl Built {
    /// What the server says once it listens on `addr` (after the line scripts read).
    pub fn banner(&self, addr: std::net::SocketAddr) -> String {
        crate::banner::banner(&self.args, addr, &self.runtime.agent_ids())
    }

    /// Checks the settings, opens the store and starts everything but the listener: what can
    /// stop the start (unusable TLS files, a bad agents file, an unreachable store) does so here,
    /// before the address is announced.
    pub async fn build(args: ServeArgs) -> Result<Built, ServeError> {
        args.auth
            .check_listener(args.listen, args.tls_client_ca.is_some())?;
        let limits = args.limits();
        let agents = load_agents(args.config.as_deref(), &limits)?;
        let database_url = args.store.database_url()?;
        // Bound first: the recorder is in place before anything is counted.
        let metrics = match args.metrics_listen {
            Some(addr) => Some(MetricsEndpoint::bind(addr).await?),
            None => None,
        };
        let store: Arc<dyn RunStore> = match &database_url {
            Some(url) => Arc::new(
                PostgresStore::connect(url.expose(), &args.store.postgres_settings()).await?,
            ),
            None => Arc::new(SqliteStore::open(
                &args.store.sqlite_path(),
                args.store.sqlite_synchronous,
            )?),
        };
        let answer_links = answer_links(&args, database_url.is_some())?;
        let mut authenticator = args
            .auth
            .authenticator(
                args.listen,
                Arc::clone(&store) as Arc<dyn KeyStore>,
                args.ui(),
            )
            .await?;
        authenticator.answer_links = answer_links.clone();
        let auth = AuthLayer::new(authenticator);
        if args.auth.auth != crate::auth::AuthMethods::default() {
            warn_hidden_default_runs(store.as_ref()).await;
        }
        if let Some(name) = &args.webhook_secret_env {
            crate::webhooks::secret_from_env(name)
                .map_err(|error| crate::config::ConfigError::WebhookSecret(error.to_string()))?;
        }
        let sealer = args
            .webhook_secrets_key_env
            .as_deref()
            .map(crate::webhooks::Sealer::from_env)
            .transpose()
            .map_err(crate::config::ConfigError::WebhookSecret)?;
        let tenant_secrets = Arc::new(crate::webhooks::TenantSecrets::new(
            Arc::clone(&store) as Arc<dyn DeliveryStore>,
            sealer,
            args.webhook_secret_overlap,
        ));
        let runtime = Runtime::new(Arc::clone(&store), agents, args.runtime_config());
        runtime.start().await?;
        let stop_deliveries = tokio_util::sync::CancellationToken::new();
        let deliverer = crate::webhooks::start(
            Arc::clone(&store),
            Arc::clone(&tenant_secrets),
            crate::webhooks::DelivererSettings {
                answer_links,
                ..args.deliverer_settings()
            },
            stop_deliveries.clone(),
        )
        .map_err(|error| ServeError::Webhooks(error.to_string()))?;

        let (reporter, health_service) = tonic_health::server::health_reporter();
        let health = Health::serving(reporter).await;
        let store_watch = tokio::spawn(
            Arc::clone(&health).watch_store(Arc::clone(&store), args.store_unhealthy_after),
        );
        let routes = routes(&args, health_service, &runtime, &store, tenant_secrets)?;

        // Unusable TLS files stop the start, before the address is announced.
        let tls_configs = args
            .tls_files()
            .map(|files| crate::tls::watch_files(files, args.tls_reload_interval))
            .transpose()?;

        Ok(Built {
            store,
            runtime,
            auth,
            health,
            routes,
            tls_configs,
            metrics,
            postgres: database_url.is_some(),
            store_watch,
            deliverer,
            stop_deliveries,
            args,
        })
    }

    /// Serves on `listener` until `shutdown` completes; then health turns NOT_SERVING, and after
    /// `--drain-delay` the streams end, connections get `--shutdown-timeout` to finish and the
    /// runtime stops.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let local = listener.local_addr()?;
        info!(
            %local,
            store = if self.postgres { "postgres" } else { "sqlite" },
            tls = self.tls_configs.is_some(),
            "serving askuser.v1"
        );

        let metrics_stop = tokio_util::sync::CancellationToken::new();
        let metrics_tasks = match self.metrics {
            Some(endpoint) => {
                let local = endpoint.local_addr()?;
                info!(%local, "serving metrics at http://{local}/metrics");
                Some((
                    tokio::spawn(endpoint.serve(metrics_stop.clone().cancelled_owned())),
                    tokio::spawn(crate::runtime::refresh_store_gauges(Arc::clone(
                        &self.store,
                    ))),
                ))
            }
            None => None,
        };

        let shutdown_runtime = self.runtime.clone();
        let health = self.health;
        let signalled = Arc::new(tokio::sync::Notify::new());
        let signal_seen = Arc::clone(&signalled);
        let drain_delay = self.args.drain_delay;
        let shutdown_timeout = self.args.shutdown_timeout;
        let shutdown_signal = async move {
            shutdown.await;
            info!(
                ?drain_delay,
                "draining: health NOT_SERVING while still serving"
            );
            health.drain().await;
            // Load balancers and probes see NOT_SERVING before the listener closes.
            tokio::time::sleep(drain_delay).await;
            info!("shutting down: ending streams");
            signal_seen.notify_one();
            shutdown_runtime.begin_shutdown();
        };

        let mut builder = Server::builder()
            // A span per request, a child of the caller's `traceparent` (exported with
            // --otlp-endpoint).
            .trace_fn(crate::telemetry::rpc_span)
            // gRPC-Web from browsers comes over HTTP/1.1 too.
            .accept_http1(true)
            .http2_keepalive_interval(Some(self.args.http2_keepalive_interval))
            .http2_keepalive_timeout(Some(self.args.http2_keepalive_timeout))
            .max_concurrent_streams(self.args.max_concurrent_streams)
            .http2_max_pending_accept_reset_streams(Some(
                self.args.http2_max_pending_accept_reset_streams,
            ))
            .http2_max_local_error_reset_streams(Some(
                self.args.http2_max_local_error_reset_streams,
            ));
        if let Some(age) = self.args.max_connection_age {
            builder = builder
                .max_connection_age(age)
                .max_connection_age_grace(self.args.max_connection_age_grace);
        }
        // Outermost first: CORS answers preflights, gRPC-Web becomes gRPC (pages pass as they
        // are), the guard refuses what no HTTP face takes (content type, Host, Origin), then each
        // request is authenticated as any other.
        let guard = crate::web::GuardSettings {
            open: self.args.auth.auth == crate::auth::AuthMethods::default(),
            insecure_no_auth: self.args.auth.insecure_no_auth,
            allowed_hosts: self.args.allowed_hosts.clone(),
            cors_origins: self.args.cors_origins.clone(),
        };
        if guard.open && guard.insecure_no_auth && guard.allowed_hosts.is_empty() {
            warn!("--insecure-no-auth without --allowed-host: the Host header is not checked");
        }
        let router = builder
            .layer(crate::web::cors(&self.args.cors_origins))
            .layer(crate::web::BrowserLayer::new(self.args.ui()))
            .layer(crate::web::RequestGuardLayer::new(guard))
            .layer(self.auth)
            .add_routes(self.routes);
        // Without TCP_NODELAY a small frame written while the previous one is unacknowledged
        // waits for the peer's delayed ACK (~40 ms): every round trip would stall on it.
        let tcp = TcpIncoming::from(listener).with_nodelay(Some(true));
        let server: Pin<Box<dyn Future<Output = Result<(), tonic::transport::Error>> + Send>> =
            match self.tls_configs {
                Some(configs) => Box::pin(router.serve_with_incoming_shutdown(
                    crate::tls::tls_incoming(tcp, configs),
                    shutdown_signal,
                )),
                None => Box::pin(router.serve_with_incoming_shutdown(tcp, shutdown_signal)),
            };
        // Once signalled, connections get the shutdown timeout to finish; then they are dropped.
        let deadline = async {
            signalled.notified().await;
            tokio::time::sleep(shutdown_timeout).await;
        };
        tokio::select! {
            served = server => served?,
            () = deadline => warn!("connections still open after the shutdown timeout; closing them"),
        }
        self.store_watch.abort();
        self.stop_deliveries.cancel();
        if let Err(error) = self.deliverer.await {
            warn!(%error, "the webhook deliverer failed");
        }
        self.runtime.shutdown(shutdown_timeout).await;
        // Served until the runtime has stopped: a scrape during the drain still sees the figures.
        if let Some((endpoint, gauges)) = metrics_tasks {
            gauges.abort();
            metrics_stop.cancel();
            let _ = endpoint.await;
        }
        info!("stopped");
        Ok(())
    }
}

/// The services a request can reach: health, reflection, the askuser services and, with `--ui`,
/// the web inbox's pages for what no service takes.
fn routes(
    args: &ServeArgs,
    health_service: tonic_health::pb::health_server::HealthServer<
        impl tonic_health::pb::health_server::Health,
    >,
    runtime: &Runtime,
    store: &Arc<dyn RunStore>,
    tenant_secrets: Arc<crate::webhooks::TenantSecrets>,
) -> Result<Routes, ServeError> {
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        // The error details a status carries (ErrorInfo, BadRequest): grpcurl decodes them.
        .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    // Every message is bounded: a client cannot make one request cost more than the limits
    // allow.
    let max_request = args.max_message_bytes();
    let max_response = max_request.saturating_mul(4);
    // One set of stream limits for runs and requests alike.
    let agent_api = AgentApi::new(
        runtime.clone(),
        StreamSettings {
            heartbeat_interval: args.heartbeat_interval,
            max_page_bytes: max_response / 2,
            max_open_streams: args.max_open_streams,
            max_streams_per_principal: args.max_streams_per_principal,
            max_streams_per_tenant: args.max_streams_per_tenant,
            first_frame_timeout: args.first_frame_timeout,
            limits: args.request_limits(),
        },
    );
    // The MCP endpoint goes through the same layers (guard, CORS, authentication) as every call.
    let mcp = args.mcp().then(|| {
        let stop = tokio_util::sync::CancellationToken::new();
        let runtime = runtime.clone();
        let stopped = stop.clone();
        tokio::spawn(async move {
            runtime.stopping().await;
            stopped.cancel();
        });
        crate::api::mcp_service(
            agent_api.clone(),
            args.heartbeat_interval,
            max_request,
            stop,
        )
    });
    let routes = Routes::new(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(
            HumanServiceServer::new(agent_api.clone())
                .max_decoding_message_size(max_request)
                .max_encoding_message_size(max_response),
        )
        .add_service(
            AgentServiceServer::new(agent_api)
                .max_decoding_message_size(max_request)
                .max_encoding_message_size(max_response),
        )
        .add_service(AdminServiceServer::new(AdminApi::new(
            Arc::clone(store) as Arc<dyn KeyStore>,
            Arc::clone(store) as Arc<dyn DeliveryStore>,
            tenant_secrets,
        )))
        .add_service(
            ToolServiceServer::new(ToolApi::new(runtime.clone()))
                .max_decoding_message_size(max_request)
                .max_encoding_message_size(max_response),
        );
    let routes = match mcp {
        Some(mcp) => Routes::from(
            routes
                .into_axum_router()
                .route_service(crate::api::MCP_PATH, mcp),
        ),
        None => routes,
    };
    // The web inbox answers what no service takes; without it tonic's UNIMPLEMENTED does.
    let routes = match args.ui() {
        true => Routes::from(routes.into_axum_router().fallback(crate::web::respond)),
        false => routes,
    };
    Ok(routes)
}

async fn wait_for_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(error) => {
                warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the server");
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// A write past the process's file size limit (`ulimit -f`) raises SIGXFSZ, which by default kills
/// the process; ignored, the write fails with EFBIG instead, which the store reports as an error
/// like a full disk, and the server goes on once the limit is raised.
fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler and touches no memory.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// With authentication on, the runs made with `--auth none` (tenant `default`) are seen only by
/// principals of that tenant, which keys and tokens rarely name: say so, and how to move them.
async fn warn_hidden_default_runs(store: &dyn RunStore) {
    let tenant = crate::domain::DEFAULT_TENANT;
    match store.tenant_runs(tenant).await {
        Ok(0) => {}
        Ok(runs) => tracing::warn!(
            runs,
            "authentication is on and {runs} runs belong to the tenant `{tenant}` (made with \
             --auth none): only principals of that tenant see them; to give them to another \
             tenant, run `askuser keys move-runs --from {tenant} --to TENANT` with the same store \
             flags"
        ),
        Err(error) => tracing::warn!(%error, "cannot count the runs of the tenant `{tenant}`"),
    }
}
