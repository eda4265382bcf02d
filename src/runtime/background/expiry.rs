//! Question expiry: a call whose wait ran out (a question's TTL, a client tool's timeout, an
//! approval's) is settled as expired, including calls that expired while the server was down.

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::runtime::effects::Metric;
use crate::runtime::settle;
use crate::runtime::shared::Shared;
use crate::runtime::writes::CallRef;
use crate::store::Decide;

/// Calls settled per read of the due ones.
const BATCH: usize = 256;

impl Shared {
    /// Settles questions as they expire, including those that expired while the server was down.
    pub(in crate::runtime) async fn expiry_loop(self: Arc<Self>) {
        const IDLE_CHECK: i64 = 60_000;
        loop {
            let wait_ms = match self.store.next_expiry().await {
                Ok(Some(at)) => (at - self.store.now_ms()).clamp(0, IDLE_CHECK),
                Ok(None) => IDLE_CHECK,
                Err(error) => {
                    warn!(%error, "reading the next question expiry failed");
                    IDLE_CHECK / 10
                }
            };
            if wait_ms > 0 {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(wait_ms.unsigned_abs())) => {}
                    () = self.expiry_wake.notified() => continue,
                    () = self.shutdown.cancelled() => return,
                }
            }
            if self.shutdown.is_cancelled() {
                return;
            }
            let due = match self.store.due_expiries(self.store.now_ms(), BATCH).await {
                Ok(due) => due,
                Err(error) => {
                    warn!(%error, "reading expired questions failed");
                    continue;
                }
            };
            for (run_id, tool_call_id) in due {
                let expired: Decide = Box::new(|call| Ok(settle::expired_change(call)));
                let call = CallRef {
                    run_id: run_id.clone(),
                    tenant: None,
                    tool_call_id: tool_call_id.clone(),
                };
                let settled = self.settle(call, expired, Metric::expired, true);
                // Applied (and counted), or answered or cancelled in the meantime.
                if let Err(error) = settled.await {
                    warn!(%error, run_id, tool_call_id, "expiring a question failed");
                }
            }
        }
    }
}
