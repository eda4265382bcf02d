//! The store contract, written once and run unchanged against both stores: SQLite (a file in a
//! temporary directory) and PostgreSQL (a fresh database per test). Each test is an async fn taking
//! the store; `on_both_stores!` instantiates it as `sqlite::<name>` and `postgres::<name>`.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use askuser::domain::{
    AnswerInput, AuthMethod, EventKind, Message, ModelToolCall, RunStatus, SettledBy, SuspendKind,
    SuspendPayload, Suspension, ToolResultKind, Usage, now_millis,
};
use askuser::store::{
    CallChange, CallOfRun, CallSettlement, CallStatus, CancelOutcome, Cancellation, Claim,
    ClaimOutcome, CommitNotice, Committed, CreateOutcome, Decide, DeliveryClaim, EventQuery, Lease,
    NewCallState, NewRun, NewToolCall, PendingQuery, PostgresSettings, PostgresStore, RunEnd,
    RunFilter, RunPendingCall, RunQuery, RunStore, SecretRotation, SettleOutcome, Settlement,
    SqliteStore, Step, StepEvents, StepState, Synchronous, Tenancy, TurnCommit, TurnOutcome,
    page_after,
};
use futures::future::join_all;

/// Who cancels runs in these tests.
fn canceller() -> SettledBy {
    SettledBy {
        tenant: "acme".into(),
        subject: "ops".into(),
        method: AuthMethod::ApiKey,
    }
}
use tokio::sync::Barrier;

/// Where a store under test keeps its data; it can be opened again on the same data.
enum StoreLocation {
    Sqlite {
        path: PathBuf,
        // Keeps the file's directory alive as long as the location.
        _dir: tempfile::TempDir,
    },
    Postgres {
        url: String,
    },
}

impl StoreLocation {
    // Async and optional like `postgres`, so that `on_both_stores!` calls both alike.
    async fn sqlite() -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        Some(StoreLocation::Sqlite {
            path: dir.path().join("askuser.sqlite3"),
            _dir: dir,
        })
    }

    /// `None` without PostgreSQL: see `fresh_database`.
    async fn postgres() -> Option<Self> {
        Some(StoreLocation::Postgres {
            url: common::fresh_database().await?,
        })
    }

    /// Opens (the first time: creates) the store, migrating its schema.
    async fn open(&self) -> Arc<dyn RunStore> {
        match self {
            StoreLocation::Sqlite { path, .. } => {
                Arc::new(SqliteStore::open(path, Synchronous::Normal).expect("open SQLite store"))
            }
            StoreLocation::Postgres { url } => Arc::new(
                PostgresStore::connect(
                    url,
                    &PostgresSettings {
                        pool_size: 8,
                        ..PostgresSettings::default()
                    },
                )
                .await
                .expect("connect PostgreSQL store"),
            ),
        }
    }
}

/// Instantiates each test for both stores: `stores` tests take an open store, `locations` tests
/// take its location (to open it more than once).
macro_rules! on_both_stores {
    (stores: [$($store_test:ident),* $(,)?], locations: [$($location_test:ident),* $(,)?] $(,)?) => {
        on_both_stores!(@backend sqlite, [$($store_test),*], [$($location_test),*]);
        on_both_stores!(@backend postgres, [$($store_test),*], [$($location_test),*]);
    };
    (@backend $backend:ident, [$($store_test:ident),*], [$($location_test:ident),*]) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $store_test() {
                    let Some(location) = super::StoreLocation::$backend().await else {
                        return;
                    };
                    super::$store_test(location.open().await).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $location_test() {
                    let Some(location) = super::StoreLocation::$backend().await else {
                        return;
                    };
                    super::$location_test(location).await;
                }
            )*
        }
    };
}

on_both_stores! {
    stores: [
        create_run_starts_the_log_with_run_started,
        suspending_turn_lists_pending_calls_in_the_order_asked,
        commits_are_refused_unless_the_run_is_where_the_executor_left_it,
        step_events_are_appended_and_their_attempt_recorded,
        the_runs_token_usage_is_kept_with_each_turn,
        settling_is_a_compare_and_set,
        moved_runs_take_their_waiting_calls_to_their_new_tenant,
        a_refused_settlement_leaves_the_call_pending,
        changes_that_end_unmade_leave_no_transaction_open,
        leases_taken_with_a_commit_hand_over_the_next_step,
        concurrent_settles_have_exactly_one_winner,
        transcript_is_each_turn_followed_by_its_results_in_call_order,
        cancel_settles_pending_calls_and_ends_the_log,
        expiries_come_due_earliest_first,
        prune_removes_only_finished_runs_older_than_the_cutoff,
        unfinished_runs_are_listed_oldest_first_by_creation,
        list_runs_filters_and_pages_newest_first,
        leases_exclude_other_owners_until_they_expire,
        a_start_repeating_a_request_id_returns_the_first_run,
        another_tenants_run_is_not_found_and_left_unchanged,
        a_calls_assignees_are_kept_with_it,
        the_metrics_read_what_waits_and_since_when,
        list_runs_filters_by_metadata_creation_time_and_pending_kind,
        a_run_read_shows_its_usage_and_when_calls_waited_and_settled,
        a_runs_trace_context_is_handed_to_its_steps,
        webhook_secrets_rotate_with_an_overlap,
        a_snapshots_pages_hold_every_pending_call_once_in_order,
        a_snapshots_page_reads_each_call_as_its_run_does,
    ],
    locations: [migrations_are_idempotent],
}

/// The executor that holds leases in these tests, and another one.
const OWNER: &str = "executor-a";
const OTHER_OWNER: &str = "executor-b";

fn new_run(run_id: &str, agent_id: &str) -> NewRun {
    NewRun {
        run_id: run_id.into(),
        tenant: "default".into(),
        agent_id: agent_id.into(),
        prompt: format!("prompt of {run_id}"),
        metadata: BTreeMap::from([("team".to_owned(), "storage".to_owned())]),
        question_ttl_ms: Some(60_000),
        run_tools: Vec::new(),
        request_id: None,
        webhooks: None,
        trace_context: None,
        request: None,
    }
}

/// A lease of `owner` for a minute.
fn lease(owner: &str) -> Lease<'_> {
    Lease {
        owner,
        until_ms: now_millis() + 60_000,
    }
}

/// Creates a running run and gives `OWNER` its lease for a minute.
async fn leased_run(store: &Arc<dyn RunStore>, run_id: &str) {
    store
        .create_run(new_run(run_id, "agent"), None)
        .await
        .expect("create run");
    assert!(
        store
            .acquire_lease(run_id, OWNER, now_millis() + 60_000)
            .await
            .expect("acquire lease"),
        "a new run's lease is free"
    );
}

fn payload(question: &str) -> SuspendPayload {
    SuspendPayload {
        question: question.into(),
        options: Vec::new(),
        selection_mode: None,
    }
}

fn question(question: &str) -> Suspension {
    Suspension {
        payload: Some(payload(question)),
        ..Suspension::default()
    }
}

