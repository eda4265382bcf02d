//! The store flags, the same for `serve` and `keys` (each flattens them).

use std::path::PathBuf;
use std::time::Duration;

use super::ConfigError;
use super::values::{positive, positive_duration};
use crate::redact::redact_url;
use crate::store::{PostgresSettings, Synchronous};

/// Which store, and how to reach it.
#[derive(Clone, Debug, clap::Args)]
pub struct StoreArgs {
    /// Directory of the SQLite store (unused with --database-url).
    #[arg(long, env = "ASKUSER_DATA_DIR", default_value = "askuser-data")]
    pub data_dir: PathBuf,
    /// PostgreSQL URL (`postgres://user:password@host:port/db`): use a PostgreSQL store shared by
    /// every replica instead of the embedded SQLite file. Prefer the environment variable or
    /// --database-url-file to a command line others can read.
    #[arg(
        long,
        env = "ASKUSER_DATABASE_URL",
        conflicts_with = "database_url_file"
    )]
    pub database_url: Option<DatabaseUrl>,
    /// A file holding the PostgreSQL URL (e.g. a mounted secret), instead of --database-url.
    #[arg(long, env = "ASKUSER_DATABASE_URL_FILE")]
    pub database_url_file: Option<PathBuf>,
    /// Connections in the PostgreSQL pool.
    #[arg(long, env = "ASKUSER_DATABASE_POOL_SIZE", default_value_t = 16, value_parser = positive)]
    pub database_pool_size: usize,
    /// How long a request waits for a free connection of the PostgreSQL pool before it fails with
    /// UNAVAILABLE.
    #[arg(long, env = "ASKUSER_DATABASE_POOL_WAIT_TIMEOUT", default_value = "5s", value_parser = positive_duration)]
    pub database_pool_wait_timeout: Duration,
    /// How long opening a PostgreSQL connection may take.
    #[arg(long, env = "ASKUSER_DATABASE_CONNECT_TIMEOUT", default_value = "5s", value_parser = positive_duration)]
    pub database_connect_timeout: Duration,
    /// How long checking a pooled PostgreSQL connection before its reuse may take.
    #[arg(long, env = "ASKUSER_DATABASE_RECYCLE_TIMEOUT", default_value = "5s", value_parser = positive_duration)]
    pub database_recycle_timeout: Duration,
    /// PostgreSQL `statement_timeout` of every connection: a longer statement fails (UNAVAILABLE).
    #[arg(long, env = "ASKUSER_DATABASE_STATEMENT_TIMEOUT", default_value = "30s", value_parser = positive_duration)]
    pub database_statement_timeout: Duration,
    /// PostgreSQL `lock_timeout` of every connection: a statement that waits longer for a lock
    /// fails (UNAVAILABLE).
    #[arg(long, env = "ASKUSER_DATABASE_LOCK_TIMEOUT", default_value = "10s", value_parser = positive_duration)]
    pub database_lock_timeout: Duration,
    /// PostgreSQL `idle_in_transaction_session_timeout` of every connection: the database ends a
    /// transaction left idle this long, and its locks with it.
    #[arg(long, env = "ASKUSER_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT", default_value = "60s", value_parser = positive_duration)]
    pub database_idle_in_transaction_timeout: Duration,
    /// SQLite durability: `normal` survives a process crash, `full` also a power loss.
    #[arg(
        long,
        env = "ASKUSER_SQLITE_SYNCHRONOUS",
        value_enum,
        default_value = "normal"
    )]
    pub sqlite_synchronous: Synchronous,
}

impl StoreArgs {
    /// The PostgreSQL URL, from --database-url or --database-url-file; `None`: SQLite.
    pub fn database_url(&self) -> Result<Option<DatabaseUrl>, ConfigError> {
        match (&self.database_url, &self.database_url_file) {
            (Some(url), _) => Ok(Some(url.clone())),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map(|text| Some(DatabaseUrl(text.trim().to_owned())))
                .map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                }),
            (None, None) => Ok(None),
        }
    }

    /// Whether the store is SQLite (no PostgreSQL URL given).
    pub fn is_sqlite(&self) -> bool {
        self.database_url.is_none() && self.database_url_file.is_none()
    }

    /// The SQLite file in --data-dir.
    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("askuser.sqlite3")
    }

    pub fn postgres_settings(&self) -> PostgresSettings {
        PostgresSettings {
            pool_size: self.database_pool_size,
            wait_timeout: self.database_pool_wait_timeout,
            create_timeout: self.database_connect_timeout,
            recycle_timeout: self.database_recycle_timeout,
            statement_timeout: self.database_statement_timeout,
            lock_timeout: self.database_lock_timeout,
            idle_in_transaction_timeout: self.database_idle_in_transaction_timeout,
        }
    }
}

/// A database URL, whose password never shows in debug output or logs.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The URL itself, for connecting.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(DatabaseUrl(text.trim().to_owned()))
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", redact_url(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_never_show_their_userinfo_or_query() {
        let url: DatabaseUrl = "postgres://askuser:s3cret@db.internal:5432/askuser?sslpassword=k3y"
            .parse()
            .expect("url");
        let shown = format!("{url:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("k3y"),
            "{shown}"
        );
        assert!(shown.contains("db.internal"), "{shown}");
        assert!(!shown.contains("askuser:"), "the user shows: {shown}");
        assert_eq!(
            url.expose(),
            "postgres://askuser:s3cret@db.internal:5432/askuser?sslpassword=k3y"
        );
    }
}
