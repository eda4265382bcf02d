//! Store operations written once: each reads what decides it, then computes a plain value (the
//! writes with their parameters, the events to append, the outcome) that each store only
//! executes. A store keeps its own strengths in how it executes: PostgreSQL sends a plan's
//! writes in one flight, SQLite runs them inside its group commit.
//!
//! SQL text here uses `$n` parameters numbered in the order they first appear: SQLite numbers
//! `$n` parameters that way, so the same text binds the same values on both stores.

pub(super) mod calls;
pub(super) mod cancel;
pub(super) mod commit_executed;
pub(super) mod commit_turn;
pub(super) mod create;
pub(super) mod settle;
pub(super) mod step_events;

use crate::domain::{Event, EventKind};

/// One parameter of a write, bound the same way by both stores.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SqlValue {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(bool),
}

impl From<i64> for SqlValue {
    fn from(value: i64) -> Self {
        SqlValue::Int(Some(value))
    }
}

impl From<Option<i64>> for SqlValue {
    fn from(value: Option<i64>) -> Self {
        SqlValue::Int(value)
    }
}

impl From<String> for SqlValue {
    fn from(value: String) -> Self {
        SqlValue::Text(Some(value))
    }
}

impl From<&str> for SqlValue {
    fn from(value: &str) -> Self {
        SqlValue::Text(Some(value.to_owned()))
    }
}

impl From<Option<String>> for SqlValue {
    fn from(value: Option<String>) -> Self {
        SqlValue::Text(value)
    }
}

impl From<bool> for SqlValue {
    fn from(value: bool) -> Self {
        SqlValue::Bool(value)
    }
}

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            SqlValue::Int(value) => value.to_sql(),
            SqlValue::Text(value) => value.to_sql(),
            SqlValue::Bool(value) => value.to_sql(),
        }
    }
}

impl SqlValue {
    /// The value as a PostgreSQL parameter.
    pub(crate) fn as_postgres(&self) -> &(dyn tokio_postgres::types::ToSql + Sync) {
        match self {
            SqlValue::Int(value) => value,
            SqlValue::Text(value) => value,
            SqlValue::Bool(value) => value,
        }
    }
}

/// A statement of a plan: its SQL text, written once, and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Write {
    pub sql: &'static str,
    pub params: Vec<SqlValue>,
}

/// `kinds` as the events of `run_id` that follow `last_sequence`, at `time_ms`.
pub(super) fn new_events(
    run_id: &str,
    last_sequence: u64,
    kinds: Vec<EventKind>,
    time_ms: i64,
) -> Vec<Event> {
    kinds
        .into_iter()
        .zip(last_sequence + 1..)
        .map(|(kind, sequence)| Event {
            run_id: run_id.to_owned(),
            sequence,
            time_ms,
            kind,
        })
        .collect()
}
