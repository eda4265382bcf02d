//! The pending-calls feed: every call waiting for someone across runs, then changes live. It keeps
//! the calls it has sent per run and, when a run of its tenant changes (here or on another
//! replica), takes that run's pending calls as the fan-out read them and sends the difference, so
//! a lost or out-of-order notice can never leave a call unsent or a settled one standing.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use smallvec::SmallVec;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::RuntimeError;
use super::assignees;
use super::feed_id::FeedId;
use super::pending_fanout::TenantChange;
use super::shared::Shared;
use crate::domain::{
    PendingCall, Principal, RunRecord, SettledBy, SettledCall, SuspendKind, ToolResultKind,
};
use crate::store::{CallStatus, PendingPage, RunPendingCall, StoreError, Tenancy};

/// Which calls a feed sends; an empty list matches everything.
#[derive(Clone, Debug, Default)]
pub struct PendingFilter {
    pub agent_ids: Vec<String>,
    pub tool_names: Vec<String>,
    pub kinds: Vec<SuspendKind>,
    /// Only calls whose assignees name the feed's principal.
    pub assigned_to_me: bool,
}

impl PendingFilter {
    fn matches(&self, agent_id: &str, call: &PendingCall, viewer: &Principal) -> bool {
        let admits =
            |list: &[String], value: &str| list.is_empty() || list.iter().any(|v| v == value);
        admits(&self.agent_ids, agent_id)
            && admits(&self.tool_names, &call.tool_name)
            && (self.kinds.is_empty() || self.kinds.contains(&call.suspension.kind))
            && (!self.assigned_to_me || assignees::name(&call.suspension.assignees, viewer))
    }
}

/// One event of the feed.
#[derive(Clone, Debug, PartialEq)]
pub enum PendingEvent {
    /// Calls that wait, each sent again when what it waits for changes: a page of the snapshot,
    /// or a run's calls. A page is handed on as the store read it, so a snapshot's call is moved
    /// and handled once per page, not once per call.
    Pending(Vec<RunPendingCall>),
    /// A call sent before no longer waits; `kind` is its result's, if it has one yet, and
    /// `settled_by` who settled it, if anybody did.
    Settled {
        run_id: String,
        tool_call_id: String,
        kind: Option<ToolResultKind>,
        settled_by: Option<SettledBy>,
    },
    /// Every call waiting at connect has been sent.
    SnapshotDone,
}

pub type PendingStream = Pin<Box<dyn Stream<Item = Result<PendingEvent, RuntimeError>> + Send>>;

/// The pages of a snapshot as the store sends them, and the task that reads them.
struct SnapshotPages {
    pages: mpsc::Receiver<Result<PendingPage, StoreError>>,
    reader: AbortOnDropHandle<()>,
}

impl SnapshotPages {
    /// The next page, its runs offered to the fan-out; `None` once the reading has ended, not
    /// failed.
    async fn next(
        &mut self,
        shared: &Shared,
        viewer: &Principal,
    ) -> Result<Option<Vec<RunPendingCall>>, RuntimeError> {
        let Some(page) = self.pages.recv().await else {
            (&mut self.reader).await.map_err(|error| {
                RuntimeError::Internal(format!("a snapshot's read failed: {error}"))
            })?;
            return Ok(None);
        };
        let page = page?.calls()?;
        crate::metrics::pending_feed_read();
        shared
            .pending_fanout
            .remember_snapshot(page.iter().map(|call| call.run_id.as_str()), &viewer.tenant);
        Ok(Some(page))
    }
}

/// What a feed has sent: per run, each waiting call with what it waits for. Runs are keyed by their
/// server-made ids, so a fast hash is safe; a snapshot inserts every run it sends, so an entry is
/// kept small and inline ([`FeedId`]s, and one call, the usual number).
type Sent = foldhash::HashMap<FeedId, SentCalls>;

/// The calls sent for one run: a run waits on one call, or a few at once.
type SentCalls = SmallVec<[(FeedId, SuspendKind); 1]>;

