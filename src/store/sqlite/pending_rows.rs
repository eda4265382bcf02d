//! A page of a pending-calls feed's snapshot as SQLite's reader thread reads it: the rows' text
//! packed in one buffer, made into calls by the feed.

use rusqlite::types::ValueRef;

use crate::store::PendingPage;

use super::*;

/// One page of [`PENDING_FEED_QUERY`]: the pending calls of `tenant`'s runs after `after`,
/// at most `limit`, as read.
pub(super) fn read_pending_page(
    conn: &Db<'_>,
    tenant: &str,
    after: Option<(String, String)>,
    limit: usize,
) -> StoreResult<PendingRows> {
    let (run_id, call_id) = after.unwrap_or_default();
    let mut query = conn.statement(&PENDING_FEED_QUERY)?;
    let mut rows = query.query(params![run_id, call_id, tenant, limit as i64])?;
    let mut page = PendingRows::with_capacity(limit);
    while let Some(row) = rows.next()? {
        page.push(row)?;
    }
    Ok(page)
}

/// The most rows a page makes room for before it is read (a snapshot reads 512 a page).
const ROOM_FOR_ROWS: usize = 1024;

/// Where a text column's value lies in a page's buffer.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// The value, in the page's buffer `text`.
    fn of(self, text: &str) -> &str {
        &text[self.start..self.end]
    }
}

/// A page's rows as SQLite gave them: (run id, agent id, the call's columns), their text copied
/// into one buffer. The reader thread, which the feed waits on for every page, makes a few
/// allocations per page instead of several per call; the feed makes the strings a call keeps,
/// on its own thread, where they are also freed (mimalloc frees memory allocated by another
/// thread on a slower path). The payload's JSON and the kind's name are parsed from the buffer
/// and never copied into strings of their own.
pub(super) struct PendingRows {
    text: String,
    rows: Vec<(Span, Span, PendingRow<Span>)>,
}

impl PendingRows {
    /// Room for `rows` rows, at most [`ROOM_FOR_ROWS`]: a page of more grows as it is read.
    fn with_capacity(rows: usize) -> Self {
        let rows = rows.min(ROOM_FOR_ROWS);
        PendingRows {
            // About what an ask-user call's columns take.
            text: String::with_capacity(rows * 256),
            rows: Vec::with_capacity(rows),
        }
    }

    /// Adds a row of [`PENDING_FEED_QUERY`].
    fn push(&mut self, row: &rusqlite::Row<'_>) -> StoreResult<()> {
        let mut text = |column: usize| self.copy(row, column);
        let required = |span: Option<Span>| {
            span.ok_or_else(|| StoreError::Corrupt("a pending call's text column is NULL".into()))
        };
        let (run_id, agent_id) = (required(text(0)?)?, required(text(1)?)?);
        let call = PendingRow {
            tool_call_id: required(text(2)?)?,
            tool_name: required(text(3)?)?,
            payload: text(4)?,
            expire_ms: row.get(5)?,
            suspend_kind: required(text(6)?)?,
            run_arguments: required(text(7)?)?,
            approval_reason: required(text(8)?)?,
            claimant: text(9)?,
            claim_expires_ms: row.get(10)?,
            assignees: text(11)?,
            suspended_ms: row.get(12)?,
        };
        self.rows.push((run_id, agent_id, call));
        Ok(())
    }

    /// Copies a text column's value to the buffer; `None` if it is NULL.
    fn copy(&mut self, row: &rusqlite::Row<'_>, column: usize) -> StoreResult<Option<Span>> {
        let value = match row.get_ref(column)? {
            ValueRef::Null => return Ok(None),
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .map_err(|_| StoreError::Corrupt(format!("pending call column {column}")))?,
            other => {
                return Err(StoreError::Corrupt(format!(
                    "pending call column {column} is {:?}, not text",
                    other.data_type()
                )));
            }
        };
        let start = self.text.len();
        self.text.push_str(value);
        Ok(Some(Span {
            start,
            end: self.text.len(),
        }))
    }

    /// Where the next page starts, if this one is full (`limit` calls): its last call, as
    /// [`page_after`](crate::store::page_after) finds it in made calls.
    pub(super) fn after(&self, limit: usize) -> Option<(String, String)> {
        self.rows
            .last()
            .filter(|_| self.rows.len() == limit)
            .map(|(run_id, _, row)| {
                (
                    run_id.of(&self.text).to_owned(),
                    row.tool_call_id.of(&self.text).to_owned(),
                )
            })
    }

    /// The calls (their payloads parsed).
    pub(super) fn calls(self) -> StoreResult<Vec<RunPendingCall>> {
        let PendingRows { text, rows } = self;
        collect_exact(rows.into_iter().map(|(run_id, agent_id, row)| {
            row.map(|span| span.of(&text))
                .into_run_pending(run_id.of(&text).to_owned(), agent_id.of(&text).to_owned())
        }))
    }

    /// The page to send: its calls are made by the receiver.
    pub(super) fn deferred(self) -> PendingPage {
        PendingPage::deferred(move || self.calls())
    }
}
