//! The shared store: PostgreSQL, for several replicas on one database.
//!
//! Every change locks its run's row (`SELECT … FOR UPDATE`), so sequences are allocated and tool
//! calls settled one transaction at a time per run, across replicas; each commit notifies
//! `askuser_commits` so followers on other replicas see it at once.
//!
//! Round trips, not fsyncs, bound this store, so statements go in *flights* ([`tx`]): a
//! plan's reads are one flight, its writes another.

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
mod handle;
mod keys;
mod migrations;
mod rows;
mod tx;

pub use handle::PostgresStore;
use handle::*;
use migrations::MIGRATIONS;
use rows::*;
use tx::*;

use super::ops::commit_executed::ExecutedReads;
use super::ops::settle::{SettleReads, Settling};
use super::ops::{
    SqlValue, Write, cancel, commit_executed, commit_turn, create, settle, step_events,
};
use super::postgres_connect::{Connection, PostgresSettings, connection, pool};
use super::records::{
    AFTER_RUN_COLUMNS, CALL_COUNTS_QUERY, CLAIM_QUERY, CLAIM_UPDATE, EXECUTED_UPDATE,
    EXECUTING_QUERY, INSERT_RUN, LOCK_RUN, OLDEST_PENDING_CALLS_QUERY, PENDING_CALLS_COUNT_QUERY,
    PENDING_COLUMNS, PENDING_FEED_QUERY, PENDING_IN_TENANT_QUERY, PENDING_QUERY,
    PRUNABLE_RUNS_QUERY, PRUNED_TABLES, PendingRow, RUN_IN_TENANT, RUN_OF_REQUEST_QUERY, RUN_QUERY,
    RunHead, RunRow, SETTLED_QUERY, STEP_RUN_QUERY, SettledRow, TOOL_CALL_QUERY,
    TRANSCRIPT_CALLS_QUERY, TURNS_QUERY, ToolCallRow, TranscriptCall, UNFINISHED_BEFORE_QUERY,
    UNFINISHED_RUNS_COUNT_QUERY, UNSETTLED_QUERY, WEBHOOKS_DUE_QUERY, assemble_transcript,
    counting_step_start, executing_call, from_json, parse_status, pending_counts, to_json,
    unsigned,
};
use super::run_filter::{Dialect, list_runs_query};
use super::webhook_records::{DeliveryInsert, deliveries_of};
use super::{
    CallStatus, CancelOutcome, ClaimOutcome, CommitNotice, CreateOutcome, Decide, EventPage,
    ExecutedResult, Lease, NewRun, PendingCounts, RunPendingCall, RunQuery, RunStore,
    SettleOutcome, StepState, StoreError, StoreResult, Tenancy, ToolCallRecord, TurnCommit,
    TurnOutcome, timed,
};
use crate::domain::{Event, EventKind, PendingCall, RunRecord, RunStatus, SettledBy, now_millis};

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
        run.settled = settled_calls(&settled)?;
        Ok(Some(run))
    }

    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>> {
        let client = self.pool.get().await?;
        let (sql, params) = list_runs_query(&query, Dialect::Postgres)?;
        let params: Vec<_> = params.iter().map(SqlValue::as_postgres).collect();
        let rows = select(&client, &sql, &params).await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let run_ids: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        let mut pending = pending_of_runs(&client, &run_ids).await?;
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
                    step_events::UPDATE_RUN,
                    NOTIFY,
                ],
            )
            .await?;
            let ((), head) = try_join!(tx.begin(), lock_run(client, &lock, run_id, None))?;
            let step = (owner, expected_turns);
            let Some(plan) = step_events::plan(run_id, head, step, attempt, events, now)? else {
                return Ok(tx.rollback(TurnOutcome::Stale).await);
            };
            try_join!(
                insert_events(
                    client,
                    [&events_insert, &deliveries_insert],
                    plan.webhooks.as_deref(),
                    &plan.events,
                ),
                exec_write(client, &run_update, &plan.run_update),
                self.notify(
                    client,
                    &notice,
                    run_id,
                    plan.last_sequence,
                    RunStatus::Running
                ),
                tx.commit(),
            )?;
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
