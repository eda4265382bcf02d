//! The embedded default store: one SQLite file in WAL mode.

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use checkpoint::Checkpointer;
use group_commit::GroupCommit;
use key_file::{SharedConnection, key_file_path, open_key_file};
use key_lookups::KeyLookups;
pub use keys::SqliteKeyFile;
use readers::Readers;

mod checkpoint;
mod commit_traffic;
mod deliveries;
mod events;
mod group_commit;
mod key_file;
mod key_lookups;
mod keys;
mod memory;
mod pending_rows;
mod readers;
mod rows;
mod runs;
mod schema;
mod statements;
mod tool_calls;
mod wal_index;
mod wal_writes;

use rows::*;
use schema::*;
use statements::Db;

use super::ops::commit_executed::ExecutedReads;
use super::ops::settle::{SettleReads, Settling};
use super::ops::{Write, cancel, commit_executed, commit_turn, create, settle, step_events};
use super::records::{
    AFTER_RUN_COLUMNS, CALL_COUNTS_QUERY, CLAIM_QUERY, CLAIM_UPDATE, OLDEST_PENDING_CALLS_QUERY,
    PENDING_CALLS_COUNT_QUERY, PENDING_COLUMNS, PENDING_FEED_QUERY, PENDING_QUERY,
    PRUNABLE_RUNS_QUERY, PRUNED_TABLES, PendingRow, RUN_HEAD_QUERY, RUN_IN_TENANT,
    RUN_OF_REQUEST_QUERY, RUN_QUERY, RUN_STATE_QUERY, RunHead, RunRow, SETTLE_CALL_COUNTS,
    SETTLE_CALL_QUERY, SETTLED_QUERY, STEP_CALL_ARGUMENTS, STEP_CALL_CONTINUATION,
    STEP_CALL_DECISION, STEP_CALL_EXECUTES, STEP_CALL_PENDING, STEP_CALL_WAITS, STEP_CALLS_QUERY,
    STEP_RUN_QUERY, SettledRow, StepCalls, TOOL_CALL_QUERY, TURNS_QUERY, ToolCallRow,
    TranscriptCall, UNFINISHED_BEFORE_QUERY, UNFINISHED_RUNS_COUNT_QUERY, UNSETTLED_QUERY,
    WEBHOOKS_DUE_QUERY, assemble_transcript, collect_exact, counting_step_start, executing_call,
    from_json, parse_status, pending_counts, to_json,
};
use super::run_filter::{Dialect, list_runs_query};
use super::webhook_records::{DeliveryInsert, INSERT_DELIVERY, deliveries_of};
use super::{
    CallOfRun, CallSettlement, CallStatus, CancelOutcome, Cancellation, Claim, ClaimOutcome,
    CreateOutcome, EventPage, EventQuery, EventTable, ExecutedResults, Lease, NewRun,
    PendingCounts, PendingQuery, RunPendingCall, RunQuery, RunTable, SettleOutcome, Step,
    StepEvents, StepState, StoreError, StoreResult, StoreService, Tenancy, ToolCallRecord,
    ToolCallTable, TurnCommit, TurnOutcome,
};
use crate::domain::{Event, PendingCall, RunRecord, now_millis};

/// The page size of a new store's file, in bytes (SQLite's default is 4096). Every commit writes
/// each page it changed to the WAL whole, and checksums it: a round trip's four commits change a
/// handful of pages each (a run's row and its indexes, a call's, an event's). On 7 December 2026,
/// on 2 cores, two interleaved rounds of three repeats: sequentially 4,514 and 4,583 round trips a
/// second with 2048, 4,039 and 4,111 with 4096 (server CPU 174–179 µs against 181–194), 4,221 and
/// 4,237 with 1024 (191–198 µs: deeper trees); at 64 streams the same within the machine's speed
/// changes. A new feed's snapshot of 100,000 calls, which reads more pages, took 117 ms against
/// 103 (one round of five).
const PAGE_SIZE: i64 = 2048;

/// How hard SQLite works to make a commit durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Synchronous {
    /// WAL with `synchronous=NORMAL`: a commit survives a crash of the process; a power loss or OS
    /// crash may lose the last commits (never corrupts the file).
    Normal,
    /// WAL with `synchronous=FULL`: every commit is fsynced and survives a power loss too.
    Full,
}

