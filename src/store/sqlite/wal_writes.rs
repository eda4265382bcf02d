//! The writer's WAL written one commit at a time: a file layer (an SQLite VFS over the default
//! one) that holds a transaction's WAL frames in memory and writes them with one `pwrite` (one per
//! 124 KiB) when the commit's last frame is complete.
//!
//! SQLite writes each frame as two calls, its 24-byte header and then its page, so a commit of
//! eight pages was sixteen system calls, each paying the file system's per-call work (a profile of
//! sequential round trips put these writes at about a tenth of the server's CPU). The frames still
//! reach the file before SQLite makes them visible: it updates the WAL's index, which readers
//! consult, only after the commit frame's write returns, and that write is where the held frames
//! go out. Anything else asked of the file (a read, a sync, its size, a truncation) first writes
//! what is held, so no caller ever sees the file without them; a write that does not follow the
//! held ones, or one of another shape than a frame's header or page, does too.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name the writer's connection opens its file with.
pub(super) const VFS_NAME: &CStr = c"askuser-wal";

/// A frame's header in the WAL (its page follows it).
const FRAME_HEADER: usize = 24;

/// Held frames are written out past this many bytes even before a commit (a transaction that
/// spills pages to the WAL before it commits).
const MAX_HELD: usize = 1 << 20;

/// The most one write of held frames passes to the base: SQLite's unix layer writes at most
/// 128 KiB − 1 bytes per call (it masks the length) and reports a longer write that the mask
/// leaves empty as a full disk.
const MAX_WRITE: usize = 124 * 1024;

/// Registers the VFS (once); returns whether it is available.
pub(super) fn register() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: `sqlite3_vfs_find(NULL)` gives the default VFS, which lives as long as the
        // process; the copy made of it is leaked, as SQLite keeps the registered pointer.
        unsafe {
            let base = ffi::sqlite3_vfs_find(std::ptr::null());
            if base.is_null() {
                return false;
            }
            let Ok(base_size) = usize::try_from((*base).szOsFile) else {
                return false;
            };
            let Ok(size) = c_int::try_from(std::mem::size_of::<HeldFile>() + base_size) else {
                return false;
            };
            let mut vfs = *base;
            vfs.zName = VFS_NAME.as_ptr();
            vfs.szOsFile = size;
            vfs.xOpen = Some(open);
            vfs.pNext = std::ptr::null_mut();
            BASE.get_or_init(|| BaseVfs(base));
            let vfs = Box::leak(Box::new(vfs));
            ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK
        }
    })
}

/// The VFS this one is made over.
struct BaseVfs(*mut ffi::sqlite3_vfs);
// SAFETY: SQLite's VFS objects are meant to be used from any thread.
unsafe impl Send for BaseVfs {}
unsafe impl Sync for BaseVfs {}
static BASE: OnceLock<BaseVfs> = OnceLock::new();

/// A file of this VFS: SQLite's handle, followed in the same allocation by the base VFS's own.
#[repr(C)]
struct HeldFile {
    handle: ffi::sqlite3_file,
    /// The base VFS's file, right after this struct.
    base: *mut ffi::sqlite3_file,
    /// Whether this is a WAL, whose frames are held.
    wal: bool,
    /// Frames held, to be written at `held_at`.
    held: Vec<u8>,
    held_at: i64,
    /// The last write held was a frame's header: its page comes next.
    page_next: bool,
    /// That header was a commit's last frame's: its page completes the commit.
    commit_next: bool,
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(base_vfs) = BASE.get() else {
        return ffi::SQLITE_ERROR;
    };
    let held = file.cast::<HeldFile>();
    // SAFETY: SQLite allocated `szOsFile` bytes at `file`: this struct, then the base's file.
    unsafe {
        (*held).handle.pMethods = std::ptr::null();
        let Some(base_open) = (*base_vfs.0).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        let base = held.add(1).cast::<ffi::sqlite3_file>();
        let rc = base_open(base_vfs.0, name, base, flags, out_flags);
        if (*base).pMethods.is_null() {
            return if rc == ffi::SQLITE_OK {
                ffi::SQLITE_CANTOPEN
            } else {
                rc
            };
        }
        if rc != ffi::SQLITE_OK {
            // A file whose opening failed is closed all the same if its methods are set; SQLite
            // will not call this VFS's close, as this handle's are not.
            if let Some(close) = (*(*base).pMethods).xClose {
                close(base);
            }
            return rc;
        }
        held.write(HeldFile {
            handle: ffi::sqlite3_file { pMethods: &METHODS },
            base,
            wal: flags & ffi::SQLITE_OPEN_WAL != 0,
            held: Vec::new(),
            held_at: 0,
            page_next: false,
            commit_next: false,
        });
        rc
    }
}

/// The file this VFS opened at `file`, and the base's file and methods under it.
///
/// # Safety
/// `file` is a file this VFS opened and has not closed.
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (
    &'a mut HeldFile,
    *mut ffi::sqlite3_file,
    &'static ffi::sqlite3_io_methods,
) {
    // SAFETY: per the caller; the base's methods live as long as the base VFS.
    unsafe {
        let held = &mut *file.cast::<HeldFile>();
        let base = held.base;
        (held, base, &*(*base).pMethods)
    }
}

