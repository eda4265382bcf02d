//! Tool calls: reading, settling, claiming, listing and expiring them, and the results of the calls the server ran.

use async_trait::async_trait;

use crate::store::{
    ClaimOutcome, Decide, ExecutedResult, Lease, PendingCounts, RunPendingCall, SettleOutcome,
    Step, StoreResult, SuspendedCall, Tenancy, ToolCallRecord, TurnOutcome,
};

/// One tool call of a run, as `tenancy` may see it: for [`ToolCallTable::get_tool_call`].
#[derive(Clone, Copy, Debug)]
pub struct CallOfRun<'a> {
    pub run_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub tool_call_id: &'a str,
}

/// A claim on a pending call, for [`ToolCallTable::claim_call`]: `claimant` of the principal
/// `subject` (of the run's tenant) holds call `tool_call_id` of run `run_id` until `until_ms`.
/// One value, so that each store's signature stays short.
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    pub run_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub tool_call_id: &'a str,
    pub claimant: &'a str,
    pub subject: &'a str,
    pub until_ms: i64,
}

/// A settlement of a pending call, for [`ToolCallTable::settle_tool_call`]: call `tool_call_id` of
/// run `run_id` (of `tenancy`) changed as `decide` says, and the run's lease taken with `lease`.
pub struct CallSettlement<'a> {
    pub run_id: &'a str,
    pub tenancy: Tenancy<'a>,
    pub tool_call_id: &'a str,
    pub decide: Decide,
    pub lease: Option<Lease<'a>>,
}

/// The results of the calls the server ran in `step`, for [`ToolCallTable::commit_executed`].
#[derive(Clone, Debug)]
pub struct ExecutedResults<'a> {
    pub step: Step<'a>,
    pub results: Vec<ExecutedResult>,
    /// Calls that did not finish: their tools asked a person for input.
    pub suspended: Vec<SuspendedCall>,
    /// The step goes on (it holds a live call whose input a person is asked for): the run stays
    /// running, under the step's lease.
    pub step_goes_on: bool,
}

/// A page of the pending calls of `tenant`'s runs, for [`ToolCallTable::pending_calls`]: those
/// after the given (run id, call id), at most `limit`. A feed is always one tenant's: the calls'
/// index leads with the tenant.
#[derive(Clone, Debug)]
pub struct PendingQuery<'a> {
    pub tenant: &'a str,
    pub after: Option<(String, String)>,
    pub limit: usize,
}

/// Where [`ToolCallTable::send_pending_pages`] sends a snapshot: its pages in order, or an error as
/// the last item.
pub type PendingPages = tokio::sync::mpsc::Sender<StoreResult<PendingPage>>;

/// A page of a snapshot as the store read it. Its calls are made by [`PendingPage::calls`] on the
/// receiver's thread: the reader, which every page waits for, goes on to the next page meanwhile.
pub struct PendingPage(Box<dyn FnOnce() -> StoreResult<Vec<RunPendingCall>> + Send>);

impl PendingPage {
    /// A page whose calls are made already.
    pub(in crate::store) fn made(calls: Vec<RunPendingCall>) -> Self {
        Self(Box::new(move || Ok(calls)))
    }

    /// A page whose calls `make` makes when asked.
    pub(in crate::store) fn deferred(
        make: impl FnOnce() -> StoreResult<Vec<RunPendingCall>> + Send + 'static,
    ) -> Self {
        Self(Box::new(make))
    }

    /// The page's calls.
    pub fn calls(self) -> StoreResult<Vec<RunPendingCall>> {
        (self.0)()
    }
}

/// Where the page after `page` starts, if `page` is full (`limit` calls): its last call.
pub fn page_after(page: &[RunPendingCall], limit: usize) -> Option<(String, String)> {
    page.last()
        .filter(|_| page.len() == limit)
        .map(|last| (last.run_id.clone(), last.call.tool_call_id.clone()))
}

/// Tool calls: reading, settling, claiming, listing and expiring them, and the results of the calls the server ran.
#[async_trait]
pub trait ToolCallTable: Send + Sync {
    async fn get_tool_call(&self, call: CallOfRun<'_>) -> StoreResult<Option<ToolCallRecord>>;
    /// Settles a tool call if, and only if, it is still pending (compare-and-set), as `decide` says
    /// given the pending call. When that leaves the run running again and `lease` is given, takes
    /// the run's lease as [`RunTable::load_step`](super::RunTable::load_step) does and returns its
    /// step.
    async fn settle_tool_call(&self, settlement: CallSettlement<'_>) -> StoreResult<SettleOutcome>;
    /// Commits the results of calls the server ran, on the same conditions as
    /// [`RunTable::commit_turn`](super::RunTable::commit_turn); the run then waits if calls still
    /// wait for someone, and otherwise goes on to its next turn.
    async fn commit_executed(&self, executed: ExecutedResults<'_>) -> StoreResult<TurnOutcome>;
    /// Takes `claim` on a pending call unless another claimant holds an unexpired claim; the same
    /// claimant of the same principal renews its own, the same claimant name of another principal
    /// does not.
    async fn claim_call(&self, claim: Claim<'_>) -> StoreResult<ClaimOutcome>;
    /// Pending calls of the tenant's runs, ordered by run and call id, after the given (run id,
    /// call id), at most `limit`.
    async fn pending_calls(&self, query: PendingQuery<'_>) -> StoreResult<Vec<RunPendingCall>>;
    /// [`Self::pending_calls`] as a page of a snapshot, and where the page after it starts if it
    /// is full. A store may leave its calls to be made by the receiver ([`PendingPage::deferred`]).
    async fn pending_page(
        &self,
        query: PendingQuery<'_>,
    ) -> StoreResult<(PendingPage, Option<(String, String)>)> {
        let limit = query.limit;
        let calls = self.pending_calls(query).await?;
        let next = page_after(&calls, limit);
        Ok((PendingPage::made(calls), next))
    }
    /// How many calls a page of a snapshot holds ([`Self::send_pending_pages`]): a read of the
    /// store per page, against a page's memory while the feed sends it.
    fn snapshot_page(&self) -> usize;
    /// Every pending call of `tenant`'s runs in (run id, call id) order, sent to `pages` in pages
    /// of at most `limit` as they are read, each page its own read; an error goes as the last item.
    /// Returns when all are sent, or when `pages` is closed. A store may read ahead of the
    /// receiver by as much as the channel holds.
    async fn send_pending_pages(&self, tenant: &str, limit: usize, pages: PendingPages) {
        let mut after = None;
        loop {
            let query = PendingQuery {
                tenant,
                after: after.take(),
                limit,
            };
            let (page, next) = match self.pending_page(query).await {
                Ok((page, next)) => (Ok(page), next),
                Err(error) => (Err(error), None),
            };
            if pages.send(page).await.is_err() {
                return;
            }
            match next {
                Some(next) => after = Some(next),
                None => return,
            }
        }
    }
    /// Runs not finished and calls waiting, over every tenant's runs.
    /// What waits now (`now_ms`: for the webhook deliveries due).
    async fn pending_counts(&self, now_ms: i64) -> StoreResult<PendingCounts>;
    /// Pending calls whose expiry is at or before `now_ms`, as (run id, tool call id).
    async fn due_expiries(&self, now_ms: i64, limit: usize) -> StoreResult<Vec<(String, String)>>;
    /// The earliest expiry of any pending call.
    async fn next_expiry(&self) -> StoreResult<Option<i64>>;
}