impl Shared {
    /// The calls that wait for someone across `principal`'s tenant's runs: a snapshot, then changes
    /// live.
    pub(super) fn watch_pending(
        self: &Arc<Self>,
        filter: PendingFilter,
        principal: Principal,
    ) -> PendingStream {
        let shared = Arc::clone(self);
        // Subscribe before the snapshot, so nothing committed in between is missed. Only the
        // viewer's tenant's runs come, each read once for all its feeds.
        let mut changes = shared.pending_fanout.subscribe(&principal.tenant);
        Box::pin(async_stream::try_stream! {
            let mut sent = Sent::default();
            // The first snapshot goes out page by page: every call is new to a new feed, so no
            // more than a few pages are held (a resync after a lag diffs the whole set instead).
            let mut pages = shared.snapshot_pages(&principal);
            while let Some(mut page) = pages.next(&shared, &principal).await? {
                page.retain(|call| filter.matches(&call.agent_id, &call.call, &principal));
                for call in &page {
                    let sent_call =
                        (FeedId::of(&call.call.tool_call_id), call.call.suspension.kind);
                    sent.entry(FeedId::of(&call.run_id)).or_default().push(sent_call);
                }
                if !page.is_empty() {
                    yield PendingEvent::Pending(page);
                }
            }
            yield PendingEvent::SnapshotDone;
            loop {
                let change = tokio::select! {
                    change = changes.recv() => change,
                    () = shared.shutdown.cancelled() => Err(RecvError::Closed),
                };
                let events = match change {
                    Ok(TenantChange::Run { run_id, run }) => {
                        shared.refresh_run(&principal, &filter, &mut sent, &run_id, run.as_deref())
                            .await?
                    }
                    Ok(TenantChange::Missed) | Err(RecvError::Lagged(_)) => {
                        shared.resync(&principal, &filter, &mut sent).await?
                    }
                    Err(RecvError::Closed) => Err(RuntimeError::ShuttingDown)?,
                };
                for event in events {
                    yield event;
                }
            }
        })
    }

    /// The pages of the pending calls of the viewer's tenant's runs, read by a task of their own
    /// while the feed sends the ones before, so the store's reads and the encoding run side by
    /// side. The task ends after the last page or the first error, and when the pages are dropped.
    fn snapshot_pages(self: &Arc<Self>, viewer: &Principal) -> SnapshotPages {
        // One page waits in the channel while one is sent and the next is read.
        let (pages, received) = mpsc::channel(1);
        let (shared, tenant) = (Arc::clone(self), viewer.tenant.clone());
        let reader = tokio::spawn(async move {
            shared
                .store
                .send_pending_pages(&tenant, shared.store.snapshot_page(), pages)
                .await;
        });
        SnapshotPages {
            pages: received,
            reader: AbortOnDropHandle::new(reader),
        }
    }

    /// Reads every pending call of the viewer's tenant's runs and sends what changed since `sent`.
    async fn resync(
        self: &Arc<Self>,
        viewer: &Principal,
        filter: &PendingFilter,
        sent: &mut Sent,
    ) -> Result<Vec<PendingEvent>, RuntimeError> {
        let tenancy = Tenancy::Only(&viewer.tenant);
        let mut now: HashMap<String, Vec<RunPendingCall>> = HashMap::new();
        let mut pages = self.snapshot_pages(viewer);
        while let Some(page) = pages.next(self, viewer).await? {
            for call in page {
                if filter.matches(&call.agent_id, &call.call, viewer) {
                    now.entry(call.run_id.clone()).or_default().push(call);
                }
            }
        }
        let runs: HashSet<String> = sent
            .keys()
            .map(|run_id| run_id.to_string())
            .chain(now.keys().cloned())
            .collect();
        let mut events = Vec::new();
        for run_id in runs {
            let calls = now.remove(&run_id).unwrap_or_default();
            events.extend(self.diff(tenancy, sent, &run_id, calls, None).await?);
        }
        Ok(events)
    }

    /// Brings what was sent for one run of the viewer's tenant to the run as the fan-out read it
    /// (`None`: gone).
    async fn refresh_run(
        &self,
        viewer: &Principal,
        filter: &PendingFilter,
        sent: &mut Sent,
        run_id: &str,
        run: Option<&RunRecord>,
    ) -> Result<Vec<PendingEvent>, RuntimeError> {
        let tenancy = Tenancy::Only(&viewer.tenant);
        let (calls, settled) = match run {
            Some(run) => {
                let calls = run
                    .pending
                    .iter()
                    .filter(|call| filter.matches(&run.agent_id, call, viewer))
                    .map(|call| RunPendingCall {
                        run_id: run.run_id.clone(),
                        agent_id: run.agent_id.clone(),
                        call: call.clone(),
                    })
                    .collect();
                (calls, run.settled.as_slice())
            }
            None => (Vec::new(), [].as_slice()),
        };
        self.diff(tenancy, sent, run_id, calls, Some(settled)).await
    }

