//! The store as a service: its clock, its health and its shutdown.

use async_trait::async_trait;

use crate::domain::now_millis;
use crate::store::StoreResult;

/// The store as a service: its clock, its health and its shutdown.
#[async_trait]
pub trait StoreService: Send + Sync {
    /// Flushes everything to durable storage before the process exits.
    async fn close(&self) -> StoreResult<()>;
    /// Checks, cheaply, that the store serves: an error while it (or, on a shared store, its
    /// commit feed) is unreachable. A shared store also measures its clock again.
    async fn ping(&self) -> StoreResult<()>;
    /// Milliseconds since the Unix epoch on the store's clock, which every lease, claim and expiry
    /// is measured against: on a shared store the database's clock, so that replicas whose own
    /// clocks disagree still agree on when a lease or a question runs out.
    fn now_ms(&self) -> i64 {
        now_millis()
    }
}
