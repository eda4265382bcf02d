//! SQLite's small blocks from mimalloc, the server's own allocator, and no accounting by SQLite of
//! its memory.
//!
//! By default SQLite allocates with glibc's `malloc` and counts every allocation and free under a
//! process-wide mutex (its memory statistics, which nothing here reads). In a profile of 64
//! concurrent round trips, SQLite's allocations and frees, that mutex included, were 7.0 % of the
//! server's samples, and 2.6 % with this configuration: the store's task allocates for each
//! statement, and for each 1 KiB chunk of the journal that a savepoint copies pages into.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use rusqlite::ffi;

/// Configures SQLite's memory (once, before SQLite's first use in the process; afterwards SQLite
/// refuses, and keeps its defaults). Returns whether SQLite took the configuration.
pub(super) fn configure() -> bool {
    static CONFIGURED: OnceLock<bool> = OnceLock::new();
    *CONFIGURED.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(allocate),
            xFree: Some(free),
            xRealloc: Some(reallocate),
            xSize: Some(size),
            xRoundup: Some(round_up),
            xInit: Some(init),
            xShutdown: Some(shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: `sqlite3_config` is called before any connection opens (or fails with
        // SQLITE_MISUSE, changing nothing); SQLite copies the methods, whose functions below keep
        // the contract of `sqlite3_mem_methods`.
        unsafe {
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int) == ffi::SQLITE_OK
                && ffi::sqlite3_config(
                    ffi::SQLITE_CONFIG_MALLOC,
                    &methods as *const ffi::sqlite3_mem_methods,
                ) == ffi::SQLITE_OK
        }
    })
}

