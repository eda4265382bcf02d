//! A connection with the statements of one unit of work (a batch of the group commit, a read)
//! kept at hand until the unit ends.
//!
//! rusqlite's statement cache hashes a statement's whole text and copies it into a new key at
//! every `prepare_cached`, then hashes it and links a node again when the statement is put back:
//! 4.95 % of the server's samples at 64 concurrent round trips (a profile of 7 December 2026),
//! for the thirty-odd statements a round trip runs. Here a statement whose text is static is found by
//! the text's address among the few that the unit has used, and goes back to rusqlite's cache
//! once, when the unit ends.

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use rusqlite::{CachedStatement, Connection, Statement};

/// A connection, and the statements prepared on it during one unit of work, not in use, each
/// with its SQL text. A text is matched by address and length (`ptr::eq`): the same text at
/// another address is only another entry, never a wrong statement, as a static text's address
/// is never reused.
pub(super) struct Db<'c> {
    conn: &'c Connection,
    idle: RefCell<Vec<(&'static str, CachedStatement<'c>)>>,
}

impl<'c> Db<'c> {
    /// A unit of work on `conn`; its statements go back to the connection's cache when it drops.
    pub fn new(conn: &'c Connection) -> Self {
        Self {
            conn,
            idle: RefCell::new(Vec::new()),
        }
    }

    /// The prepared statement of `sql`: the unit's own if it has used it before, else from the
    /// connection's cache (or newly prepared). Dynamic SQL goes through
    /// [`Connection::prepare_cached`] instead, through `Deref`.
    pub fn statement(&self, sql: &'static str) -> rusqlite::Result<Kept<'_, 'c>> {
        let idle = {
            let mut idle = self.idle.borrow_mut();
            idle.iter()
                .position(|(kept, _)| std::ptr::eq(*kept, sql))
                .map(|index| idle.swap_remove(index).1)
        };
        let statement = match idle {
            Some(statement) => statement,
            None => self.conn.prepare_cached(sql)?,
        };
        Ok(Kept {
            db: self,
            sql,
            statement: ManuallyDrop::new(statement),
        })
    }
}

impl Deref for Db<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

/// A statement of a [`Db`] in use; it is the unit's again when this drops.
pub(super) struct Kept<'d, 'c> {
    db: &'d Db<'c>,
    sql: &'static str,
    statement: ManuallyDrop<CachedStatement<'c>>,
}

impl<'c> Deref for Kept<'_, 'c> {
    type Target = Statement<'c>;

    fn deref(&self) -> &Statement<'c> {
        &self.statement
    }
}

impl DerefMut for Kept<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.statement
    }
}

impl Drop for Kept<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: `statement` is taken once, here, and never used again.
        let statement = unsafe { ManuallyDrop::take(&mut self.statement) };
        self.db.idle.borrow_mut().push((self.sql, statement));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSERT: &str = "INSERT INTO t (n) VALUES (?1)";
    const COUNT: &str = "SELECT count(*) FROM t";
    const SUM: &str = "SELECT sum(n) FROM t";
    /// As long as [`SUM`]: a statement is found by its text's address, not its length.
    const MAX: &str = "SELECT max(n) FROM t";

    fn value(statement: &mut Statement<'_>) -> i64 {
        statement.query_row([], |row| row.get(0)).expect("a value")
    }

    #[test]
    fn each_text_gets_its_own_statement_and_a_unit_keeps_them_until_it_ends() {
        let conn = Connection::open_in_memory().expect("a connection");
        conn.execute_batch("CREATE TABLE t (n INTEGER)")
            .expect("a table");
        {
            let db = Db::new(&conn);
            for n in 1..=3 {
                db.statement(INSERT)
                    .expect("prepared")
                    .execute([n])
                    .expect("inserted");
            }
            assert_eq!(db.idle.borrow().len(), 1, "one statement, used three times");
            // The same text twice at once: each use has a statement of its own.
            let mut first = db.statement(COUNT).expect("prepared");
            let mut second = db.statement(COUNT).expect("prepared");
            let mut sum = db.statement(SUM).expect("prepared");
            assert_eq!(
                (value(&mut first), value(&mut second), value(&mut sum)),
                (3, 3, 6)
            );
            drop((first, second, sum));
            assert_eq!(db.idle.borrow().len(), 4, "every statement is idle again");
            assert_eq!(value(&mut db.statement(SUM).expect("prepared")), 6);
            assert_eq!(value(&mut db.statement(MAX).expect("prepared")), 3);
        }
        // Statements outlive their unit in the connection's cache, and still work.
        let db = Db::new(&conn);
        db.statement(INSERT)
            .expect("prepared")
            .execute([4])
            .expect("inserted");
        assert_eq!(value(&mut db.statement(SUM).expect("prepared")), 10);
    }
}