/// Writes what `held` holds to `base`.
fn write_held(
    held: &mut HeldFile,
    base: *mut ffi::sqlite3_file,
    methods: &ffi::sqlite3_io_methods,
) -> c_int {
    held.page_next = false;
    held.commit_next = false;
    if held.held.is_empty() {
        return ffi::SQLITE_OK;
    }
    let Some(write) = methods.xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let mut rc = ffi::SQLITE_OK;
    let mut offset = held.held_at;
    for chunk in held.held.chunks(MAX_WRITE) {
        #[cfg(test)]
        tests::HELD_WRITES.with(|writes| writes.set(writes.get() + 1));
        // SAFETY: `base` is the base's open file; the chunk's bytes are its length long, which
        // is less than `MAX_WRITE`.
        rc = unsafe { write(base, chunk.as_ptr().cast(), chunk.len() as c_int, offset) };
        if rc != ffi::SQLITE_OK {
            break;
        }
        offset += chunk.len() as i64;
    }
    held.held.clear();
    if held.held.capacity() > MAX_HELD {
        held.held = Vec::new();
    }
    rc
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite calls this with a file this VFS opened and `amount` bytes at `data`.
    unsafe {
        let (held, base, methods) = parts(file);
        let Some(base_write) = methods.xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let Ok(length) = usize::try_from(amount) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let follows = held.held.is_empty() || held.held_at + held.held.len() as i64 == offset;
        let header = held.wal && offset >= 32 && length == FRAME_HEADER && !held.page_next;
        let page = held.wal && held.page_next && length > FRAME_HEADER;
        // The WAL's own header (its first 32 bytes), a write of any other shape, and one that
        // does not follow what is held (a transaction after one that spilled frames and rolled
        // back) go out at once, after what is held; so does the page of a frame whose header did.
        if !(header || page) || !follows {
            let rc = write_held(held, base, methods);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            return base_write(base, data, amount, offset);
        }
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), length);
        if held.held.is_empty() {
            held.held_at = offset;
        }
        held.held.extend_from_slice(bytes);
        if header {
            held.page_next = true;
            // A frame's "database size after commit" is set in a commit's last frame only.
            held.commit_next = bytes[4..8] != [0, 0, 0, 0];
            return ffi::SQLITE_OK;
        }
        let commit = held.commit_next;
        held.page_next = false;
        held.commit_next = false;
        if commit || held.held.len() >= MAX_HELD {
            return write_held(held, base, methods);
        }
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this once with a file this VFS opened, and nothing after it.
    unsafe {
        let (held, base, methods) = parts(file);
        let rc = write_held(held, base, methods);
        let closed = methods.xClose.map_or(ffi::SQLITE_OK, |close| close(base));
        std::ptr::drop_in_place(file.cast::<HeldFile>());
        if rc == ffi::SQLITE_OK { closed } else { rc }
    }
}

/// A method that writes what is held, then does what the base's does.
macro_rules! after_held {
    ($name:ident, $field:ident, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: SQLite calls this with a file this VFS opened.
            unsafe {
                let (held, base, methods) = parts(file);
                let rc = write_held(held, base, methods);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                methods.$field.map_or($missing, |method| method(base, $($arg),*))
            }
        }
    };
}

/// A method that does what the base's does.
macro_rules! base_only {
    ($name:ident, $field:ident, $ret:ty, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> $ret {
            // SAFETY: SQLite calls this with a file this VFS opened.
            unsafe {
                let (_, base, methods) = parts(file);
                methods.$field.map_or($missing, |method| method(base, $($arg),*))
            }
        }
    };
}

