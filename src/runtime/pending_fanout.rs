//! One reader for every pending-calls feed: a commit that may change a run's pending calls is read
//! once, and only when its run's tenant has a feed open; the run as read goes to that tenant's
//! feeds alone. A feed so costs nothing for another tenant's commits, and a commit costs one read
//! however many feeds it concerns.
//!
//! The reader knows a run's tenant from its start on this server (while any feed is open) or from
//! a feed's snapshot (while feeds of more than one tenant are open). Of a run it does not know
//! (started on another replica, or before any feed was open) it asks the store once per tenant that
//! has feeds open, and remembers the answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tracing::warn;

use super::hub::{Batch, RunChange};
use super::shared::Shared;
use crate::domain::{EventKind, RunRecord};
use crate::store::Tenancy;

/// How many changes a tenant's slow feed may fall behind before it reads its snapshot again.
const TENANT_CAPACITY: usize = 1024;
/// Runs whose tenant is remembered at most; past it a run's tenant is asked of the store.
const MAX_OWNERS: usize = 65_536;

/// A change the feeds of one tenant see.
#[derive(Clone, Debug)]
pub(super) enum TenantChange {
    /// A run of the tenant as read after a commit; `None` when it is gone.
    Run {
        run_id: String,
        run: Option<Arc<RunRecord>>,
    },
    /// Changes may have been lost: read the snapshot again.
    Missed,
}

/// The feeds' channels per tenant, and which tenant each recent run belongs to.
#[derive(Default)]
pub(super) struct PendingFanout {
    tenants: Mutex<HashMap<String, broadcast::Sender<TenantChange>>>,
    /// Keyed by server-made run ids, so a fast hash is safe; a snapshot notes every run it reads.
    owners: Mutex<foldhash::HashMap<String, Arc<str>>>,
}

impl PendingFanout {
    /// The changes of `tenant`'s runs from now on, for one feed.
    pub(super) fn subscribe(self: &Arc<Self>, tenant: &str) -> TenantFeed {
        let receiver = match self.tenants.lock() {
            Ok(mut tenants) => tenants
                .entry(tenant.to_owned())
                .or_insert_with(|| broadcast::channel(TENANT_CAPACITY).0)
                .subscribe(),
            Err(_) => broadcast::channel(1).1,
        };
        TenantFeed {
            fanout: Arc::clone(self),
            tenant: tenant.to_owned(),
            receiver: Some(receiver),
        }
    }

    /// Notes that `run_id` belongs to `tenant`; only while some feed is open, as only feeds ask.
    pub(super) fn remember(&self, run_id: &str, tenant: &str) {
        self.remember_all([run_id], tenant);
    }

    /// Notes the runs of a page of `tenant`'s snapshot, when knowing them can save a read: only
    /// while feeds of another tenant are open too. With one tenant's feeds open, a run of no known
    /// tenant is read once, in that tenant, as a known one is; noting every run of a snapshot of
    /// 100,000 calls was 7 % of its server CPU (perf).
    pub(super) fn remember_snapshot<'a>(
        &self,
        run_ids: impl IntoIterator<Item = &'a str>,
        tenant: &str,
    ) {
        if self.tenants.lock().is_ok_and(|t| t.len() > 1) {
            self.remember_all(run_ids, tenant);
        }
    }

    /// [`Self::remember`] for many runs of one tenant, under one lock.
    pub(super) fn remember_all<'a>(
        &self,
        run_ids: impl IntoIterator<Item = &'a str>,
        tenant: &str,
    ) {
        if !self.tenants.lock().is_ok_and(|t| !t.is_empty()) {
            return;
        }
        let tenant: Arc<str> = Arc::from(tenant);
        if let Ok(mut owners) = self.owners.lock() {
            for run_id in run_ids {
                // A run's tenant never changes: a full map has nothing left to learn (a snapshot
                // of 100,000 calls looked each run up for nothing).
                if owners.len() >= MAX_OWNERS {
                    break;
                }
                if !owners.contains_key(run_id) {
                    owners.insert(run_id.to_owned(), Arc::clone(&tenant));
                }
            }
        }
    }

    fn owner(&self, run_id: &str) -> Option<String> {
        Some(self.owners.lock().ok()?.get(run_id)?.to_string())
    }

    fn forget(&self, run_id: &str) {
        if let Ok(mut owners) = self.owners.lock() {
            owners.remove(run_id);
        }
    }

    /// The sender of `tenant`'s feeds, if any is open.
    fn sender(&self, tenant: &str) -> Option<broadcast::Sender<TenantChange>> {
        self.tenants.lock().ok()?.get(tenant).cloned()
    }

    /// Every tenant with a feed open.
    fn watched(&self) -> Vec<(String, broadcast::Sender<TenantChange>)> {
        self.tenants.lock().map_or_else(
            |_| Vec::new(),
            |tenants| {
                tenants
                    .iter()
                    .map(|(tenant, sender)| (tenant.clone(), sender.clone()))
                    .collect()
            },
        )
    }

    fn missed(&self) {
        for (_, sender) in self.watched() {
            let _ = sender.send(TenantChange::Missed);
        }
    }

    fn release(&self, tenant: &str) {
        let Ok(mut tenants) = self.tenants.lock() else {
            return;
        };
        if tenants
            .get(tenant)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            tenants.remove(tenant);
        }
        if tenants.is_empty()
            && let Ok(mut owners) = self.owners.lock()
        {
            // Nobody asks any more; runs started from now on are not noted either. A new map, not
            // `clear`: a snapshot may have filled it to its bound, and a cleared map keeps its
            // table (about 5 MB at 65,536 runs) for as long as the server runs.
            *owners = foldhash::HashMap::default();
        }
    }
}