    /// The events that bring what was sent for a run to `calls`, and records them as sent.
    /// `settled` is the run's settled calls when the caller has read the run; without them the run
    /// is read only if a sent call stopped waiting.
    async fn diff(
        &self,
        tenancy: Tenancy<'_>,
        sent: &mut Sent,
        run_id: &str,
        calls: Vec<RunPendingCall>,
        settled: Option<&[SettledCall]>,
    ) -> Result<Vec<PendingEvent>, RuntimeError> {
        let run_key = FeedId::of(run_id);
        let before = sent.remove(&run_key).unwrap_or_default();
        let now: SentCalls = calls
            .iter()
            .map(|c| (FeedId::of(&c.call.tool_call_id), c.call.suspension.kind))
            .collect();
        let gone: Vec<&FeedId> = before
            .iter()
            .map(|(id, _)| id)
            .filter(|id| !now.iter().any(|(waiting, _)| waiting == *id))
            .collect();
        let read;
        let settled = match settled {
            Some(settled) => settled,
            None if gone.is_empty() => &[],
            None => {
                crate::metrics::pending_feed_read();
                read = self
                    .store
                    .get_run(run_id, tenancy)
                    .await?
                    .map(|run| run.settled)
                    .unwrap_or_default();
                &read
            }
        };
        let mut events = Vec::new();
        for gone_id in gone {
            let tool_call_id = gone_id.to_string();
            let (kind, settled_by) = match settled.iter().find(|c| c.tool_call_id == tool_call_id) {
                Some(call) => (Some(call.kind), call.settled_by.clone()),
                // No result yet (an approved tool runs), or the run is gone.
                None => (
                    self.unsettled_kind(tenancy, run_id, &tool_call_id).await?,
                    None,
                ),
            };
            events.push(PendingEvent::Settled {
                run_id: run_id.to_owned(),
                tool_call_id,
                kind,
                settled_by,
            });
        }
        let waiting: Vec<RunPendingCall> = calls
            .into_iter()
            .filter(|call| {
                let (id, kind) = (&call.call.tool_call_id, call.call.suspension.kind);
                !before
                    .iter()
                    .any(|(sent_id, sent_kind)| *sent_kind == kind && sent_id.is(id))
            })
            .collect();
        if !waiting.is_empty() {
            events.push(PendingEvent::Pending(waiting));
        }
        if !now.is_empty() {
            sent.insert(run_key, now);
        }
        Ok(events)
    }

    /// The result kind of a call that stopped waiting but is not among its run's settled calls,
    /// from the call itself.
    async fn unsettled_kind(
        &self,
        tenancy: Tenancy<'_>,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<ToolResultKind>, RuntimeError> {
        crate::metrics::pending_feed_read();
        let call = self
            .store
            .get_tool_call(crate::store::CallOfRun {
                run_id,
                tenancy,
                tool_call_id,
            })
            .await?;
        Ok(call.and_then(|call| result_kind(call.status)))
    }
}

/// The result kind of a call that stopped waiting; `None` while the server runs it.
fn result_kind(status: CallStatus) -> Option<ToolResultKind> {
    match status {
        CallStatus::Answered => Some(ToolResultKind::Answered),
        CallStatus::Declined => Some(ToolResultKind::Declined),
        CallStatus::Expired => Some(ToolResultKind::Expired),
        CallStatus::Cancelled => Some(ToolResultKind::Cancelled),
        CallStatus::Invalid => Some(ToolResultKind::InvalidCall),
        CallStatus::Responded => Some(ToolResultKind::Output),
        CallStatus::Executed => Some(ToolResultKind::Executed),
        CallStatus::Rejected => Some(ToolResultKind::Rejected),
        CallStatus::Pending | CallStatus::Executing => None,
    }
}
