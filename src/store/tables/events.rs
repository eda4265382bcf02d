//! Event logs: a step's live events, reading a log, and the feed of commits.

use async_trait::async_trait;

use crate::domain::EventKind;
use crate::store::{CommitNotice, EventPage, StoreResult, Tenancy, TurnOutcome};

/// Event logs: a step's live events, reading a log, and the feed of commits.
#[async_trait]
pub trait EventTable: Send + Sync {
    /// Appends events of a step still in progress (live text deltas), on the same conditions as
    /// [`RunTable::commit_turn`](super::RunTable::commit_turn), and records that `attempt` of the
    /// step has streamed.
    async fn append_step_events(
        &self,
        run_id: &str,
        owner: &str,
        expected_turns: u32,
        attempt: u32,
        events: Vec<EventKind>,
    ) -> StoreResult<TurnOutcome>;
    /// Events with a sequence above `after_sequence`, at most `limit`, and the run's state; `None`
    /// when the run does not exist.
    async fn read_events(
        &self,
        run_id: &str,
        tenancy: Tenancy<'_>,
        after_sequence: u64,
        limit: usize,
    ) -> StoreResult<Option<EventPage>>;
    /// Notices of commits made by any process sharing this store, for live followers across
    /// replicas; `None` for a store only this process uses.
    async fn commit_feed(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<CommitNotice>>>;
}
