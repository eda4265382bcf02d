//! Runs: creating, reading, listing, stepping, cancelling and pruning them, and the leases of their executors.

use async_trait::async_trait;

use crate::domain::{RunRecord, SettledBy};
use crate::store::{
    CancelOutcome, CreateOutcome, Lease, NewRun, RunQuery, StepState, StoreResult, Tenancy,
    TurnCommit, TurnOutcome,
};

/// A cancellation, for [`RunTable::cancel_run`]: run `run_id` (of `tenancy`) cancelled by
/// `cancelled_by` for `reason`, its unsettled calls settled with `call_content`. One value, so
/// that each store's signature stays short.
#[derive(Clone, Copy, Debug)]
pub struct Cancellation<'a> {
    pub run_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub reason: &'a str,
    pub call_content: &'a str,
    pub cancelled_by: &'a SettledBy,
}

/// The step a write belongs to: of run `run_id`, which `owner` executes after `expected_turns`
/// turns. A write of a step that is no longer the run's current one is stale.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    pub run_id: &'a str,
    pub owner: &'a str,
    pub expected_turns: u32,
}

/// Runs: creating, reading, listing, stepping, cancelling and pruning them, and the leases of their executors.
#[async_trait]
pub trait RunTable: Send + Sync {
    /// Creates a running run (leased `by` the given owner, when given) and its `run_started` event
    /// (sequence 1), unless a run was created with the same request id before.
    async fn create_run(&self, run: NewRun, by: Option<Lease<'_>>) -> StoreResult<CreateOutcome>;
    async fn get_run(&self, run_id: &str, tenancy: Tenancy<'_>) -> StoreResult<Option<RunRecord>>;
    async fn list_runs(&self, query: RunQuery) -> StoreResult<Vec<RunRecord>>;
    /// The state the run's next step starts from; `None` when there is no such run. With `lease`,
    /// first takes (or renews) the run's lease as [`RunTable::acquire_lease`] does, in the same
    /// transaction, and reads nothing (`None`) unless it got it.
    async fn load_step(
        &self,
        run_id: &str,
        lease: Option<Lease<'_>>,
    ) -> StoreResult<Option<StepState>>;
    /// Commits a model turn of `step` if the run is still running with `expected_turns` turns and
    /// `owner` still holds its lease. A turn that leaves the run not running also ends the lease.
    async fn commit_turn(&self, step: Step<'_>, commit: TurnCommit) -> StoreResult<TurnOutcome>;
    /// Cancels a running or suspended run as `cancellation` says: its pending and executing calls are
    /// settled with `call_content` and a `run_cancelled` event ends the log.
    async fn cancel_run(&self, cancellation: Cancellation<'_>) -> StoreResult<CancelOutcome>;
    /// Deletes at most `limit` finished runs last updated before `before_ms`, in
    /// one transaction; returns how many. A shared store prunes from one process at a time: 0
    /// while another is pruning.
    async fn prune_finished(&self, before_ms: i64, limit: usize) -> StoreResult<u64>;
    /// Runs still running or suspended that were created before `before_ms`, oldest first, at
    /// most `limit`.
    async fn unfinished_before(&self, before_ms: i64, limit: usize) -> StoreResult<Vec<String>>;
    /// Takes (or renews) the lease to execute a running run until `until_ms`, unless another owner
    /// holds an unexpired one. Returns whether `owner` holds it now.
    async fn acquire_lease(&self, run_id: &str, owner: &str, until_ms: i64) -> StoreResult<bool>;
    /// Gives a lease up, if `owner` holds it.
    async fn release_lease(&self, run_id: &str, owner: &str) -> StoreResult<()>;
    /// Running runs that no executor holds (no lease, or an expired one), oldest change first.
    async fn unleased_runs(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<String>>;
}
