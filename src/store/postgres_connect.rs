//! How the PostgreSQL store connects: the pool's timeouts, the session settings every connection
//! gets, and which database errors are transient.
//!
//! Nothing waits on the database without a bound: a request waits at most `wait_timeout` for a
//! pooled connection, a new connection at most `create_timeout`, a statement at most
//! `statement_timeout` (and a lock inside it `lock_timeout`), and a transaction left idle by a
//! client that went away is ended by the server after `idle_in_transaction_timeout`.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::StoreError;
use super::postgres_tls::DatabaseTls;

/// Settings of the PostgreSQL store.
#[derive(Clone, Debug)]
pub struct PostgresSettings {
    /// Connections in the pool.
    pub pool_size: usize,
    /// How long a request waits for a free connection of the pool.
    pub wait_timeout: Duration,
    /// How long opening a new connection may take.
    pub create_timeout: Duration,
    /// How long checking a pooled connection before reuse may take.
    pub recycle_timeout: Duration,
    /// `statement_timeout` of every session.
    pub statement_timeout: Duration,
    /// `lock_timeout` of every session.
    pub lock_timeout: Duration,
    /// `idle_in_transaction_session_timeout` of every session.
    pub idle_in_transaction_timeout: Duration,
}

impl Default for PostgresSettings {
    /// The defaults of the `--database-*` flags.
    fn default() -> Self {
        Self {
            pool_size: 16,
            wait_timeout: Duration::from_secs(5),
            create_timeout: Duration::from_secs(5),
            recycle_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(10),
            idle_in_transaction_timeout: Duration::from_secs(60),
        }
    }
}

/// How to open a connection to the database: where, with which session, over which TLS.
#[derive(Clone)]
pub(super) struct Connection {
    pub config: tokio_postgres::Config,
    pub tls: MakeRustlsConnect,
}

/// The connection of `url`: its TLS as its `sslmode` and `sslrootcert` say, keepalives and the
/// session settings added.
pub(super) fn connection(url: &str, settings: &PostgresSettings) -> Result<Connection, StoreError> {
    let tls = DatabaseTls::of(url);
    let mut config: tokio_postgres::Config = tls
        .url
        .parse()
        .map_err(|e: tokio_postgres::Error| StoreError::Postgres(format!("database url: {e}")))?;
    tls.apply(&mut config);
    // TCP keepalive: a connection that died silently (a dropped NAT entry, a failed-over
    // database) is noticed in about a minute rather than the OS's two hours.
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .keepalives_interval(Duration::from_secs(10))
        .keepalives_retries(3);
    let session = [
        ("statement_timeout", settings.statement_timeout),
        ("lock_timeout", settings.lock_timeout),
        (
            "idle_in_transaction_session_timeout",
            settings.idle_in_transaction_timeout,
        ),
    ]
    .map(|(name, value)| format!("-c {name}={}", value.as_millis()))
    .join(" ");
    // Options the URL gives come first; ours are set after them.
    let options = match config.get_options() {
        Some(given) if !given.is_empty() => format!("{given} {session}"),
        _ => session,
    };
    config.options(&options);
    Ok(Connection {
        config,
        tls: tls.connector()?,
    })
}

/// The pool of connections, each bounded by the settings' timeouts.
pub(super) fn pool(
    connection: Connection,
    settings: &PostgresSettings,
) -> Result<Pool, StoreError> {
    let manager = Manager::from_config(
        connection.config,
        connection.tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.pool_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(settings.wait_timeout))
        .create_timeout(Some(settings.create_timeout))
        .recycle_timeout(Some(settings.recycle_timeout))
        .build()
        .map_err(|e| StoreError::Postgres(e.to_string()))
}

/// Errors after which the same request may well succeed: the statement or its lock timed out,
/// the server is shutting down or full, or a transaction lost a conflict.
const TRANSIENT: [SqlState; 9] = [
    SqlState::QUERY_CANCELED,
    SqlState::LOCK_NOT_AVAILABLE,
    SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
    SqlState::ADMIN_SHUTDOWN,
    SqlState::CRASH_SHUTDOWN,
    SqlState::CANNOT_CONNECT_NOW,
    SqlState::TOO_MANY_CONNECTIONS,
    SqlState::T_R_SERIALIZATION_FAILURE,
    SqlState::T_R_DEADLOCK_DETECTED,
];

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        let lost_connection = error.is_closed()
            || std::error::Error::source(&error)
                .is_some_and(|source| source.is::<std::io::Error>());
        match error.code() {
            Some(code) if *code == SqlState::UNIQUE_VIOLATION => StoreError::UniqueViolation,
            Some(code) if TRANSIENT.contains(code) => {
                StoreError::Unavailable(format!("postgres: {error}"))
            }
            None if lost_connection => {
                StoreError::Unavailable(format!("postgres: {}", with_cause(&error)))
            }
            _ => StoreError::Postgres(error.to_string()),
        }
    }
}

/// A connection or TLS error with its cause, which tokio-postgres leaves out of its message
/// ("error performing TLS handshake" alone does not say that the certificate names another host).
/// Errors the database reported are not extended: their details may quote stored values.
fn with_cause(error: &tokio_postgres::Error) -> String {
    match std::error::Error::source(error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    }
}

impl From<PoolError> for StoreError {
    fn from(error: PoolError) -> Self {
        match error {
            PoolError::Backend(error) => error.into(),
            PoolError::Timeout(_) | PoolError::Closed => {
                StoreError::Unavailable(format!("postgres pool: {error}"))
            }
            other => StoreError::Postgres(other.to_string()),
        }
    }
}
