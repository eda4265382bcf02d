//! The embedded default store: one SQLite file in WAL mode.

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use checkpoint::Checkpointer;
use group_commit::GroupCommit;
pub use keys::SqliteKeyFile;
use readers::Readers;

mod checkpoint;
mod deliveries;
mod group_commit;
mod keys;
mod readers;
mod rows;
mod schema;

use rows::*;
use schema::*;

use super::ops::commit_executed::ExecutedReads;
use super::ops::settle::{SettleReads, Settling};
use super::ops::{Write, cancel, commit_executed, commit_turn, create, settle, step_events};
use super::records::{
    AFTER_RUN_COLUMNS, CALL_COUNTS_QUERY, CLAIM_QUERY, CLAIM_UPDATE, EXECUTING_QUERY,
    OLDEST_PENDING_CALLS_QUERY, PENDING_CALLS_COUNT_QUERY, PENDING_COLUMNS, PENDING_FEED_QUERY,
    PENDING_QUERY, PRUNABLE_RUNS_QUERY, PRUNED_TABLES, PendingRow, RUN_HEAD_QUERY, RUN_IN_TENANT,
    RUN_OF_REQUEST_QUERY, RUN_QUERY, RUN_STATE_QUERY, RunHead, RunRow, SETTLED_QUERY,
    STEP_RUN_QUERY, SettledRow, TOOL_CALL_QUERY, TRANSCRIPT_CALLS_QUERY, TURNS_QUERY, ToolCallRow,
    TranscriptCall, UNFINISHED_BEFORE_QUERY, UNFINISHED_RUNS_COUNT_QUERY, UNSETTLED_QUERY,
    WEBHOOKS_DUE_QUERY, assemble_transcript, counting_step_start, executing_call, from_json,
    parse_status, pending_counts, to_json,
};
use super::run_filter::{Dialect, list_runs_query};
use super::webhook_records::{DeliveryInsert, INSERT_DELIVERY, deliveries_of};
use super::{
    CallStatus, CancelOutcome, ClaimOutcome, CreateOutcome, Decide, EventPage, ExecutedResult,
    ExecutingCall, Lease, NewRun, PendingCounts, RunPendingCall, RunQuery, RunStore, SettleOutcome,
    StepState, StoreError, StoreResult, Tenancy, ToolCallRecord, TurnCommit, TurnOutcome,
};
use crate::domain::{Event, EventKind, Message, PendingCall, RunRecord, SettledBy, now_millis};

/// How hard SQLite works to make a commit durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Synchronous {
    /// WAL with `synchronous=NORMAL`: a commit survives a crash of the process; a power loss or OS
    /// crash may lose the last commits (never corrupts the file).
    Normal,
    /// WAL with `synchronous=FULL`: every commit is fsynced and survives a power loss too.
    Full,
}