/// A tool call that waits for an answer until `expire_ms`.
fn pending_call(tool_call_id: &str, expire_ms: Option<i64>) -> NewToolCall {
    NewToolCall {
        tool_call_id: tool_call_id.into(),
        tool_name: "ask_user".into(),
        arguments_json: format!(r#"{{"question":"{tool_call_id}?"}}"#),
        state: NewCallState::Pending {
            suspension: question(&format!("{tool_call_id}?")),
            expire_ms,
        },
    }
}

/// A tool call settled at once as invalid.
fn invalid_call(tool_call_id: &str) -> NewToolCall {
    NewToolCall {
        tool_call_id: tool_call_id.into(),
        tool_name: "ask_user".into(),
        arguments_json: "{}".into(),
        state: NewCallState::Settled {
            content: format!("{tool_call_id} is invalid"),
            is_error: true,
            kind: ToolResultKind::InvalidCall,
        },
    }
}

/// A model turn saying `text` and making `calls`, with the events an executor commits for them.
fn turn(text: &str, calls: Vec<NewToolCall>) -> TurnCommit {
    let mut events = vec![EventKind::TextDelta { text: text.into() }];
    for call in &calls {
        events.push(EventKind::ToolCall {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            arguments_json: call.arguments_json.clone(),
        });
        events.push(match &call.state {
            NewCallState::Pending {
                suspension,
                expire_ms,
            } => EventKind::ToolCallSuspended {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                payload: suspension.payload.clone(),
                form: suspension.form.clone(),
                expire_ms: *expire_ms,
                kind: suspension.kind,
                arguments_json: suspension.arguments_json.clone(),
                approval_reason: suspension.approval_reason.clone(),
                assignees: suspension.assignees.clone(),
            },
            NewCallState::Executing { .. } => continue,
            NewCallState::Settled {
                content,
                is_error,
                kind,
            } => EventKind::ToolResult {
                tool_call_id: call.tool_call_id.clone(),
                content: content.clone(),
                is_error: *is_error,
                kind: *kind,
                settled_by: None,
            },
        });
    }
    TurnCommit {
        assistant_text: Some(text.into()),
        tool_calls: calls,
        events,
        ..TurnCommit::default()
    }
}

/// A final turn that completes the run with `text`.
fn completing_turn(text: &str) -> TurnCommit {
    TurnCommit {
        assistant_text: Some(text.into()),
        tool_calls: Vec::new(),
        events: vec![EventKind::RunCompleted {
            output_text: text.into(),
            usage: None,
        }],
        end: Some(RunEnd::Completed {
            output_text: text.into(),
        }),
        ..TurnCommit::default()
    }
}

/// A turn whose model call failed: the run fails.
fn failing_turn(message: &str) -> TurnCommit {
    TurnCommit {
        events: vec![EventKind::RunFailed {
            message: message.into(),
        }],
        end: Some(RunEnd::Failed {
            message: message.into(),
        }),
        ..TurnCommit::default()
    }
}

/// The state the run's next step would start from, as stored.
async fn stored_step(store: &Arc<dyn RunStore>, run_id: &str) -> StepState {
    store
        .load_step(run_id, None)
        .await
        .expect("load step")
        .expect("run exists")
}

/// Commits a turn that must be accepted.
async fn commit(
    store: &Arc<dyn RunStore>,
    run_id: &str,
    expected_turns: u32,
    commit: TurnCommit,
) -> Committed {
    match store
        .commit_turn(
            Step {
                run_id,
                owner: OWNER,
                expected_turns,
            },
            commit,
        )
        .await
        .expect("commit turn")
    {
        TurnOutcome::Committed(committed) => committed,
        TurnOutcome::Stale => panic!("turn {expected_turns} of {run_id} refused as stale"),
    }
}

/// A run suspended on questions `call_ids` (asked in that order), without expiry.
async fn suspended_run(store: &Arc<dyn RunStore>, run_id: &str, call_ids: &[&str]) {
    leased_run(store, run_id).await;
    let calls = call_ids.iter().map(|id| pending_call(id, None)).collect();
    let committed = commit(store, run_id, 0, turn("Let me ask", calls)).await;
    assert_eq!(committed.status, RunStatus::Suspended);
}

/// Settles as `settlement` says, whatever the call.
fn settle_with(settlement: Settlement) -> Decide {
    Box::new(move |_| Ok(CallChange::Settle(settlement)))
}

fn answered(text: &str, answer_id: &str) -> Settlement {
    Settlement {
        settled_by: None,
        status: CallStatus::Answered,
        answer: Some(AnswerInput::Text(text.into())),
        answer_id: answer_id.into(),
        content: format!("User answered: {text}"),
        is_error: false,
        kind: ToolResultKind::Answered,
    }
}

async fn settle(
    store: &Arc<dyn RunStore>,
    run_id: &str,
    tool_call_id: &str,
    settlement: Settlement,
) -> SettleOutcome {
    store
        .settle_tool_call(CallSettlement {
            run_id,
            tenancy: Tenancy::Any,
            tool_call_id,
            decide: settle_with(settlement),
            lease: None,
        })
        .await
        .expect("settle tool call")
}

/// Settles a call that must still be pending.
async fn settle_pending(
    store: &Arc<dyn RunStore>,
    run_id: &str,
    tool_call_id: &str,
    settlement: Settlement,
) -> Committed {
    match settle(store, run_id, tool_call_id, settlement).await {
        SettleOutcome::Settled { committed, .. } => committed,
        other => panic!("{tool_call_id} of {run_id} was not pending: {other:?}"),
    }
}

/// The run's whole event log, as kinds in sequence order; asserts the sequences are 1, 2, 3, ...
async fn event_log(store: &Arc<dyn RunStore>, run_id: &str) -> Vec<EventKind> {
    let page = store
        .read_events(EventQuery {
            run_id,
            tenancy: Tenancy::Any,
            after_sequence: 0,
            limit: 10_000,
        })
        .await
        .expect("read events")
        .expect("run exists");
    let sequences: Vec<u64> = page.events.iter().map(|e| e.sequence).collect();
    let expected: Vec<u64> = (1..=page.events.len() as u64).collect();
    assert_eq!(sequences, expected, "the log of {run_id} has gaps");
    assert_eq!(page.last_sequence, page.events.len() as u64);
    page.events.into_iter().map(|e| e.kind).collect()
}

async fn run_status(store: &Arc<dyn RunStore>, run_id: &str) -> RunStatus {
    store
        .get_run(run_id, Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists")
        .status
}

async fn create_run_starts_the_log_with_run_started(store: Arc<dyn RunStore>) {
    let created = store
        .create_run(new_run("run-1", "greeter"), None)
        .await
        .expect("create run");
    let started = EventKind::RunStarted {
        agent_id: "greeter".into(),
        prompt: "prompt of run-1".into(),
        metadata: BTreeMap::from([("team".to_owned(), "storage".to_owned())]),
    };
    let CreateOutcome::Created(created) = created else {
        panic!("not created: {created:?}");
    };
    let created = created.committed;
    assert_eq!(created.status, RunStatus::Running);
    assert_eq!(created.events.len(), 1);
    assert_eq!(created.events[0].sequence, 1);
    assert_eq!(created.events[0].kind, started);

    let page = store
        .read_events(EventQuery {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            after_sequence: 0,
            limit: 100,
        })
        .await
        .expect("read events")
        .expect("run exists");
    assert_eq!(page.events, created.events);
    assert_eq!(page.status, RunStatus::Running);
    assert_eq!(page.last_sequence, 1);
    let after = store
        .read_events(EventQuery {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            after_sequence: 1,
            limit: 100,
        })
        .await
        .expect("read events")
        .expect("run exists");
    assert!(after.events.is_empty(), "{:?}", after.events);

    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists");
    assert_eq!(run.agent_id, "greeter");
    assert_eq!(run.prompt, "prompt of run-1");
    assert_eq!(run.metadata["team"], "storage");
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(run.turns, 0);
    assert_eq!(run.last_sequence, 1);
    assert_eq!(run.question_ttl_ms, Some(60_000));
    assert!(run.pending.is_empty());

    assert!(
        store
            .get_run("run-2", Tenancy::Any)
            .await
            .expect("get run")
            .is_none()
    );
    assert!(
        store
            .read_events(EventQuery {
                run_id: "run-2",
                tenancy: Tenancy::Any,
                after_sequence: 0,
                limit: 100
            })
            .await
            .expect("read events")
            .is_none()
    );
}

async fn suspending_turn_lists_pending_calls_in_the_order_asked(store: Arc<dyn RunStore>) {
    leased_run(&store, "run-1").await;
    // Ids that sort differently from the order asked.
    let calls = vec![
        pending_call("call-c", Some(5_000)),
        pending_call("call-a", None),
        pending_call("call-b", Some(7_000)),
    ];
    let committed = commit(&store, "run-1", 0, turn("Three questions", calls)).await;
    assert_eq!(committed.status, RunStatus::Suspended);
    let sequences: Vec<u64> = committed.events.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (2..=8).collect::<Vec<u64>>());

    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists");
    assert_eq!(run.status, RunStatus::Suspended);
    assert_eq!(run.turns, 1);
    assert_eq!(run.last_sequence, 8);
    let pending: Vec<(&str, Option<i64>)> = run
        .pending
        .iter()
        .map(|call| (call.tool_call_id.as_str(), call.expire_ms))
        .collect();
    assert_eq!(
        pending,
        [
            ("call-c", Some(5_000)),
            ("call-a", None),
            ("call-b", Some(7_000))
        ]
    );
    assert_eq!(run.pending[0].suspension, question("call-c?"));
    assert_eq!(run.pending[0].tool_name, "ask_user");

    let call = store
        .get_tool_call(CallOfRun {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            tool_call_id: "call-a",
        })
        .await
        .expect("get tool call")
        .expect("call exists");
    assert_eq!(call.status, CallStatus::Pending);
    assert_eq!(call.suspension, question("call-a?"));
    assert!(call.answer.is_none());
}

async fn commits_are_refused_unless_the_run_is_where_the_executor_left_it(
    store: Arc<dyn RunStore>,
) {
    /// Both ways an executor writes, on the same conditions.
    async fn refused(store: &Arc<dyn RunStore>, run_id: &str, owner: &str, turns: u32) {
        let before = event_log(store, run_id).await;
        let outcome = store
            .commit_turn(
                Step {
                    run_id,
                    owner,
                    expected_turns: turns,
                },
                completing_turn("too late"),
            )
            .await
            .expect("commit turn");
        assert!(matches!(outcome, TurnOutcome::Stale), "{outcome:?}");
        let outcome = store
            .append_step_events(StepEvents {
                run_id,
                owner,
                expected_turns: turns,
                attempt: 1,
                events: vec![EventKind::TextDelta {
                    text: "too late".into(),
                }],
            })
            .await
            .expect("append step events");
        assert!(matches!(outcome, TurnOutcome::Stale), "{outcome:?}");
        assert_eq!(
            event_log(store, run_id).await,
            before,
            "a refused write left events"
        );
    }

    // A turn whose only call is settled at once keeps the run running at turn 1.
    leased_run(&store, "run-1").await;
    let committed = commit(&store, "run-1", 0, turn("Oops", vec![invalid_call("bad")])).await;
    assert_eq!(committed.status, RunStatus::Running);
    // A replay of the turn already committed, and a turn from the future.
    refused(&store, "run-1", OWNER, 0).await;
    refused(&store, "run-1", OWNER, 2).await;
    // An executor that does not hold the lease.
    refused(&store, "run-1", OTHER_OWNER, 1).await;
    // The right executor at the right turn still commits.
    commit(&store, "run-1", 1, completing_turn("done")).await;
    // Finished: nothing more.
    refused(&store, "run-1", OWNER, 2).await;

    // A lease nobody holds.
    store
        .create_run(new_run("run-2", "agent"), None)
        .await
        .expect("create run");
    refused(&store, "run-2", OWNER, 0).await;
    // A lease given up.
    assert!(
        store
            .acquire_lease("run-2", OWNER, now_millis() + 60_000)
            .await
            .expect("acquire lease")
    );
    store
        .release_lease("run-2", OWNER)
        .await
        .expect("release lease");
    refused(&store, "run-2", OWNER, 0).await;

    // Cancelled while the executor held the lease at the right turn.
    leased_run(&store, "run-3").await;
    store
        .cancel_run(Cancellation {
            run_id: "run-3",
            tenancy: Tenancy::Any,
            reason: "stop",
            call_content: "Cancelled",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel run");
    refused(&store, "run-3", OWNER, 0).await;

    // Suspended: the turn that asked is committed.
    suspended_run(&store, "run-4", &["call-1"]).await;
    refused(&store, "run-4", OWNER, 1).await;

    // Failed.
    leased_run(&store, "run-5").await;
    commit(&store, "run-5", 0, failing_turn("model down")).await;
    refused(&store, "run-5", OWNER, 0).await;

    // A run that does not exist.
    let outcome = store
        .commit_turn(
            Step {
                run_id: "no-such-run",
                owner: OWNER,
                expected_turns: 0,
            },
            completing_turn("x"),
        )
        .await
        .expect("commit turn");
    assert!(matches!(outcome, TurnOutcome::Stale), "{outcome:?}");
}

async fn the_runs_token_usage_is_kept_with_each_turn(store: Arc<dyn RunStore>) {
    async fn usage(store: &Arc<dyn RunStore>) -> Option<Usage> {
        stored_step(store, "run-1").await.run.usage
    }
    let tokens = |input_tokens, output_tokens| {
        Some(Usage {
            input_tokens,
            output_tokens,
        })
    };
    leased_run(&store, "run-1").await;
    assert_eq!(usage(&store).await, None, "no model call reported any yet");
    let first = TurnCommit {
        usage: tokens(212, 27),
        ..turn("Thinking", Vec::new())
    };
    commit(&store, "run-1", 0, first).await;
    assert_eq!(usage(&store).await, tokens(212, 27));
    let second = TurnCommit {
        usage: tokens(513, 36),
        ..turn("Still thinking", Vec::new())
    };
    commit(&store, "run-1", 1, second).await;
    assert_eq!(usage(&store).await, tokens(513, 36));
}

async fn step_events_are_appended_and_their_attempt_recorded(store: Arc<dyn RunStore>) {
    async fn step_attempt(store: &Arc<dyn RunStore>) -> u32 {
        stored_step(store, "run-1").await.step_attempt
    }
    async fn append(store: &Arc<dyn RunStore>, owner: &str, attempt: u32, events: Vec<EventKind>) {
        let outcome = store
            .append_step_events(StepEvents {
                run_id: "run-1",
                owner,
                expected_turns: 0,
                attempt,
                events,
            })
            .await
            .expect("append step events");
        match (owner, outcome) {
            (OWNER, TurnOutcome::Committed(committed)) => {
                assert_eq!(committed.status, RunStatus::Running)
            }
            (OTHER_OWNER, TurnOutcome::Stale) => {}
            (owner, outcome) => panic!("append by {owner}: {outcome:?}"),
        }
    }
    let delta = |text: &str| EventKind::TextDelta { text: text.into() };

    leased_run(&store, "run-1").await;
    assert_eq!(step_attempt(&store).await, 0);
    append(&store, OWNER, 1, vec![delta("Hel"), delta("lo")]).await;
    assert_eq!(step_attempt(&store).await, 1);
    // The first attempt broke off; the second declares its deltas void and starts over.
    let restarted = EventKind::StepRestarted {
        reason: "model call failed".into(),
        attempt: 2,
    };
    append(&store, OWNER, 2, vec![restarted.clone(), delta("Hi")]).await;
    assert_eq!(step_attempt(&store).await, 2);
    append(&store, OTHER_OWNER, 3, vec![delta("not mine")]).await;
    assert_eq!(step_attempt(&store).await, 2);
    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists");
    assert_eq!(run.last_sequence, 5);
    assert_eq!(run.turns, 0, "step events are not a turn");

    // The turn's commit follows the streamed events and ends the step.
    let completed = commit(&store, "run-1", 0, completing_turn("Hi")).await;
    assert_eq!(completed.events[0].sequence, 6);
    assert_eq!(step_attempt(&store).await, 0);
    assert_eq!(
        event_log(&store, "run-1").await[1..],
        [
            delta("Hel"),
            delta("lo"),
            restarted,
            delta("Hi"),
            EventKind::RunCompleted {
                output_text: "Hi".into(),
                usage: None
            }
        ]
    );
}

async fn settling_is_a_compare_and_set(store: Arc<dyn RunStore>) {
    suspended_run(&store, "run-1", &["call-1", "call-2"]).await;
    let first = settle_pending(&store, "run-1", "call-1", answered("blue", "answer-1")).await;
    assert_eq!(first.status, RunStatus::Suspended, "call-2 still waits");
    assert_eq!(first.events.len(), 1);
    let result_sequence = first.events[0].sequence;
    assert_eq!(
        first.events[0].kind,
        EventKind::ToolResult {
            tool_call_id: "call-1".into(),
            content: "User answered: blue".into(),
            is_error: false,
            kind: ToolResultKind::Answered,
            settled_by: None,
        }
    );

    // A second settle of the same call sees the first answer and changes nothing.
    let log = event_log(&store, "run-1").await;
    let SettleOutcome::NotPending(call) =
        settle(&store, "run-1", "call-1", answered("green", "answer-2")).await
    else {
        panic!("a settled call was settled again");
    };
    assert_eq!(call.status, CallStatus::Answered);
    assert_eq!(call.answer, Some(AnswerInput::Text("blue".into())));
    assert_eq!(call.answer_id, "answer-1");
    assert_eq!(call.result_sequence, result_sequence);
    assert_eq!(event_log(&store, "run-1").await, log);
    let stored = store
        .get_tool_call(CallOfRun {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            tool_call_id: "call-1",
        })
        .await
        .expect("get tool call")
        .expect("call exists");
    assert_eq!(stored.answer, Some(AnswerInput::Text("blue".into())));

    assert!(matches!(
        settle(&store, "run-1", "call-9", answered("x", "")).await,
        SettleOutcome::NotFound
    ));
    assert!(matches!(
        settle(&store, "run-9", "call-1", answered("x", "")).await,
        SettleOutcome::NotFound
    ));

    // The last pending call settled: the run works again.
    let declined = Settlement {
        settled_by: None,
        status: CallStatus::Declined,
        answer: Some(AnswerInput::Decline("busy".into())),
        answer_id: String::new(),
        content: "User declined to answer".into(),
        is_error: false,
        kind: ToolResultKind::Declined,
    };
    let last = settle_pending(&store, "run-1", "call-2", declined).await;
    assert_eq!(last.status, RunStatus::Running);
    assert_eq!(last.events[0].sequence, result_sequence + 1);
    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists");
    assert_eq!(run.status, RunStatus::Running);
    assert!(run.pending.is_empty());
    assert_eq!(run.last_sequence, result_sequence + 1);
}

/// Moving a tenant's runs (`askuser keys move-runs`) moves their calls too. Each call carries its
/// run's tenant, which the pending-calls feed pages by and every statement of one run's waiting
/// calls gives: a call left with the old tenant stayed in that tenant's feed, out of the new
/// one's, and its settle found nothing to change.
async fn moved_runs_take_their_waiting_calls_to_their_new_tenant(store: Arc<dyn RunStore>) {
    suspended_run(&store, "run-1", &["call-1"]).await;
    assert_eq!(store.move_runs("default", "acme").await.expect("move"), 1);
    let waiting = async |tenant: &str| -> Vec<String> {
        store
            .pending_calls(PendingQuery {
                tenant,
                after: None,
                limit: 10,
            })
            .await
            .expect("pending calls")
            .into_iter()
            .map(|pending| pending.run_id)
            .collect()
    };
    assert_eq!(waiting("acme").await, ["run-1"]);
    assert!(waiting("default").await.is_empty(), "default's feed");
    let settled = store
        .settle_tool_call(CallSettlement {
            run_id: "run-1",
            tenancy: Tenancy::Only("acme"),
            tool_call_id: "call-1",
            decide: settle_with(answered("blue", "answer-1")),
            lease: None,
        })
        .await
        .expect("settle");
    assert!(
        matches!(settled, SettleOutcome::Settled { .. }),
        "{settled:?}"
    );
    assert!(waiting("acme").await.is_empty(), "the call was settled");
}

async fn a_refused_settlement_leaves_the_call_pending(store: Arc<dyn RunStore>) {
    suspended_run(&store, "run-1", &["call-1"]).await;
    let log = event_log(&store, "run-1").await;
    let refuse: Decide = Box::new(|call| {
        assert_eq!(
            call.status,
            CallStatus::Pending,
            "only a pending call is decided on"
        );
        Err("the answer does not fit".into())
    });
    let outcome = store
        .settle_tool_call(CallSettlement {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            tool_call_id: "call-1",
            decide: refuse,
            lease: Some(lease(OWNER)),
        })
        .await
        .expect("settle tool call");
    let SettleOutcome::Refused(call, refusal) = outcome else {
        panic!("a refused settlement settled: {outcome:?}");
    };
    // Why, as `decide` said: carried out of the transaction.
    assert_eq!(refusal.to_string(), "the answer does not fit");
    assert_eq!(call.tool_call_id, "call-1");
    assert_eq!(call.status, CallStatus::Pending);
    assert_eq!(call.suspension, question("call-1?"));
    assert_eq!(event_log(&store, "run-1").await, log);
    assert_eq!(run_status(&store, "run-1").await, RunStatus::Suspended);
    // Still pending: the next decision may settle it.
    let settled = settle_pending(&store, "run-1", "call-1", answered("yes", "")).await;
    assert_eq!(settled.status, RunStatus::Running);
}

/// Changes that end unmade (refused, stale, nothing to change) and changes dropped halfway leave
/// no transaction open on a connection they give back: such a transaction would hold the run's
/// lock, and the next change of the run on another connection would wait for it forever.
async fn changes_that_end_unmade_leave_no_transaction_open(store: Arc<dyn RunStore>) {
    fn refuse() -> Decide {
        Box::new(|_| Err("refused".into()))
    }
    async fn refused(store: &Arc<dyn RunStore>) {
        let outcome = store
            .settle_tool_call(CallSettlement {
                run_id: "run-1",
                tenancy: Tenancy::Any,
                tool_call_id: "call-1",
                decide: refuse(),
                lease: Some(lease(OWNER)),
            })
            .await
            .expect("settle tool call");
        assert!(matches!(outcome, SettleOutcome::Refused(..)), "{outcome:?}");
    }
    /// Polls `operation` at most `polls` times, then drops it.
    async fn abandoned_after(polls: usize, operation: impl Future) {
        let mut operation = std::pin::pin!(operation);
        for _ in 0..polls {
            if futures::poll!(operation.as_mut()).is_ready() {
                return;
            }
            tokio::task::yield_now().await;
        }
    }

    suspended_run(&store, "run-1", &["call-1"]).await;
    let log = event_log(&store, "run-1").await;
    let unmade = async {
        // More than the test stores' 8 connections, in a row and at once.
        for _ in 0..12 {
            refused(&store).await;
            let stale = store
                .commit_turn(
                    Step {
                        run_id: "run-1",
                        owner: OTHER_OWNER,
                        expected_turns: 1,
                    },
                    TurnCommit::default(),
                )
                .await
                .expect("commit turn");
            assert!(matches!(stale, TurnOutcome::Stale));
            assert!(matches!(
                settle(&store, "run-1", "call-9", answered("x", "")).await,
                SettleOutcome::NotFound
            ));
        }
        join_all((0..12).map(|_| refused(&store))).await;
        for polls in 0..200 {
            let settle = store.settle_tool_call(CallSettlement {
                run_id: "run-1",
                tenancy: Tenancy::Any,
                tool_call_id: "call-1",
                decide: refuse(),
                lease: None,
            });
            abandoned_after(polls, settle).await;
        }
        assert_eq!(event_log(&store, "run-1").await, log);
        settle_pending(&store, "run-1", "call-1", answered("yes", "")).await
    };
    let settled = tokio::time::timeout(Duration::from_secs(30), unmade)
        .await
        .expect("no change waits for a lock that a transaction left open holds");
    assert_eq!(settled.status, RunStatus::Running);
}

async fn leases_taken_with_a_commit_hand_over_the_next_step(store: Arc<dyn RunStore>) {
    async fn acquire(store: &Arc<dyn RunStore>, owner: &str) -> bool {
        store
            .acquire_lease("run-1", owner, now_millis() + 60_000)
            .await
            .expect("acquire lease")
    }
    async fn settle_leased(store: &Arc<dyn RunStore>, tool_call_id: &str) -> SettleOutcome {
        store
            .settle_tool_call(CallSettlement {
                run_id: "run-1",
                tenancy: Tenancy::Any,
                tool_call_id,
                decide: settle_with(answered(tool_call_id, "")),
                lease: Some(lease(OTHER_OWNER)),
            })
            .await
            .expect("settle tool call")
    }
    // The creator that takes the lease gets the first step, as the store would read it.
    let CreateOutcome::Created(created) = store
        .create_run(new_run("run-1", "agent"), Some(lease(OWNER)))
        .await
        .expect("create run")
    else {
        panic!("a run without a request id was not created");
    };
    let stored = stored_step(&store, "run-1").await;
    assert_eq!(created.step.run, stored.run);
    assert_eq!(created.step.transcript, stored.transcript);
    assert_eq!(
        created.step.transcript,
        [Message::User {
            text: "prompt of run-1".into()
        }]
    );
    assert_eq!(created.step.step_attempt, 0);
    assert!(!acquire(&store, OTHER_OWNER).await, "the creator holds it");
    commit(
        &store,
        "run-1",
        0,
        turn(
            "Two questions",
            vec![pending_call("call-1", None), pending_call("call-2", None)],
        ),
    )
    .await;

    // A settlement that leaves a question pending: the run still waits, nobody leases it.
    let outcome = settle_leased(&store, "call-1").await;
    let SettleOutcome::Settled {
        committed,
        step: None,
        ..
    } = outcome
    else {
        panic!("settling call-1 of two: {outcome:?}");
    };
    assert_eq!(committed.status, RunStatus::Suspended);

    // The last one: the run works again, leased to the settler, which gets its next step.
    let outcome = settle_leased(&store, "call-2").await;
    let SettleOutcome::Settled {
        committed,
        step: Some(step),
        ..
    } = outcome
    else {
        panic!("settling the last call: {outcome:?}");
    };
    assert_eq!(committed.status, RunStatus::Running);
    let stored = stored_step(&store, "run-1").await;
    assert_eq!(step.run, stored.run);
    assert_eq!(step.transcript, stored.transcript);
    assert_eq!(step.transcript.len(), 4, "prompt, turn, two results");
    assert!(!acquire(&store, OWNER).await, "the settler holds it");

    // Loading with a lease reads only for the lease's holder.
    assert!(
        store
            .load_step("run-1", Some(lease(OWNER)))
            .await
            .expect("load step")
            .is_none()
    );
    assert!(
        store
            .load_step("run-1", Some(lease(OTHER_OWNER)))
            .await
            .expect("load step")
            .is_some()
    );
}

async fn concurrent_settles_have_exactly_one_winner(store: Arc<dyn RunStore>) {
    const ROUNDS: usize = 10;
    const SETTLERS: usize = 16;
    for round in 0..ROUNDS {
        let run_id = format!("run-{round}");
        suspended_run(&store, &run_id, &["call-1"]).await;
        let barrier = Arc::new(Barrier::new(SETTLERS));
        let settlers = (0..SETTLERS).map(|settler| {
            let (store, barrier, run_id) =
                (Arc::clone(&store), Arc::clone(&barrier), run_id.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let text = format!("answer {settler}");
                let outcome = store
                    .settle_tool_call(CallSettlement {
                        run_id: &run_id,
                        tenancy: Tenancy::Any,
                        tool_call_id: "call-1",
                        decide: settle_with(answered(&text, &text)),
                        lease: None,
                    })
                    .await
                    .expect("settle tool call");
                (text, outcome)
            })
        });
        let outcomes: Vec<(String, SettleOutcome)> = join_all(settlers)
            .await
            .into_iter()
            .map(|outcome| outcome.expect("settler task"))
            .collect();

        let winners: Vec<&String> = outcomes
            .iter()
            .filter(|(_, outcome)| matches!(outcome, SettleOutcome::Settled { .. }))
            .map(|(text, _)| text)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let winner = winners[0];
        for (text, outcome) in &outcomes {
            match outcome {
                SettleOutcome::Settled { committed, .. } => {
                    assert_eq!(committed.status, RunStatus::Running)
                }
                SettleOutcome::NotPending(call) => {
                    assert_eq!(call.answer, Some(AnswerInput::Text(winner.clone())));
                    assert_eq!(&call.answer_id, winner, "{text} saw another answer");
                }
                SettleOutcome::Refused(..) | SettleOutcome::NotFound => {
                    panic!("round {round}: {text} got {outcome:?}")
                }
            }
        }
        let results: Vec<EventKind> = event_log(&store, &run_id)
            .await
            .into_iter()
            .filter(|kind| matches!(kind, EventKind::ToolResult { .. }))
            .collect();
        assert_eq!(
            results,
            [EventKind::ToolResult {
                tool_call_id: "call-1".into(),
                content: format!("User answered: {winner}"),
                is_error: false,
                kind: ToolResultKind::Answered,
                settled_by: None,
            }],
            "round {round}"
        );
    }
}

async fn transcript_is_each_turn_followed_by_its_results_in_call_order(store: Arc<dyn RunStore>) {
    async fn transcript(store: &Arc<dyn RunStore>) -> Vec<Message> {
        stored_step(store, "run-1").await.transcript
    }
    fn assistant(text: &str, call_ids: &[&str]) -> Message {
        Message::Assistant {
            text: text.into(),
            tool_calls: call_ids
                .iter()
                .map(|id| ModelToolCall {
                    id: (*id).into(),
                    name: "ask_user".into(),
                    arguments_json: if id.starts_with("bad") {
                        "{}".into()
                    } else {
                        format!(r#"{{"question":"{id}?"}}"#)
                    },
                })
                .collect(),
        }
    }
    fn answer(tool_call_id: &str, text: &str) -> Message {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: format!("User answered: {text}"),
            is_error: false,
            kind: ToolResultKind::Answered,
        }
    }
    let invalid = Message::Tool {
        tool_call_id: "bad-y".into(),
        content: "bad-y is invalid".into(),
        is_error: true,
        kind: ToolResultKind::InvalidCall,
    };
    let prompt = Message::User {
        text: "prompt of run-1".into(),
    };

    leased_run(&store, "run-1").await;
    let calls = vec![
        pending_call("call-z", None),
        invalid_call("bad-y"),
        pending_call("call-x", None),
    ];
    commit(&store, "run-1", 0, turn("First turn", calls)).await;
    // Answered out of order: results still follow the order of the calls, and a call still
    // pending has none yet.
    settle_pending(&store, "run-1", "call-x", answered("ex", "")).await;
    assert_eq!(
        transcript(&store).await,
        [
            prompt.clone(),
            assistant("First turn", &["call-z", "bad-y", "call-x"]),
            invalid.clone(),
            answer("call-x", "ex"),
        ]
    );
    settle_pending(&store, "run-1", "call-z", answered("zed", "")).await;
    assert!(
        store
            .acquire_lease("run-1", OWNER, now_millis() + 60_000)
            .await
            .expect("acquire lease")
    );
    commit(
        &store,
        "run-1",
        1,
        turn("Second turn", vec![pending_call("call-w", None)]),
    )
    .await;
    settle_pending(&store, "run-1", "call-w", answered("dub", "")).await;
    let step = stored_step(&store, "run-1").await;
    assert_eq!(step.run.status, RunStatus::Running);
    assert_eq!(step.run.turns, 2);
    assert_eq!(
        step.transcript,
        [
            prompt,
            assistant("First turn", &["call-z", "bad-y", "call-x"]),
            answer("call-z", "zed"),
            invalid,
            answer("call-x", "ex"),
            assistant("Second turn", &["call-w"]),
            answer("call-w", "dub"),
        ]
    );
}

async fn cancel_settles_pending_calls_and_ends_the_log(store: Arc<dyn RunStore>) {
    suspended_run(&store, "run-1", &["call-1", "call-2"]).await;
    settle_pending(&store, "run-1", "call-1", answered("yes", "")).await;
    let CancelOutcome::Cancelled {
        committed: cancelled,
        agent_id,
    } = store
        .cancel_run(Cancellation {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            reason: "user left",
            call_content: "The run was cancelled",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel run")
    else {
        panic!("a suspended run was not cancelled");
    };
    assert_eq!(agent_id, "agent");
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    let kinds: Vec<&EventKind> = cancelled.events.iter().map(|e| &e.kind).collect();
    assert_eq!(
        kinds,
        [
            &EventKind::ToolResult {
                tool_call_id: "call-2".into(),
                content: "The run was cancelled".into(),
                is_error: false,
                kind: ToolResultKind::Cancelled,
                settled_by: Some(canceller()),
            },
            &EventKind::RunCancelled {
                reason: "user left".into()
            },
        ],
        "only the call still pending is settled"
    );
    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists");
    assert_eq!(run.status, RunStatus::Cancelled);
    assert_eq!(run.error_message, "user left");
    // Each settled call, in the order of its result, with who settled it (the answer here was
    // nobody's: `answered` names no settler) and when.
    let settled: Vec<(&str, ToolResultKind, Option<&SettledBy>)> = run
        .settled
        .iter()
        .map(|c| (c.tool_call_id.as_str(), c.kind, c.settled_by.as_ref()))
        .collect();
    assert_eq!(
        settled,
        [
            ("call-1", ToolResultKind::Answered, None),
            ("call-2", ToolResultKind::Cancelled, Some(&canceller())),
        ]
    );
    assert!(run.settled.iter().all(|c| c.settled_ms.is_some()));
    assert!(run.pending.is_empty());
    assert_eq!(run.last_sequence, cancelled.events[1].sequence);
    let call = store
        .get_tool_call(CallOfRun {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            tool_call_id: "call-2",
        })
        .await
        .expect("get tool call")
        .expect("call exists");
    assert_eq!(call.status, CallStatus::Cancelled);
    assert_eq!(call.result_sequence, cancelled.events[0].sequence);
    // A late answer finds the call settled.
    let SettleOutcome::NotPending(late) =
        settle(&store, "run-1", "call-2", answered("late", "")).await
    else {
        panic!("an answer settled a cancelled call");
    };
    assert_eq!(late.status, CallStatus::Cancelled);

    // Cancelling again changes nothing.
    let log = event_log(&store, "run-1").await;
    assert!(matches!(
        store
            .cancel_run(Cancellation {
                run_id: "run-1",
                tenancy: Tenancy::Any,
                reason: "again",
                call_content: "x",
                cancelled_by: &canceller()
            })
            .await
            .expect("cancel run"),
        CancelOutcome::AlreadyCancelled
    ));
    assert_eq!(event_log(&store, "run-1").await, log);
    assert_eq!(run_status(&store, "run-1").await, RunStatus::Cancelled);

    // A working run has no calls to settle.
    leased_run(&store, "run-2").await;
    let CancelOutcome::Cancelled {
        committed: cancelled,
        ..
    } = store
        .cancel_run(Cancellation {
            run_id: "run-2",
            tenancy: Tenancy::Any,
            reason: "stop",
            call_content: "x",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel run")
    else {
        panic!("a running run was not cancelled");
    };
    assert_eq!(cancelled.events.len(), 1);
    assert_eq!(cancelled.events[0].sequence, 2);

    // Finished runs stay finished.
    leased_run(&store, "run-3").await;
    commit(&store, "run-3", 0, completing_turn("done")).await;
    leased_run(&store, "run-4").await;
    commit(&store, "run-4", 0, failing_turn("broken")).await;
    for (run_id, status) in [
        ("run-3", RunStatus::Completed),
        ("run-4", RunStatus::Failed),
    ] {
        let log = event_log(&store, run_id).await;
        let outcome = store
            .cancel_run(Cancellation {
                run_id,
                tenancy: Tenancy::Any,
                reason: "too late",
                call_content: "x",
                cancelled_by: &canceller(),
            })
            .await
            .expect("cancel run");
        assert!(
            matches!(outcome, CancelOutcome::Finished(s) if s == status),
            "{run_id}: {outcome:?}"
        );
        assert_eq!(event_log(&store, run_id).await, log);
    }
    assert!(matches!(
        store
            .cancel_run(Cancellation {
                run_id: "run-9",
                tenancy: Tenancy::Any,
                reason: "x",
                call_content: "x",
                cancelled_by: &canceller()
            })
            .await
            .expect("cancel run"),
        CancelOutcome::NotFound
    ));
}

async fn expiries_come_due_earliest_first(store: Arc<dyn RunStore>) {
    // Expiry times are plain numbers to the store: no clock is involved.
    const SOON: i64 = 1_000_000;
    const LATE: i64 = 2_000_000;
    assert_eq!(store.next_expiry().await.expect("next expiry"), None);

    leased_run(&store, "run-1").await;
    let calls = vec![
        pending_call("call-late", Some(LATE)),
        pending_call("call-never", None),
        pending_call("call-soon", Some(SOON)),
    ];
    commit(&store, "run-1", 0, turn("Asking", calls)).await;
    let due = |now: i64, limit: usize| {
        let store = Arc::clone(&store);
        async move { store.due_expiries(now, limit).await.expect("due expiries") }
    };
    let pair = |call: &str| ("run-1".to_owned(), call.to_owned());

    assert_eq!(store.next_expiry().await.expect("next expiry"), Some(SOON));
    assert!(due(SOON - 1, 10).await.is_empty());
    assert_eq!(
        due(SOON, 10).await,
        [pair("call-soon")],
        "due at its expiry"
    );
    assert_eq!(
        due(LATE + 1, 10).await,
        [pair("call-soon"), pair("call-late")]
    );
    assert_eq!(due(LATE + 1, 1).await, [pair("call-soon")]);

    let expired = Settlement {
        settled_by: None,
        status: CallStatus::Expired,
        answer: None,
        answer_id: String::new(),
        content: "No answer: the question expired".into(),
        is_error: false,
        kind: ToolResultKind::Expired,
    };
    settle_pending(&store, "run-1", "call-soon", expired).await;
    assert_eq!(store.next_expiry().await.expect("next expiry"), Some(LATE));
    assert_eq!(due(LATE + 1, 10).await, [pair("call-late")]);

    // Settled by cancellation: nothing left to expire.
    store
        .cancel_run(Cancellation {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            reason: "stop",
            call_content: "x",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel run");
    assert_eq!(store.next_expiry().await.expect("next expiry"), None);
    assert!(due(LATE + 1, 10).await.is_empty());
}

async fn prune_removes_only_finished_runs_older_than_the_cutoff(store: Arc<dyn RunStore>) {
    leased_run(&store, "completed").await;
    commit(&store, "completed", 0, completing_turn("done")).await;
    leased_run(&store, "failed").await;
    commit(&store, "failed", 0, failing_turn("broken")).await;
    suspended_run(&store, "cancelled", &["call-1"]).await;
    store
        .cancel_run(Cancellation {
            run_id: "cancelled",
            tenancy: Tenancy::Any,
            reason: "stop",
            call_content: "x",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel run");
    suspended_run(&store, "suspended", &["call-1"]).await;
    leased_run(&store, "running").await;

    // Nothing is older than a cutoff in the past.
    assert_eq!(store.prune_finished(0, 100).await.expect("prune"), 0);
    assert!(
        store
            .get_run("completed", Tenancy::Any)
            .await
            .expect("get run")
            .is_some()
    );

    // A batch at a time: at most the limit per call, until none is left.
    let later = now_millis() + 60_000;
    let mut batches = Vec::new();
    loop {
        let pruned = store.prune_finished(later, 2).await.expect("prune");
        batches.push(pruned);
        if pruned < 2 {
            break;
        }
    }
    assert_eq!(batches, [2, 1]);
    for run_id in ["completed", "failed", "cancelled"] {
        assert!(
            store
                .get_run(run_id, Tenancy::Any)
                .await
                .expect("get run")
                .is_none()
        );
        assert!(
            store
                .read_events(EventQuery {
                    run_id,
                    tenancy: Tenancy::Any,
                    after_sequence: 0,
                    limit: 10
                })
                .await
                .expect("read events")
                .is_none()
        );
    }
    assert!(
        store
            .get_tool_call(CallOfRun {
                run_id: "cancelled",
                tenancy: Tenancy::Any,
                tool_call_id: "call-1",
            })
            .await
            .expect("get tool call")
            .is_none()
    );

    // However old, unfinished runs stay whole and answerable.
    let suspended = store
        .get_run("suspended", Tenancy::Any)
        .await
        .expect("get run")
        .expect("suspended run kept");
    assert_eq!(suspended.status, RunStatus::Suspended);
    assert_eq!(suspended.pending.len(), 1);
    assert_eq!(event_log(&store, "suspended").await.len(), 4);
    settle_pending(&store, "suspended", "call-1", answered("still here", "")).await;
    assert_eq!(run_status(&store, "running").await, RunStatus::Running);
    assert_eq!(event_log(&store, "running").await.len(), 1);
}

async fn unfinished_runs_are_listed_oldest_first_by_creation(store: Arc<dyn RunStore>) {
    suspended_run(&store, "suspended", &["call-1"]).await;
    leased_run(&store, "completed").await;
    commit(&store, "completed", 0, completing_turn("done")).await;
    // Created a moment later than the others, on any clock.
    tokio::time::sleep(Duration::from_millis(5)).await;
    leased_run(&store, "running").await;

    let later = now_millis() + 60_000;
    let unfinished = |before_ms, limit| {
        let store = Arc::clone(&store);
        async move {
            store
                .unfinished_before(before_ms, limit)
                .await
                .expect("unfinished runs")
        }
    };
    assert_eq!(unfinished(later, 10).await, ["suspended", "running"]);
    assert_eq!(unfinished(later, 1).await, ["suspended"]);
    assert!(unfinished(0, 10).await.is_empty());
}

async fn list_runs_filters_and_pages_newest_first(store: Arc<dyn RunStore>) {
    async fn ids(store: &Arc<dyn RunStore>, query: RunQuery) -> Vec<String> {
        store
            .list_runs(query)
            .await
            .expect("list runs")
            .into_iter()
            .map(|run| run.run_id)
            .collect()
    }
    let query = |limit: usize| RunQuery {
        limit,
        ..RunQuery::default()
    };

    // run-0..run-5: even ones of agent alpha, odd ones of beta; 1 and 4 suspended, 2 completed.
    for index in 0..6 {
        let run_id = format!("run-{index}");
        let agent = if index % 2 == 0 { "alpha" } else { "beta" };
        store
            .create_run(new_run(&run_id, agent), None)
            .await
            .expect("create run");
        assert!(
            store
                .acquire_lease(&run_id, OWNER, now_millis() + 60_000)
                .await
                .expect("acquire lease")
        );
        match index {
            1 | 4 => {
                commit(
                    &store,
                    &run_id,
                    0,
                    turn("?", vec![pending_call("call-1", None)]),
                )
                .await;
            }
            2 => {
                commit(&store, &run_id, 0, completing_turn("done")).await;
            }
            _ => {}
        }
    }

    assert_eq!(
        ids(&store, query(100)).await,
        ["run-5", "run-4", "run-3", "run-2", "run-1", "run-0"]
    );
    let suspended = store
        .list_runs(RunQuery {
            filter: RunFilter {
                status: Some(RunStatus::Suspended),
                ..RunFilter::default()
            },
            ..query(100)
        })
        .await
        .expect("list runs");
    let suspended_ids: Vec<&str> = suspended.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(suspended_ids, ["run-4", "run-1"]);
    assert!(
        suspended.iter().all(|run| run.pending.len() == 1),
        "listed runs carry their pending calls"
    );
    assert_eq!(
        ids(
            &store,
            RunQuery {
                filter: RunFilter {
                    agent_id: Some("alpha".into()),
                    ..RunFilter::default()
                },
                ..query(100)
            }
        )
        .await,
        ["run-4", "run-2", "run-0"]
    );
    assert_eq!(
        ids(
            &store,
            RunQuery {
                filter: RunFilter {
                    status: Some(RunStatus::Running),
                    agent_id: Some("beta".into()),
                    ..RunFilter::default()
                },
                ..query(100)
            }
        )
        .await,
        ["run-5", "run-3"]
    );
    assert!(
        ids(
            &store,
            RunQuery {
                filter: RunFilter {
                    status: Some(RunStatus::Cancelled),
                    ..RunFilter::default()
                },
                ..query(100)
            }
        )
        .await
        .is_empty()
    );

    // Pages of two, each after the previous page's last id.
    let mut pages = Vec::new();
    let mut before_run_id = None;
    loop {
        let page = ids(
            &store,
            RunQuery {
                before_run_id: before_run_id.clone(),
                ..query(2)
            },
        )
        .await;
        if page.is_empty() {
            break;
        }
        before_run_id = page.last().cloned();
        pages.push(page);
    }
    assert_eq!(
        pages,
        [["run-5", "run-4"], ["run-3", "run-2"], ["run-1", "run-0"]]
    );
    // Paging combines with the filters.
    assert_eq!(
        ids(
            &store,
            RunQuery {
                filter: RunFilter {
                    agent_id: Some("alpha".into()),
                    ..RunFilter::default()
                },
                before_run_id: Some("run-4".into()),
                ..query(1)
            }
        )
        .await,
        ["run-2"]
    );
}

async fn leases_exclude_other_owners_until_they_expire(store: Arc<dyn RunStore>) {
    async fn acquire(store: &Arc<dyn RunStore>, run_id: &str, owner: &str, until_ms: i64) -> bool {
        store
            .acquire_lease(run_id, owner, until_ms)
            .await
            .expect("acquire lease")
    }
    async fn unleased(store: &Arc<dyn RunStore>, now_ms: i64) -> Vec<String> {
        store
            .unleased_runs(now_ms, 100)
            .await
            .expect("unleased runs")
    }
    let minute = || now_millis() + 60_000;

    store
        .create_run(new_run("run-old", "agent"), None)
        .await
        .expect("create run");
    // The two runs must differ in when they last changed, which orders the unleased ones.
    tokio::time::sleep(Duration::from_millis(20)).await;
    store
        .create_run(new_run("run-new", "agent"), None)
        .await
        .expect("create run");
    assert_eq!(unleased(&store, now_millis()).await, ["run-old", "run-new"]);
    assert_eq!(
        store
            .unleased_runs(now_millis(), 1)
            .await
            .expect("unleased runs"),
        ["run-old"]
    );

    assert!(acquire(&store, "run-old", OWNER, minute()).await);
    assert!(!acquire(&store, "run-old", OTHER_OWNER, minute()).await);
    assert!(acquire(&store, "run-old", OWNER, minute()).await, "renewal");
    assert_eq!(unleased(&store, now_millis()).await, ["run-new"]);
    // Only the holder gives a lease up.
    store
        .release_lease("run-old", OTHER_OWNER)
        .await
        .expect("release lease");
    assert!(!acquire(&store, "run-old", OTHER_OWNER, minute()).await);
    store
        .release_lease("run-old", OWNER)
        .await
        .expect("release lease");
    assert_eq!(unleased(&store, now_millis()).await, ["run-old", "run-new"]);

    // A lease that ran out is free for anyone, and unleased until then only.
    let expired_at = now_millis() - 1_000;
    assert!(acquire(&store, "run-old", OTHER_OWNER, expired_at).await);
    // run-new has no lease at all, so it is unleased at any time.
    assert_eq!(unleased(&store, expired_at - 1).await, ["run-new"]);
    assert_eq!(unleased(&store, now_millis()).await, ["run-old", "run-new"]);
    assert!(acquire(&store, "run-old", OWNER, minute()).await);
    assert!(!acquire(&store, "run-old", OTHER_OWNER, minute()).await);

    // A run that waits or ended has no lease to take, and is not unleased work.
    let committed = commit(
        &store,
        "run-old",
        0,
        turn("?", vec![pending_call("call-1", None)]),
    )
    .await;
    assert_eq!(committed.status, RunStatus::Suspended);
    assert!(!acquire(&store, "run-old", OWNER, minute()).await);
    assert_eq!(unleased(&store, now_millis()).await, ["run-new"]);
    // Suspending gave the lease up: once answered, any executor may take the run at once.
    settle_pending(&store, "run-old", "call-1", answered("go", "")).await;
    assert!(acquire(&store, "run-old", OTHER_OWNER, minute()).await);
    assert!(!acquire(&store, "run-old", OWNER, minute()).await);
    store
        .cancel_run(Cancellation {
            run_id: "run-new",
            tenancy: Tenancy::Any,
            reason: "stop",
            call_content: "x",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel run");
    assert!(!acquire(&store, "run-new", OWNER, minute()).await);
    assert!(unleased(&store, now_millis()).await.is_empty());
    assert!(!acquire(&store, "no-such-run", OWNER, minute()).await);
}

async fn migrations_are_idempotent(location: StoreLocation) {
    let store = location.open().await;
    suspended_run(&store, "run-1", &["call-1"]).await;
    store.close().await.expect("close store");
    drop(store);

    // Opening again migrates nothing twice and keeps every row.
    let store = location.open().await;
    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get run")
        .expect("the run survives reopening");
    assert_eq!(run.status, RunStatus::Suspended);
    assert_eq!(run.pending.len(), 1);
    let log = event_log(&store, "run-1").await;
    let settled = settle_pending(&store, "run-1", "call-1", answered("again", "")).await;
    assert_eq!(settled.events[0].sequence, log.len() as u64 + 1);
    store.close().await.expect("close store");
    drop(store);

    let store = location.open().await;
    assert_eq!(run_status(&store, "run-1").await, RunStatus::Running);
}

/// On PostgreSQL, each page of the pending-calls feed reads about its own rows from the index:
/// with 20,000 calls held, 18,000 of them the viewer's tenant's, a snapshot's pages together read
/// each of its tenant's calls about once, and no run (each call carries its run's tenant and
/// agent). (A page's plan was a merge join walking the runs' index from its start, or a bitmap of
/// every later call sorted: pages that read more the further the snapshot went.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_feed_pages_read_only_their_own_rows() {
    feed_pages_read_only_their_own_rows(Statistics::Analyzed).await;
}

/// [`postgres_feed_pages_read_only_their_own_rows`] on tables filled and not yet analyzed, as
/// after a burst of suspensions before autovacuum comes by: the planner, with no statistics, made
/// each page a bitmap of every later call, sorted (a snapshot of 100,000 calls took 14 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_feed_pages_read_only_their_own_rows_before_the_tables_are_analyzed() {
    feed_pages_read_only_their_own_rows(Statistics::None).await;
}

/// Whether the tables of a test have the planner's statistics.
#[derive(Clone, Copy)]
enum Statistics {
    Analyzed,
    /// Never analyzed: autovacuum is off for them.
    None,
}

async fn feed_pages_read_only_their_own_rows(statistics: Statistics) {
    let Some((store, db)) = held_runs_written_directly(statistics).await else {
        return;
    };
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .pending_calls(PendingQuery {
                tenant: "default",
                after: after.take(),
                limit: 512,
            })
            .await
            .expect("page");
        after = page_after(&page, 512);
        seen.extend(page.into_iter().map(|pending| pending.run_id));
        if after.is_none() {
            break;
        }
    }
    let expected: Vec<String> = (1..=HELD_RUNS)
        .filter(|g| g % 10 != 0)
        .map(|g| format!("run-{g:06}"))
        .collect();
    assert_eq!(seen.len(), expected.len());
    assert!(seen == expected, "every default run's call once, in order");
    let held = expected.len() as i64;

    let (calls_read, runs_read) = index_reads_reported(&db, held).await;
    // Fewer than a page's worth: no run is looked up call by call.
    assert!(
        calls_read <= 2 * held && runs_read < 512,
        "index tuples read for {held} held calls: {calls_read} of calls, {runs_read} of runs"
    );
}

/// On PostgreSQL, each page of a run listing reads about its own runs and their calls from the
/// indexes: with 20,000 runs held, listing the 18,000 suspended runs of a tenant and then every
/// run, 100 a page, reads each listed run and its call about once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_listing_pages_read_only_their_own_rows() {
    listing_pages_read_only_their_own_rows(Statistics::Analyzed).await;
}

/// [`postgres_listing_pages_read_only_their_own_rows`] on tables filled and not yet analyzed: the
/// planner made each page a bitmap of every run of the tenant, sorted, and read the page's calls
/// from a bitmap of every pending call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_listing_pages_read_only_their_own_rows_before_the_tables_are_analyzed() {
    listing_pages_read_only_their_own_rows(Statistics::None).await;
}

async fn listing_pages_read_only_their_own_rows(statistics: Statistics) {
    const PAGE: usize = 100;
    let Some((store, db)) = held_runs_written_directly(statistics).await else {
        return;
    };
    let mut listed = 0;
    for tenant in [Some("default"), None] {
        let mut seen = Vec::new();
        let mut before_run_id = None;
        loop {
            let page = store
                .list_runs(RunQuery {
                    tenant: tenant.map(str::to_owned),
                    filter: RunFilter {
                        status: Some(RunStatus::Suspended),
                        ..RunFilter::default()
                    },
                    before_run_id: before_run_id.take(),
                    limit: PAGE,
                })
                .await
                .expect("page");
            for run in &page {
                let calls: Vec<_> = run.pending.iter().map(|c| &c.tool_call_id).collect();
                assert_eq!(calls, ["call-1"], "the call {} waits on", run.run_id);
            }
            before_run_id = (page.len() == PAGE).then(|| page[PAGE - 1].run_id.clone());
            seen.extend(page.into_iter().map(|run| run.run_id));
            if before_run_id.is_none() {
                break;
            }
        }
        let expected: Vec<String> = (1..=HELD_RUNS)
            .rev()
            .filter(|g| tenant.is_none() || g % 10 != 0)
            .map(|g| format!("run-{g:06}"))
            .collect();
        assert_eq!(seen.len(), expected.len(), "runs listed of {tenant:?}");
        assert!(
            seen == expected,
            "every run of {tenant:?} once, newest first"
        );
        listed += expected.len() as i64;
    }

    let (calls_read, runs_read) = index_reads_reported(&db, listed).await;
    assert!(
        calls_read <= 2 * listed && runs_read <= 2 * listed,
        "index tuples read for {listed} runs listed: {calls_read} of calls, {runs_read} of runs"
    );
}

/// How many runs [`held_runs_written_directly`] holds.
const HELD_RUNS: i64 = 20_000;

/// A PostgreSQL store holding [`HELD_RUNS`] suspended runs, `run-000001` on, each waiting on its
/// `call-1`, every tenth of them tenant `acme`'s and the others `default`'s; the tables have the
/// planner's statistics or none, as `statistics` says, and the activity statistics are reset.
/// With a client of the database; `None` without PostgreSQL.
async fn held_runs_written_directly(
    statistics: Statistics,
) -> Option<(Arc<dyn RunStore>, tokio_postgres::Client)> {
    let location = StoreLocation::postgres().await?;
    let StoreLocation::Postgres { url } = &location else {
        unreachable!("a PostgreSQL location");
    };
    let store = location.open().await;
    let db = common::postgres_client(url).await;
    autovacuum_off(&db).await;
    write_held_runs(&db, statistics).await;
    Some((store, db))
}

/// Turns autovacuum off for the tables of runs and calls (a change of their definition: plans
/// prepared before it are made again).
async fn autovacuum_off(db: &tokio_postgres::Client) {
    db.batch_execute(
        "ALTER TABLE runs SET (autovacuum_enabled = false); \
         ALTER TABLE tool_calls SET (autovacuum_enabled = false);",
    )
    .await
    .expect("autovacuum off");
}

/// Writes [`HELD_RUNS`] suspended runs as [`held_runs_written_directly`] says, and resets the
/// activity statistics.
async fn write_held_runs(db: &tokio_postgres::Client, statistics: Statistics) {
    let analyze = match statistics {
        Statistics::Analyzed => "ANALYZE runs; ANALYZE tool_calls;",
        Statistics::None => "",
    };
    // Rows are written directly: 20,000 suspensions through the store would take minutes with
    // fsync on.
    db.batch_execute(&format!(
        "INSERT INTO runs (run_id, agent_id, status, prompt, metadata, last_sequence, created_ms, \
         updated_ms, tenant) SELECT 'run-' || lpad(g::text, 6, '0'), 'asker', 'suspended', '', '{{}}', \
         3, 0, 0, CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'default' END \
         FROM generate_series(1, {HELD_RUNS}) g; \
         INSERT INTO tool_calls (run_id, tool_call_id, turn, position, tool_name, arguments_json, \
         status, payload, tenant, agent_id) SELECT 'run-' || lpad(g::text, 6, '0'), 'call-1', 1, 0, \
         'ask_user', '{{}}', 'pending', NULL, \
         CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'default' END, 'asker' \
         FROM generate_series(1, {HELD_RUNS}) g; \
         {analyze} SELECT pg_stat_reset();"
    ))
    .await
    .expect("held runs");
}

/// On PostgreSQL, the statements of one run's pending calls (a settle, the step its settler
/// reads, a claim, a run read for its tenant) find them by a key, however the table grew after
/// they were planned. Prepared (and planned, for good after five runs) while the table was
/// small, the settle walked the whole pending calls' index, whose first column (the tenant) it
/// was not given: 78 pages per settle on average over 10,000 runs at 64 streams, and here the
/// whole index, the 20,000 calls written after the planning, for each of those statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_statements_of_a_runs_pending_calls_read_only_its_own_after_the_table_grew() {
    const MEASURED: i64 = 20;
    let Some(StoreLocation::Postgres { url }) = StoreLocation::postgres().await else {
        return;
    };
    // One connection, so that every statement runs where it was planned.
    let store: Arc<dyn RunStore> = Arc::new(
        PostgresStore::connect(
            &url,
            &PostgresSettings {
                pool_size: 1,
                ..PostgresSettings::default()
            },
        )
        .await
        .expect("connect PostgreSQL store"),
    );
    let db = common::postgres_client(&url).await;
    autovacuum_off(&db).await;
    let round = async |run_id: &str| {
        suspended_run(&store, run_id, &["call-1"]).await;
        let claimed = store
            .claim_call(Claim {
                run_id,
                tenancy: Tenancy::Any,
                tool_call_id: "call-1",
                claimant: "worker",
                subject: "key:w",
                until_ms: now_millis() + 60_000,
            })
            .await
            .expect("claim");
        assert!(
            matches!(claimed, ClaimOutcome::Claimed { .. }),
            "{claimed:?}"
        );
        let run = store
            .get_run(run_id, Tenancy::Only("default"))
            .await
            .expect("get run")
            .expect("the run is the default tenant's");
        assert_eq!(run.pending.len(), 1, "call-1 waits");
        let settled = store
            .settle_tool_call(CallSettlement {
                run_id,
                tenancy: Tenancy::Any,
                tool_call_id: "call-1",
                decide: settle_with(answered("blue", "answer-1")),
                lease: Some(Lease {
                    owner: OWNER,
                    until_ms: now_millis() + 60_000,
                }),
            })
            .await
            .expect("settle");
        let SettleOutcome::Settled {
            step: Some(step), ..
        } = settled
        else {
            panic!("the settle of {run_id} took no step: {settled:?}");
        };
        assert!(
            step.run.pending.is_empty(),
            "nothing waits after the settle"
        );
    };
    for n in 0..8 {
        round(&format!("planned-{n}")).await;
    }
    // The rows are written by a connection of their own, and the statistics reset once it has
    // ended: a backend reports its statistics after its statements, and at the latest as it exits.
    let writer = common::postgres_client(&url).await;
    let writer_pid: i32 = writer
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("backend")
        .get(0);
    write_held_runs(&writer, Statistics::None).await;
    drop(writer);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while db
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)",
            &[&writer_pid],
        )
        .await
        .expect("activity")
        .get::<_, bool>(0)
    {
        assert!(tokio::time::Instant::now() < deadline, "the writer ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    db.batch_execute("SELECT pg_stat_reset()")
        .await
        .expect("reset");
    for n in 0..MEASURED {
        round(&format!("measured-{n}")).await;
    }
    // Index tuples read count only those a scan returned, not those it walked past: the pages
    // read tell. Once the rounds' reads are reported, their pages are.
    index_reads_reported(&db, MEASURED).await;
    let pages: i64 = db
        .query_one(
            "SELECT COALESCE(SUM(idx_blks_hit + idx_blks_read), 0)::bigint \
             FROM pg_statio_user_indexes WHERE relname = 'tool_calls'",
            &[],
        )
        .await
        .expect("index pages")
        .get(0);
    eprintln!("index pages of tool_calls for {MEASURED} rounds: {pages}");
    assert!(
        pages <= 80 * MEASURED,
        "index pages of tool_calls read for {MEASURED} runs' rounds: {pages}"
    );
}

/// The index tuples read of `tool_calls` and of `runs` since the statistics were reset, once at
/// least `calls` of the calls' are reported. An idle backend reports its reads within about ten
/// seconds (PostgreSQL's idle interval): wait until the calls' reads are all reported, then the
/// runs' are too.
async fn index_reads_reported(db: &tokio_postgres::Client, calls: i64) -> (i64, i64) {
    let index_reads = async || -> (i64, i64) {
        let row = db
            .query_one(
                "SELECT COALESCE(SUM(idx_tup_read) FILTER (WHERE relname = 'tool_calls'), 0)::bigint, \
                 COALESCE(SUM(idx_tup_read) FILTER (WHERE relname = 'runs'), 0)::bigint \
                 FROM pg_stat_user_indexes",
                &[],
            )
            .await
            .expect("index statistics");
        (row.get(0), row.get(1))
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    let (calls_read, runs_read) = loop {
        let reads = index_reads().await;
        if reads.0 >= calls || tokio::time::Instant::now() > deadline {
            tokio::time::sleep(Duration::from_secs(2)).await;
            break index_reads().await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        calls_read >= calls,
        "the calls' reads were reported: {calls_read}"
    );
    (calls_read, runs_read)
}

/// Replicas hear of each commit but a run's creation by a notice sent in the commit's flight,
/// after the commit: in commit order, once the commit can be read, and never for a change whose
/// transaction failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_notices_announce_only_commits_that_went_through() {
    let Some(location) = StoreLocation::postgres().await else {
        return;
    };
    let writer = location.open().await;
    let listener = location.open().await;
    let mut notices = listener
        .commit_feed()
        .await
        .expect("commit feed")
        .expect("PostgreSQL has a commit feed");
    let listening = async {
        while listener.ping().await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), listening)
        .await
        .expect("the listener's LISTEN is up");
    let mut next_notice = async || {
        tokio::time::timeout(Duration::from_secs(10), notices.recv())
            .await
            .expect("a notice within 10 s")
            .expect("the feed is open")
    };

    // A run's creation is announced to nobody: nothing can follow it before it exists.
    leased_run(&writer, "run-n").await;

    // Two calls with one id: the calls' insert fails in the flight, after the notice was sent
    // with the COMMIT (which then rolls back).
    let doubled = turn(
        "Two of one",
        vec![pending_call("same", None), pending_call("same", None)],
    );
    let failed = writer
        .commit_turn(
            Step {
                run_id: "run-n",
                owner: OWNER,
                expected_turns: 0,
            },
            doubled,
        )
        .await;
    assert!(failed.is_err(), "a turn with two calls of one id fails");
    assert_eq!(run_status(&writer, "run-n").await, RunStatus::Running);

    let completed = commit(&writer, "run-n", 0, completing_turn("Done")).await;
    assert_eq!(completed.status, RunStatus::Completed);
    // The first notice is the completion's: none came of the creation or of the failed turn.
    assert_eq!(
        next_notice().await,
        CommitNotice::Committed {
            run_id: "run-n".into(),
            last_sequence: completed.events.last().expect("events").sequence,
            status: RunStatus::Completed,
        }
    );
    assert_eq!(run_status(&listener, "run-n").await, RunStatus::Completed);
    let quiet = tokio::time::timeout(Duration::from_millis(500), notices.recv()).await;
    assert!(quiet.is_err(), "no more notices: {quiet:?}");
}

/// Starts that carry one request id, one after another and all at once, create one run: the others
/// get its id and write nothing.
async fn a_start_repeating_a_request_id_returns_the_first_run(store: Arc<dyn RunStore>) {
    let with_key = |run_id: &str, key: &str| NewRun {
        request_id: Some(key.into()),
        ..new_run(run_id, "agent")
    };
    let first = store
        .create_run(with_key("run-1", "start-A"), None)
        .await
        .expect("create");
    assert!(matches!(first, CreateOutcome::Created(_)), "{first:?}");
    let again = store
        .create_run(with_key("run-2", "start-A"), None)
        .await
        .expect("create again");
    assert!(
        matches!(&again, CreateOutcome::Existing { run_id } if run_id == "run-1"),
        "{again:?}"
    );
    assert!(
        store
            .get_run("run-2", Tenancy::Any)
            .await
            .expect("get run")
            .is_none()
    );
    // The key is one tenant's: the same key in another tenant starts a run of its own.
    let elsewhere = NewRun {
        tenant: "acme".into(),
        ..with_key("run-3", "start-A")
    };
    let elsewhere = store.create_run(elsewhere, None).await.expect("create");
    assert!(
        matches!(elsewhere, CreateOutcome::Created(_)),
        "{elsewhere:?}"
    );

    let outcomes = join_all((0..8).map(|i| {
        let store = Arc::clone(&store);
        async move {
            store
                .create_run(with_key(&format!("run-b{i}"), "start-B"), None)
                .await
                .expect("create at once")
        }
    }))
    .await;
    let created: Vec<&CreateOutcome> = outcomes
        .iter()
        .filter(|o| matches!(o, CreateOutcome::Created(_)))
        .collect();
    assert_eq!(created.len(), 1, "{outcomes:?}");
    let CreateOutcome::Created(winner) = created[0] else {
        unreachable!("filtered");
    };
    let winner_id = &winner.committed.events[0].run_id;
    for outcome in &outcomes {
        if let CreateOutcome::Existing { run_id } = outcome {
            assert_eq!(run_id, winner_id);
        }
    }
    let listed = store
        .list_runs(RunQuery {
            limit: 100,
            ..RunQuery::default()
        })
        .await
        .expect("list runs");
    assert_eq!(listed.len(), 3, "run-1, run-3 and one run of start-B");
}

/// Every read and change by run id, and every listing, is scoped to the caller's tenant in the
/// store: another tenant's run is not found by any of them and is left as it was.
async fn another_tenants_run_is_not_found_and_left_unchanged(store: Arc<dyn RunStore>) {
    suspended_run(&store, "run-1", &["call-1"]).await;
    let (own, other) = (Tenancy::Only("default"), Tenancy::Only("acme"));
    let log = event_log(&store, "run-1").await;

    assert!(store.get_run("run-1", other).await.expect("get").is_none());
    assert!(
        store
            .read_events(EventQuery {
                run_id: "run-1",
                tenancy: other,
                after_sequence: 0,
                limit: 100
            })
            .await
            .expect("read")
            .is_none()
    );
    let call = store
        .get_tool_call(CallOfRun {
            run_id: "run-1",
            tenancy: other,
            tool_call_id: "call-1",
        })
        .await
        .expect("get call");
    assert!(call.is_none());
    let settle_as = |tenancy: Tenancy<'static>| {
        let store = Arc::clone(&store);
        async move {
            let decide = settle_with(answered("x", "a"));
            let settled = store.settle_tool_call(CallSettlement {
                run_id: "run-1",
                tenancy,
                tool_call_id: "call-1",
                decide,
                lease: None,
            });
            settled.await.expect("settle")
        }
    };
    let claim_as = |tenancy: Tenancy<'static>| {
        let store = Arc::clone(&store);
        let until_ms = now_millis() + 60_000;
        async move {
            let claimed = store.claim_call(Claim {
                run_id: "run-1",
                tenancy,
                tool_call_id: "call-1",
                claimant: "worker",
                subject: "key:w",
                until_ms,
            });
            claimed.await.expect("claim")
        }
    };
    let settled = settle_as(other).await;
    assert!(matches!(settled, SettleOutcome::NotFound), "{settled:?}");
    let claimed = claim_as(other).await;
    assert!(matches!(claimed, ClaimOutcome::NotFound), "{claimed:?}");
    let cancelled = store
        .cancel_run(Cancellation {
            run_id: "run-1",
            tenancy: other,
            reason: "no",
            call_content: "cancelled",
            cancelled_by: &canceller(),
        })
        .await
        .expect("cancel");
    assert!(
        matches!(cancelled, CancelOutcome::NotFound),
        "{cancelled:?}"
    );
    assert!(
        store
            .pending_calls(PendingQuery {
                tenant: "acme",
                after: None,
                limit: 100
            })
            .await
            .expect("feed")
            .is_empty()
    );
    let listed = |tenant: &str| RunQuery {
        tenant: Some(tenant.into()),
        limit: 100,
        ..RunQuery::default()
    };
    assert!(
        store
            .list_runs(listed("acme"))
            .await
            .expect("list")
            .is_empty()
    );

    // Untouched, and all there for its own tenant.
    assert_eq!(event_log(&store, "run-1").await, log);
    let run = store
        .get_run("run-1", own)
        .await
        .expect("get")
        .expect("own run");
    assert_eq!(run.pending.len(), 1);
    let page = store
        .read_events(EventQuery {
            run_id: "run-1",
            tenancy: own,
            after_sequence: 0,
            limit: 100,
        })
        .await
        .expect("read");
    assert_eq!(page.map(|page| page.events.len()), Some(log.len()));
    let feed = store
        .pending_calls(PendingQuery {
            tenant: "default",
            after: None,
            limit: 100,
        })
        .await
        .expect("feed");
    assert_eq!(feed.len(), 1);
    let listed_own = store.list_runs(listed("default")).await.expect("list");
    assert_eq!(listed_own.len(), 1);
    let claimed = claim_as(own).await;
    assert!(
        matches!(claimed, ClaimOutcome::Claimed { .. }),
        "{claimed:?}"
    );
    let settled = settle_as(own).await;
    assert!(
        matches!(settled, SettleOutcome::Settled { .. }),
        "{settled:?}"
    );
}

/// A new feed's snapshot, as the store sends it page after page to a receiver slower than its
/// reads: every pending call of the tenant's runs once, in (run, call) order, in full pages but
/// the last, each call made whole (PostgreSQL's pages leave that to the receiver); an answered
/// call and another tenant's calls are not among them.
async fn a_snapshots_pages_hold_every_pending_call_once_in_order(store: Arc<dyn RunStore>) {
    let mut waiting = Vec::new();
    for run in 0..7 {
        let run_id = format!("run-{run}");
        suspended_run(&store, &run_id, &["call-a", "call-b"]).await;
        waiting.extend(["call-a", "call-b"].map(|call| (run_id.clone(), call.to_owned())));
    }
    settle(&store, "run-3", "call-a", answered("yes", "a-1")).await;
    // Another tenant's run, between the default tenant's in (run, call) order.
    let mut acme = new_run("run-4a", "agent");
    acme.tenant = "acme".into();
    store.create_run(acme, None).await.expect("create run");
    assert!(
        store
            .acquire_lease("run-4a", OWNER, now_millis() + 60_000)
            .await
            .expect("acquire lease")
    );
    let asked = turn("Let me ask", vec![pending_call("call-a", None)]);
    assert_eq!(
        commit(&store, "run-4a", 0, asked).await.status,
        RunStatus::Suspended
    );
    waiting.retain(|(run, call)| !(run == "run-3" && call == "call-a"));

    let (pages, mut received) = tokio::sync::mpsc::channel(1);
    let reader = Arc::clone(&store);
    let sending = tokio::spawn(async move {
        reader.send_pending_pages("default", 4, pages).await;
    });
    let (mut calls, mut sizes) = (Vec::new(), Vec::new());
    while let Some(page) = received.recv().await {
        let page = page.expect("a page").calls().expect("its calls");
        sizes.push(page.len());
        for pending in page {
            assert_eq!(pending.agent_id, "agent", "{pending:?}");
            assert_eq!(pending.call.tool_name, "ask_user", "{pending:?}");
            calls.push((pending.run_id, pending.call.tool_call_id));
        }
        // Slower than the reader: the channel fills, and the next page waits for room.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sending.await.expect("every page sent");
    assert_eq!(calls, waiting);
    assert_eq!(sizes, [4, 4, 4, 1]);
}

/// A snapshot's page reads every column of a waiting call as a read of its run does (SQLite's
/// reader copies the page's text into one buffer, PostgreSQL's borrows it from the rows): a
/// question with assignees, an expiry and a claim, and a plain one.
async fn a_snapshots_page_reads_each_call_as_its_run_does(store: Arc<dyn RunStore>) {
    leased_run(&store, "run-1").await;
    let mut full = pending_call("call-1", Some(now_millis() + 3_600_000));
    if let NewCallState::Pending { suspension, .. } = &mut full.state {
        suspension.assignees = vec!["alice".to_owned(), "group:oncall".to_owned()];
    }
    let asked = turn("Let me ask", vec![full, pending_call("call-2", None)]);
    commit(&store, "run-1", 0, asked).await;
    let claim = store.claim_call(Claim {
        run_id: "run-1",
        tenancy: Tenancy::Any,
        tool_call_id: "call-1",
        claimant: "worker",
        subject: "key:w",
        until_ms: now_millis() + 60_000,
    });
    assert!(
        matches!(claim.await.expect("claim"), ClaimOutcome::Claimed { .. }),
        "a waiting call can be claimed"
    );
    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get")
        .expect("run");
    assert!(run.pending[0].claim.is_some() && run.pending[0].expire_ms.is_some());

    let (pages, mut received) = tokio::sync::mpsc::channel(1);
    let reader = Arc::clone(&store);
    let sending = tokio::spawn(async move {
        reader.send_pending_pages("default", 10, pages).await;
    });
    let mut read = Vec::new();
    while let Some(page) = received.recv().await {
        read.extend(page.expect("a page").calls().expect("its calls"));
    }
    sending.await.expect("every page sent");
    let expected: Vec<RunPendingCall> = run
        .pending
        .into_iter()
        .map(|call| RunPendingCall {
            run_id: "run-1".into(),
            agent_id: "agent".into(),
            call,
        })
        .collect();
    assert_eq!(read, expected);
}

/// The assignees decided when a call is asked are stored with it and read back by every read of
/// the call: the run, the call itself and the pending-calls feed.
async fn a_calls_assignees_are_kept_with_it(store: Arc<dyn RunStore>) {
    leased_run(&store, "run-1").await;
    let assignees = vec!["alice".to_owned(), "group:oncall".to_owned()];
    let mut call = pending_call("call-1", None);
    if let NewCallState::Pending { suspension, .. } = &mut call.state {
        suspension.assignees = assignees.clone();
    }
    commit(
        &store,
        "run-1",
        0,
        turn("Let me ask", vec![call, pending_call("call-2", None)]),
    )
    .await;

    let run = store
        .get_run("run-1", Tenancy::Any)
        .await
        .expect("get")
        .expect("run");
    let kept: Vec<&[String]> = run
        .pending
        .iter()
        .map(|c| &c.suspension.assignees[..])
        .collect();
    assert_eq!(kept, [&assignees[..], &[]]);
    let call = store
        .get_tool_call(CallOfRun {
            run_id: "run-1",
            tenancy: Tenancy::Any,
            tool_call_id: "call-1",
        })
        .await
        .expect("get call")
        .expect("call");
    assert_eq!(call.suspension.assignees, assignees);
    let feed = store
        .pending_calls(PendingQuery {
            tenant: "default",
            after: None,
            limit: 10,
        })
        .await
        .expect("feed");
    assert_eq!(feed[0].call.suspension.assignees, assignees);
    let log = event_log(&store, "run-1").await;
    assert!(
        log.iter().any(|event| matches!(
            event,
            EventKind::ToolCallSuspended { assignees: named, .. } if *named == assignees
        )),
        "{log:?}"
    );
}

/// What the metrics' gauges and time to answer read: runs and calls waiting, and when a call
/// started waiting (returned by the settle, as its `tool_call_suspended` event says).
async fn the_metrics_read_what_waits_and_since_when(store: Arc<dyn RunStore>) {
    let empty = store
        .pending_counts(now_millis())
        .await
        .expect("pending counts");
    assert!(empty.runs.is_empty() && empty.calls.is_empty(), "{empty:?}");
    assert!(empty.oldest_call_ms.is_empty(), "{empty:?}");
    assert_eq!(empty.webhooks_due, 0);

    suspended_run(&store, "waiting", &["call_1", "call_10"]).await;
    leased_run(&store, "working").await;
    leased_run(&store, "done").await;
    commit(&store, "done", 0, completing_turn("done")).await;
    let counts = store
        .pending_counts(now_millis())
        .await
        .expect("pending counts");
    assert_eq!(
        counts.runs,
        HashMap::from([(RunStatus::Running, 1), (RunStatus::Suspended, 1)])
    );
    assert_eq!(counts.calls, HashMap::from([(SuspendKind::Question, 2)]));
    let waiting = store
        .get_run("waiting", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run");
    let first_suspended = waiting
        .pending
        .iter()
        .filter_map(|call| call.suspended_ms)
        .min()
        .expect("the calls' suspension times");
    assert_eq!(
        counts.oldest_call_ms,
        HashMap::from([(SuspendKind::Question, first_suspended)])
    );

    // A settle returns the call as it waited: what for, and since when (the time of its own
    // `tool_call_suspended` event, not that of a call whose id starts the same).
    let page = store
        .read_events(EventQuery {
            run_id: "waiting",
            tenancy: Tenancy::Any,
            after_sequence: 0,
            limit: 100,
        })
        .await
        .expect("read events")
        .expect("run exists");
    let suspended_at = |id: &str| {
        page.events
            .iter()
            .find_map(|event| match &event.kind {
                EventKind::ToolCallSuspended { tool_call_id, .. } if tool_call_id == id => {
                    Some(event.time_ms)
                }
                _ => None,
            })
            .expect("the call's suspension")
    };
    for (tool_call_id, answer) in [("call_1", "a"), ("call_10", "b")] {
        let outcome = settle(&store, "waiting", tool_call_id, answered(answer, "")).await;
        let SettleOutcome::Settled { call, agent_id, .. } = outcome else {
            panic!("{tool_call_id} was not settled: {outcome:?}");
        };
        assert_eq!(call.tool_call_id, tool_call_id);
        assert_eq!(call.status, CallStatus::Pending);
        assert_eq!(call.suspension.kind, SuspendKind::Question);
        assert_eq!(call.suspended_ms, Some(suspended_at(tool_call_id)));
        assert!(call.suspended_ms > Some(0));
        assert_eq!(agent_id, "agent");
    }
    let counts = store
        .pending_counts(now_millis())
        .await
        .expect("pending counts");
    assert_eq!(counts.runs, HashMap::from([(RunStatus::Running, 2)]));
    assert!(counts.calls.is_empty(), "{counts:?}");
    assert!(counts.oldest_call_ms.is_empty(), "{counts:?}");
}

/// Ids of the runs a listing returns, in order.
async fn listed(
    store: &Arc<dyn RunStore>,
    filter: RunFilter,
    before: Option<&str>,
    limit: usize,
) -> Vec<String> {
    store
        .list_runs(RunQuery {
            tenant: Some("default".into()),
            filter,
            before_run_id: before.map(str::to_owned),
            limit,
        })
        .await
        .expect("list runs")
        .into_iter()
        .map(|run| run.run_id)
        .collect()
}

/// Every page of a listing, `limit` runs each, each after the previous page's last id.
async fn pages(store: &Arc<dyn RunStore>, filter: RunFilter, limit: usize) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = listed(store, filter.clone(), before.as_deref(), limit).await;
        if page.is_empty() {
            return pages;
        }
        before = page.last().cloned();
        pages.push(page);
    }
}

async fn list_runs_filters_by_metadata_creation_time_and_pending_kind(store: Arc<dyn RunStore>) {
    // run-0..run-5, created one after another; team alternates, and a key with JSON-path
    // characters in it marks runs 2 to 4. Runs 1 and 4 wait on a question, 3 on an approval, 5
    // asked a question that was answered.
    let mut created = Vec::new();
    for index in 0..6 {
        let run_id = format!("run-{index}");
        let mut metadata = BTreeMap::from([(
            "team".to_owned(),
            if index % 2 == 0 { "storage" } else { "compute" }.to_owned(),
        )]);
        if (2..=4).contains(&index) {
            metadata.insert(r#"a"b.$[0]"#.to_owned(), "x y".to_owned());
        }
        let run = NewRun {
            metadata,
            ..new_run(&run_id, "agent")
        };
        store
            .create_run(run, Some(lease(OWNER)))
            .await
            .expect("create run");
        let question = pending_call("call-1", None);
        let approval = NewToolCall {
            state: NewCallState::Pending {
                suspension: Suspension {
                    kind: SuspendKind::Approval,
                    arguments_json: "{}".into(),
                    approval_reason: "risky".into(),
                    ..Suspension::default()
                },
                expire_ms: None,
            },
            ..pending_call("call-1", None)
        };
        match index {
            1 | 4 | 5 => {
                commit(&store, &run_id, 0, turn("?", vec![question])).await;
            }
            3 => {
                commit(&store, &run_id, 0, turn("?", vec![approval])).await;
            }
            _ => {}
        }
        if index == 5 {
            settle_pending(&store, &run_id, "call-1", answered("yes", "a-1")).await;
        }
        let run = store
            .get_run(&run_id, Tenancy::Any)
            .await
            .expect("get run")
            .expect("run exists");
        created.push(run.created_ms);
        // Each run is created in a later millisecond than the one before.
        while now_millis() <= run.created_ms {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let filter = |f: fn(&mut RunFilter)| {
        let mut filter = RunFilter::default();
        f(&mut filter);
        filter
    };

    let storage = filter(|f| {
        f.metadata.insert("team".into(), "storage".into());
    });
    assert_eq!(
        listed(&store, storage.clone(), None, 100).await,
        ["run-4", "run-2", "run-0"]
    );
    assert_eq!(
        pages(&store, storage, 2).await,
        [vec!["run-4", "run-2"], vec!["run-0"]]
    );
    // Every entry must match: the odd key with storage is run 2 and 4 only.
    let both = filter(|f| {
        f.metadata.insert("team".into(), "storage".into());
        f.metadata.insert(r#"a"b.$[0]"#.into(), "x y".into());
    });
    assert_eq!(pages(&store, both, 1).await, [["run-4"], ["run-2"]]);
    let wrong_value = filter(|f| {
        f.metadata.insert("team".into(), "storag".into());
    });
    assert!(listed(&store, wrong_value, None, 100).await.is_empty());

    // Created at or after run 2 and before run 5.
    let window = RunFilter {
        created_after_ms: Some(created[2]),
        created_before_ms: Some(created[5]),
        ..RunFilter::default()
    };
    assert_eq!(
        pages(&store, window.clone(), 2).await,
        [vec!["run-4", "run-3"], vec!["run-2"]]
    );
    let compute_in_window = RunFilter {
        metadata: BTreeMap::from([("team".to_owned(), "compute".to_owned())]),
        ..window
    };
    assert_eq!(
        listed(&store, compute_in_window, None, 100).await,
        ["run-3"]
    );
    let after_all = RunFilter {
        created_after_ms: Some(created[5] + 1),
        ..RunFilter::default()
    };
    assert!(listed(&store, after_all, None, 100).await.is_empty());

    // A call waiting now, of that kind: run 5's question was answered.
    let questions = filter(|f| f.pending_kind = Some(SuspendKind::Question));
    assert_eq!(pages(&store, questions, 1).await, [["run-4"], ["run-1"]]);
    let approvals = filter(|f| f.pending_kind = Some(SuspendKind::Approval));
    assert_eq!(listed(&store, approvals, None, 100).await, ["run-3"]);
    let client_tools = filter(|f| f.pending_kind = Some(SuspendKind::ClientTool));
    assert!(listed(&store, client_tools, None, 100).await.is_empty());
    let storage_questions = filter(|f| {
        f.pending_kind = Some(SuspendKind::Question);
        f.metadata.insert("team".into(), "storage".into());
        f.status = Some(RunStatus::Suspended);
    });
    assert_eq!(
        listed(&store, storage_questions, None, 100).await,
        ["run-4"]
    );

    // The tenant stays part of the query, whatever the filters.
    let mut elsewhere = store
        .list_runs(RunQuery {
            tenant: Some("acme".into()),
            filter: filter(|f| f.pending_kind = Some(SuspendKind::Question)),
            before_run_id: None,
            limit: 100,
        })
        .await
        .expect("list runs");
    assert!(elsewhere.is_empty(), "{:?}", elsewhere.pop());
}

async fn a_run_read_shows_its_usage_and_when_calls_waited_and_settled(store: Arc<dyn RunStore>) {
    async fn read(store: &Arc<dyn RunStore>) -> askuser::domain::RunRecord {
        store
            .get_run("run-1", Tenancy::Any)
            .await
            .expect("get run")
            .expect("run exists")
    }
    leased_run(&store, "run-1").await;
    let started = read(&store).await;
    assert_eq!(started.usage, None, "no model call reported tokens yet");

    let asking = TurnCommit {
        usage: Some(Usage {
            input_tokens: 120,
            output_tokens: 30,
        }),
        ..turn(
            "Two questions",
            vec![pending_call("call-1", None), pending_call("call-2", None)],
        )
    };
    let committed = commit(&store, "run-1", 0, asking).await;
    let suspended_at = committed.events.last().expect("events").time_ms;
    let waiting = read(&store).await;
    assert_eq!(
        waiting.usage,
        Some(Usage {
            input_tokens: 120,
            output_tokens: 30
        })
    );
    let since: Vec<Option<i64>> = waiting
        .pending
        .iter()
        .map(|call| call.suspended_ms)
        .collect();
    assert_eq!(
        since,
        [Some(suspended_at), Some(suspended_at)],
        "each call waits since its turn"
    );
    assert!(suspended_at >= started.created_ms);

    while now_millis() <= suspended_at {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let answer = settle_pending(&store, "run-1", "call-1", answered("yes", "a-1")).await;
    let settled_at = answer.events[0].time_ms;
    let after = read(&store).await;
    assert_eq!(after.pending.len(), 1);
    assert_eq!(after.pending[0].suspended_ms, Some(suspended_at));
    let [settled] = after.settled.as_slice() else {
        panic!("one settled call: {:?}", after.settled);
    };
    assert_eq!(settled.tool_call_id, "call-1");
    assert_eq!(settled.suspended_ms, Some(suspended_at));
    assert_eq!(settled.settled_ms, Some(settled_at));
    assert!(
        settled_at > suspended_at,
        "{settled_at} after {suspended_at}"
    );

    // A call settled at once never waited.
    leased_run(&store, "run-2").await;
    commit(
        &store,
        "run-2",
        0,
        turn("Oops", vec![invalid_call("call-x")]),
    )
    .await;
    let invalid = store
        .get_run("run-2", Tenancy::Any)
        .await
        .expect("get run")
        .expect("run exists");
    assert_eq!(invalid.settled.len(), 1);
    assert_eq!(invalid.settled[0].suspended_ms, None);
}

async fn a_runs_trace_context_is_handed_to_its_steps(store: Arc<dyn RunStore>) {
    let context = r#"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
    let run = NewRun {
        trace_context: Some(context.into()),
        ..new_run("run-1", "agent")
    };
    let CreateOutcome::Created(created) = store
        .create_run(run, Some(lease(OWNER)))
        .await
        .expect("create run")
    else {
        panic!("a new run");
    };
    assert_eq!(created.step.trace_context.as_deref(), Some(context));
    commit(
        &store,
        "run-1",
        0,
        turn("?", vec![pending_call("call-1", None)]),
    )
    .await;
    // Later steps (after an answer, after a restart) read it back from the store.
    assert_eq!(
        stored_step(&store, "run-1").await.trace_context.as_deref(),
        Some(context)
    );
    store
        .create_run(new_run("run-2", "agent"), None)
        .await
        .expect("create run");
    assert_eq!(stored_step(&store, "run-2").await.trace_context, None);
}

/// A rotation keeps the replaced secret (until the overlap's end) and drops the one before; a
/// tenant's secrets are its own; a claim may skip tenants (issue 22, 6 and 7).
async fn webhook_secrets_rotate_with_an_overlap(store: Arc<dyn RunStore>) {
    assert_eq!(store.webhook_secrets("acme").await.expect("read"), None);
    store
        .rotate_webhook_secret(SecretRotation {
            tenant: "acme",
            sealed: "sealed-1",
            now_ms: 1,
            previous_until_ms: 10,
        })
        .await
        .expect("first");
    let first = store.webhook_secrets("acme").await.expect("read");
    assert_eq!(
        first.map(|s| (s.sealed, s.created_ms, s.previous)),
        Some(("sealed-1".to_owned(), 1, None))
    );
    store
        .rotate_webhook_secret(SecretRotation {
            tenant: "acme",
            sealed: "sealed-2",
            now_ms: 2,
            previous_until_ms: 20,
        })
        .await
        .expect("second");
    store
        .rotate_webhook_secret(SecretRotation {
            tenant: "acme",
            sealed: "sealed-3",
            now_ms: 3,
            previous_until_ms: 30,
        })
        .await
        .expect("third");
    let third = store.webhook_secrets("acme").await.expect("read");
    assert_eq!(
        third.map(|s| (s.sealed, s.previous)),
        Some(("sealed-3".to_owned(), Some(("sealed-2".to_owned(), 30))))
    );
    assert_eq!(store.webhook_secrets("globex").await.expect("read"), None);
    let skipped = ["acme".to_owned(), "globex".to_owned()];
    let claimed = store
        .claim_deliveries(DeliveryClaim {
            owner: "me",
            now_ms: 100,
            lease_until_ms: 200,
            limit: 10,
            skip_tenants: &skipped,
        })
        .await
        .expect("a claim that skips tenants");
    assert!(claimed.is_empty());
}
