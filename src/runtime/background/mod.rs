//! The runtime's background loops, each in its own file: taking over runs nobody executes, live
//! notices of other replicas' commits, question expiry and retention. (The pending-calls fan-out's
//! loop lives with the fan-out.)

mod commit_feed;
mod expiry;
mod retention;
mod takeover;

use std::sync::Arc;

use super::RuntimeError;
use super::shared::Shared;

impl Shared {
    /// Starts every background loop on the runtime's task tracker.
    pub(super) async fn start_background(self: &Arc<Self>) -> Result<(), RuntimeError> {
        if let Some(feed) = self.store.commit_feed().await? {
            self.tasks.spawn(Arc::clone(self).commit_feed_loop(feed));
        }
        // Subscribed before the first request can commit anything.
        let changes = self.hub.subscribe_all();
        self.tasks.spawn(Arc::clone(self).fanout_loop(changes));
        self.tasks.spawn(Arc::clone(self).takeover_loop());
        self.tasks.spawn(Arc::clone(self).expiry_loop());
        self.tasks.spawn(Arc::clone(self).retention_loop());
        Ok(())
    }
}