/// A [`RunStore`](super::RunStore) on one SQLite file: a group-commit task owns the connection every write uses;
/// reads have connections of their own, and a checkpoint thread has another. API keys are in a
/// file of their own ([`open_key_file`]).
pub struct SqliteStore {
    db: GroupCommit,
    readers: Readers,
    /// The API keys' own file, and reader connections to it.
    keys: SharedConnection,
    key_readers: Readers,
    /// Lookups of a key by its hash, remembered while the key file is unchanged.
    key_lookups: KeyLookups,
    /// The lock on the database file, held as long as the store lives.
    _lock: std::fs::File,
}

/// Creates the directory of the database file `path` if needed; a failure names the directory,
/// the user and the fix.
pub(super) fn data_dir(path: &Path) -> StoreResult<()> {
    let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) else {
        return Ok(());
    };
    if dir.exists() && !dir.is_dir() {
        return Err(StoreError::Io(std::io::Error::other(format!(
            "the data directory {} is a file, not a directory: give another --data-dir",
            dir.display()
        ))));
    }
    std::fs::create_dir_all(dir).map_err(|error| naming(error, dir))
}

/// An I/O error on `path`, saying which path, and for a permission which user and what to do.
pub(super) fn naming(error: std::io::Error, path: &Path) -> StoreError {
    let message = match error.kind() {
        std::io::ErrorKind::PermissionDenied => format!(
            "{}: permission denied for user {}: give that user write access, or another \
             --data-dir",
            path.display(),
            std::env::var("USER").unwrap_or_else(|_| "running askuser".into())
        ),
        _ => format!("{}: {error}", path.display()),
    };
    StoreError::Io(std::io::Error::new(error.kind(), message))
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub fn open(path: &Path, synchronous: Synchronous) -> StoreResult<Self> {
        memory::configure();
        data_dir(path)?;
        // One process per file: a second server on the same data directory fails here.
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|error| naming(error, &lock_path))?;
        lock.try_lock().map_err(|error| match error {
            std::fs::TryLockError::WouldBlock => StoreError::Io(std::io::Error::other(format!(
                "{} is in use by another askuser server",
                path.display()
            ))),
            std::fs::TryLockError::Error(error) => StoreError::Io(error),
        })?;
        let mut conn = connect_writer(path)?;
        // Only a new file takes it (before its first write); an existing one keeps its own.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
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
        let keys = open_key_file(path, &conn)?;
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
            readers: Readers::of_store(path),
            key_readers: Readers::of_seldom_written(&key_file_path(path)),
            key_lookups: KeyLookups::new(&key_file_path(path)),
            keys,
            _lock: lock,
        })
    }
}

#[async_trait]
impl StoreService for SqliteStore {
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
        // On the writer's thread (never run by the caller): a stuck or stopped writer fails it.
        self.db
            .run_alone(|conn| Ok(conn.query_row("SELECT 1", [], |_| Ok(()))?))
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

    /// A new store's file has pages of [`PAGE_SIZE`] bytes; a file made with SQLite's default
    /// (4096) keeps its own, and opens.
    #[test]
    fn a_new_store_has_small_pages_and_an_old_one_keeps_its_own() {
        let dir = tempfile::tempdir().expect("temp dir");
        let page_size = |path: &Path| -> i64 {
            Connection::open(path)
                .and_then(|conn| conn.pragma_query_value(None, "page_size", |row| row.get(0)))
                .expect("page_size")
        };
        let new = dir.path().join("new.sqlite3");
        drop(SqliteStore::open(&new, Synchronous::Normal).expect("open"));
        assert_eq!(page_size(&new), PAGE_SIZE);
        let old = dir.path().join("old.sqlite3");
        Connection::open(&old)
            .and_then(|conn| conn.pragma_update(None, "journal_mode", "WAL"))
            .expect("an old file");
        assert_eq!(page_size(&old), 4096);
        drop(SqliteStore::open(&old, Synchronous::Normal).expect("open"));
        assert_eq!(page_size(&old), 4096);
    }

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
        let step = Step {
            run_id: "run-1",
            owner: "me",
            expected_turns: 0,
        };
        let outcome = store.commit_turn(step, commit).await;
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

