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
        self.start_mcp_servers();
        Ok(())
    }
}

impl Shared {
    /// Starts one supervisor per MCP server the agents use (each connects, and reconnects).
    fn start_mcp_servers(self: &Arc<Self>) {
        let mut started: Vec<&str> = Vec::new();
        let mut handles = Vec::new();
        for offer in self.agents.values().flat_map(|agent| &agent.mcp) {
            if !started.contains(&offer.server.name()) {
                started.push(offer.server.name());
                handles.push(offer.server.start(self.mcp_stop.clone()));
            }
        }
        match self.mcp_servers.lock() {
            Ok(mut servers) => servers.extend(handles),
            Err(poisoned) => poisoned.into_inner().extend(handles),
        }
    }

    /// Disconnects from the MCP servers, stopping stdio servers' processes.
    pub(super) async fn stop_mcp_servers(&self) {
        self.mcp_stop.cancel();
        let handles = match self.mcp_servers.lock() {
            Ok(mut servers) => std::mem::take(&mut *servers),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let stopped = futures::future::join_all(handles);
        if tokio::time::timeout(std::time::Duration::from_secs(10), stopped)
            .await
            .is_err()
        {
            tracing::warn!("MCP servers still stopping after 10 s; leaving them");
        }
    }
}
