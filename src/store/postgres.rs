//! The shared store: PostgreSQL, for several replicas on one database.
//!
//! Every change locks its run's row (`SELECT … FOR UPDATE`), so sequences are allocated and tool
//! calls settled one transaction at a time per run, across replicas; each commit notifies
//! `askuser_commits` so followers on other replicas see it at once.

use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, NoTls, Row};
use tracing::warn;

use super::records::{
    PENDING_QUERY, PendingRow, RUN_COLUMNS, RunHead, RunRow, TOOL_CALL_QUERY,
    TRANSCRIPT_CALLS_QUERY, TURNS_QUERY, ToolCallRow, TranscriptCall, assemble_transcript,
    first_step, from_json, kind_name, parse_status, to_json, unsigned,
};
use super::{
    CallStatus, CancelOutcome, CommitNotice, Committed, Created, Decide, EventPage, Lease,
    NewCallState, NewRun, RunEnd, RunQuery, RunStore, SettleOutcome, StepState, StoreError,
    StoreResult, ToolCallRecord, TurnCommit, TurnOutcome,
};
use crate::domain::{
    Event, EventKind, PendingCall, RunRecord, RunStatus, ToolResultKind, now_millis,
};

/// The schema migrations, applied in order; never edit a released one, add the next.
const MIGRATIONS: &[(i64, &str)] = &[(1, include_str!("../../migrations/postgres/0001_init.sql"))];

/// The channel commit notices travel on.
const NOTIFY_CHANNEL: &str = "askuser_commits";

/// A [`RunStore`] on PostgreSQL.
pub struct PostgresStore {
    pool: Pool,
    config: tokio_postgres::Config,
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        StoreError::Postgres(error.to_string())
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        StoreError::Postgres(error.to_string())
    }
}

impl PostgresStore {
    /// Connects a pool of `pool_size` connections and brings the schema up to date.
    pub async fn connect(url: &str, pool_size: usize) -> StoreResult<Self> {
        let config: tokio_postgres::Config = url.parse().map_err(|e: tokio_postgres::Error| {
            StoreError::Postgres(format!("database url: {e}"))
        })?;
        let config = with_keepalive(config);
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            .build()
            .map_err(|e| StoreError::Postgres(e.to_string()))?;
        let store = Self { pool, config };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
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
                &[version, &now_millis()],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// Runs a statement prepared once per pooled connection: it then takes one round trip to the
/// server instead of two (parse, then execute).
async fn execute(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<u64> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.execute(&statement, params).await?)
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

/// [`execute`] for a query of at most one row.
async fn select_opt(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Option<Row>> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query_opt(&statement, params).await?)
}

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
    }
}

async fn load_pending(tx: &Transaction<'_>, run_id: &str) -> StoreResult<Vec<PendingCall>> {
    select(tx, PENDING_QUERY, &[&run_id])
        .await?
        .iter()
        .map(|row| {
            PendingRow {
                tool_call_id: row.get(0),
                tool_name: row.get(1),
                payload: row.get(2),
                expire_ms: row.get(3),
            }
            .into_pending()
        })
        .collect()
}

async fn load_run(tx: &Transaction<'_>, run_id: &str) -> StoreResult<Option<RunRecord>> {
    let Some(row) = select_opt(
        tx,
        &format!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = $1"),
        &[&run_id],
    )
    .await?
    else {
        return Ok(None);
    };
    let pending = load_pending(tx, run_id).await?;
    run_row(&row).into_record(pending).map(Some)
}

async fn load_tool_call(
    tx: &Transaction<'_>,
    run_id: &str,
    tool_call_id: &str,
) -> StoreResult<Option<ToolCallRecord>> {
    select_opt(tx, TOOL_CALL_QUERY, &[&run_id, &tool_call_id])
        .await?
        .map(|row| {
            ToolCallRow {
                tool_name: row.get(0),
                status: row.get(1),
                payload: row.get(2),
                expire_ms: row.get(3),
                answer: row.get(4),
                answer_id: row.get(5),
                result_sequence: row.get(6),
            }
            .into_record(run_id, tool_call_id)
        })
        .transpose()
}

