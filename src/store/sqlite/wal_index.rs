//! Whether any connection, in any process, has committed to a SQLite file in WAL mode, told by one
//! read of its WAL index's header (the `-shm` file) rather than by a statement.
//!
//! `PRAGMA data_version` answers the same question, but as a statement: it opens a read
//! transaction, taking and releasing the WAL's read lock with `fcntl` each time, and on the
//! 2-core machine of BENCHMARKS.md that was more than half of what `--auth keys` cost a
//! sequential round trip (two lookups each; 7 December 2026). The header is what
//! SQLite itself reads to learn of commits: every commit rewrites it, after the commit's frames are
//! written and before the commit returns, so a header unchanged since a given read means no commit
//! has ended since. Its layout is part of SQLite's file format (<https://sqlite.org/walformat.html>,
//! "the WAL-index header": two copies of 48 bytes at offsets 0 and 48, the second written first).
//! A read that finds the two copies different (a commit under way) or the header not initialised
//! or of another version says nothing, and the caller asks SQLite.
//!
//! The `-shm` file stays the same file while any connection has the database open: only the last
//! connection to close may delete it, and the reader of this header keeps one open. Read at an
//! offset on Unix only; elsewhere the header never tells, and the caller always asks SQLite.

use std::fs::File;
use std::io;
use std::path::Path;

/// The bytes of one copy of the header.
const HEADER: usize = 48;

/// `iVersion`, the header's first field, in the WAL format every SQLite since 3.7.0 writes.
const VERSION: u32 = 3_007_000;

/// The offset of `isInit`, nonzero once the header has been built.
const IS_INIT: usize = 12;

/// One copy of the WAL index's header, as read.
pub(super) type Header = [u8; HEADER];

/// The `-shm` file of a database in WAL mode, open for reading its header.
pub(super) struct WalIndex {
    shm: File,
}

impl WalIndex {
    /// Opens the `-shm` file of the database at `db_path`, which must be in WAL mode and open on a
    /// connection of the caller's that has read from it (so that the file exists, and stays).
    pub(super) fn open(db_path: &Path) -> io::Result<Self> {
        let mut shm = db_path.as_os_str().to_owned();
        shm.push("-shm");
        Ok(Self {
            shm: File::open(shm)?,
        })
    }

    /// The header as it is now, if it is complete: equal to an earlier read, no commit has ended
    /// between the two reads. `None` when it cannot be told (a commit under way, a header not yet
    /// built, a file too short, a read that failed).
    pub(super) fn header(&self) -> Option<Header> {
        let mut copies = [0u8; 2 * HEADER];
        read_start(&self.shm, &mut copies).ok()?;
        let (first, second) = copies.split_at(HEADER);
        let version = u32::from_ne_bytes(first[..4].try_into().ok()?);
        if first != second || version != VERSION || first[IS_INIT] == 0 {
            return None;
        }
        first.try_into().ok()
    }
}

/// Reads the first bytes of `file` into `buffer`, whatever its position.
#[cfg(unix)]
fn read_start(file: &File, buffer: &mut [u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buffer, 0)
}

#[cfg(not(unix))]
fn read_start(_file: &File, _buffer: &mut [u8]) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, unix))]
mod tests {
    use rusqlite::Connection;

    use super::*;

    /// The header changes with every commit, whichever connection makes it, and with none else: a
    /// read or a passive checkpoint leaves it as it was.
    #[test]
    fn the_header_changes_with_every_commit_and_only_then() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("file.sqlite3");
        let writer = Connection::open(&path).expect("open");
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        writer
            .execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("create");
        let reader = Connection::open(&path).expect("open");
        let count = || -> i64 {
            reader
                .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
                .expect("count")
        };
        assert_eq!(count(), 0);
        let index = WalIndex::open(&path).expect("the -shm file");
        let before = index.header().expect("a complete header");

        assert_eq!(count(), 0);
        writer
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .expect("checkpoint");
        assert_eq!(index.header(), Some(before), "no commit, no change");

        let mut seen = vec![before];
        for x in 0..3 {
            writer
                .execute("INSERT INTO t (x) VALUES (?1)", [x])
                .expect("insert");
            let after = index.header().expect("a complete header");
            assert!(
                !seen.contains(&after),
                "commit {x} left the header as it was"
            );
            seen.push(after);
        }
        // A commit of another connection, on a file whose WAL a checkpoint has just emptied.
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("checkpoint");
        let other = Connection::open(&path).expect("open");
        other
            .execute("INSERT INTO t (x) VALUES (9)", [])
            .expect("insert");
        drop(other);
        let last = index.header().expect("a complete header");
        assert!(!seen.contains(&last), "the other connection's commit");
        assert_eq!(count(), 4);
        assert_eq!(index.header(), Some(last));
    }

    #[test]
    fn a_file_without_a_header_tells_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("file.sqlite3");
        assert!(WalIndex::open(&path).is_err(), "no -shm file");
        std::fs::write(dir.path().join("file.sqlite3-shm"), [0u8; 40]).expect("write");
        let short = WalIndex::open(&path).expect("open");
        assert_eq!(short.header(), None);
        std::fs::write(dir.path().join("file.sqlite3-shm"), [0u8; 136]).expect("write");
        assert_eq!(WalIndex::open(&path).expect("open").header(), None);
    }
}