/// A [`RunStore`] on one SQLite file: a group-commit task owns the connection every write uses;
/// reads have connections of their own, and a checkpoint thread has another.
pub struct SqliteStore {
    db: GroupCommit,
    readers: Readers,
    /// The lock on the database file, held as long as the store lives.
    _lock: std::fs::File,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub fn open(path: &Path, synchronous: Synchronous) -> StoreResult<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // One process per file: a second server on the same data directory fails here.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("lock"))?;
        lock.try_lock().map_err(|error| match error {
            std::fs::TryLockError::WouldBlock => StoreError::Io(std::io::Error::other(format!(
                "{} is in use by another askuser server",
                path.display()
            ))),
            std::fs::TryLockError::Error(error) => StoreError::Io(error),
        })?;
        let mut conn = connect(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let sync = match synchronous {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", sync)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Checkpoints run on their own connection and thread, never in a commit.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        // The savepoint journals of a batch's operations stay in memory rather than spill to a
        // temporary file.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        // Room for every statement the store prepares, so none is parsed again.
        conn.set_prepared_statement_cache_capacity(64);
        migrate(&mut conn)?;
        // Leases of a previous process are void: nobody else can use this file.
        conn.execute(
            "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL WHERE lease_owner IS NOT NULL",
            [],
        )?;
        conn.execute(
            "UPDATE webhook_deliveries SET lease_owner = NULL, lease_expires_ms = NULL \
             WHERE lease_owner IS NOT NULL",
            [],
        )?;
        let checkpointer = Checkpointer::start(connect(path)?)?;
        Ok(Self {
            db: GroupCommit::start(conn, checkpointer)?,
            readers: Readers::new(path),
            _lock: lock,
        })
    }
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(
        &self,
        run: NewRun,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<CreateOutcome> {
        let lease = lease.map(|lease| (lease.owner.to_owned(), lease.until_ms));
        self.db
            .commit("create_run", move |conn| {
                if let Some(request_id) = &run.request_id {
                    let existing: Option<String> = conn
                        .prepare_cached(RUN_OF_REQUEST_QUERY)?
                        .query_row([&run.tenant, request_id], |row| row.get(0))
                        .optional()?;
                    if let Some(run_id) = existing {
                        return Ok(CreateOutcome::Existing { run_id });
                    }
                }
                let lease = lease.as_ref().map(|(owner, until_ms)| Lease {
                    owner,
                    until_ms: *until_ms,
                });
                let plan = create::plan(run, lease, now_millis())?;
                execute(conn, &plan.run_insert)?;
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn get_run(&self, run_id: &str, tenancy: Tenancy<'_>) -> StoreResult<Option<RunRecord>> {
        let (run_id, tenant) = (run_id.to_owned(), tenancy.param());
        self.readers
            .run(move |conn| load_run(conn, &run_id, tenant.as_deref()))
            .await
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        self.readers
            .run(move |conn| {
                let (sql, args) = list_runs_query(&query, Dialect::Sqlite)?;
                let raws: Vec<RunRow> = conn
                    .prepare_cached(&sql)?
                    .query_map(rusqlite::params_from_iter(args.iter()), read_run_row)?
                    .collect::<Result<_, _>>()?;
                if raws.is_empty() {
                    return Ok(Vec::new());
                }
                // The pending calls of every run listed, with one query; [`PENDING_COLUMNS`] first.
                let run_ids = to_json(&raws.iter().map(|raw| &raw.run_id).collect::<Vec<_>>())?;
                let rows: Vec<(String, PendingRow)> = conn
                    .prepare_cached(&LISTED_PENDING_QUERY)?
                    .query_map([run_ids], |row| {
                        Ok((row.get(11)?, read_pending_row(row, 0)?))
                    })?
                    .collect::<Result<_, _>>()?;
                let mut pending: HashMap<String, Vec<PendingCall>> = HashMap::new();
                for (run_id, row) in rows {
                    pending.entry(run_id).or_default().push(row.into_pending()?);
                }
                raws.into_iter()
                    .map(|raw| {
                        let calls = pending.remove(&raw.run_id).unwrap_or_default();
                        raw.into_record(calls)
                    })
                    .collect()
            })
            .await
    }

    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>> {
        let run_id = run_id.to_owned();
        let lease = lease.map(|lease| (lease.owner.to_owned(), lease.until_ms));
        self.db
            .commit("load_step", move |conn| match lease {
                Some((owner, until_ms)) if !take_step_lease(conn, &run_id, &owner, until_ms)? => {
                    Ok(None)
                }
                _ => read_step(conn, &run_id),
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
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("commit_turn", move |conn| {
                let head = run_head(conn, &run_id, None)?;
                let step = (owner.as_str(), expected_turns);
                let Some(plan) = commit_turn::plan(&run_id, head, step, &mut commit, now_millis())?
                else {
                    return Ok(TurnOutcome::Stale);
                };
                if let Some(turn_insert) = &plan.turn_insert {
                    execute(conn, turn_insert)?;
                }
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                let mut insert = conn.prepare_cached(
                    "INSERT INTO tool_calls (run_id, tool_call_id, turn, position, tool_name, \
                     arguments_json, status, payload, expire_ms, result_content, result_is_error, \
                     result_kind, result_sequence, suspend_kind, run_arguments, approval_reason, \
                     assignees, suspended_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
                     ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                )?;
                for row in &plan.calls {
                    insert.execute(params![
                        run_id,
                        row.call.tool_call_id,
                        plan.turn,
                        row.position,
                        row.call.tool_name,
                        row.call.arguments_json,
                        row.status.as_str(),
                        row.payload,
                        row.expire_ms,
                        row.content,
                        row.is_error,
                        row.kind,
                        row.result_sequence,
                        row.suspend_kind,
                        row.run_arguments,
                        row.approval_reason,
                        row.assignees,
                        row.suspended_ms
                    ])?;
                }
                execute(conn, &plan.run_update)?;
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
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("append_step_events", move |conn| {
                let head = run_head(conn, &run_id, None)?;
                let step = (owner.as_str(), expected_turns);
                let Some(plan) =
                    step_events::plan(&run_id, head, step, attempt, events, now_millis())?
                else {
                    return Ok(TurnOutcome::Stale);
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                execute(conn, &plan.run_update)?;
                Ok(plan.outcome())
            })
            .await
    }

    async fn get_tool_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
    ) -> StoreResult<Option<ToolCallRecord>> {
        let (run_id, tenant, tool_call_id) =
            (run_id.to_owned(), tenancy.param(), tool_call_id.to_owned());
        self.db
            .run(move |conn| {
                if !run_in_tenant(conn, &run_id, tenant.as_deref())? {
                    return Ok(None);
                }
                load_tool_call(conn, &run_id, &tool_call_id)
            })
            .await
    }

    async fn settle_tool_call(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        tool_call_id: &str,
        decide: Decide,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<SettleOutcome> {
        let (run_id, tenant, tool_call_id) =
            (run_id.to_owned(), tenancy.param(), tool_call_id.to_owned());
        let lease = lease.map(|lease| (lease.owner.to_owned(), lease.until_ms));
        self.db
            .commit("settle_tool_call", move |conn| {
                let reads = SettleReads {
                    head: run_head(conn, &run_id, tenant.as_deref())?,
                    call: load_tool_call(conn, &run_id, &tool_call_id)?,
                    counts: call_counts(conn, &run_id)?,
                };
                let plan = match settle::plan(&run_id, &tool_call_id, reads, decide, now_millis())?
                {
                    Settling::Unchanged(outcome) => return Ok(outcome),
                    Settling::Write(plan) => plan,
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                if execute(conn, &plan.call_update)? != 1 {
                    return Err(StoreError::Corrupt(format!(
                        "tool call {tool_call_id} changed inside its own transaction"
                    )));
                }
                execute(conn, &plan.run_update)?;
                let step = match lease {
                    Some((owner, until_ms))
                        if plan.runs_again()
                            && take_step_lease(conn, &run_id, &owner, until_ms)? =>
                    {
                        read_step(conn, &run_id)?
                    }
                    _ => None,
                };
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
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("commit_executed", move |conn| {
                let reads = ExecutedReads {
                    head: run_head(conn, &run_id, None)?,
                    counts: call_counts(conn, &run_id)?,
                };
                let step = (owner.as_str(), expected_turns);
                let Some(plan) =
                    commit_executed::plan(&run_id, reads, step, &results, now_millis())?
                else {
                    return Ok(TurnOutcome::Stale);
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                for call_update in &plan.call_updates {
                    if execute(conn, call_update)? != 1 {
                        return Err(commit_executed::not_executing(call_update));
                    }
                }
                execute(conn, &plan.run_update)?;
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
        let (run_id, tenant, tool_call_id, claimant, subject) = (
            run_id.to_owned(),
            tenancy.param(),
            tool_call_id.to_owned(),
            claimant.to_owned(),
            subject.to_owned(),
        );
        self.db
            .commit("claim_call", move |conn| {
                if !run_in_tenant(conn, &run_id, tenant.as_deref())? {
                    return Ok(ClaimOutcome::NotFound);
                }
                let claimed = conn.prepare_cached(CLAIM_UPDATE)?.execute(params![
                    claimant,
                    subject,
                    until_ms,
                    run_id,
                    tool_call_id,
                    now_millis()
                ])?;
                if claimed == 1 {
                    return Ok(ClaimOutcome::Claimed { until_ms });
                }
                let Some(call) = load_tool_call(conn, &run_id, &tool_call_id)? else {
                    return Ok(ClaimOutcome::NotFound);
                };
                if call.status != CallStatus::Pending {
                    return Ok(ClaimOutcome::NotPending(Box::new(call)));
                }
                let (holder, until): (Option<String>, Option<i64>) = conn
                    .prepare_cached(CLAIM_QUERY)?
                    .query_row([&run_id, &tool_call_id], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })?;
                Ok(ClaimOutcome::Held {
                    claimant: holder.unwrap_or_default(),
                    until_ms: until.unwrap_or(0),
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
        let tenant = tenancy.param();
        self.readers
            .run(move |conn| {
                let (run_id, call_id) = after.unwrap_or_default();
                let rows: Vec<(String, String, PendingRow)> = conn
                    .prepare_cached(&PENDING_FEED_QUERY)?
                    .query_map(params![run_id, call_id, tenant, limit as i64], |row| {
                        Ok((row.get(0)?, row.get(1)?, read_pending_row(row, 2)?))
                    })?
                    .collect::<Result<_, _>>()?;
                rows.into_iter()
                    .map(|(run_id, agent_id, row)| row.into_run_pending(run_id, agent_id))
                    .collect()
            })
            .await
    }

    async fn cancel_run(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        reason: &str,
        call_content: &str,
        cancelled_by: &SettledBy,
    ) -> StoreResult<CancelOutcome> {
        let cancelled_by = cancelled_by.clone();
        let (run_id, tenant, reason, call_content) = (
            run_id.to_owned(),
            tenancy.param(),
            reason.to_owned(),
            call_content.to_owned(),
        );
        self.db
            .commit("cancel_run", move |conn| {
                let head = run_head(conn, &run_id, tenant.as_deref())?;
                let unsettled: Vec<String> = conn
                    .prepare_cached(UNSETTLED_QUERY)?
                    .query_map([&run_id], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                let plan = match cancel::plan(
                    &run_id,
                    head,
                    unsettled,
                    &reason,
                    &call_content,
                    &cancelled_by,
                    now_millis(),
                )? {
                    Ok(plan) => plan,
                    Err(outcome) => return Ok(outcome),
                };
                insert_events(conn, plan.webhooks.as_deref(), &plan.events)?;
                let calls = &plan.calls;
                let mut settle = conn.prepare_cached(
                    "UPDATE tool_calls SET status = 'cancelled', result_content = ?3, \
                     result_kind = ?4, result_sequence = ?5, settled_by = ?6, settled_ms = ?7 \
                     WHERE run_id = ?1 AND tool_call_id = ?2",
                )?;
                for (tool_call_id, sequence) in calls.tool_call_ids.iter().zip(&calls.sequences) {
                    settle.execute(params![
                        run_id,
                        tool_call_id,
                        calls.content,
                        calls.kind,
                        sequence,
                        calls.settled_by,
                        calls.settled_ms
                    ])?;
                }
                execute(conn, &plan.run_update)?;
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
        let (run_id, tenant) = (run_id.to_owned(), tenancy.param());
        self.readers.run(move |conn| {
            let Some((status, last_sequence)) = conn
                .prepare_cached(RUN_STATE_QUERY)?
                .query_row(params![&run_id, tenant], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
                .optional()?
            else {
                return Ok(None);
            };
            let rows: Vec<(i64, i64, String)> = conn
                .prepare_cached(
                    "SELECT sequence, time_ms, body FROM events WHERE run_id = ?1 AND sequence > ?2 \
                     ORDER BY sequence LIMIT ?3",
                )?
                .query_map(
                    params![run_id, after_sequence as i64, limit as i64],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )?
                .collect::<Result<_, _>>()?;
            let events = rows
                .into_iter()
                .map(|(sequence, time_ms, body)| {
                    Ok(Event {
                        run_id: run_id.clone(),
                        sequence: u64::try_from(sequence).unwrap_or(0),
                        time_ms,
                        kind: from_json(&body)?,
                    })
                })
                .collect::<StoreResult<Vec<_>>>()?;
            Ok(Some(EventPage {
                events,
                status: parse_status(&status)?,
                last_sequence: u64::try_from(last_sequence).unwrap_or(0),
            }))
        })
        .await
    }

    async fn pending_counts(&self, now_ms: i64) -> StoreResult<PendingCounts> {
        self.readers
            .run(move |conn| {
                let counts = |sql| -> StoreResult<Vec<(String, i64)>> {
                    Ok(conn
                        .prepare_cached(sql)?
                        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                        .collect::<Result<_, _>>()?)
                };
                let runs = counts(UNFINISHED_RUNS_COUNT_QUERY)?;
                let calls = counts(PENDING_CALLS_COUNT_QUERY)?;
                let oldest = counts(OLDEST_PENDING_CALLS_QUERY)?;
                let webhooks_due = conn
                    .prepare_cached(WEBHOOKS_DUE_QUERY)?
                    .query_row([now_ms], |row| row.get(0))?;
                pending_counts(runs, calls, oldest, webhooks_due)
            })
            .await
    }

    async fn due_expiries(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<(String, String)>> {
        self.readers
            .run(move |conn| {
                Ok(conn
                    .prepare_cached(
                        "SELECT run_id, tool_call_id FROM tool_calls WHERE status = 'pending' \
                     AND expire_ms IS NOT NULL AND expire_ms <= ?1 ORDER BY expire_ms LIMIT ?2",
                    )?
                    .query_map(params![now_ms, limit as i64], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })?
                    .collect::<Result<_, _>>()?)
            })
            .await
    }

    async fn next_expiry(&self) -> StoreResult<Option<i64>> {
        self.readers.run(|conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT MIN(expire_ms) FROM tool_calls WHERE status = 'pending' AND expire_ms IS NOT NULL",
                )?
                .query_row([], |row| row.get(0))?)
        })
        .await
    }

    async fn prune_finished(&self, before_ms: i64, limit: usize) -> StoreResult<u64> {
        self.db
            .commit("prune_finished", move |conn| {
                let runs: Vec<String> = conn
                    .prepare_cached(PRUNABLE_RUNS_QUERY)?
                    .query_map(params![before_ms, limit as i64], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                let mut deletes = PRUNED_TABLES
                    .map(|table| format!("DELETE FROM {table} WHERE run_id = ?1"))
                    .into_iter()
                    .map(|sql| conn.prepare(&sql))
                    .collect::<Result<Vec<_>, _>>()?;
                for run_id in &runs {
                    for delete in &mut deletes {
                        delete.execute([run_id])?;
                    }
                }
                Ok(runs.len() as u64)
            })
            .await
    }

    async fn unfinished_before(&self, before_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.readers
            .run(move |conn| {
                Ok(conn
                    .prepare_cached(UNFINISHED_BEFORE_QUERY)?
                    .query_map(params![before_ms, limit as i64], |row| row.get(0))?
                    .collect::<Result<_, _>>()?)
            })
            .await
    }

    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("acquire_lease", move |conn| {
                take_lease(conn, &run_id, &owner, until_ms)
            })
            .await
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.db
            .commit("release_lease", move |conn| {
                conn.prepare_cached(
                    "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL \
                 WHERE run_id = ?1 AND lease_owner = ?2",
                )?
                .execute(params![run_id, owner])?;
                Ok(())
            })
            .await
    }

    async fn unleased_runs(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.readers.run(move |conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT run_id FROM runs WHERE status = 'running' \
                     AND (lease_owner IS NULL OR lease_expires_ms < ?1) ORDER BY updated_ms LIMIT ?2",
                )?
                .query_map(params![now_ms, limit as i64], |row| row.get(0))?
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn commit_feed(
        &self,
    ) -> StoreResult<Option<tokio::sync::mpsc::Receiver<super::CommitNotice>>> {
        // A SQLite file belongs to this process alone: every commit is already published locally.
        Ok(None)
    }

    async fn close(&self) -> StoreResult<()> {
        // A checkpoint cannot run inside the batch's transaction.
        self.db
            .run_alone(|conn| {
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
                Ok(())
            })
            .await
    }

    async fn ping(&self) -> StoreResult<()> {
        // Through the writer's queue: a stuck or stopped writer fails the ping.
        self.db
            .run(|conn| Ok(conn.query_row("SELECT 1", [], |_| Ok(()))?))
            .await
    }
}

/// Conditions of the disk rather than of the data (a full disk, an I/O error, a file that cannot
/// be opened) pass once the operator fixes them: the same request may succeed then.
impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{CannotOpen, DiskFull, SystemIoFailure};
        match error.sqlite_error_code() {
            Some(DiskFull | SystemIoFailure | CannotOpen) => {
                StoreError::Unavailable(format!("sqlite: {error}"))
            }
            _ => StoreError::Sqlite(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Usage;

    /// A database written by schema version 1 opens, is brought to the newest version with its
    /// runs intact, and keeps token usage from then on.
    #[tokio::test]
    async fn a_version_1_database_is_migrated_in_place() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        {
            let conn = Connection::open(&path).expect("open");
            conn.execute_batch(SCHEMA_V1).expect("schema v1");
            conn.pragma_update(None, "user_version", 1)
                .expect("user_version");
            conn.execute(
                "INSERT INTO runs (run_id, agent_id, status, prompt, metadata, last_sequence, \
                 created_ms, updated_ms) VALUES ('run-1', 'agent', 'running', 'Hi', '{}', 0, 1, 1)",
                [],
            )
            .expect("a version 1 run");
        }
        let store = SqliteStore::open(&path, Synchronous::Normal).expect("open and migrate");
        let step = store
            .load_step("run-1", None)
            .await
            .expect("load step")
            .expect("the run survived");
        assert_eq!(step.run.prompt, "Hi");
        assert_eq!(step.run.usage, None);

        assert!(
            store
                .acquire_lease("run-1", "me", i64::MAX)
                .await
                .expect("lease")
        );
        let usage = Some(Usage {
            input_tokens: 7,
            output_tokens: 3,
        });
        let commit = TurnCommit {
            assistant_text: Some("Hello".into()),
            usage,
            ..TurnCommit::default()
        };
        let outcome = store.commit_turn("run-1", "me", 0, commit).await;
        assert!(
            matches!(outcome, Ok(TurnOutcome::Committed(_))),
            "{outcome:?}"
        );
        let step = store.load_step("run-1", None).await.expect("load step");
        assert_eq!(step.and_then(|step| step.run.usage), usage);
        let version: i64 = Connection::open(&path)
            .and_then(|conn| conn.pragma_query_value(None, "user_version", |row| row.get(0)))
            .expect("user_version");
        assert_eq!(version, MIGRATIONS.len() as i64);
    }

    /// Version 10 takes each delivery's subscription index from its `webhook-id` and drops the URL
    /// and secret's variable it copied.
    #[tokio::test]
    async fn version_10_numbers_deliveries_by_subscription() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        {
            let conn = Connection::open(&path).expect("open");
            for sql in &MIGRATIONS[..8] {
                conn.execute_batch(sql).expect("schema v8");
            }
            conn.pragma_update(None, "user_version", 8)
                .expect("user_version");
            for (id, sequence, permille) in
                [("r-1:3:0", 3, None), ("r-1:13:12:r500", 13, Some(500))]
            {
                conn.execute(
                    "INSERT INTO webhook_deliveries (webhook_id, run_id, sequence, event_type, \
                     url, secret_env, tool_call_id, reminder_permille, status, created_ms, \
                     pending_since_ms, next_attempt_ms) VALUES (?1, 'r-1', ?2, 'run.completed', \
                     'https://h/', 'S', NULL, ?3, 'pending', 1, 1, 1)",
                    params![id, sequence, permille],
                )
                .expect("a version 8 delivery");
            }
        }
        drop(SqliteStore::open(&path, Synchronous::Normal).expect("open and migrate"));
        let conn = Connection::open(&path).expect("open");
        let subscriptions: Vec<(String, i64)> = conn
            .prepare("SELECT webhook_id, subscription FROM webhook_deliveries ORDER BY sequence")
            .and_then(|mut select| {
                select
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect()
            })
            .expect("subscriptions");
        assert_eq!(
            subscriptions,
            vec![("r-1:3:0".to_owned(), 0), ("r-1:13:12:r500".to_owned(), 12)]
        );
    }
}