async fn lock_run(tx: &Transaction<'_>, run_id: &str) -> StoreResult<Option<RunHead>> {
    select_opt(
        tx,
        "SELECT status, last_sequence, turns, lease_owner FROM runs WHERE run_id = $1 FOR UPDATE",
        &[&run_id],
    )
    .await?
    .map(|row| {
        Ok(RunHead {
            status: parse_status(row.get(0))?,
            last_sequence: unsigned(row.get(1)),
            turns: u32::try_from(row.get::<_, i64>(2)).unwrap_or(u32::MAX),
            lease_owner: row.get(3),
        })
    })
    .transpose()
}

async fn append_events(
    tx: &Transaction<'_>,
    run_id: &str,
    last_sequence: u64,
    kinds: Vec<EventKind>,
    time_ms: i64,
) -> StoreResult<Vec<Event>> {
    let insert = tx
        .prepare_cached(
            "INSERT INTO events (run_id, sequence, time_ms, body) VALUES ($1, $2, $3, $4)",
        )
        .await?;
    let mut events = Vec::with_capacity(kinds.len());
    for (offset, kind) in kinds.into_iter().enumerate() {
        let sequence = last_sequence + 1 + offset as u64;
        tx.execute(
            &insert,
            &[&run_id, &(sequence as i64), &time_ms, &to_json(&kind)?],
        )
        .await?;
        events.push(Event {
            run_id: run_id.to_owned(),
            sequence,
            time_ms,
            kind,
        });
    }
    Ok(events)
}

/// Announces a commit to every replica; delivered when the transaction commits.
async fn notify(
    tx: &Transaction<'_>,
    run_id: &str,
    last_sequence: u64,
    status: RunStatus,
) -> StoreResult<()> {
    let payload = format!("{run_id} {last_sequence} {}", status.as_str());
    execute(tx, "SELECT pg_notify($1, $2)", &[&NOTIFY_CHANNEL, &payload]).await?;
    Ok(())
}

fn parse_notice(payload: &str) -> Option<CommitNotice> {
    let mut parts = payload.split(' ');
    let run_id = parts.next()?.to_owned();
    let last_sequence = parts.next()?.parse().ok()?;
    let status = RunStatus::parse(parts.next()?)?;
    Some(CommitNotice::Committed {
        run_id,
        last_sequence,
        status,
    })
}

/// TCP keepalive of store connections, so a connection that died silently (a dropped NAT entry,
/// a failed-over database) is noticed in about a minute rather than the OS's two hours.
fn with_keepalive(mut config: tokio_postgres::Config) -> tokio_postgres::Config {
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .keepalives_interval(Duration::from_secs(10))
        .keepalives_retries(3);
    config
}

/// Listens for commit notices on a dedicated connection, reconnecting when it drops. Notices sent
/// while it was down are lost, so after every reconnect it reports [`CommitNotice::Missed`].
async fn listen(config: tokio_postgres::Config, notices: mpsc::Sender<CommitNotice>) {
    let mut backoff = Duration::from_millis(100);
    let mut connected_before = false;
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                backoff = Duration::from_millis(100);
                let (messages_tx, mut messages) = mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut stream =
                        futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = stream.next().await {
                        match message {
                            Ok(message) => {
                                if messages_tx.send(message).is_err() {
                                    return;
                                }
                            }
                            Err(error) => {
                                warn!(%error, "commit notice connection failed");
                                return;
                            }
                        }
                    }
                });
                match client
                    .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
                    .await
                {
                    Err(error) => warn!(%error, "LISTEN for commit notices failed"),
                    Ok(()) => {
                        if connected_before && notices.send(CommitNotice::Missed).await.is_err() {
                            driver.abort();
                            return;
                        }
                        connected_before = true;
                        while let Some(message) = messages.recv().await {
                            if let AsyncMessage::Notification(notification) = message
                                && let Some(notice) = parse_notice(notification.payload())
                                && notices.send(notice).await.is_err()
                            {
                                driver.abort();
                                return;
                            }
                        }
                    }
                }
                driver.abort();
            }
            Err(error) => warn!(%error, "connecting for commit notices failed"),
        }
        if notices.is_closed() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// The state a step of a run starts from; `None` when there is no such run.