/// One feed's subscription to its tenant's changes.
pub(super) struct TenantFeed {
    fanout: Arc<PendingFanout>,
    tenant: String,
    receiver: Option<broadcast::Receiver<TenantChange>>,
}

impl TenantFeed {
    pub(super) async fn recv(&mut self) -> Result<TenantChange, RecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => Err(RecvError::Closed),
        }
    }
}

impl Drop for TenantFeed {
    fn drop(&mut self) {
        // The receiver goes before its channel's count is looked at.
        self.receiver.take();
        self.fanout.release(&self.tenant);
    }
}

/// Whether a commit may change its run's pending calls (a notice from elsewhere may: it carries
/// no events).
fn concerns_pending(batch: &Batch) -> bool {
    batch.events.is_empty()
        || batch.events.iter().any(|e| {
            matches!(
                e.kind,
                EventKind::ToolCallSuspended { .. }
                    | EventKind::ToolResult { .. }
                    | EventKind::RunCancelled { .. }
            )
        })
}

impl Shared {
    /// Reads each commit that concerns some feed, once, and hands it to its tenant's feeds.
    pub(super) async fn fanout_loop(self: Arc<Self>, mut changes: broadcast::Receiver<RunChange>) {
        let fanout = Arc::clone(&self.pending_fanout);
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                () = self.shutdown.cancelled() => return,
            };
            match change {
                Ok(RunChange::Committed { run_id, batch }) => {
                    if concerns_pending(&batch) {
                        self.deliver(&fanout, &run_id).await;
                    }
                    if !batch.events.is_empty() && batch.status.is_terminal() {
                        fanout.forget(&run_id);
                    }
                }
                Ok(RunChange::Missed) | Err(RecvError::Lagged(_)) => fanout.missed(),
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// Reads `run_id` for the feeds of its tenant, if that tenant has any open.
    async fn deliver(&self, fanout: &PendingFanout, run_id: &str) {
        let owner = fanout.owner(run_id);
        let known = owner.is_some();
        let candidates = match owner {
            Some(tenant) => match fanout.sender(&tenant) {
                Some(sender) => vec![(tenant, sender)],
                // No feed of the run's tenant is open: nothing to read.
                None => return,
            },
            None => fanout.watched(),
        };
        for (tenant, sender) in candidates {
            crate::metrics::pending_feed_read();
            match self.store.get_run(run_id, Tenancy::Only(&tenant)).await {
                Ok(Some(run)) => {
                    fanout.remember(run_id, &tenant);
                    let _ = sender.send(TenantChange::Run {
                        run_id: run_id.to_owned(),
                        run: Some(Arc::new(run)),
                    });
                    return;
                }
                Ok(None) if known => {
                    let _ = sender.send(TenantChange::Run {
                        run_id: run_id.to_owned(),
                        run: None,
                    });
                }
                Ok(None) => {}
                Err(error) => {
                    warn!(%error, run_id, "reading a run for the pending-calls feeds failed");
                    // Its feeds read their snapshot again (and end if the store still fails).
                    let _ = sender.send(TenantChange::Missed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs a snapshot noted are let go, table and all, once the last feed closes: a server
    /// that served one large snapshot keeps no memory for it.
    #[test]
    fn the_last_feed_closing_frees_the_runs_it_noted() {
        let fanout = Arc::new(PendingFanout::default());
        let feed = fanout.subscribe("acme");
        let runs: Vec<String> = (0..10_000).map(|n| format!("run-{n}")).collect();
        fanout.remember_all(runs.iter().map(String::as_str), "acme");
        assert_eq!(fanout.owner("run-42").as_deref(), Some("acme"));
        drop(feed);
        let owners = fanout.owners.lock().expect("owners");
        assert!(owners.is_empty());
        assert_eq!(owners.capacity(), 0, "the table is freed, not only emptied");
    }

    /// A snapshot notes its runs only while another tenant's feeds are open: with one tenant's,
    /// a run of no known tenant is read once anyway.
    #[test]
    fn a_snapshot_notes_its_runs_only_while_another_tenants_feeds_are_open() {
        let fanout = Arc::new(PendingFanout::default());
        let _acme = fanout.subscribe("acme");
        fanout.remember_snapshot(["run-1"], "acme");
        assert_eq!(fanout.owner("run-1"), None);
        let _globex = fanout.subscribe("globex");
        fanout.remember_snapshot(["run-1"], "acme");
        assert_eq!(fanout.owner("run-1").as_deref(), Some("acme"));
    }
}