/// Lets the memory the calling thread freed go back to the OS, for a thread that may now stay idle
/// (a blocking thread after a read). mimalloc keeps a thread's freed pages in its own heap until
/// that thread allocates or collects again; here the thread's empty pages go back to the arenas,
/// which the runtime's workers purge as they go idle (`mi_collect` in `main.rs`). With 1,000,000
/// runs held, after five feeds' snapshots on reader threads, the server's RSS was 48.9 and 51.7 MB
/// without this (21.8 and 24.5 MB anonymous), past the 50 MB target once, and 46.5 and 47.4 MB
/// with it (19.1 and 20.4 anonymous), the snapshots as fast (two interleaved rounds).
pub(super) fn release_thread_memory() {
    // SAFETY: `mi_collect` frees the calling thread's empty pages; it takes no pointer and may be
    // called at any time.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

/// Gives back the memory a thread that has gone idle freed: its empty pages, and the arenas' free
/// memory, which no runtime worker may purge soon if the server idles with it (the writer's
/// thread, once it has had nothing to do for a while).
pub(super) fn release_idle_thread_memory() {
    // SAFETY: `mi_collect` frees the calling thread's empty pages and purges the arenas' free
    // memory; it takes no pointer and may be called at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Blocks larger than this stay with glibc's `malloc`, as before: the page caches' (a 4 KiB page
/// and its header each, or several at once). A page cache holds them while the server idles, and
/// glibc's free memory is given back by `malloc_trim` as the runtime's workers go idle
/// (`main.rs`); in mimalloc, the pages that reader threads freed were kept, and the server's RSS
/// with 1,000,000 runs held grew past its target. The many small blocks of statements, records
/// and journals go to mimalloc.
const LARGEST_FROM_MIMALLOC: usize = 4096;

fn bytes(n: c_int) -> usize {
    // SQLite asks for a positive size; a negative one (never asked) gets the least.
    usize::try_from(n).unwrap_or(0)
}

/// Whether `p`, one of SQLite's blocks, is mimalloc's (otherwise glibc's).
///
/// # Safety
/// `p` is a block that [`allocate`] or [`reallocate`] returned.
unsafe fn from_mimalloc(p: *const c_void) -> bool {
    // SAFETY: asks mimalloc's map of its own memory, which any pointer may be looked up in.
    unsafe { libmimalloc_sys::mi_is_in_heap_region(p) }
}

unsafe extern "C" fn allocate(n: c_int) -> *mut c_void {
    let n = bytes(n);
    // SAFETY: both take any size and return null when they cannot allocate, as SQLite expects of
    // `xMalloc`.
    unsafe {
        if n <= LARGEST_FROM_MIMALLOC {
            libmimalloc_sys::mi_malloc(n)
        } else {
            libc::malloc(n)
        }
    }
}

unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: SQLite frees only what `allocate` or `reallocate` returned, once; each block goes
    // back to the allocator it came from.
    unsafe {
        if from_mimalloc(p) {
            libmimalloc_sys::mi_free(p)
        } else {
            libc::free(p)
        }
    }
}

unsafe extern "C" fn reallocate(p: *mut c_void, n: c_int) -> *mut c_void {
    // SAFETY: `p` came from `allocate` or `reallocate` and stays with its allocator; on failure
    // both return null and leave `p` allocated, as SQLite expects of `xRealloc`.
    unsafe {
        if from_mimalloc(p) {
            libmimalloc_sys::mi_realloc(p, bytes(n))
        } else {
            libc::realloc(p, bytes(n))
        }
    }
}

unsafe extern "C" fn size(p: *mut c_void) -> c_int {
    // SAFETY: `p` came from `allocate` or `reallocate`. SQLite's own methods answer with glibc's
    // `malloc_usable_size` in the same way: the usable size, at least what was asked.
    let usable = unsafe {
        if from_mimalloc(p) {
            libmimalloc_sys::mi_usable_size(p)
        } else {
            libc::malloc_usable_size(p)
        }
    };
    c_int::try_from(usable).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn round_up(n: c_int) -> c_int {
    // What SQLite's own methods do: a multiple of 8.
    n.saturating_add(7) & !7
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child process that [`a_store_has_sqlite_allocate_small_blocks_from_mimalloc`] starts.
    const CHILD: &str = "ASKUSER_TEST_FRESH_SQLITE";
    const NAME: &str =
        "store::sqlite::memory::tests::a_store_has_sqlite_allocate_small_blocks_from_mimalloc";

    /// SQLite takes its memory's configuration only before its first use in the process, and other
    /// tests of this binary may use it first: the test runs again alone in a process of its own.
    #[test]
    fn a_store_has_sqlite_allocate_small_blocks_from_mimalloc() {
        if std::env::var_os(CHILD).is_none() {
            let exe = std::env::current_exe().expect("the test binary's path");
            let output = std::process::Command::new(exe)
                .args(["--exact", NAME, "--nocapture", "--test-threads", "1"])
                .env(CHILD, "1")
                .output()
                .expect("the test binary runs");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(stdout.contains("1 passed"), "{stdout}");
            return;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let _entered = runtime.enter();
        let _store = super::super::SqliteStore::open(
            &dir.path().join("askuser.sqlite3"),
            super::super::Synchronous::Normal,
        )
        .expect("the store opens");
        assert!(
            configure(),
            "SQLite was used before the store configured it"
        );
        // SAFETY: a block of SQLite's allocator, freed by it below.
        unsafe {
            let block = ffi::sqlite3_malloc(100);
            assert!(!block.is_null());
            assert!(libmimalloc_sys::mi_is_in_heap_region(block));
            assert!(ffi::sqlite3_msize(block) >= 100);
            ffi::sqlite3_free(block);
            let page = ffi::sqlite3_malloc(8192);
            assert!(!page.is_null());
            assert!(!libmimalloc_sys::mi_is_in_heap_region(page));
            assert!(ffi::sqlite3_msize(page) >= 8192);
            let page = ffi::sqlite3_realloc(page, 16384);
            assert!(!page.is_null() && ffi::sqlite3_msize(page) >= 16384);
            ffi::sqlite3_free(page);
            // Without SQLite's memory statistics, it counts nothing.
            assert_eq!(ffi::sqlite3_memory_used(), 0);
        }
    }
}