after_held!(read, xRead, ffi::SQLITE_IOERR_READ, (data: *mut c_void, amount: c_int, offset: i64));
after_held!(truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64));
after_held!(sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
after_held!(file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
after_held!(lock, xLock, ffi::SQLITE_IOERR_LOCK, (level: c_int));
after_held!(unlock, xUnlock, ffi::SQLITE_IOERR_UNLOCK, (level: c_int));
after_held!(check_reserved_lock, xCheckReservedLock, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, (out: *mut c_int));
after_held!(file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void));
base_only!(sector_size, xSectorSize, c_int, 4096, ());
base_only!(device_characteristics, xDeviceCharacteristics, c_int, 0, ());
base_only!(shm_map, xShmMap, c_int, ffi::SQLITE_IOERR_SHMMAP, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
base_only!(shm_lock, xShmLock, c_int, ffi::SQLITE_IOERR_SHMLOCK, (offset: c_int, n: c_int, flags: c_int));
base_only!(shm_unmap, xShmUnmap, c_int, ffi::SQLITE_OK, (delete: c_int));
base_only!(fetch, xFetch, c_int, ffi::SQLITE_OK, (offset: i64, amount: c_int, out: *mut *mut c_void));
base_only!(unfetch, xUnfetch, c_int, ffi::SQLITE_OK, (offset: i64, page: *mut c_void));

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite calls this with a file this VFS opened.
    unsafe {
        let (_, base, methods) = parts(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(base);
        }
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use rusqlite::Connection;

    use super::super::schema::{connect, connect_writer};

    thread_local! {
        /// Writes of held frames to the base's files on this thread (SQLite writes on the
        /// thread of the statement).
        pub(super) static HELD_WRITES: Cell<u64> = const { Cell::new(0) };
    }

    fn rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM notes", [], |row| row.get(0))
            .expect("count")
    }

    /// A store's writer (through this VFS, in WAL mode, with no checkpoints) of a table of notes
    /// in `dir`, and a reader of it through SQLite's own file layer.
    fn writer_and_reader(dir: &std::path::Path) -> (Connection, Connection) {
        let path = dir.join("db.sqlite3");
        let writer = connect_writer(&path).expect("writer");
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .expect("wal");
        writer
            .pragma_update(None, "wal_autocheckpoint", 0)
            .expect("no checkpoints");
        writer
            .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
            .expect("table");
        let reader = connect(&path).expect("reader");
        (writer, reader)
    }

    /// The database and WAL files in `dir` as they are now (what a crash of the process would
    /// leave), copied to `dir/name` and opened with SQLite's own file layer.
    fn copy_of_files(dir: &std::path::Path, name: &str) -> Connection {
        let copy = dir.join(name);
        std::fs::create_dir(&copy).expect("copy dir");
        for file in ["db.sqlite3", "db.sqlite3-wal"] {
            std::fs::copy(dir.join(file), copy.join(file)).expect("copy");
        }
        Connection::open(copy.join("db.sqlite3")).expect("open copy")
    }

    /// A commit's frames are in the file, written by one call, when the commit returns: a reader
    /// of the default file layer sees it, and so does a copy of the files made then (what a crash
    /// of the process would leave).
    #[test]
    fn a_commit_s_frames_are_in_the_file_in_one_write_when_it_returns() {
        let dir = tempfile::tempdir().expect("dir");
        let (writer, reader) = writer_and_reader(dir.path());
        let body = "x".repeat(3000);
        for commit in 1..=5_i64 {
            let before = HELD_WRITES.get();
            // Eight rows of 3,000 bytes: a page each, and the pages above them.
            writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
            for _ in 0..8 {
                writer
                    .execute("INSERT INTO notes (body) VALUES (?1)", [&body])
                    .expect("insert");
            }
            writer.execute_batch("COMMIT").expect("commit");
            // One write for the commit's frames, where SQLite makes two per frame (its header,
            // then its page).
            assert_eq!(HELD_WRITES.get() - before, 1, "commit {commit}: one write");
            assert_eq!(
                rows(&reader),
                commit * 8,
                "commit {commit}: a reader sees it"
            );
            let copied = copy_of_files(dir.path(), &format!("copy-{commit}"));
            assert_eq!(rows(&copied), commit * 8, "commit {commit}: in the files");
        }
        let frames = std::fs::metadata(dir.path().join("db.sqlite3-wal"))
            .expect("wal")
            .len()
            / 4120;
        assert!(frames >= 40, "the commits wrote {frames} frames");
    }

    fn insert(conn: &Connection, rows: usize, body: &str) {
        for _ in 0..rows {
            conn.execute("INSERT INTO notes (body) VALUES (?1)", [body])
                .expect("insert");
        }
    }

    /// A commit of more frames than one write of SQLite's unix layer takes (128 KiB) goes out in
    /// several; a transaction that spilled frames to the WAL and rolled back leaves nothing a
    /// reader or a copy of the files sees, and the next commit is whole.
    #[test]
    fn large_commits_and_spilled_transactions_reach_the_file_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let (writer, reader) = writer_and_reader(dir.path());
        let body = "y".repeat(3000);

        // About 100 pages: 412 KB of frames.
        let before = HELD_WRITES.get();
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        insert(&writer, 100, &body);
        writer.execute_batch("COMMIT").expect("a large commit");
        let writes = HELD_WRITES.get() - before;
        assert!((4..=5).contains(&writes), "{writes} writes for 412 KB");
        assert_eq!(rows(&reader), 100);

        // A page cache of 10 pages: the transaction's changes spill to the WAL before it ends.
        writer.pragma_update(None, "cache_size", 10).expect("cache");
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        insert(&writer, 60, &body);
        writer.execute_batch("ROLLBACK").expect("rollback");
        assert_eq!(rows(&reader), 100, "a rolled back transaction");
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        insert(&writer, 30, &body);
        writer
            .execute_batch("COMMIT")
            .expect("commit after a rollback");
        assert_eq!(rows(&reader), 130, "the commit after it");
        let copied = copy_of_files(dir.path(), "copy");
        assert_eq!(rows(&copied), 130, "in the files");
        let check: String = copied
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("integrity check");
        assert_eq!(check, "ok");
    }
}
