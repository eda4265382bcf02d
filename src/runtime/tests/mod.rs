//! Unit tests of the runtime's trickiest logic, on a real SQLite store in a temporary directory
//! (see [`super::testing`]).

mod answers;
mod approvals;
mod expiry;
mod takeover;