    /// A new feed's snapshot reads one range of the pending calls' index, its tenant's, and
    /// nothing else: no table is scanned, no run is looked up (each call carries its run's tenant
    /// and agent), and no call is looked up in `tool_calls` (the index holds every column read,
    /// since version 16), in a new file and in one brought from version 15.
    #[tokio::test]
    async fn the_snapshot_reads_one_index_range() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fresh = dir.path().join("fresh.sqlite3");
        drop(SqliteStore::open(&fresh, Synchronous::Normal).expect("open and migrate"));
        let migrated = dir.path().join("migrated.sqlite3");
        drop(file_at_version(&migrated, 15));
        drop(SqliteStore::open(&migrated, Synchronous::Normal).expect("open and migrate"));
        for path in [fresh, migrated] {
            let conn = Connection::open(&path).expect("open");
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", *PENDING_FEED_QUERY))
                .expect("plan")
                .query_map(params!["", "", "default", 512], |row| row.get(3))
                .expect("plan rows")
                .collect::<Result<_, _>>()
                .expect("plan rows");
            assert_eq!(
                plan,
                [
                    "SEARCH tool_calls USING COVERING INDEX tool_calls_pending (tenant=? AND (run_id,tool_call_id)>(?,?))"
                ],
                "{}",
                path.display()
            );
        }
    }

    /// Version 16 rebuilds the pending calls' index with every column a snapshot reads: the calls
    /// waiting before it are in the snapshot as they were, and the settled ones are not.
    #[tokio::test]
    async fn version_16_keeps_the_pending_calls_as_they_were() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        {
            let conn = file_at_version(&path, 15);
            conn.execute(
                "INSERT INTO runs (run_id, agent_id, status, prompt, metadata, last_sequence, \
                 created_ms, updated_ms, tenant) VALUES ('r-1', 'deploy', 'suspended', '', '{}', \
                 1, 1, 1, 'acme')",
                [],
            )
            .expect("a version 15 run");
            for (call_id, status) in [("c-1", "pending"), ("c-2", "answered"), ("c-3", "pending")] {
                conn.execute(
                    "INSERT INTO tool_calls (run_id, tool_call_id, turn, position, tool_name, \
                     arguments_json, status, payload, expire_ms, suspend_kind, run_arguments, \
                     approval_reason, claimant, claim_expires_ms, assignees, suspended_ms, \
                     tenant, agent_id) VALUES ('r-1', ?1, 0, 0, 'deploy_prod', '{}', ?2, NULL, \
                     9000, 'approval', '{\"env\":\"prod\"}', 'deploys need a person', 'ann', \
                     8000, '[\"ann\",\"bob\"]', 7000, 'acme', 'deploy')",
                    params![call_id, status],
                )
                .expect("a version 15 call");
            }
        }
        let page = acmes_pending_calls(&path).await;
        let calls: Vec<_> = page
            .iter()
            .map(|c| {
                (
                    c.run_id.as_str(),
                    c.agent_id.as_str(),
                    c.call.tool_call_id.as_str(),
                    c.call.tool_name.as_str(),
                    c.call.expire_ms,
                    c.call.claim.clone(),
                    c.call.suspended_ms,
                )
            })
            .collect();
        let claim = Some(("ann".to_owned(), 8000));
        assert_eq!(
            calls,
            [
                (
                    "r-1",
                    "deploy",
                    "c-1",
                    "deploy_prod",
                    Some(9000),
                    claim.clone(),
                    Some(7000)
                ),
                (
                    "r-1",
                    "deploy",
                    "c-3",
                    "deploy_prod",
                    Some(9000),
                    claim,
                    Some(7000)
                ),
            ]
        );
        // The approval's arguments, reason and assignees, read from the index's copy.
        let suspension = format!("{:?}", page[0].call.suspension);
        for part in ["prod", "deploys need a person", "bob"] {
            assert!(suspension.contains(part), "{part} in {suspension}");
        }
    }

    /// The store's readers keep a small page cache (every commit empties it), the keys' readers
    /// SQLite's default (their file is seldom written, so their pages stay cached).
    #[tokio::test]
    async fn store_readers_keep_a_small_page_cache() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        let store = SqliteStore::open(&path, Synchronous::Normal).expect("open and migrate");
        let cache_size = |conn: &Db<'_>| -> StoreResult<i64> {
            Ok(conn.pragma_query_value(None, "cache_size", |row| row.get(0))?)
        };
        let store_cache = store.readers.run(cache_size).await.expect("read");
        let keys_cache = store.key_readers.run(cache_size).await.expect("read");
        let memory = Connection::open_in_memory().expect("a connection");
        let default = cache_size(&Db::new(&memory)).expect("SQLite's default");
        assert_eq!(store_cache, -256, "a store reader's cache, in KiB");
        assert_ne!(default, -256);
        assert_eq!(
            keys_cache, default,
            "a keys reader's cache is SQLite's default"
        );
    }

    /// A statement keeps the plan it was prepared with whatever is bound to it: SQLite prepared the
    /// snapshot's page query again for every page, as a value bound to `LIMIT ?` may change a plan.
    #[tokio::test]
    async fn pages_are_read_without_preparing_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        drop(SqliteStore::open(&path, Synchronous::Normal).expect("open and migrate"));
        let reprepared = Readers::of_store(&path)
            .run(|conn| {
                let mut page = conn.statement(&PENDING_FEED_QUERY)?;
                for (run_id, call_id) in [("", ""), ("run-1", "call-1"), ("run-2", "call-2")] {
                    page.query_map(params![run_id, call_id, "default", 512], |_| Ok(()))?
                        .collect::<Result<Vec<()>, _>>()?;
                }
                Ok(page.get_status(rusqlite::StatementStatus::RePrepare))
            })
            .await
            .expect("three pages");
        assert_eq!(reprepared, 0);
    }

    /// The pending calls of tenant `acme` in the file at `path`, opened (and migrated) as a store.
    async fn acmes_pending_calls(path: &Path) -> Vec<RunPendingCall> {
        let store = SqliteStore::open(path, Synchronous::Normal).expect("open and migrate");
        store
            .pending_calls(PendingQuery {
                tenant: "acme",
                after: None,
                limit: 10,
            })
            .await
            .expect("acme's calls")
    }

    /// A database file at schema version `version`, as a server of that version left it.
    fn file_at_version(path: &Path, version: usize) -> Connection {
        let conn = Connection::open(path).expect("open");
        for sql in &MIGRATIONS[..version] {
            conn.execute_batch(sql).expect("an older schema");
        }
        conn.pragma_update(None, "user_version", version as i64)
            .expect("user_version");
        conn
    }

    /// Version 10 takes each delivery's subscription index from its `webhook-id` and drops the URL
    /// and secret's variable it copied.
    #[tokio::test]
    async fn version_10_numbers_deliveries_by_subscription() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        {
            let conn = file_at_version(&path, 8);
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

    /// Version 15 gives each call its run's tenant and agent, so that a tenant's feed finds the
    /// calls waiting before it, and no other tenant's.
    #[tokio::test]
    async fn version_15_gives_calls_their_runs_owner() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("askuser.sqlite3");
        {
            let conn = file_at_version(&path, 14);
            for (run_id, tenant, agent_id) in [("r-1", "acme", "deploy"), ("r-2", "beta", "ops")] {
                conn.execute(
                    "INSERT INTO runs (run_id, agent_id, status, prompt, metadata, last_sequence, \
                     created_ms, updated_ms, tenant) VALUES (?1, ?2, 'suspended', '', '{}', 1, 1, \
                     1, ?3)",
                    params![run_id, agent_id, tenant],
                )
                .expect("a version 14 run");
                conn.execute(
                    "INSERT INTO tool_calls (run_id, tool_call_id, turn, position, tool_name, \
                     arguments_json, status, suspend_kind) VALUES (?1, 'c-1', 0, 0, 'ask_user', \
                     '{}', 'pending', 'approval')",
                    [run_id],
                )
                .expect("a version 14 call");
            }
        }
        let page = acmes_pending_calls(&path).await;
        let owners: Vec<_> = page
            .iter()
            .map(|c| (c.run_id.as_str(), c.agent_id.as_str()))
            .collect();
        assert_eq!(owners, [("r-1", "deploy")]);
    }
}
