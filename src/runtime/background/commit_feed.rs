//! The commit feed: live notices of commits other replicas made (PostgreSQL's), which wake this
//! replica's followers of those runs and its expiry loop.

use std::sync::Arc;

use tokio::sync::mpsc::Receiver;
use tracing::warn;

use crate::domain::RunStatus;
use crate::runtime::shared::Shared;
use crate::store::CommitNotice;

impl Shared {
    /// Wakes local followers of runs that other replicas committed to, until the feed ends.
    pub(in crate::runtime) async fn commit_feed_loop(
        self: Arc<Self>,
        mut feed: Receiver<CommitNotice>,
    ) {
        loop {
            let notice = tokio::select! {
                notice = feed.recv() => notice,
                () = self.shutdown.cancelled() => return,
            };
            match notice {
                Some(CommitNotice::Committed {
                    run_id,
                    last_sequence,
                    status,
                }) => {
                    self.hub.notify(&run_id, last_sequence);
                    // A question asked on another replica may expire before the next local check.
                    if status == RunStatus::Suspended {
                        self.expiry_wake.notify_one();
                    }
                }
                Some(CommitNotice::Missed) => {
                    self.hub.notify_all();
                    self.expiry_wake.notify_one();
                }
                None => {
                    warn!(
                        "the store's commit feed ended; followers see other replicas' events late"
                    );
                    return;
                }
            }
        }
    }
}
