//! The shared store: PostgreSQL, for several replicas on one database.
//!
//! Every change locks its run's row (`SELECT … FOR UPDATE`), so sequences are allocated and tool
//! calls settled one transaction at a time per run, across replicas; each commit notifies
//! `askuser_commits` so followers on other replicas see it at once.
//!
//! Round trips, not fsyncs, bound this store, so statements go in *flights*. tokio-postgres sends
//! a request when its future is first polled and matches replies in order, so futures joined with
//! `try_join!` travel together and cost one round trip between them. The server still runs them
//! one by one in the order sent (the order of the join: `try_join!` polls its futures in order,
//! and each sends all its statements on its first poll), in the same transaction: a flight may
//! take the run's lock first and read or write under it, and a read sees the writes sent before
//! it. `BEGIN` and `COMMIT` are statements of flights too ([`TxClient`]), so a change is a flight
//! of `BEGIN` and the reads that decide it (the lock first), then one of every write, `pg_notify`
//! and `COMMIT`: two round trips, one for a change that needs no reads. A change decided against
//! after its reads ends with `ROLLBACK`. A flight's statements are prepared before it starts
//! ([`prepare`]), as a future still waiting on its own preparation would send out of order; and a
//! flight joins no `try_join_all` of more than 30 futures, which may poll some only later, after
//! the `COMMIT` (a turn's calls are thus one statement, like its events).

use crate::store::timed;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use deadpool_postgres::{Client, GenericClient, Pool};
use futures::future::try_join_all;
use futures::try_join;
use tokio::sync::mpsc;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};
use tracing::warn;

mod commit_feed;
mod deliveries;
mod keys;

use super::ops::commit_executed::ExecutedReads;
use super::ops::settle::{SettleReads, Settling};
use super::ops::{
    SqlValue, Write, cancel, commit_executed, commit_turn, create, new_events, settle,
};
use super::postgres_connect::{Connection, PostgresSettings, connection, pool};
use super::records::{
    AFTER_RUN_COLUMNS, CALL_COUNTS_QUERY, CLAIM_QUERY, CLAIM_UPDATE, CallRow, EXECUTED_UPDATE,
    EXECUTING_QUERY, INSERT_RUN, LOCK_RUN, OLDEST_PENDING_CALLS_QUERY, PENDING_CALLS_COUNT_QUERY,
    PENDING_COLUMNS, PENDING_FEED_QUERY, PENDING_IN_TENANT_QUERY, PENDING_QUERY,
    PRUNABLE_RUNS_QUERY, PRUNED_TABLES, PendingRow, RUN_IN_TENANT, RUN_OF_REQUEST_QUERY, RUN_QUERY,
    RunHead, RunRow, SETTLED_QUERY, STEP_RUN_QUERY, SettledRow, TOOL_CALL_QUERY,
    TRANSCRIPT_CALLS_QUERY, TURNS_QUERY, ToolCallRow, TranscriptCall, UNFINISHED_BEFORE_QUERY,
    UNFINISHED_RUNS_COUNT_QUERY, UNSETTLED_QUERY, WEBHOOKS_DUE_QUERY, assemble_transcript,
    counting_step_start, executing_call, from_json, parse_status, pending_counts, to_json,
    unsigned,
};
use super::run_filter::{Dialect, ListParam, list_runs_query};
use super::webhook_records::{DeliveryInsert, deliveries_of};
use super::{
    CallStatus, CancelOutcome, ClaimOutcome, CommitNotice, Committed, CreateOutcome, Decide,
    EventPage, ExecutedResult, Lease, NewRun, PendingCounts, RunPendingCall, RunQuery, RunStore,
    SettleOutcome, StepState, StoreError, StoreResult, Tenancy, ToolCallRecord, TurnCommit,
    TurnOutcome,
};
use crate::domain::{Event, EventKind, PendingCall, RunRecord, RunStatus, SettledBy, now_millis};

/// The schema migrations, applied in order; never edit a released one, add the next.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!("../../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        include_str!("../../../migrations/postgres/0002_usage.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/postgres/0003_tools.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/postgres/0004_step_starts.sql"),
    ),
    (
        5,
        include_str!("../../../migrations/postgres/0005_keys.sql"),
    ),
    (
        6,
        include_str!("../../../migrations/postgres/0006_tenants.sql"),
    ),
    (
        7,
        include_str!("../../../migrations/postgres/0007_webhooks.sql"),
    ),
    (
        8,
        include_str!("../../../migrations/postgres/0008_traces_and_timings.sql"),
    ),
    (
        9,
        include_str!("../../../migrations/postgres/0009_claim_subject.sql"),
    ),
    (
        10,
        include_str!("../../../migrations/postgres/0010_webhook_subscriptions_and_secrets.sql"),
    ),
];

/// The channel commit notices travel on.
const NOTIFY_CHANNEL: &str = "askuser_commits";

/// A [`RunStore`] on PostgreSQL.
pub struct PostgresStore {
    pool: Pool,
    connection: Connection,
    /// Tags this store's commit notices: the runtime publishes its own commits itself, so
    /// its listener drops them rather than wake their followers (and the expiry loop) again.
    origin: String,
    /// The database's clock minus this process's, in milliseconds, as last measured.
    clock_offset_ms: AtomicI64,
    /// Whether the commit feed runs, and whether its `LISTEN` connection is up.
    feed: Arc<FeedState>,
}

/// The state of the commit feed's connection, for health checks.
#[derive(Default)]
struct FeedState {
    started: AtomicBool,
    listening: AtomicBool,
}

/// The database's clock in milliseconds since the Unix epoch.
const DATABASE_CLOCK: &str = "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// Samples of the clock taken at connect; the one with the shortest round trip counts.
const CLOCK_SAMPLES: usize = 3;

