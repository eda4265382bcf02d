//! Durable storage of runs, their transcripts, pending tool calls and event logs.
//!
//! Every state change is one transaction that also appends its events, so the event log and the
//! state never disagree, and answers are settled with a compare-and-set on the pending tool call.

mod deliveries;
mod keys;
mod migrations;
mod ops;
mod postgres;
mod postgres_connect;
mod postgres_tls;
mod records;
mod run_filter;
mod sqlite;
mod tables;
mod webhook_records;

use std::collections::{BTreeMap, HashMap};

use crate::domain::{
    AnswerInput, ApprovalDecision, Event, EventKind, Message, PendingCall, RunRecord, RunStatus,
    SettledBy, SuspendKind, Suspension, ToolDefinition, ToolResultKind, Usage, WebhookPlan,
};

pub use deliveries::{
    AttemptOutcome, DeliveryClaim, DeliveryQuery, DeliveryRecord, DeliveryStatus, DeliveryStore,
    DueDelivery, FinishedAttempt, RedeliverOutcome, Redelivery, RunSummary, SecretRotation,
    StoredWebhookSecrets,
};
pub use keys::{ApiKeyRecord, KeyRevocation, KeyStore, NewApiKey};
pub use postgres::PostgresStore;
pub use postgres_connect::PostgresSettings;
pub use sqlite::{SqliteKeyFile, SqliteStore, Synchronous};
pub use tables::{
    CallOfRun, CallSettlement, Cancellation, Claim, EventQuery, EventTable, ExecutedResults,
    PendingPage, PendingPages, PendingQuery, RunTable, Step, StepEvents, StoreService,
    ToolCallTable, page_after,
};

/// Errors of the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    #[error("postgres: {0}")]
    Postgres(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("store task failed: {0}")]
    Task(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// A write met a row with the same unique key, written concurrently.
    #[error("a row with the same unique key exists")]
    UniqueViolation,
    /// The store cannot serve for now (database unreachable or timed out, disk full, I/O error);
    /// the same request may succeed later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// Whether the same write may succeed if tried again (the store was unreachable, busy or
    /// full), as opposed to one the store refuses whatever the moment (a constraint, corrupt data).
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Unavailable(_) | StoreError::Task(_) | StoreError::Io(_) => true,
            StoreError::Sqlite(error) => matches!(
                error.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            StoreError::Postgres(_) | StoreError::Corrupt(_) | StoreError::UniqueViolation => false,
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Awaits `write`, recording how long it took (failed or not) under `operation` for the metrics
/// (`askuser_store_commit_duration_seconds`, by operation): each store's writes time themselves
/// this way, measured as the server waits for a commit. A no-op without metrics.
pub(crate) async fn timed<T>(
    operation: &'static str,
    write: impl std::future::Future<Output = T>,
) -> T {
    let started = std::time::Instant::now();
    let outcome = write.await;
    crate::metrics::store_commit(operation, started.elapsed());
    outcome
}

/// Whose runs a read or a change may see: one tenant's (a caller's), or every tenant's (the
/// server's own work: executors, expiry, retention). The condition is part of each store query,
/// so another tenant's run is never read: to its caller it does not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tenancy<'a> {
    Any,
    Only(&'a str),
}

impl<'a> From<Option<&'a str>> for Tenancy<'a> {
    /// One tenant's, or every tenant's for `None`.
    fn from(tenant: Option<&'a str>) -> Self {
        tenant.map_or(Tenancy::Any, Tenancy::Only)
    }
}

impl Tenancy<'_> {
    /// The tenant as a query parameter: NULL for any.
    pub(crate) fn param(self) -> Option<String> {
        match self {
            Tenancy::Any => None,
            Tenancy::Only(tenant) => Some(tenant.to_owned()),
        }
    }
}

/// A run to create.
#[derive(Clone, Debug)]
pub struct NewRun {
    pub run_id: String,
    /// The tenant the run belongs to: its creator's.
    pub tenant: String,
    pub agent_id: String,
    pub prompt: String,
    pub metadata: BTreeMap<String, String>,
    pub question_ttl_ms: Option<i64>,
    /// Client tools given for this run only.
    pub run_tools: Vec<ToolDefinition>,
    /// The start's idempotency key: a run created with it before is returned instead.
    pub request_id: Option<String>,
    /// Its webhook subscriptions; `None`: none.
    pub webhooks: Option<WebhookPlan>,
    /// The trace context the run starts in (see `crate::telemetry`), when traces are exported.
    pub trace_context: Option<String>,
    /// A standalone request's one call (JSON, see `crate::runtime`); `None` for an agent's run.
    pub request: Option<String>,
}

