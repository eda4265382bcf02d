//! The runtime's state, shared by its handle ([`super::Runtime`]), its background loops and the
//! tasks they spawn. The logic lives in `impl Shared` blocks beside each concern: executing steps
//! (`executor.rs`), writes that outlive their request (`writes.rs`), a commit's effects
//! (`effects.rs`), the pending-calls feed (`pending_feed.rs`) and the background loops
//! (`background/`).

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use super::RuntimeConfig;
use super::admission::Admission;
use super::agents::AgentDefinition;
use super::executor::Executing;
use super::hub::Hub;
use super::pending_fanout::PendingFanout;
use crate::store::{Lease, RunStore};

pub(crate) struct Shared {
    /// This process's name in run leases: a lease under it is this process's to renew or release.
    pub(super) owner: String,
    /// Where every run lives; a step starts from it, and nothing of a suspended run stays in
    /// memory.
    pub(super) store: Arc<dyn RunStore>,
    /// The configured agents by id.
    pub(super) agents: HashMap<String, AgentDefinition>,
    /// The runtime's settings.
    pub(super) config: RuntimeConfig,
    /// Live fan-out of committed events to the streams following a run.
    pub(super) hub: Arc<Hub>,
    /// Reads commits once for the pending-calls feeds of their run's tenant.
    pub(super) pending_fanout: Arc<PendingFanout>,
    /// The runs this process is executing, so that a run has one executor here at a time.
    pub(super) executing: Executing,
    /// How much works at once: steps, steps per agent, requests per model endpoint.
    pub(super) admission: Admission,
    /// Cancelled as the runtime begins to shut down: no work starts, followers end.
    pub(super) shutdown: CancellationToken,
    /// Every task the runtime spawns (steps, writes, loops); shutdown waits for them.
    pub(super) tasks: TaskTracker,
    /// Wakes the expiry loop when a call that expires was suspended, which may expire before the
    /// loop's next look.
    pub(super) expiry_wake: Notify,
    /// The MCP servers' supervisors, stopped after the steps that call them (not with
    /// `shutdown`, or a call in flight would fail instead of being made again at the next start).
    pub(super) mcp_servers: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    pub(super) mcp_stop: CancellationToken,
}

impl Shared {
    pub(super) fn new(
        store: Arc<dyn RunStore>,
        agents: Vec<AgentDefinition>,
        config: RuntimeConfig,
    ) -> Self {
        let admission = Admission::new(
            config.max_running_steps,
            config.max_model_requests,
            agents.iter(),
        );
        Self {
            owner: format!("{}-{}", std::process::id(), uuid::Uuid::now_v7().simple()),
            store,
            agents: agents.into_iter().map(|a| (a.id.clone(), a)).collect(),
            config,
            hub: Arc::new(Hub::default()),
            pending_fanout: Arc::default(),
            executing: Executing::default(),
            admission,
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            expiry_wake: Notify::new(),
            mcp_servers: std::sync::Mutex::default(),
            mcp_stop: CancellationToken::new(),
        }
    }

    /// The lease to take or renew now.
    pub(super) fn lease(&self) -> Lease<'_> {
        let ttl = i64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(i64::MAX);
        Lease {
            owner: &self.owner,
            until_ms: self.store.now_ms().saturating_add(ttl),
        }
    }

    /// Gives up this process's lease on a run it no longer works on.
    pub(super) async fn release_lease(&self, run_id: &str) {
        if let Err(error) = self.store.release_lease(run_id, &self.owner).await {
            // The lease then simply expires and the run is taken over.
            warn!(run_id, %error, "releasing a run lease failed");
        }
    }
}
