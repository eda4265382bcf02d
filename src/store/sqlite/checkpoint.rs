//! Background checkpoints: a second connection copies committed WAL frames into the database
//! file, so that no commit waits for a checkpoint and its fsyncs.
//!
//! The writer's own automatic checkpoints are off. A passive checkpoint never blocks the writer;
//! but the WAL only starts over from its beginning when a write transaction finds every frame
//! copied, which a busy writer may never do. Once the WAL is large and fully copied, a restart
//! checkpoint makes the next write start it over: it waits for the writer's current batch, and
//! has nothing left to copy.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;
use tracing::warn;

use super::super::StoreResult;

/// How often committed frames are copied to the database file.
const INTERVAL: Duration = Duration::from_millis(50);

/// WAL frames (pages) beyond which the WAL is made to start over.
const RESTART_FRAMES: i64 = 16_384;

/// Stops the checkpoint thread when dropped.
pub(super) struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

impl Checkpointer {
    pub fn start(conn: Connection) -> StoreResult<Self> {
        let (stop, stopped) = mpsc::channel();
        std::thread::Builder::new()
            .name("askuser-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    if let Err(error) = checkpoint(&conn) {
                        warn!(%error, "WAL checkpoint failed");
                    }
                }
            })?;
        Ok(Self { _stop: stop })
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