/// Outcome of [`RunTable::create_run`].
#[derive(Clone, Debug)]
pub enum CreateOutcome {
    Created(Box<Created>),
    /// A run was created with the same request id before; nothing was written.
    Existing {
        run_id: String,
    },
}

/// An executor's claim on a running run: who holds it, and until when unless renewed.
#[derive(Clone, Copy, Debug)]
pub struct Lease<'a> {
    pub owner: &'a str,
    pub until_ms: i64,
}

/// A run just created: its `run_started` event, and the state of its first step (which a creator
/// that took the lease runs without another store round trip).
#[derive(Clone, Debug)]
pub struct Created {
    pub committed: Committed,
    pub step: StepState,
}

/// Everything a model step needs: the run and its transcript.
#[derive(Clone, Debug)]
pub struct StepState {
    pub run: RunRecord,
    pub transcript: Vec<Message>,
    /// The attempt of the current step that already streamed events, 0 when none did: a step
    /// cut short (crash, model failure) left deltas that the next attempt must declare void.
    pub step_attempt: u32,
    /// How many times this step was started (its executor took the run's lease to run it),
    /// this start included; a step that never finishes is given up after a bounded number.
    pub step_starts: u32,
    /// Calls the server runs (approved or approval-free HTTP tools) that have no result yet: the
    /// step runs them before the model's next turn.
    pub executing: Vec<ExecutingCall>,
    /// The trace context the run started in, which the step's spans join.
    pub trace_context: Option<String>,
    /// A standalone request's one call; `None` for an agent's run.
    pub request: Option<String>,
}

/// A call the server is to run, with the arguments it runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutingCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub arguments_json: String,
    /// The arguments were edited by the person who approved the call.
    pub edited: bool,
    /// Who approved the call, if someone did.
    pub approved_by: Option<SettledBy>,
    /// What the call goes on with after input a person gave mid-call (opaque to the store).
    pub continuation: Option<String>,
}

/// A call the server was running that now waits for a person: its tool asked for input.
#[derive(Clone, Debug)]
pub struct SuspendedCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub suspension: Suspension,
    pub expire_ms: Option<i64>,
    /// Kept with the call for when it goes on.
    pub continuation: String,
}

/// The result of a call the server ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutedResult {
    pub tool_call_id: String,
    pub content: String,
    pub is_error: bool,
    /// Who let it run (its approver), if someone did.
    pub settled_by: Option<SettledBy>,
}

/// How a tool call of a new turn starts out.
#[derive(Clone, Debug)]
pub enum NewCallState {
    /// Waits for someone: an answer, an approval or a client tool's output.
    Pending {
        suspension: Suspension,
        expire_ms: Option<i64>,
    },
    /// The server runs it before the model's next turn.
    Executing { arguments_json: String },
    /// Settled at once (e.g. invalid arguments).
    Settled {
        content: String,
        is_error: bool,
        kind: ToolResultKind,
    },
}

/// A tool call made in a model turn.
#[derive(Clone, Debug)]
pub struct NewToolCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub arguments_json: String,
    pub state: NewCallState,
}

/// How a turn ends the run, if it does.
#[derive(Clone, Debug)]
pub enum RunEnd {
    Completed { output_text: String },
    Failed { message: String },
}

/// The result of one model step, committed atomically.
#[derive(Clone, Debug, Default)]
pub struct TurnCommit {
    /// The assistant message, when the model produced one (absent when the step failed before).
    pub assistant_text: Option<String>,
    pub tool_calls: Vec<NewToolCall>,
    pub events: Vec<EventKind>,
    pub end: Option<RunEnd>,
    /// The tokens the run has used once this turn is counted (stored as the run's total).
    pub usage: Option<Usage>,
}

impl RunEnd {
    /// The run's status, output text and error message once a turn ending this way (or, with
    /// `None`, not ending the run) is committed, given how many of its calls wait for someone and
    /// how many the server runs.
    pub fn run_after(
        end: Option<&RunEnd>,
        pending: i64,
        executing: i64,
    ) -> (RunStatus, &str, &str) {
        match end {
            Some(RunEnd::Completed { output_text }) => (RunStatus::Completed, output_text, ""),
            Some(RunEnd::Failed { message }) => (RunStatus::Failed, "", message),
            None => (ops::calls::between_turns(pending, executing), "", ""),
        }
    }
}

