//! The store's handle: its pool, the database's clock as last measured, the commit feed's
//! state, and the notices its commits send.

use super::*;

/// The channel commit notices travel on.
pub(super) const NOTIFY_CHANNEL: &str = "askuser_commits";

/// A [`RunStore`] on PostgreSQL.
pub struct PostgresStore {
    pub(super) pool: Pool,
    pub(super) connection: Connection,
    /// Tags this store's commit notices: the runtime publishes its own commits itself, so
    /// its listener drops them rather than wake their followers (and the expiry loop) again.
    pub(super) origin: String,
    /// The database's clock minus this process's, in milliseconds, as last measured.
    pub(super) clock_offset_ms: AtomicI64,
    /// Whether the commit feed runs, and whether its `LISTEN` connection is up.
    pub(super) feed: Arc<FeedState>,
}

/// A commit's notice to every replica ([`PostgresStore::notice`]).
pub(super) struct Notice<'a> {
    pub(super) run_id: &'a str,
    /// The run's newest sequence after the commit: the notice goes only once the run has it.
    pub(super) last_sequence: i64,
    /// What the commit feed's listeners parse: run, sequence, status, origin.
    pub(super) payload: String,
}

/// The state of the commit feed's connection, for health checks.
#[derive(Default)]
pub(super) struct FeedState {
    pub(super) started: AtomicBool,
    pub(super) listening: AtomicBool,
}

/// The database's clock in milliseconds since the Unix epoch.
pub(super) const DATABASE_CLOCK: &str =
    "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// Samples of the clock taken at connect; the one with the shortest round trip counts.
pub(super) const CLOCK_SAMPLES: usize = 3;

/// Key of the advisory lock that lets one replica at a time prune.
pub(super) const PRUNE_LOCK: i64 = 7319046102;

impl PostgresStore {
    /// Connects a pool as `settings` say, brings the schema up to date and measures the
    /// database's clock.
    pub async fn connect(url: &str, settings: &PostgresSettings) -> StoreResult<Self> {
        let connection = connection(url, settings)?;
        let store = Self {
            pool: pool(connection.clone(), settings)?,
            connection,
            origin: uuid::Uuid::now_v7().simple().to_string(),
            clock_offset_ms: AtomicI64::new(0),
            feed: Arc::default(),
        };
        store.migrate().await?;
        let client = store.pool.get().await?;
        let mut best = clock_sample(&client).await?;
        for _ in 1..CLOCK_SAMPLES {
            best = best.min(clock_sample(&client).await?);
        }
        store.clock_offset_ms.store(best.1, Ordering::Relaxed);
        Ok(store)
    }

    /// The notice of a commit that leaves `run_id` at `last_sequence` with `status`, tagged with
    /// this store; [`TxClient::commit_announcing`] sends it.
    pub(super) fn notice<'a>(
        &self,
        run_id: &'a str,
        last_sequence: u64,
        status: RunStatus,
    ) -> Notice<'a> {
        Notice {
            run_id,
            last_sequence: last_sequence as i64,
            payload: format!(
                "{run_id} {last_sequence} {} {}",
                status.as_str(),
                self.origin
            ),
        }
    }

    pub(super) async fn migrate(&self) -> StoreResult<()> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // A migration may take long on a large database, and so may another replica's, waited
        // for here: no session timeout applies.
        tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
            .await?;
        // Replicas starting together apply each migration once.
        execute(&tx, "SELECT pg_advisory_xact_lock(7319046101)", &[]).await?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS askuser_schema_migrations (
                version BIGINT PRIMARY KEY,
                applied_ms BIGINT NOT NULL
            )",
        )
        .await?;
        let applied: i64 = select_one(
            &tx,
            "SELECT COALESCE(MAX(version), 0) FROM askuser_schema_migrations",
            &[],
        )
        .await?
        .get(0);
        let newest = MIGRATIONS.len() as i64;
        if applied > newest {
            return Err(StoreError::Corrupt(format!(
                "database schema version {applied} is newer than this server's {newest}"
            )));
        }
        for (version, sql) in (1_i64..).zip(MIGRATIONS.iter()).filter(|m| m.0 > applied) {
            tx.batch_execute(sql).await?;
            execute(
                &tx,
                "INSERT INTO askuser_schema_migrations (version, applied_ms) VALUES ($1, $2)",
                &[&version, &self.now_ms()],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// One reading of the database's clock: the round trip it took, and the database's clock minus
/// this process's at its middle, in milliseconds.
pub(super) async fn clock_sample(client: &impl GenericClient) -> StoreResult<(i64, i64)> {
    let sent = now_millis();
    let database: i64 = select_one(client, DATABASE_CLOCK, &[]).await?.get(0);
    let received = now_millis();
    let round_trip = received - sent;
    Ok((round_trip, database - (sent + round_trip / 2)))
}