/// Key of the advisory lock that lets one replica at a time prune.
const PRUNE_LOCK: i64 = 7319046102;

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

    /// Announces a commit to every replica; delivered when the transaction commits.
    async fn notify(
        &self,
        client: &impl GenericClient,
        statement: &Statement,
        run_id: &str,
        last_sequence: u64,
        status: RunStatus,
    ) -> StoreResult<()> {
        let payload = format!(
            "{run_id} {last_sequence} {} {}",
            status.as_str(),
            self.origin
        );
        exec(client, statement, &[&NOTIFY_CHANNEL, &payload]).await?;
        Ok(())
    }

    async fn migrate(&self) -> StoreResult<()> {
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
        if let Some(newest) = MIGRATIONS.last().map(|m| m.0)
            && applied > newest
        {
            return Err(StoreError::Corrupt(format!(
                "database schema version {applied} is newer than this server's {newest}"
            )));
        }
        for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > applied) {
            tx.batch_execute(sql).await?;
            execute(
                &tx,
                "INSERT INTO askuser_schema_migrations (version, applied_ms) VALUES ($1, $2)",
                &[version, &self.now_ms()],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// One reading of the database's clock: the round trip it took, and the database's clock minus
/// this process's at its middle, in milliseconds.
async fn clock_sample(client: &impl GenericClient) -> StoreResult<(i64, i64)> {
    let sent = now_millis();
    let database: i64 = select_one(client, DATABASE_CLOCK, &[]).await?.get(0);
    let received = now_millis();
    let round_trip = received - sent;
    Ok((round_trip, database - (sent + round_trip / 2)))
}

/// Runs a statement prepared once per pooled connection: it then takes one round trip to the
/// server instead of two (parse, then execute).
async fn execute(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<u64> {
    exec(client, &client.prepare_cached(sql).await?, params).await
}

/// [`execute`] for a query's rows.
async fn select(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<Row>> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query(&statement, params).await?)
}

/// [`execute`] for a query of exactly one row.
async fn select_one(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Row> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query_one(&statement, params).await?)
}

/// Prepares the statements of a flight, together. Each is prepared once per pooled connection;
/// after that this costs no round trip.
async fn prepare<const N: usize>(
    client: &impl GenericClient,
    sql: [&str; N],
) -> StoreResult<[Statement; N]> {
    let statements = try_join_all(sql.map(|sql| client.prepare_cached(sql))).await?;
    <[Statement; N]>::try_from(statements)
        .map_err(|_| StoreError::Postgres("a statement of a flight went unprepared".into()))
}

/// Runs a prepared statement; the number of rows it changed.
async fn exec(
    client: &impl GenericClient,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<u64> {
    Ok(client.execute(statement, params).await?)
}

/// Runs a write of a plan, prepared as `statement` (from the write's text).
async fn exec_write(
    client: &impl GenericClient,
    statement: &Statement,
    write: &Write,
) -> StoreResult<u64> {
    let params: Vec<_> = write.params.iter().map(SqlValue::as_postgres).collect();
    exec(client, statement, &params).await
}

/// Begins a transaction that reads at read committed, as writes do: they lock the run first.
const BEGIN: &str = "BEGIN";

/// Begins a transaction whose reads share one snapshot.
const BEGIN_SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ";

/// A pooled connection for one transaction whose `BEGIN` and `COMMIT` are statements of its
/// first and last flights ([`Self::begin`], [`Self::commit`]) rather than round trips of their
/// own; one that changes nothing after all ends with [`Self::rollback`].
///
/// The pool gives a connection back out as long as it is alive, in whatever state: one returned
/// inside a transaction would run its next user's statements in it and hold its locks meanwhile.
/// So this guard knows whether a transaction may be open, from when `BEGIN` is sent until
/// `COMMIT` or `ROLLBACK` has answered, and dropped in that state it detaches the connection from
/// the pool and drops it, which closes it: PostgreSQL rolls the transaction back. That is when
/// the operation's future was dropped during or between flights, and when a flight failed:
/// `try_join!` returns at its first error, before `COMMIT` answered, maybe before it was sent (a
/// statement that fails to encode fails at once, and the flight's later statements are never
/// sent). Errors are rare, and a new connection is cheap next to a leaked transaction.
struct TxClient {
    /// `Some` until dropped.
    client: Option<Client>,
    begin: Statement,
    commit: Statement,
    rollback: Statement,
    /// Whether a transaction may be open.
    open: AtomicBool,
}

impl TxClient {
    /// A connection of the pool, for a transaction begun by `begin` ([`BEGIN`] or
    /// [`BEGIN_SNAPSHOT`]).
    async fn get(pool: &Pool, begin: &str) -> StoreResult<Self> {
        let client = pool.get().await?;
        let [begin, commit, rollback] = prepare(&client, [begin, "COMMIT", "ROLLBACK"]).await?;
        Ok(Self {
            client: Some(client),
            begin,
            commit,
            rollback,
            open: AtomicBool::new(false),
        })
    }

    fn client(&self) -> StoreResult<&Client> {
        self.client
            .as_ref()
            .ok_or_else(|| StoreError::Postgres("the connection was detached".into()))
    }

    async fn run(&self, statement: &Statement) -> StoreResult<()> {
        exec(self.client()?, statement, &[]).await?;
        Ok(())
    }

    /// `BEGIN`: the first statement of the first flight.
    async fn begin(&self) -> StoreResult<()> {
        self.open.store(true, Ordering::Relaxed);
        self.run(&self.begin).await
    }

    /// `COMMIT`: the last statement of the last flight. Once it has answered, no transaction is
    /// open, even when it rolled back one that a failed statement of the flight had aborted
    /// (the flight then returns that statement's error).
    async fn commit(&self) -> StoreResult<()> {
        self.run(&self.commit).await?;
        self.open.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Ends with `ROLLBACK` a transaction that changes nothing after all, and gives back
    /// `outcome`, which its reads decided: should `ROLLBACK` fail, the connection is dropped.
    async fn rollback<T>(&self, outcome: T) -> T {
        match self.run(&self.rollback).await {
            Ok(()) => self.open.store(false, Ordering::Relaxed),
            Err(error) => warn!(%error, "ROLLBACK failed; the connection is dropped"),
        }
        outcome
    }
}

impl Drop for TxClient {
    fn drop(&mut self) {
        if self.open.load(Ordering::Relaxed)
            && let Some(client) = self.client.take()
        {
            // Dropping the detached connection aborts its task, which closes the socket.
            drop(Client::take(client));
        }
    }
}

/// The row of a prepared query whose one parameter is a run's id, if any.
async fn row_of_run(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
) -> StoreResult<Option<Row>> {
    Ok(client.query_opt(statement, &[&run_id]).await?)
}

/// The rows of a prepared query whose one parameter is a run's id.
async fn rows_of_run(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
) -> StoreResult<Vec<Row>> {
    Ok(client.query(statement, &[&run_id]).await?)
}

/// Inserts a run's events of one time, their sequences and JSON bodies as two arrays.
const INSERT_EVENTS: &str = "INSERT INTO events (run_id, sequence, time_ms, body) \
     SELECT $1::TEXT, sequence, $2::BIGINT, body FROM UNNEST($3::BIGINT[], $4::TEXT[]) \
     AS event (sequence, body)";

/// Inserts webhook deliveries ([`DeliveryInsert`]) of one time (`$1`) as arrays, one per column.
const INSERT_DELIVERIES: &str = "INSERT INTO webhook_deliveries (webhook_id, run_id, sequence, \
     event_type, subscription, tool_call_id, reminder_permille, status, created_ms, \
     pending_since_ms, next_attempt_ms) SELECT webhook_id, run_id, sequence, event_type, \
     subscription, tool_call_id, reminder_permille, 'pending', $1::BIGINT, $1::BIGINT, due_ms \
     FROM UNNEST($2::TEXT[], $3::TEXT[], $4::BIGINT[], $5::TEXT[], $6::BIGINT[], $7::TEXT[], \
     $8::BIGINT[], $9::BIGINT[]) AS delivery (webhook_id, run_id, sequence, event_type, \
     subscription, tool_call_id, reminder_permille, due_ms)";

/// Takes or renews the lease of a running run unless another owner holds an unexpired one.
/// Expiry is judged by the database's clock.
const TAKE_LEASE: &str = "UPDATE runs SET lease_owner = $2, lease_expires_ms = $3 \
     WHERE run_id = $1 AND status = 'running' AND (lease_owner IS NULL OR lease_owner = $2 \
     OR lease_expires_ms < (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)";

/// [`TAKE_LEASE`] to start the run's next step: counts the start.
static TAKE_STEP_LEASE: LazyLock<String> = LazyLock::new(|| counting_step_start(TAKE_LEASE));

const NOTIFY: &str = "SELECT pg_notify($1, $2)";

fn run_row(row: &Row) -> RunRow {
    RunRow {
        run_id: row.get(0),
        agent_id: row.get(1),
        status: row.get(2),
        prompt: row.get(3),
        metadata: row.get(4),
        output_text: row.get(5),
        error_message: row.get(6),
        last_sequence: row.get(7),
        turns: row.get(8),
        question_ttl_ms: row.get(9),
        created_ms: row.get(10),
        updated_ms: row.get(11),
        run_tools: row.get(12),
        input_tokens: row.get(13),
        output_tokens: row.get(14),
    }
}

/// A [`PendingRow`] from its columns ([`PENDING_COLUMNS`]), starting at `first`.
fn pending_row(row: &Row, first: usize) -> PendingRow {
    PendingRow {
        tool_call_id: row.get(first),
        tool_name: row.get(first + 1),
        payload: row.get(first + 2),
        expire_ms: row.get(first + 3),
        suspend_kind: row.get(first + 4),
        run_arguments: row.get(first + 5),
        approval_reason: row.get(first + 6),
        claimant: row.get(first + 7),
        claim_expires_ms: row.get(first + 8),
        assignees: row.get(first + 9),
        suspended_ms: row.get(first + 10),
    }
}

fn pending_calls(rows: &[Row]) -> StoreResult<Vec<PendingCall>> {
    rows.iter()
        .map(|row| pending_row(row, 0).into_pending())
        .collect()
}

/// A call as [`TOOL_CALL_QUERY`] reads it.
fn tool_call_record(row: &Row, run_id: &str, tool_call_id: &str) -> StoreResult<ToolCallRecord> {
    ToolCallRow {
        tool_name: row.get(0),
        status: row.get(1),
        payload: row.get(2),
        expire_ms: row.get(3),
        answer: row.get(4),
        answer_id: row.get(5),
        result_sequence: row.get(6),
        suspend_kind: row.get(7),
        run_arguments: row.get(8),
        approval_reason: row.get(9),
        decision: row.get(10),
        assignees: row.get(11),
        suspended_ms: row.get(12),
    }
    .into_record(run_id, tool_call_id)
}

async fn fetch_tool_call(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    tool_call_id: &str,
) -> StoreResult<Option<Row>> {
    Ok(client
        .query_opt(statement, &[&run_id, &tool_call_id])
        .await?)
}

/// Locks a run's row ([`LOCK_RUN`]) and reads its head; `None` when there is no such run (of
/// `tenant`, when given).
async fn lock_run(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    tenant: Option<&str>,
) -> StoreResult<Option<RunHead>> {
    client
        .query_opt(statement, &[&run_id, &tenant])
        .await?
        .map(|row| {
            RunHead::from_columns(
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                row.get(5),
            )
        })
        .transpose()
}

/// Whether the run belongs to the tenant ([`RUN_IN_TENANT`]); any run does for [`Tenancy::Any`].
async fn run_in_tenant(
    client: &impl GenericClient,
    run_id: &str,
    tenancy: Tenancy<'_>,
) -> StoreResult<bool> {
    if tenancy == Tenancy::Any {
        return Ok(true);
    }
    let [query] = prepare(client, [RUN_IN_TENANT]).await?;
    Ok(client
        .query_opt(&query, &[&run_id, &tenancy.param()])
        .await?
        .is_some())
}

/// How many of the run's calls wait for someone, and how many the server runs.
async fn call_counts(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
) -> StoreResult<(i64, i64)> {
    let row = client.query_one(statement, &[&run_id]).await?;
    Ok((row.get(0), row.get(1)))
}

/// Inserts events of one run and time ([`new_events`]) with one statement ([`INSERT_EVENTS`]),
/// and the webhook deliveries they make for a run whose plan is `webhooks` (`runs.webhooks`) with
/// another ([`INSERT_DELIVERIES`]): both are sent at once, in the flight of the transaction.
async fn insert_events(
    client: &impl GenericClient,
    [events_insert, deliveries_insert]: [&Statement; 2],
    webhooks: Option<&str>,
    events: &[Event],
) -> StoreResult<()> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let sequences: Vec<i64> = events.iter().map(|e| e.sequence as i64).collect();
    let bodies = events
        .iter()
        .map(|e| to_json(&e.kind))
        .collect::<StoreResult<Vec<_>>>()?;
    let deliveries = deliveries_of(webhooks, events)?;
    let rows: Vec<DeliveryInsert<'_>> = deliveries.iter().map(DeliveryInsert::new).collect();
    let column = |value: fn(&DeliveryInsert<'_>) -> Option<String>| -> Vec<Option<String>> {
        rows.iter().map(value).collect()
    };
    let number = |value: fn(&DeliveryInsert<'_>) -> Option<i64>| -> Vec<Option<i64>> {
        rows.iter().map(value).collect()
    };
    let event_params: [&(dyn ToSql + Sync); 4] =
        [&first.run_id, &first.time_ms, &sequences, &bodies];
    let columns = (
        column(|d| Some(d.webhook_id.to_owned())),
        column(|d| Some(d.run_id.to_owned())),
        number(|d| Some(d.sequence)),
        column(|d| Some(d.event_type.to_owned())),
        number(|d| Some(d.subscription)),
        column(|d| d.tool_call_id.map(str::to_owned)),
        number(|d| d.reminder_permille),
        number(|d| Some(d.due_ms)),
    );
    let delivery_params: [&(dyn ToSql + Sync); 9] = [
        &first.time_ms,
        &columns.0,
        &columns.1,
        &columns.2,
        &columns.3,
        &columns.4,
        &columns.5,
        &columns.6,
        &columns.7,
    ];
    try_join!(exec(client, events_insert, &event_params), async {
        match rows.is_empty() {
            true => Ok(0),
            false => exec(client, deliveries_insert, &delivery_params).await,
        }
    },)?;
    Ok(())
}

/// [`TAKE_LEASE`]: whether `lease.owner` holds the lease now.
async fn take_lease(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    lease: Lease<'_>,
) -> StoreResult<bool> {
    let taken = exec(client, statement, &[&run_id, &lease.owner, &lease.until_ms]).await?;
    Ok(taken == 1)
}

/// The statements that read a step's state, and take the run's lease first when asked to.
struct StepStatements {
    take_lease: Statement,
    run: Statement,
    pending: Statement,
    turns: Statement,
    calls: Statement,
    executing: Statement,
}

impl StepStatements {
    async fn prepare(client: &impl GenericClient) -> StoreResult<Self> {
        let [take_lease, run, pending, turns, calls, executing] = prepare(
            client,
            [
                TAKE_STEP_LEASE.as_str(),
                STEP_RUN_QUERY.as_str(),
                PENDING_QUERY.as_str(),
                TURNS_QUERY,
                TRANSCRIPT_CALLS_QUERY,
                EXECUTING_QUERY,
            ],
        )
        .await?;
        Ok(Self {
            take_lease,
            run,
            pending,
            turns,
            calls,
            executing,
        })
    }
}

/// The rows a step's state is made of.
struct StepRows {
    run: Option<Row>,
    pending: Vec<Row>,
    turns: Vec<Row>,
    calls: Vec<Row>,
    executing: Vec<Row>,
}

/// Reads a step's rows in one flight; within a transaction, so that its statements agree.
async fn fetch_step(
    client: &impl GenericClient,
    statements: &StepStatements,
    run_id: &str,
) -> StoreResult<StepRows> {
    let (run, pending, turns, calls, executing) = try_join!(
        row_of_run(client, &statements.run, run_id),
        rows_of_run(client, &statements.pending, run_id),
        rows_of_run(client, &statements.turns, run_id),
        rows_of_run(client, &statements.calls, run_id),
        rows_of_run(client, &statements.executing, run_id),
    )?;
    Ok(StepRows {
        run,
        pending,
        turns,
        calls,
        executing,
    })
}

impl StepRows {
    /// The state a step of the run starts from; `None` when there is no such run.
    fn into_step(self) -> StoreResult<Option<StepState>> {
        let Some(row) = self.run else {
            return Ok(None);
        };
        let step_attempt: i64 = row.get(AFTER_RUN_COLUMNS);
        let run = run_row(&row).into_record(pending_calls(&self.pending)?)?;
        let turns: Vec<(i64, String)> = self
            .turns
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        let calls: Vec<TranscriptCall> = self
            .calls
            .iter()
            .map(|row| TranscriptCall {
                turn: row.get(0),
                tool_call_id: row.get(1),
                tool_name: row.get(2),
                arguments_json: row.get(3),
                result_content: row.get(4),
                result_kind: row.get(5),
                result_is_error: row.get(6),
            })
            .collect();
        let transcript = assemble_transcript(&run.prompt, turns, &calls)?;
        Ok(Some(StepState {
            run,
            transcript,
            step_attempt: u32::try_from(step_attempt).unwrap_or(0),
            step_starts: u32::try_from(row.get::<_, i64>(AFTER_RUN_COLUMNS + 1))
                .unwrap_or(u32::MAX),
            trace_context: row.get(AFTER_RUN_COLUMNS + 2),
            executing: self
                .executing
                .iter()
                .map(|row| executing_call(row.get(0), row.get(1), row.get(2), row.get(3)))
                .collect::<StoreResult<_>>()?,
        }))
    }
}

/// The state a step of a run starts from; `None` when there is no such run. With `lease`, takes
/// it first and reads nothing (`None`) unless that succeeded: the reads go in the same flight,
/// after it, and are dropped when the lease was not taken.
async fn read_step(
    client: &impl GenericClient,
    statements: &StepStatements,
    run_id: &str,
    lease: Option<Lease<'_>>,
) -> StoreResult<Option<StepState>> {
    let Some(lease) = lease else {
        return fetch_step(client, statements, run_id).await?.into_step();
    };
    let (taken, rows) = try_join!(
        take_lease(client, &statements.take_lease, run_id, lease),
        fetch_step(client, statements, run_id),
    )?;
    if taken { rows.into_step() } else { Ok(None) }
}

/// Inserts a turn's calls, each column but the run's and the turn's as an array.
const INSERT_CALLS: &str = "INSERT INTO tool_calls (run_id, turn, tool_call_id, position, \
     tool_name, arguments_json, status, payload, expire_ms, result_content, result_is_error, \
     result_kind, result_sequence, suspend_kind, run_arguments, approval_reason, assignees, \
     suspended_ms) SELECT $1::TEXT, $2::BIGINT, * FROM UNNEST($3::TEXT[], \
     $4::BIGINT[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::TEXT[], $9::BIGINT[], $10::TEXT[], \
     $11::BOOLEAN[], $12::TEXT[], $13::BIGINT[], $14::TEXT[], $15::TEXT[], $16::TEXT[], \
     $17::TEXT[], $18::BIGINT[])";

/// Inserts a turn's calls ([`CallRow`]) with one statement ([`INSERT_CALLS`]).
async fn insert_calls(
    client: &impl GenericClient,
    statement: &Statement,
    run_id: &str,
    turn: i64,
    calls: &[CallRow<'_>],
) -> StoreResult<()> {
    if calls.is_empty() {
        return Ok(());
    }
    /// One column of the calls, as an array.
    fn column<'c, 'a, T>(calls: &'c [CallRow<'a>], value: impl Fn(&'c CallRow<'a>) -> T) -> Vec<T> {
        calls.iter().map(value).collect()
    }
    exec(
        client,
        statement,
        &[
            &run_id,
            &turn,
            &column(calls, |c| c.call.tool_call_id.as_str()),
            &column(calls, |c| c.position),
            &column(calls, |c| c.call.tool_name.as_str()),
            &column(calls, |c| c.call.arguments_json.as_str()),
            &column(calls, |c| c.status.as_str()),
            &column(calls, |c| c.payload.as_deref()),
            &column(calls, |c| c.expire_ms),
            &column(calls, |c| c.content),
            &column(calls, |c| c.is_error),
            &column(calls, |c| c.kind.as_deref()),
            &column(calls, |c| c.result_sequence),
            &column(calls, |c| c.suspend_kind),
            &column(calls, |c| c.run_arguments),
            &column(calls, |c| c.approval_reason),
            &column(calls, |c| c.assignees.as_deref()),
            &column(calls, |c| c.suspended_ms),
        ],
    )
    .await?;
    Ok(())
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(
        &self,
        run: NewRun,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<CreateOutcome> {
        timed("create_run", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                insert_run,
                events_insert,
                deliveries_insert,
                notice,
                existing,
            ] = prepare(
                client,
                [
                    INSERT_RUN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    NOTIFY,
                    RUN_OF_REQUEST_QUERY,
                ],
            )
            .await?;
            let (tenant, request_id) = (run.tenant.clone(), run.request_id.clone());
            let run_id = run.run_id.clone();
            let plan = create::plan(run, lease, now)?;
            let insert = exec_write(client, &insert_run, &plan.run_insert);
            if let Some(request_id) = &request_id {
                // A start that may repeat an earlier one: look for the earlier run first. Two starts
                // of one key at once both find none; the unique index makes the second insert wait
                // for the first and fail once it commits, and the second then returns its run.
                let ((), found) = try_join!(tx.begin(), async {
                    Ok::<_, StoreError>(client.query_opt(&existing, &[&tenant, request_id]).await?)
                })?;
                if let Some(row) = found {
                    let run_id = row.get(0);
                    return Ok(tx.rollback(CreateOutcome::Existing { run_id }).await);
                }
                match insert.await {
                    Ok(_) => {}
                    // A concurrent start of the same key committed first.
                    Err(StoreError::UniqueViolation) => {
                        drop(tx);
                        let client = self.pool.get().await?;
                        let [existing] = prepare(&client, [RUN_OF_REQUEST_QUERY]).await?;
                        let row = client
                            .query_opt(&existing, &[&tenant, request_id])
                            .await?
                            .ok_or_else(|| {
                                StoreError::Corrupt("a request id without its run".into())
                            })?;
                        return Ok(CreateOutcome::Existing { run_id: row.get(0) });
                    }
                    Err(error) => return Err(error),
                }
                try_join!(
                    insert_events(
                        client,
                        [&events_insert, &deliveries_insert],
                        plan.webhooks.as_deref(),
                        &plan.events,
                    ),
                    self.notify(client, &notice, &run_id, 1, RunStatus::Running),
                    tx.commit(),
                )?;
            } else {
                try_join!(
                    tx.begin(),
                    insert,
                    insert_events(
                        client,
                        [&events_insert, &deliveries_insert],
                        plan.webhooks.as_deref(),
                        &plan.events,
                    ),
                    self.notify(client, &notice, &run_id, 1, RunStatus::Running),
                    tx.commit(),
                )?;
            }
            Ok(plan.outcome())
        })
        .await
    }

    async fn get_run(&self, run_id: &str, tenancy: Tenancy<'_>) -> StoreResult<Option<RunRecord>> {
        // No transaction: its reads were never one snapshot (read committed) anyway. Each is
        // scoped to the tenant by itself.
        let client = self.pool.get().await?;
        let [run, pending, settled] = prepare(
            &client,
            [
                RUN_QUERY.as_str(),
                PENDING_IN_TENANT_QUERY.as_str(),
                SETTLED_QUERY,
            ],
        )
        .await?;
        let tenant = tenancy.param();
        let read = |statement| {
            let tenant = &tenant;
            let client = &client;
            async move { Ok::<_, StoreError>(client.query(statement, &[&run_id, tenant]).await?) }
        };
        let (rows, pending, settled) = try_join!(read(&run), read(&pending), read(&settled))?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut run = run_row(row).into_record(pending_calls(&pending)?)?;
        run.settled = settled
            .iter()
            .map(|row| {
                SettledRow {
                    tool_call_id: row.get(0),
                    tool_name: row.get(1),
                    result_kind: row.get(2),
                    settled_by: row.get(3),
                    settled_ms: row.get(4),
                    result_sequence: row.get(5),
                    suspended_ms: row.get(6),
                }
                .into_settled()
            })
            .collect::<StoreResult<_>>()?;
        Ok(Some(run))
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        let client = self.pool.get().await?;
        let (sql, params) = list_runs_query(&query, Dialect::Postgres)?;
        let params: Vec<&(dyn ToSql + Sync)> = params
            .iter()
            .map(|param| -> &(dyn ToSql + Sync) {
                match param {
                    ListParam::Text(text) => text,
                    ListParam::Int(number) => number,
                }
            })
            .collect();
        let rows = select(&client, &sql, &params).await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        // The pending calls of every run listed, with one query; [`pending_call`]'s columns first.
        let run_ids: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        let mut pending: HashMap<String, Vec<PendingCall>> = HashMap::new();
        for row in select(
            &client,
            &format!(
                "SELECT {PENDING_COLUMNS}, run_id FROM tool_calls \
                 WHERE run_id = ANY($1::TEXT[]) AND status = 'pending' ORDER BY turn, position"
            ),
            &[&run_ids],
        )
        .await?
        {
            pending
                .entry(row.get(11))
                .or_default()
                .push(pending_row(&row, 0).into_pending()?);
        }
        rows.iter()
            .map(|row| {
                let raw = run_row(row);
                let calls = pending.remove(&raw.run_id).unwrap_or_default();
                raw.into_record(calls)
            })
            .collect()
    }

    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>> {
        timed("load_step", async {
            // Taking the lease locks the run's row, and every writer of a run locks it first: the
            // reads after it see one state of the run at any isolation level. A plain read takes a
            // snapshot instead.
            let begin = if lease.is_some() {
                BEGIN
            } else {
                BEGIN_SNAPSHOT
            };
            let tx = TxClient::get(&self.pool, begin).await?;
            let client = tx.client()?;
            let statements = StepStatements::prepare(client).await?;
            let ((), step, ()) = try_join!(
                tx.begin(),
                read_step(client, &statements, run_id, lease),
                tx.commit(),
            )?;
            Ok(step)
        })
        .await
    }

    async fn commit_turn(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        mut commit: TurnCommit,
    ) -> StoreResult<TurnOutcome> {
        timed("commit_turn", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                turn_insert,
                events_insert,
                deliveries_insert,
                call_insert,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    commit_turn::INSERT_TURN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    INSERT_CALLS,
                    commit_turn::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head) = try_join!(tx.begin(), lock_run(client, &lock, run_id, None))?;
            let step = (owner, expected_turns);
            let Some(plan) = commit_turn::plan(run_id, head, step, &mut commit, now)? else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            try_join!(
                async {
                    match &plan.turn_insert {
                        Some(write) => exec_write(client, &turn_insert, write).await,
                        None => Ok(0),
                    }
                },
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                insert_calls(client, &call_insert, run_id, plan.turn, &plan.calls),
                exec_write(client, &run_update, &plan.run_update),
                self.notify(client, &notice, run_id, plan.last_sequence, plan.status),
                tx.commit(),
            )?;
            Ok(plan.outcome())
        })
        .await
    }

    async fn append_step_events(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        attempt: u32,
        events: Vec<EventKind>,
    ) -> StoreResult<TurnOutcome> {
        timed("append_step_events", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [lock, events_insert, deliveries_insert, run_update, notice] = prepare(
                client,
                [
                    LOCK_RUN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    "UPDATE runs SET last_sequence = $2, step_attempt = $3, updated_ms = $4 \
                 WHERE run_id = $1",
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head) = try_join!(tx.begin(), lock_run(client, &lock, run_id, None))?;
            let Some(head) = head.filter(|head| head.admits_step(owner, expected_turns)) else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            let events = new_events(run_id, head.last_sequence, events, now);
            let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    head.webhooks.as_deref(),
                    &events,
                ),
                async {
                    exec(
                        client,
                        &run_update,
                        &[&run_id, &(last_sequence as i64), &i64::from(attempt), &now],
                    )
                    .await
                },
                self.notify(client, &notice, run_id, last_sequence, RunStatus::Running),
                tx.commit(),
            )?;
            Ok(TurnOutcome::Committed(Committed {
                events,
                status: RunStatus::Running,
            }))
        })
        .await
    }

    async fn get_tool_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
    ) -> StoreResult<Option<ToolCallRecord>> {
        let client = self.pool.get().await?;
        if !run_in_tenant(&client, run_id, tenancy).await? {
            return Ok(None);
        }
        let [query] = prepare(&client, [TOOL_CALL_QUERY]).await?;
        fetch_tool_call(&client, &query, run_id, tool_call_id)
            .await?
            .map(|row| tool_call_record(&row, run_id, tool_call_id))
            .transpose()
    }

    async fn settle_tool_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
        decide: Decide,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<SettleOutcome> {
        timed("settle_tool_call", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                call_query,
                count,
                events_insert,
                deliveries_insert,
                call_update,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    TOOL_CALL_QUERY,
                    CALL_COUNTS_QUERY,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    settle::UPDATE_CALL,
                    settle::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            // Lock the run first: settles of one run are serialized across replicas, and the reads
            // after the lock in this flight see the run as locked. The lock is what checks the
            // tenant: the call read in the same flight is not used unless it passed.
            let tenant = tenancy.param();
            let ((), head, call, counts) = try_join!(
                tx.begin(),
                lock_run(client, &lock, run_id, tenant.as_deref()),
                fetch_tool_call(client, &call_query, run_id, tool_call_id),
                call_counts(client, &count, run_id),
            )?;
            let reads = SettleReads {
                call: match (&head, call) {
                    (Some(_), Some(call)) => Some(tool_call_record(&call, run_id, tool_call_id)?),
                    _ => None,
                },
                head,
                counts,
            };
            let plan = match settle::plan(run_id, tool_call_id, reads, decide, now)? {
                Settling::Unchanged(outcome) => return Ok(tx.rollback(outcome).await),
                Settling::Write(plan) => plan,
            };
            let next_step = match lease {
                Some(lease) if plan.runs_again() => {
                    Some((lease, StepStatements::prepare(client).await?))
                }
                _ => None,
            };
            let (_, changed, _, step, _, ()) = try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                exec_write(client, &call_update, &plan.call_update),
                exec_write(client, &run_update, &plan.run_update),
                async {
                    match &next_step {
                        Some((lease, statements)) => {
                            read_step(client, statements, run_id, Some(*lease)).await
                        }
                        None => Ok(None),
                    }
                },
                self.notify(client, &notice, run_id, plan.last_sequence, plan.status),
                tx.commit(),
            )?;
            // Cannot happen (every writer of a call locks its run first); the flight has committed
            // by now, so this only reports it.
            if changed != 1 {
                return Err(StoreError::Corrupt(format!(
                    "tool call {tool_call_id} changed under its run's lock"
                )));
            }
            Ok(plan.outcome(step))
        })
        .await
    }

    async fn commit_executed(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        results: Vec<ExecutedResult>,
    ) -> StoreResult<TurnOutcome> {
        timed("commit_executed", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                events_insert,
                deliveries_insert,
                call_update,
                count,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    EXECUTED_UPDATE,
                    CALL_COUNTS_QUERY,
                    commit_executed::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head, counts) = try_join!(
                tx.begin(),
                lock_run(client, &lock, run_id, None),
                call_counts(client, &count, run_id),
            )?;
            let reads = ExecutedReads { head, counts };
            let step = (owner, expected_turns);
            let Some(plan) = commit_executed::plan(run_id, reads, step, &results, now)? else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            let updates = plan.call_updates.iter().map(|write| {
                let call_update = &call_update;
                async move {
                    match exec_write(client, call_update, write).await? {
                        1 => Ok(()),
                        _ => Err(commit_executed::not_executing(write)),
                    }
                }
            });
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                futures::future::try_join_all(updates),
                exec_write(client, &run_update, &plan.run_update),
                self.notify(client, &notice, run_id, plan.last_sequence, plan.status),
                tx.commit(),
            )?;
            Ok(plan.outcome())
        })
        .await
    }

    async fn claim_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
        claimant: &str,
        subject: &str,
        until_ms: i64,
    ) -> StoreResult<ClaimOutcome> {
        timed("claim_call", async {
            let client = self.pool.get().await?;
            if !run_in_tenant(&client, run_id, tenancy).await? {
                return Ok(ClaimOutcome::NotFound);
            }
            let [claim, call_query, claim_query] =
                prepare(&client, [CLAIM_UPDATE, TOOL_CALL_QUERY, CLAIM_QUERY]).await?;
            let claimed = exec(
                &client,
                &claim,
                &[
                    &claimant,
                    &subject,
                    &until_ms,
                    &run_id,
                    &tool_call_id,
                    &self.now_ms(),
                ],
            )
            .await?;
            if claimed == 1 {
                return Ok(ClaimOutcome::Claimed { until_ms });
            }
            let (call, holder) = try_join!(
                fetch_tool_call(&client, &call_query, run_id, tool_call_id),
                fetch_tool_call(&client, &claim_query, run_id, tool_call_id),
            )?;
            let (Some(call), Some(holder)) = (call, holder) else {
                return Ok(ClaimOutcome::NotFound);
            };
            let call = tool_call_record(&call, run_id, tool_call_id)?;
            if call.status != CallStatus::Pending {
                return Ok(ClaimOutcome::NotPending(Box::new(call)));
            }
            Ok(ClaimOutcome::Held {
                claimant: holder.get::<_, Option<String>>(0).unwrap_or_default(),
                until_ms: holder.get::<_, Option<i64>>(1).unwrap_or(0),
            })
        })
        .await
    }

    async fn pending_calls(
        &self,
        tenancy: Tenancy<'_>,
        after: Option<(String, String)>,
        limit: usize,
    ) -> StoreResult<Vec<RunPendingCall>> {
        let client = self.pool.get().await?;
        let (run_id, call_id) = after.unwrap_or_default();
        select(
            &client,
            &PENDING_FEED_QUERY,
            &[&run_id, &call_id, &tenancy.param(), &(limit as i64)],
        )
        .await?
        .iter()
        .map(|row| pending_row(row, 2).into_run_pending(row.get(0), row.get(1)))
        .collect()
    }

    async fn cancel_run(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        reason: &str,
        call_content: &str,
        cancelled_by: &SettledBy,
    ) -> StoreResult<CancelOutcome> {
        timed("cancel_run", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let now = self.now_ms();
            let [
                lock,
                pending_query,
                events_insert,
                deliveries_insert,
                calls_update,
                run_update,
                notice,
            ] = prepare(
                client,
                [
                    LOCK_RUN,
                    UNSETTLED_QUERY,
                    INSERT_EVENTS,
                    INSERT_DELIVERIES,
                    // Every call with the sequence of its result, as two arrays: one statement.
                    "UPDATE tool_calls SET status = 'cancelled', result_content = $2, \
                 result_kind = $3, result_sequence = settled.sequence, settled_by = $6, \
                 settled_ms = $7 \
                 FROM UNNEST($4::TEXT[], $5::BIGINT[]) AS settled (tool_call_id, sequence) \
                 WHERE run_id = $1 AND tool_calls.tool_call_id = settled.tool_call_id",
                    cancel::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let tenant = tenancy.param();
            let ((), head, unsettled) = try_join!(
                tx.begin(),
                lock_run(client, &lock, run_id, tenant.as_deref()),
                rows_of_run(client, &pending_query, run_id),
            )?;
            let unsettled = unsettled.iter().map(|row| row.get(0)).collect();
            let plan = match cancel::plan(
                run_id,
                head,
                unsettled,
                reason,
                call_content,
                cancelled_by,
                now,
            )? {
                Ok(plan) => plan,
                Err(outcome) => return Ok(tx.rollback(outcome).await),
            };
            let calls = &plan.calls;
            let calls_params: [&(dyn ToSql + Sync); 7] = [
                &run_id,
                &calls.content,
                &calls.kind,
                &calls.tool_call_ids,
                &calls.sequences,
                &calls.settled_by,
                &calls.settled_ms,
            ];
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                exec(client, &calls_update, &calls_params),
                exec_write(client, &run_update, &plan.run_update),
                self.notify(
                    client,
                    &notice,
                    run_id,
                    plan.last_sequence,
                    RunStatus::Cancelled
                ),
                tx.commit(),
            )?;
            Ok(plan.outcome())
        })
        .await
    }

    async fn read_events(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        after_sequence: u64,
        limit: usize,
    ) -> StoreResult<Option<EventPage>> {
        let client = self.pool.get().await?;
        // One statement, so the run's state and its events come from one snapshot: one row per
        // event, or one without an event (NULLs) when there is none.
        let rows = select(
            &client,
            "SELECT run.status, run.last_sequence, event.sequence, event.time_ms, event.body \
             FROM runs AS run LEFT JOIN LATERAL (SELECT sequence, time_ms, body FROM events \
             WHERE events.run_id = run.run_id AND sequence > $2 ORDER BY sequence LIMIT $3) \
             AS event ON TRUE WHERE run.run_id = $1 \
             AND (CAST($4 AS TEXT) IS NULL OR run.tenant = $4) ORDER BY event.sequence",
            &[
                &run_id,
                &(after_sequence as i64),
                &i64::try_from(limit).unwrap_or(i64::MAX),
                &tenancy.param(),
            ],
        )
        .await?;
        let Some(head) = rows.first() else {
            return Ok(None);
        };
        let events = rows
            .iter()
            .filter_map(|row| {
                let sequence: Option<i64> = row.get(2);
                sequence.map(|sequence| {
                    Ok(Event {
                        run_id: run_id.to_owned(),
                        sequence: unsigned(sequence),
                        time_ms: row.get(3),
                        kind: from_json(row.get(4))?,
                    })
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(Some(EventPage {
            events,
            status: parse_status(head.get(0))?,
            last_sequence: unsigned(head.get(1)),
        }))
    }

    async fn pending_counts(&self, now_ms: i64) -> StoreResult<PendingCounts> {
        let client = self.pool.get().await?;
        let counts = |rows: Vec<Row>| -> Vec<(String, i64)> {
            rows.iter().map(|row| (row.get(0), row.get(1))).collect()
        };
        let now_ms = [&now_ms as &(dyn ToSql + Sync)];
        let (runs, calls, oldest, webhooks_due) = try_join!(
            select(&client, UNFINISHED_RUNS_COUNT_QUERY, &[]),
            select(&client, PENDING_CALLS_COUNT_QUERY, &[]),
            select(&client, OLDEST_PENDING_CALLS_QUERY, &[]),
            select_one(&client, WEBHOOKS_DUE_QUERY, &now_ms),
        )?;
        pending_counts(
            counts(runs),
            counts(calls),
            counts(oldest),
            webhooks_due.get(0),
        )
    }

    async fn due_expiries(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<(String, String)>> {
        let client = self.pool.get().await?;
        Ok(select(
            &client,
            "SELECT run_id, tool_call_id FROM tool_calls WHERE status = 'pending' \
                 AND expire_ms IS NOT NULL AND expire_ms <= $1 ORDER BY expire_ms LIMIT $2",
            &[&now_ms, &(limit as i64)],
        )
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
    }

    async fn next_expiry(&self) -> StoreResult<Option<i64>> {
        let client = self.pool.get().await?;
        Ok(select_one(&client, "SELECT MIN(expire_ms) FROM tool_calls WHERE status = 'pending' AND expire_ms IS NOT NULL",
                &[],
            )
            .await?
            .get(0))
    }

    async fn prune_finished(&self, before_ms: i64, limit: usize) -> StoreResult<u64> {
        timed("prune_finished", async {
            let tx = TxClient::get(&self.pool, BEGIN).await?;
            let client = tx.client()?;
            let [lock, prunable] = prepare(
                client,
                ["SELECT pg_try_advisory_xact_lock($1)", PRUNABLE_RUNS_QUERY],
            )
            .await?;
            let deletes =
                PRUNED_TABLES.map(|table| format!("DELETE FROM {table} WHERE run_id = ANY($1)"));
            let deletes = prepare(client, deletes.each_ref().map(String::as_str)).await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let ((), locked, runs) = try_join!(
                tx.begin(),
                async {
                    Ok(client
                        .query_one(&lock, &[&PRUNE_LOCK])
                        .await?
                        .get::<_, bool>(0))
                },
                async { Ok(client.query(&prunable, &[&before_ms, &limit]).await?) },
            )?;
            // Another replica prunes now; it goes on until nothing is left.
            if !locked || runs.is_empty() {
                return Ok(tx.rollback(0).await);
            }
            let runs: Vec<String> = runs.iter().map(|row| row.get(0)).collect();
            let by_id: &[&(dyn ToSql + Sync)] = &[&runs];
            try_join!(
                try_join_all(deletes.iter().map(|delete| exec(client, delete, by_id))),
                tx.commit(),
            )?;
            Ok(runs.len() as u64)
        })
        .await
    }

    async fn unfinished_before(&self, before_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        let client = self.pool.get().await?;
        Ok(select(
            &client,
            UNFINISHED_BEFORE_QUERY,
            &[&before_ms, &i64::try_from(limit).unwrap_or(i64::MAX)],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect())
    }

    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool> {
        timed("acquire_lease", async {
            let client = self.pool.get().await?;
            let [statement] = prepare(&client, [TAKE_LEASE]).await?;
            take_lease(&client, &statement, run_id, Lease { owner, until_ms }).await
        })
        .await
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()> {
        timed("release_lease", async {
            let client = self.pool.get().await?;
            execute(
                &client,
                "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL \
                 WHERE run_id = $1 AND lease_owner = $2",
                &[&run_id, &owner],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn unleased_runs(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        let client = self.pool.get().await?;
        Ok(select(
            &client,
            "SELECT run_id FROM runs WHERE status = 'running' \
                 AND (lease_owner IS NULL OR lease_expires_ms < $1) ORDER BY updated_ms LIMIT $2",
            &[&now_ms, &(limit as i64)],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect())
    }

    async fn commit_feed(&self) -> StoreResult<Option<mpsc::Receiver<CommitNotice>>> {
        let (notices, feed) = mpsc::channel(1024);
        self.feed.started.store(true, Ordering::Relaxed);
        tokio::spawn(commit_feed::listen(
            self.connection.clone(),
            self.origin.clone(),
            notices,
            Arc::clone(&self.feed),
        ));
        Ok(Some(feed))
    }

    async fn close(&self) -> StoreResult<()> {
        self.pool.close();
        Ok(())
    }

    async fn ping(&self) -> StoreResult<()> {
        let client = self.pool.get().await?;
        let (_, offset) = clock_sample(&client).await?;
        self.clock_offset_ms.store(offset, Ordering::Relaxed);
        if self.feed.started.load(Ordering::Relaxed) && !self.feed.listening.load(Ordering::Relaxed)
        {
            return Err(StoreError::Unavailable(
                "the commit feed's LISTEN connection is down".into(),
            ));
        }
        Ok(())
    }

    fn now_ms(&self) -> i64 {
        now_millis().saturating_add(self.clock_offset_ms.load(Ordering::Relaxed))
    }
}
