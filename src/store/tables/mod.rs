//! The store's contract, one role trait per table (and one for the store as a whole); a
//! [`RunStore`](super::RunStore) is all of them.

mod events;
mod runs;
mod service;
mod tool_calls;

pub use events::{EventQuery, EventTable, StepEvents};
pub use runs::{Cancellation, RunTable, Step};
pub use service::StoreService;
pub use tool_calls::{
    CallOfRun, CallSettlement, Claim, ExecutedResults, PendingPage, PendingPages, PendingQuery,
    ToolCallTable, page_after,
};
