//! `askuser keys`: API keys made, listed and revoked offline against the store, and runs moved
//! between tenants (those made with `--auth none` belong to `default`).

use std::io::Write;

use crate::auth::api_key;
use crate::auth::parse_scope;
use crate::config::StoreArgs;
use crate::domain::{Scope, now_millis};
use crate::store::{KeyRevocation, KeyStore, PostgresStore, SqliteKeyFile, StoreError, Tenancy};

/// `askuser keys`.
#[derive(Clone, Debug, clap::Args)]
pub struct KeysArgs {
    /// The store, with `serve`'s store flags.
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub action: KeysAction,
}

#[derive(Clone, Debug, clap::Subcommand)]
pub enum KeysAction {
    /// Create a key and print it (once: only its hash is stored).
    Create {
        /// The tenant whose runs the key acts on.
        #[arg(long)]
        tenant: String,
        /// A name to recognise the key by in listings and logs.
        #[arg(long)]
        name: String,
        /// Comma-separated scopes: runs:start, runs:read, runs:answer, runs:cancel,
        /// asks:create, tools:execute, agents:read, admin (the tenant's), operator (every
        /// tenant's keys).
        #[arg(long, value_delimiter = ',', value_parser = parse_scope)]
        scopes: Vec<Scope>,
    },
    /// List every key: id, tenant, name, scopes, created and revoked times (ms since the epoch).
    List,
    /// Revoke a key by its id: it stops working at the next request.
    Revoke { key_id: String },
    /// Move every run of one tenant to another, e.g. the runs made with `--auth none` (tenant
    /// `default`) to the tenant of the keys that should see them. A run whose start's request id
    /// the new tenant uses already stays.
    MoveRuns {
        /// The tenant the runs belong to now.
        #[arg(long, default_value = crate::domain::DEFAULT_TENANT)]
        from: String,
        /// The tenant they are to belong to.
        #[arg(long)]
        to: String,
    },
}

/// Errors of `askuser keys`.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("no key {0} to revoke (or it is revoked already)")]
    NoSuchKey(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("--to must name another, non-empty tenant")]
    SameTenant,
}

pub async fn run(args: KeysArgs) -> Result<(), KeysError> {
    let store: Box<dyn KeyStore> = match args.store.database_url()? {
        Some(url) => {
            Box::new(PostgresStore::connect(url.expose(), &args.store.postgres_settings()).await?)
        }
        None => Box::new(SqliteKeyFile::open(&args.store.sqlite_path())?),
    };
    let mut stdout = std::io::stdout();
    match args.action {
        KeysAction::Create {
            tenant,
            name,
            scopes,
        } => {
            let generated = api_key::generate(tenant, name, scopes);
            store.create_key(generated.stored).await?;
            writeln!(stdout, "{}", generated.key)?;
            eprintln!("keep this key now: it is not stored and cannot be shown again");
        }
        KeysAction::List => {
            for key in store.list_keys(Tenancy::Any).await? {
                let scopes: Vec<&str> = key.scopes.iter().map(|scope| scope.as_str()).collect();
                let revoked = key.revoked_ms.map(|ms| ms.to_string()).unwrap_or_default();
                writeln!(
                    stdout,
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    key.key_id,
                    key.tenant,
                    key.name,
                    scopes.join(","),
                    key.created_ms,
                    revoked
                )?;
            }
        }
        KeysAction::Revoke { key_id } => {
            if !store
                .revoke_key(KeyRevocation {
                    key_id: &key_id,
                    tenancy: Tenancy::Any,
                    now_ms: now_millis(),
                })
                .await?
            {
                return Err(KeysError::NoSuchKey(key_id));
            }
        }
        KeysAction::MoveRuns { from, to } => {
            if to.is_empty() || to == from {
                return Err(KeysError::SameTenant);
            }
            let moved = store.move_runs(&from, &to).await?;
            writeln!(stdout, "moved {moved} runs from {from} to {to}")?;
            let left = store.tenant_runs(&from).await?;
            if left > 0 {
                eprintln!(
                    "{left} runs stay in {from}: their request ids are taken in {to} already"
                );
            }
        }
    }
    Ok(())
}
