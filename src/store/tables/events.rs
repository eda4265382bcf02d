//! Event logs: a step's live events, reading a log, and the feed of commits.

use async_trait::async_trait;

use crate::domain::EventKind;
use crate::store::{CommitNotice, EventPage, StoreResult, Tenancy, TurnOutcome};

/// Events of a step still in progress, for [`EventTable::append_step_events`]: `attempt` of the
/// step of run `run_id` that `owner` runs after `expected_turns` turns. One value, so that each
/// store's signature stays short.
#[derive(Clone, Debug)]
pub struct StepEvents<'a> {
    pub run_id: &'a str,
    pub owner: &'a str,
    pub expected_turns: u32,
    pub attempt: u32,
    pub events: Vec<EventKind>,
}

/// A page of a run's log, for [`EventTable::read_events`]: the events of run `run_id` (of
/// `tenancy`) with a sequence above `after_sequence`, at most `limit`.
#[derive(Clone, Copy, Debug)]
pub struct EventQuery<'a> {
    pub run_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub after_sequence: u64,
    pub limit: usize,
}

/// Event logs: a step's live events, reading a log, and the feed of commits.
#[async_trait]
pub trait EventTable: Send + Sync {
    /// Appends events of a step still in progress (live text deltas), on the same conditions as
    /// [`RunTable::commit_turn`](super::RunTable::commit_turn), and records that `attempt` of the
    /// step has streamed.
    async fn append_step_events(&self, step: StepEvents<'_>) -> StoreResult<TurnOutcome>;
    /// The page of a run's log that `query` asks for, and the run's state; `None` when the run
    /// does not exist.
    async fn read_events(&self, query: EventQuery<'_>) -> StoreResult<Option<EventPage>>;
    /// Notices of commits made by any process sharing this store, for live followers across
    /// replicas; `None` for a store only this process uses.
    async fn commit_feed(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<CommitNotice>>>;
}