async fn read_step(tx: &Transaction<'_>, run_id: &str) -> StoreResult<Option<StepState>> {
    let Some(run) = load_run(tx, run_id).await? else {
        return Ok(None);
    };
    let turns: Vec<(i64, String)> = select(tx, TURNS_QUERY, &[&run_id])
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let calls: Vec<TranscriptCall> = select(tx, TRANSCRIPT_CALLS_QUERY, &[&run_id])
        .await?
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
    let step_attempt: i64 = select_one(
        tx,
        "SELECT step_attempt FROM runs WHERE run_id = $1",
        &[&run_id],
    )
    .await?
    .get(0);
    let transcript = assemble_transcript(&run.prompt, turns, &calls)?;
    Ok(Some(StepState {
        run,
        transcript,
        step_attempt: u32::try_from(step_attempt).unwrap_or(0),
    }))
}

/// Takes or renews the lease of a running run unless another owner holds an unexpired one.
async fn take_lease(
    client: &impl GenericClient,
    run_id: &str,
    lease: Lease<'_>,
) -> StoreResult<bool> {
    let taken = execute(
        client,
        "UPDATE runs SET lease_owner = $2, lease_expires_ms = $3 WHERE run_id = $1 \
         AND status = 'running' AND (lease_owner IS NULL OR lease_owner = $2 \
         OR lease_expires_ms < $4)",
        &[&run_id, &lease.owner, &lease.until_ms, &now_millis()],
    )
    .await?;
    Ok(taken == 1)
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: NewRun, lease: Option<Lease<'_>>) -> StoreResult<Created> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let now = now_millis();
        execute(
            &tx,
            &format!(
                "INSERT INTO runs ({RUN_COLUMNS}, lease_owner, lease_expires_ms) \
                 VALUES ($1, $2, 'running', $3, $4, '', '', 1, 0, $5, $6, $6, $7, $8)"
            ),
            &[
                &run.run_id,
                &run.agent_id,
                &run.prompt,
                &to_json(&run.metadata)?,
                &run.question_ttl_ms,
                &now,
                &lease.map(|lease| lease.owner),
                &lease.map(|lease| lease.until_ms),
            ],
        )
        .await?;
        let started = EventKind::RunStarted {
            agent_id: run.agent_id.clone(),
            prompt: run.prompt.clone(),
            metadata: run.metadata.clone(),
        };
        let events = append_events(&tx, &run.run_id, 0, vec![started], now).await?;
        notify(&tx, &run.run_id, 1, RunStatus::Running).await?;
        tx.commit().await?;
        Ok(Created {
            committed: Committed {
                events,
                status: RunStatus::Running,
            },
            step: first_step(run, now)?,
        })
    }

    async fn get_run(&self, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let run = load_run(&tx, run_id).await?;
        tx.commit().await?;
        Ok(run)
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let status = query.status.map(|s| s.as_str().to_owned());
        let rows = select(
            &tx,
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE ($1::TEXT IS NULL OR status = $1) \
                     AND ($2::TEXT IS NULL OR agent_id = $2) AND ($3::TEXT IS NULL OR run_id < $3) \
                     ORDER BY run_id DESC LIMIT $4"
            ),
            &[
                &status,
                &query.agent_id,
                &query.before_run_id,
                &(query.limit as i64),
            ],
        )
        .await?;
        let mut runs = Vec::with_capacity(rows.len());
        for row in &rows {
            let raw = run_row(row);
            let pending = load_pending(&tx, &raw.run_id).await?;
            runs.push(raw.into_record(pending)?);
        }
        tx.commit().await?;
        Ok(runs)
    }

    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>> {
        let mut client = self.pool.get().await?;
        // Taking the lease locks the run's row, and every writer of a run locks it first: the
        // reads after it see one state of the run at any isolation level. A plain read takes a
        // snapshot instead.
        let isolation = match lease {
            Some(_) => tokio_postgres::IsolationLevel::ReadCommitted,
            None => tokio_postgres::IsolationLevel::RepeatableRead,
        };
        let tx = client
            .build_transaction()
            .isolation_level(isolation)
            .start()
            .await?;
        let step = match lease {
            Some(lease) if !take_lease(&tx, run_id, lease).await? => None,
            _ => read_step(&tx, run_id).await?,
        };
        tx.commit().await?;
        Ok(step)
    }

    async fn commit_turn(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        commit: TurnCommit,
    ) -> StoreResult<TurnOutcome> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let now = now_millis();
        let Some(head) = lock_run(&tx, run_id).await? else {
            return Ok(TurnOutcome::Stale);
        };
        if !head.admits_step(owner, expected_turns) {
            return Ok(TurnOutcome::Stale);
        }
        let mut turns = head.turns;
        if let Some(text) = &commit.assistant_text {
            execute(
                &tx,
                "INSERT INTO turns (run_id, turn, text) VALUES ($1, $2, $3)",
                &[&run_id, &i64::from(turns), text],
            )
            .await?;
            turns += 1;
        }
        let events = append_events(&tx, run_id, head.last_sequence, commit.events, now).await?;
        let result_sequence = |id: &str| {
            events
                .iter()
                .find(|e| matches!(&e.kind, EventKind::ToolResult { tool_call_id, .. } if tool_call_id == id))
                .map_or(0, |e| e.sequence as i64)
        };
        let insert = tx
            .prepare_cached(
                "INSERT INTO tool_calls (run_id, tool_call_id, turn, position, tool_name, arguments_json, \
                 status, payload, expire_ms, result_content, result_is_error, result_kind, result_sequence) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            )
            .await?;
        let mut any_pending = false;
        let turn = i64::from(turns) - 1;
        for (position, call) in commit.tool_calls.iter().enumerate() {
            let position = position as i64;
            let (status, payload, expire_ms, content, is_error, kind, sequence) = match &call.state
            {
                NewCallState::Pending { payload, expire_ms } => {
                    any_pending = true;
                    (
                        CallStatus::Pending,
                        Some(to_json(payload)?),
                        *expire_ms,
                        None,
                        false,
                        None,
                        0,
                    )
                }
                NewCallState::Settled {
                    content,
                    is_error,
                    kind,
                } => (
                    CallStatus::Invalid,
                    None,
                    None,
                    Some(content.clone()),
                    *is_error,
                    Some(kind_name(*kind)?),
                    result_sequence(&call.tool_call_id),
                ),
            };
            tx.execute(
                &insert,
                &[
                    &run_id,
                    &call.tool_call_id,
                    &turn,
                    &position,
                    &call.tool_name,
                    &call.arguments_json,
                    &status.as_str(),
                    &payload,
                    &expire_ms,
                    &content,
                    &is_error,
                    &kind,
                    &sequence,
                ],
            )
            .await?;
        }
        let (status, output_text, error_message) =
            RunEnd::run_after(commit.end.as_ref(), any_pending);
        let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
        execute(
            &tx,
            "UPDATE runs SET status = $2, turns = $3, last_sequence = $4, output_text = $5, \
             error_message = $6, updated_ms = $7, step_attempt = 0, \
             lease_owner = CASE WHEN $2 = 'running' THEN lease_owner END, \
             lease_expires_ms = CASE WHEN $2 = 'running' THEN lease_expires_ms END \
             WHERE run_id = $1",
            &[
                &run_id,
                &status.as_str(),
                &i64::from(turns),
                &(last_sequence as i64),
                &output_text,
                &error_message,
                &now,
            ],
        )
        .await?;
        notify(&tx, run_id, last_sequence, status).await?;
        tx.commit().await?;
        Ok(TurnOutcome::Committed(Committed { events, status }))
    }

    async fn append_step_events(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        attempt: u32,
        events: Vec<EventKind>,
    ) -> StoreResult<TurnOutcome> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let now = now_millis();
        let Some(head) = lock_run(&tx, run_id).await? else {
            return Ok(TurnOutcome::Stale);
        };
        if !head.admits_step(owner, expected_turns) {
            return Ok(TurnOutcome::Stale);
        }
        let events = append_events(&tx, run_id, head.last_sequence, events, now).await?;
        let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
        execute(&tx, "UPDATE runs SET last_sequence = $2, step_attempt = $3, updated_ms = $4 WHERE run_id = $1",
            &[&run_id, &(last_sequence as i64), &i64::from(attempt), &now],
        )
        .await?;
        notify(&tx, run_id, last_sequence, RunStatus::Running).await?;
        tx.commit().await?;
        Ok(TurnOutcome::Committed(Committed {
            events,
            status: RunStatus::Running,
        }))
    }

    async fn get_tool_call(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> StoreResult<Option<ToolCallRecord>> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let call = load_tool_call(&tx, run_id, tool_call_id).await?;
        tx.commit().await?;
        Ok(call)
    }

    async fn settle_tool_call(
        &self,
        run_id: &str,
        tool_call_id: &str,
        decide: Decide,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<SettleOutcome> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let now = now_millis();
        // Lock the run first: settles of one run are serialized across replicas.
        let Some(head) = lock_run(&tx, run_id).await? else {
            return Ok(SettleOutcome::NotFound);
        };
        let Some(call) = load_tool_call(&tx, run_id, tool_call_id).await? else {
            return Ok(SettleOutcome::NotFound);
        };
        if call.status != CallStatus::Pending {
            return Ok(SettleOutcome::NotPending(Box::new(call)));
        }
        let Some(settlement) = decide(&call) else {
            return Ok(SettleOutcome::Refused(Box::new(call)));
        };
        let result = EventKind::ToolResult {
            tool_call_id: tool_call_id.to_owned(),
            content: settlement.content.clone(),
            is_error: false,
            kind: settlement.kind,
        };
        let events = append_events(&tx, run_id, head.last_sequence, vec![result], now).await?;
        let sequence = head.last_sequence + 1;
        let answer = settlement.answer.as_ref().map(to_json).transpose()?;
        let changed = execute(
            &tx,
            "UPDATE tool_calls SET status = $3, answer = $4, answer_id = $5, result_content = $6, \
                 result_is_error = FALSE, result_kind = $7, result_sequence = $8 \
                 WHERE run_id = $1 AND tool_call_id = $2 AND status = 'pending'",
            &[
                &run_id,
                &tool_call_id,
                &settlement.status.as_str(),
                &answer,
                &settlement.answer_id,
                &settlement.content,
                &kind_name(settlement.kind)?,
                &(sequence as i64),
            ],
        )
        .await?;
        if changed != 1 {
            return Err(StoreError::Corrupt(format!(
                "tool call {tool_call_id} changed under its run's lock"
            )));
        }
        let pending: i64 = select_one(
            &tx,
            "SELECT COUNT(*) FROM tool_calls WHERE run_id = $1 AND status = 'pending'",
            &[&run_id],
        )
        .await?
        .get(0);
        let status = if pending == 0 {
            RunStatus::Running
        } else {
            head.status
        };
        execute(
            &tx,
            "UPDATE runs SET status = $2, last_sequence = $3, updated_ms = $4 WHERE run_id = $1",
            &[&run_id, &status.as_str(), &(sequence as i64), &now],
        )
        .await?;
        let step = match lease {
            Some(lease)
                if status == RunStatus::Running && take_lease(&tx, run_id, lease).await? =>
            {
                read_step(&tx, run_id).await?.map(Box::new)
            }
            _ => None,
        };
        notify(&tx, run_id, sequence, status).await?;
        tx.commit().await?;
        Ok(SettleOutcome::Settled {
            committed: Committed { events, status },
            step,
        })
    }

    async fn cancel_run(
        &self,
        run_id: &str,
        reason: &str,
        call_content: &str,
    ) -> StoreResult<CancelOutcome> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let now = now_millis();
        let Some(head) = lock_run(&tx, run_id).await? else {
            return Ok(CancelOutcome::NotFound);
        };
        match head.status {
            RunStatus::Cancelled => return Ok(CancelOutcome::AlreadyCancelled),
            RunStatus::Completed | RunStatus::Failed => {
                return Ok(CancelOutcome::Finished(head.status));
            }
            RunStatus::Running | RunStatus::Suspended => {}
        }
        let pending = load_pending(&tx, run_id).await?;
        let mut kinds: Vec<EventKind> = pending
            .iter()
            .map(|call| EventKind::ToolResult {
                tool_call_id: call.tool_call_id.clone(),
                content: call_content.to_owned(),
                is_error: false,
                kind: ToolResultKind::Cancelled,
            })
            .collect();
        kinds.push(EventKind::RunCancelled {
            reason: reason.to_owned(),
        });
        let events = append_events(&tx, run_id, head.last_sequence, kinds, now).await?;
        let cancelled = kind_name(ToolResultKind::Cancelled)?;
        for (call, event) in pending.iter().zip(&events) {
            execute(&tx, "UPDATE tool_calls SET status = 'cancelled', result_content = $3, result_kind = $4, \
                 result_sequence = $5 WHERE run_id = $1 AND tool_call_id = $2",
                &[
                    &run_id,
                    &call.tool_call_id,
                    &call_content,
                    &cancelled,
                    &(event.sequence as i64),
                ],
            )
            .await?;
        }
        let last_sequence = events.last().map_or(head.last_sequence, |e| e.sequence);
        execute(
            &tx,
            "UPDATE runs SET status = 'cancelled', error_message = $2, last_sequence = $3, \
             updated_ms = $4, lease_owner = NULL, lease_expires_ms = NULL WHERE run_id = $1",
            &[&run_id, &reason, &(last_sequence as i64), &now],
        )
        .await?;
        notify(&tx, run_id, last_sequence, RunStatus::Cancelled).await?;
        tx.commit().await?;
        Ok(CancelOutcome::Cancelled(Committed {
            events,
            status: RunStatus::Cancelled,
        }))
    }

    async fn read_events(
        &self,
        run_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> StoreResult<Option<EventPage>> {
        let mut client = self.pool.get().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        let Some(head) = select_opt(
            &tx,
            "SELECT status, last_sequence FROM runs WHERE run_id = $1",
            &[&run_id],
        )
        .await?
        else {
            return Ok(None);
        };
        let rows = select(
            &tx,
            "SELECT sequence, time_ms, body FROM events WHERE run_id = $1 AND sequence > $2 \
                 ORDER BY sequence LIMIT $3",
            &[
                &run_id,
                &(after_sequence as i64),
                &i64::try_from(limit).unwrap_or(i64::MAX),
            ],
        )
        .await?;
        tx.commit().await?;
        let events = rows
            .iter()
            .map(|row| {
                Ok(Event {
                    run_id: run_id.to_owned(),
                    sequence: unsigned(row.get(0)),
                    time_ms: row.get(1),
                    kind: from_json(row.get(2))?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(Some(EventPage {
            events,
            status: parse_status(head.get(0))?,
            last_sequence: unsigned(head.get(1)),
        }))
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

    async fn prune_finished(&self, before_ms: i64) -> StoreResult<u64> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let finished = "SELECT run_id FROM runs WHERE status IN ('completed', 'failed', 'cancelled') \
                        AND updated_ms < $1";
        for table in ["events", "tool_calls", "turns"] {
            execute(
                &tx,
                &format!("DELETE FROM {table} WHERE run_id IN ({finished})"),
                &[&before_ms],
            )
            .await?;
        }
        let pruned = execute(&tx, "DELETE FROM runs WHERE status IN ('completed', 'failed', 'cancelled') AND updated_ms < $1",
                &[&before_ms],
            )
            .await?;
        tx.commit().await?;
        Ok(pruned)
    }

    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool> {
        let client = self.pool.get().await?;
        take_lease(&client, run_id, Lease { owner, until_ms }).await
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()> {
        let client = self.pool.get().await?;
        execute(
            &client,
            "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL \
                 WHERE run_id = $1 AND lease_owner = $2",
            &[&run_id, &owner],
        )
        .await?;
        Ok(())
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
        tokio::spawn(listen(self.config.clone(), notices));
        Ok(Some(feed))
    }

    async fn close(&self) -> StoreResult<()> {
        self.pool.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_their_payload() {
        assert_eq!(
            parse_notice("run-1 42 suspended"),
            Some(CommitNotice::Committed {
                run_id: "run-1".into(),
                last_sequence: 42,
                status: RunStatus::Suspended,
            })
        );
        assert!(parse_notice("run-1 x running").is_none());
        assert!(parse_notice("run-1 3 asleep").is_none());
    }
}
