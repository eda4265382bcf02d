//! Background checkpoints: a second connection copies committed WAL frames into the database
//! file, so that no commit waits for a checkpoint and its fsyncs.
//!
//! The writer's own automatic checkpoints are off. A passive checkpoint never blocks the writer;
//! but the WAL only starts over from its beginning when a write transaction finds every frame
//! copied, which a busy writer may never do. Once the WAL is large and fully copied, a restart
//! checkpoint makes the next write start it over: it waits for the writer's current batch, and
//! has nothing left to copy.
//!
//! The thread runs at a lower priority (nice [`NICE`]) than the request path: a checkpoint is a
//! burst of page copies and fsyncs that can wait, and on a machine with few cores it otherwise
//! took a core from round trips in flight (the sequential resume p99 was 5–21 % lower with it
//! lowered, in each of six interleaved rounds, the rates unchanged). Under full load it still gets
//! its share of the CPU, only a smaller one.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;
use tracing::warn;

use super::super::StoreResult;

/// How often committed frames are copied to the database file.
const INTERVAL: Duration = Duration::from_millis(50);

/// WAL frames (pages) beyond which the WAL is made to start over.
const RESTART_FRAMES: i64 = 16_384;

/// The checkpoint thread's nice value: 10 gives it about a tenth of a busy core's time beside a
/// request thread at the default 0.
const NICE: i32 = 10;

/// The name of the checkpoint thread, as `/proc` shows it.
const THREAD_NAME: &str = "askuser-checkpoint";

/// Stops the checkpoint thread when dropped.
pub(super) struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

impl Checkpointer {
    pub fn start(conn: Connection) -> StoreResult<Self> {
        let (stop, stopped) = mpsc::channel();
        std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                lower_priority();
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    if let Err(error) = checkpoint(&conn) {
                        warn!(%error, "WAL checkpoint failed");
                    }
                }
            })?;
        Ok(Self { _stop: stop })
    }
}

/// Lowers the calling thread's priority to [`NICE`] unless it is already that low; where that
/// fails (or on another system) the thread keeps the server's priority, which is only slower for
/// the requests.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; getpriority and setpriority read only their
        // arguments. On Linux a nice value is a thread's own, and PRIO_PROCESS with a thread id
        // reads and sets that thread's. -1 is also a valid priority: errno tells them apart, and
        // either way the thread is then lowered to NICE.
        let lowered = unsafe {
            let thread = libc::gettid() as libc::id_t;
            if libc::getpriority(libc::PRIO_PROCESS, thread) >= NICE {
                return;
            }
            libc::setpriority(libc::PRIO_PROCESS, thread, NICE)
        };
        if lowered != 0 {
            warn!(
                error = %std::io::Error::last_os_error(),
                "the WAL checkpoint thread runs at the server's priority"
            );
        }
    }
}

/// Runs `PRAGMA wal_checkpoint(mode)`; returns the frames in the WAL and the frames copied.
fn wal_checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<(i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get(1)?, row.get(2)?))
    })
}

fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    let (frames, copied) = wal_checkpoint(conn, "PASSIVE")?;
    if frames >= RESTART_FRAMES && copied == frames {
        wal_checkpoint(conn, "RESTART")?;
    }
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The nice value of this process's thread named `name` (comm is cut to 15 bytes), from
    /// `/proc`; `None` while no such thread exists.
    fn nice_of_thread(name: &str) -> Option<i32> {
        let shown = &name[..name.len().min(15)];
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != shown {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // The fields after the command's closing parenthesis: state is field 3, nice 19.
            let after = stat.rsplit_once(')')?.1;
            return after.split_whitespace().nth(16)?.parse().ok();
        }
        None
    }

    /// The checkpoint thread runs below the default priority, so that its bursts of copying
    /// yield the cores to requests.
    #[test]
    fn the_checkpoint_thread_runs_at_a_lower_priority() {
        // SAFETY: getpriority reads only its arguments; 0 is the calling thread.
        let ours = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let expected = ours.max(NICE);
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = Connection::open(dir.path().join("db.sqlite3")).expect("open");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        let checkpointer = Checkpointer::start(conn).expect("start");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let nice = loop {
            match nice_of_thread(THREAD_NAME) {
                Some(nice) if nice == expected => break Some(nice),
                _ if std::time::Instant::now() > deadline => break nice_of_thread(THREAD_NAME),
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        drop(checkpointer);
        assert_eq!(nice, Some(expected), "the checkpoint thread's nice value");
    }
}