/// Events appended by a commit, with the run's status after it.
#[derive(Clone, Debug)]
pub struct Committed {
    pub events: Vec<Event>,
    pub status: RunStatus,
}

/// Outcome of [`RunTable::commit_turn`].
#[derive(Clone, Debug)]
pub enum TurnOutcome {
    Committed(Committed),
    /// The run moved on meanwhile (cancelled, or committed by another executor): nothing written.
    Stale,
}

/// The state of a tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallStatus {
    /// Waits for someone.
    Pending,
    /// The server runs it.
    Executing,
    Answered,
    Declined,
    Expired,
    Cancelled,
    Invalid,
    /// A client tool's output came.
    Responded,
    /// The server ran it.
    Executed,
    /// Its approval was rejected.
    Rejected,
}

impl CallStatus {
    const ALL: [CallStatus; 10] = [
        CallStatus::Pending,
        CallStatus::Executing,
        CallStatus::Answered,
        CallStatus::Declined,
        CallStatus::Expired,
        CallStatus::Cancelled,
        CallStatus::Invalid,
        CallStatus::Responded,
        CallStatus::Executed,
        CallStatus::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Pending => "pending",
            CallStatus::Executing => "executing",
            CallStatus::Answered => "answered",
            CallStatus::Declined => "declined",
            CallStatus::Expired => "expired",
            CallStatus::Cancelled => "cancelled",
            CallStatus::Invalid => "invalid",
            CallStatus::Responded => "responded",
            CallStatus::Executed => "executed",
            CallStatus::Rejected => "rejected",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }
}

/// A tool call as stored.
#[derive(Clone, Debug)]
pub struct ToolCallRecord {
    pub run_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub status: CallStatus,
    /// What the call waits (or waited) for.
    pub suspension: Suspension,
    pub expire_ms: Option<i64>,
    pub answer: Option<AnswerInput>,
    pub answer_id: String,
    /// Sequence of the `tool_result` event that settled the call.
    pub result_sequence: u64,
    /// The approval decision that let the tool run, once one was made.
    pub decision: Option<Decision>,
    /// When the call (last) started waiting; `None` if it never did.
    pub suspended_ms: Option<i64>,
    /// Set while a call the server runs waits for input its tool asked for: an answer then lets
    /// the server go on with the call instead of settling it.
    pub continuation: Option<String>,
}

/// An approval decision that let a tool run (approve or edit), kept with the call so that a retry
/// of it is recognised and an edit is reported with the result.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    pub decision: ApprovalDecision,
    pub answer_id: String,
    /// The sequence the decision's change started at (what its acknowledgement points to).
    pub sequence: u64,
    /// Who decided (absent in decisions stored before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<SettledBy>,
}

/// How to settle a pending tool call.
#[derive(Clone, Debug)]
pub struct Settlement {
    /// Who settles the call (`None`: nobody did, the server ran the tool or the call was invalid).
    pub settled_by: Option<SettledBy>,
    pub status: CallStatus,
    pub answer: Option<AnswerInput>,
    pub answer_id: String,
    pub content: String,
    pub is_error: bool,
    pub kind: ToolResultKind,
}

/// What a change does to a pending call: settle it with a result, or (an approval that lets the
/// tool run) make it wait again or hand it to the server.
#[derive(Clone, Debug)]
pub enum CallChange {
    Settle(Settlement),
    /// The answer goes to the tool that asked for it: the server runs the call on with
    /// `continuation` (which holds the answer).
    Continue {
        answer: Option<AnswerInput>,
        answer_id: String,
        continuation: String,
    },
    Approve {
        decision: ApprovalDecision,
        answer_id: String,
        next: Approved,
        by: SettledBy,
    },
}

/// What an approved call becomes.
#[derive(Clone, Debug)]
pub enum Approved {
    /// It waits again, for the caller's output.
    Suspend {
        suspension: Suspension,
        expire_ms: Option<i64>,
    },
    /// The server runs it with these arguments.
    Execute { arguments_json: String },
    /// Settled with this result: the asker runs it (a standalone request's approval).
    Settle { content: String },
}

