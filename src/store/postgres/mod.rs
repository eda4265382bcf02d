//! The shared store: PostgreSQL, for several replicas on one database.
//!
//! Every change locks its run's row (`SELECT … FOR UPDATE`), so sequences are allocated and tool
//! calls settled one transaction at a time per run, across replicas; each commit (but a run's
//! creation) notifies `askuser_commits` so followers on other replicas see it at once.
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
mod events;
mod handle;
mod keys;
mod migrations;
mod rows;
mod runs;
mod tool_calls;
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
    AFTER_RUN_COLUMNS, CALL_COUNTS_QUERY, CLAIM_QUERY, CLAIM_UPDATE, EXECUTED_UPDATE, INSERT_RUN,
    LOCK_RUN, OLDEST_PENDING_CALLS_QUERY, PENDING_CALLS_COUNT_QUERY, PENDING_COLUMNS,
    PENDING_FEED_QUERY, PENDING_IN_TENANT_QUERY, PRUNABLE_RUNS_QUERY, PRUNED_TABLES, PendingRow,
    RUN_IN_TENANT, RUN_OF_REQUEST_QUERY, RUN_QUERY, RunHead, RunRow, SETTLE_CALL_COUNTS,
    SETTLE_CALL_QUERY, SETTLED_QUERY, STEP_CALL_ARGUMENTS, STEP_CALL_CONTINUATION,
    STEP_CALL_DECISION, STEP_CALL_EXECUTES, STEP_CALL_PENDING, STEP_CALL_WAITS, STEP_CALLS_QUERY,
    STEP_RUN_QUERY, SUSPEND_EXECUTING_UPDATE, SettledRow, StepCalls, TOOL_CALL_QUERY, TURNS_QUERY,
    ToolCallRow, TranscriptCall, UNFINISHED_BEFORE_QUERY, UNFINISHED_RUNS_COUNT_QUERY,
    UNSETTLED_QUERY, WEBHOOKS_DUE_QUERY, assemble_transcript, collect_exact, counting_step_start,
    executing_call, from_json, parse_status, pending_counts, to_json, unsigned,
};
use super::run_filter::{Dialect, list_runs_query};
use super::webhook_records::{DeliveryInsert, deliveries_of};
use super::{
    CallOfRun, CallSettlement, CallStatus, CancelOutcome, Cancellation, Claim, ClaimOutcome,
    CommitNotice, CreateOutcome, EventPage, EventQuery, EventTable, ExecutedResults, Lease, NewRun,
    PendingCounts, PendingPage, PendingQuery, RunPendingCall, RunQuery, RunTable, SettleOutcome,
    Step, StepEvents, StepState, StoreError, StoreResult, StoreService, Tenancy, ToolCallRecord,
    ToolCallTable, TurnCommit, TurnOutcome, timed,
};
use crate::domain::{Event, PendingCall, RunRecord, RunStatus, now_millis};

#[async_trait]
impl StoreService for PostgresStore {
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