/// Why a [`Decide`] refused to change a call: the decider's own error, carried out of the
/// transaction as it is (the decider downcasts it back).
pub type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// How to change a pending call, decided in the changing transaction from the call as it is
/// there (e.g. after checking an answer against its question); an error refuses to change it.
pub type Decide = Box<dyn FnOnce(&ToolCallRecord) -> Result<CallChange, Refusal> + Send>;

/// Outcome of [`ToolCallTable::settle_tool_call`].
#[derive(Debug)]
pub enum SettleOutcome {
    /// Changed. When that left the run running again and the settler took its lease, `step` is the
    /// state of its next step. `first_sequence` is the sequence of the change's first event (or
    /// of the run's next event, when the change appended none).
    Settled {
        committed: Committed,
        step: Option<Box<StepState>>,
        first_sequence: u64,
        /// The call as it was before the change: what it waited for, and since when.
        call: Box<ToolCallRecord>,
        /// The agent of the call's run.
        agent_id: String,
    },
    /// `decide` refused to settle the pending call, returned as it is, with its reason.
    Refused(Box<ToolCallRecord>, Refusal),
    /// The call was no longer pending; it is returned as it is now.
    NotPending(Box<ToolCallRecord>),
    NotFound,
}

/// Outcome of [`ToolCallTable::claim_call`].
#[derive(Clone, Debug)]
pub enum ClaimOutcome {
    /// The caller holds the claim until this time.
    Claimed {
        until_ms: i64,
    },
    /// Another claimant (or the same name of another principal) holds an unexpired claim.
    Held {
        claimant: String,
        until_ms: i64,
    },
    /// The call no longer waits; it is returned as it is now.
    NotPending(Box<ToolCallRecord>),
    NotFound,
}

/// A pending call with its run, as the pending-calls feed lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPendingCall {
    pub run_id: String,
    pub agent_id: String,
    pub call: PendingCall,
}

/// Outcome of [`RunTable::cancel_run`].
#[derive(Clone, Debug)]
pub enum CancelOutcome {
    Cancelled {
        committed: Committed,
        /// The agent of the cancelled run.
        agent_id: String,
    },
    AlreadyCancelled,
    Finished(RunStatus),
    NotFound,
}

/// What the commit feed of a shared store reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitNotice {
    /// A commit to a run: its newest sequence and status after it.
    Committed {
        run_id: String,
        last_sequence: u64,
        status: RunStatus,
    },
    /// Notices may have been lost (the feed's connection dropped and came back): every follower
    /// must look at the store again.
    Missed,
}

/// A slice of a run's event log, read together with the run's state.
#[derive(Clone, Debug)]
pub struct EventPage {
    pub events: Vec<Event>,
    pub status: RunStatus,
    pub last_sequence: u64,
}

/// Which runs a listing holds; every condition given must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunFilter {
    pub status: Option<RunStatus>,
    pub agent_id: Option<String>,
    /// Metadata entries the run must have, each with exactly this value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Only runs created at or after this time (milliseconds since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after_ms: Option<i64>,
    /// Only runs created before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before_ms: Option<i64>,
    /// Only runs with a call waiting for this kind of settlement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_kind: Option<SuspendKind>,
}

/// Filter and position of a run listing.
#[derive(Clone, Debug, Default)]
pub struct RunQuery {
    /// Only runs of this tenant; `None`: every tenant's.
    pub tenant: Option<String>,
    pub filter: RunFilter,
    /// Only runs with an id below this one (the previous page's last id).
    pub before_run_id: Option<String>,
    pub limit: usize,
}

/// What waits, over every tenant's runs: the figures the metrics' gauges show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingCounts {
    /// Runs not finished, by status (running, suspended).
    pub runs: HashMap<RunStatus, u64>,
    /// Calls waiting for someone, by kind.
    pub calls: HashMap<SuspendKind, u64>,
    /// When the call waiting longest started waiting, by kind.
    pub oldest_call_ms: HashMap<SuspendKind, i64>,
    /// Webhook deliveries due and not yet delivered (retries included, reminders not yet due not).
    pub webhooks_due: u64,
}

/// Durable storage of runs: every table's role, implemented by each store.
pub trait RunStore:
    RunTable
    + ToolCallTable
    + EventTable
    + KeyStore
    + DeliveryStore
    + StoreService
    + Send
    + Sync
    + 'static
{
}

impl<T> RunStore for T where
    T: RunTable
        + ToolCallTable
        + EventTable
        + KeyStore
        + DeliveryStore
        + StoreService
        + Send
        + Sync
        + 'static
{
}
