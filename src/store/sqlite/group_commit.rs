//! Group commit: one thread owns the SQLite connection and runs the queued operations in batches,
//! one transaction per batch.
//!
//! In a batch of several, each operation runs in its own savepoint, so one that fails rolls back
//! alone. Every caller of a batch gets its result only after the batch's COMMIT: nothing an
//! operation wrote can be announced before it is committed. Operations queued while a batch runs
//! share the next commit (and its WAL write) instead of paying one each, and callers never contend
//! for the connection. A batch is bounded by [`MAX_BATCH`].
//!
//! The writer is a thread of its own ([`WRITER_THREAD`]), not a task on the runtime's workers.
//! As a task it waited in a worker's queue behind the very streams that waited for it, and its
//! replies woke the other worker to steal them. As a thread the kernel runs it whenever it has
//! work, and on SQLite the runtime leaves it a core (`ServeArgs::runtime_workers`). On 7 December
//! 2026, on 2 cores, three interleaved rounds of three repeats against the task on two workers:
//! 64 streams 11,261–11,402 round trips a second against 9,754–9,878, server CPU per round trip
//! 117–118 µs against 143–148; sequential 3,457–3,494 against 2,816–2,843, 222–235 µs against
//! 321–345. (Before batches, a thread woken for each operation had cost more than the operations.)
//!
//! A commit alone, after a spell of such, runs on its caller's thread instead, as a batch of one:
//! [`super::commit_traffic`] says when, and why. It takes the write lock at once or not at all: a
//! lock held by a checkpoint or by another process is waited for on the writer's thread, never on a
//! runtime worker.

use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::super::{StoreError, StoreResult};
use super::checkpoint::Checkpointer;
use super::commit_traffic::CommitTraffic;
use super::schema;
use super::statements::Db;

/// The most operations one transaction takes: bounds how long a batch makes its callers wait.
const MAX_BATCH: usize = 256;

/// The name of the writer's thread, as `/proc` (and a profile) shows it.
pub(super) const WRITER_THREAD: &str = "askuser-writer";

/// How long the writer waits for work before it gives back the memory it freed and sleeps.
const IDLE: Duration = Duration::from_millis(100);

/// A queued operation and its caller.
trait Operation: Send {
    /// Runs the operation; returns whether it succeeded.
    fn run(&mut self, conn: &Db<'_>) -> bool;
    /// Hands the outcome to the caller: the operation's, or `failure` when its transaction failed
    /// (or it could not run).
    fn deliver(self: Box<Self>, failure: Option<&StoreError>);
}

struct Call<T, F> {
    work: Option<F>,
    outcome: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> Operation for Call<T, F>
where
    T: Send,
    F: FnOnce(&Db<'_>) -> StoreResult<T> + Send,
{
    fn run(&mut self, conn: &Db<'_>) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        let outcome = work(conn);
        let succeeded = outcome.is_ok();
        self.outcome = Some(outcome);
        succeeded
    }

    fn deliver(self: Box<Self>, failure: Option<&StoreError>) {
        let result = match (failure, self.outcome) {
            (None, Some(outcome)) => outcome,
            (None, None) => Err(StoreError::Task("operation not run".into())),
            // The operation's own error says best why its transaction failed.
            (Some(_), Some(Err(error))) => Err(error),
            (Some(StoreError::Unavailable(message)), _) => {
                Err(StoreError::Unavailable(message.clone()))
            }
            (Some(failure), _) => Err(StoreError::Task(format!(
                "the transaction failed: {failure}"
            ))),
        };
        // The caller may have given up waiting; the outcome stands either way.
        let _ = self.reply.send(result);
    }
}

enum Request {
    /// Runs inside a batch's transaction.
    Batched(Box<dyn Operation>),
    /// Runs alone between batches, outside any transaction (e.g. a WAL checkpoint).
    Alone(Box<dyn Operation>),
}

/// The queue to the writer's thread, which ends when this is dropped, and the connection it shares
/// with callers that commit alone.
pub(super) struct GroupCommit {
    requests: mpsc::Sender<Request>,
    conn: Arc<Mutex<Connection>>,
    traffic: CommitTraffic,
}

impl GroupCommit {
    /// Starts the writer's thread; `checkpointer` stops with it.
    pub fn start(conn: Connection, checkpointer: Checkpointer) -> StoreResult<Self> {
        let (requests, queue) = mpsc::channel();
        let conn = Arc::new(Mutex::new(conn));
        let writer = Arc::clone(&conn);
        std::thread::Builder::new()
            .name(WRITER_THREAD.into())
            .spawn(move || {
                serve(&writer, queue);
                drop(checkpointer);
            })?;
        Ok(Self {
            requests,
            conn,
            traffic: CommitTraffic::default(),
        })
    }

    /// Runs `work` atomically in the next batch (or, alone, in a batch of its own on this thread);
    /// returns its result once committed. `work` must be short: it may block a runtime worker.
    pub async fn run<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.submit(Request::Batched, true, work).await
    }

    /// [`Self::run`], timed under `operation` for the metrics
    /// (`askuser_store_commit_duration_seconds`): as the caller waits, batching included.
    pub async fn commit<T, F>(&self, operation: &'static str, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        crate::store::timed(operation, self.run(work)).await
    }

    /// [`Self::commit`] for work that may take long (thousands of rows): always on the writer's
    /// thread, where it blocks no runtime worker.
    pub async fn commit_large<T, F>(&self, operation: &'static str, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        crate::store::timed(operation, self.submit(Request::Batched, false, work)).await
    }

    /// Runs `work` by itself, outside any transaction.
    pub async fn run_alone<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.submit(Request::Alone, false, work).await
    }

    /// Queues `work` as `request`, or, if `short` and the traffic allows, runs it here.
    async fn submit<T, F>(
        &self,
        request: fn(Box<dyn Operation>) -> Request,
        short: bool,
        work: F,
    ) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        let (reply, result) = oneshot::channel();
        let call = Call {
            work: Some(work),
            outcome: None,
            reply,
        };
        let (_in_flight, here) = self.traffic.start();
        let operation: Box<dyn Operation> = Box::new(call);
        let queued = if short && here {
            self.commit_here(operation)
        } else {
            Some(operation)
        };
        if let Some(operation) = queued {
            self.requests
                .send(request(operation))
                .map_err(|_| StoreError::Task("the SQLite writer has stopped".into()))?;
        }
        result
            .await
            .map_err(|_| StoreError::Task("the SQLite writer dropped an operation".into()))?
    }

    /// Commits `operation` as a batch of one on this thread if the connection is free and the
    /// write lock can be had at once; otherwise gives it back, for the writer's queue.
    fn commit_here(&self, operation: Box<dyn Operation>) -> Option<Box<dyn Operation>> {
        // Busy (the writer's batch) or poisoned (the writer's thread clears that): queued.
        let Ok(conn) = self.conn.try_lock() else {
            return Some(operation);
        };
        let db = Db::new(&conn);
        match schema::without_waiting(|| execute(&db, "BEGIN IMMEDIATE")) {
            Ok(()) => {}
            Err(error) if is_busy(&error) => return Some(operation),
            Err(error) => {
                operation.deliver(Some(&StoreError::from(error)));
                return None;
            }
        }
        let mut batch = [operation];
        let failure = run_begun(&db, &mut batch).err();
        drop(db);
        drop(conn);
        let [operation] = batch;
        operation.deliver(failure.as_ref());
        None
    }
}

fn is_busy(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
}

/// The writer's loop: takes whatever is queued (up to [`MAX_BATCH`]) as one batch; an operation
/// that runs alone splits it. Ends when every sender is gone.
fn serve(connection: &Mutex<Connection>, queue: mpsc::Receiver<Request>) {
    let mut requests = Vec::with_capacity(MAX_BATCH);
    while next_requests(&queue, &mut requests) {
        let mut batch = Vec::with_capacity(requests.len());
        for request in requests.drain(..) {
            match request {
                Request::Batched(operation) => batch.push(operation),
                Request::Alone(mut operation) => {
                    if !batch.is_empty() {
                        commit_batch(connection, std::mem::take(&mut batch));
                    }
                    operation.run(&Db::new(&lock(connection)));
                    operation.deliver(None);
                }
            }
        }
        if !batch.is_empty() {
            commit_batch(connection, batch);
        }
    }
}

/// Takes the connection for the writer's thread, however long a caller holds it.
fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A caller's operation that panicked poisoned the lock and may have left its transaction
    // open: the connection is still good once that is rolled back.
    let conn = connection.lock().unwrap_or_else(|poisoned| {
        connection.clear_poison();
        poisoned.into_inner()
    });
    if !conn.is_autocommit() {
        let _ = execute(&Db::new(&conn), "ROLLBACK");
    }
    conn
}

/// Waits for at least one request, then takes what else is queued, up to [`MAX_BATCH`] in all;
/// `false` once the queue is closed. A writer idle for [`IDLE`] gives back the memory it freed
/// before it sleeps on: no runtime worker's idle hook runs on this thread.
fn next_requests(queue: &mpsc::Receiver<Request>, requests: &mut Vec<Request>) -> bool {
    // A request already queued is taken at once.
    let first = match queue.recv_timeout(IDLE) {
        Ok(request) => request,
        Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            super::memory::release_idle_thread_memory();
            match queue.recv() {
                Ok(request) => request,
                Err(mpsc::RecvError) => return false,
            }
        }
    };
    requests.push(first);
    requests.extend(queue.try_iter().take(MAX_BATCH - 1));
    true
}

fn execute(conn: &Db<'_>, sql: &'static str) -> rusqlite::Result<()> {
    conn.statement(sql)?.execute([]).map(drop)
}

/// Runs one operation of a batch of several in its own savepoint; returns whether it succeeded.
fn run_isolated(conn: &Db<'_>, operation: &mut dyn Operation) -> rusqlite::Result<bool> {
    execute(conn, "SAVEPOINT operation")?;
    let succeeded = operation.run(conn);
    if !succeeded {
        execute(conn, "ROLLBACK TO operation")?;
    }
    execute(conn, "RELEASE operation")?;
    Ok(succeeded)
}

/// Runs a batch in one transaction and delivers every outcome after its end, with the connection
/// let go: a caller woken by its outcome finds it free to commit its next operation itself. A
/// batch of one needs no savepoint: its transaction rolls back if it fails.
fn commit_batch(connection: &Mutex<Connection>, mut batch: Vec<Box<dyn Operation>>) {
    // The batch's statements go back to the connection's cache before its callers hear of it.
    let failure = run_batch(&Db::new(&lock(connection)), &mut batch).err();
    for operation in batch {
        operation.deliver(failure.as_ref());
    }
}

/// Runs the batch; the error is why its transaction failed.
fn run_batch(conn: &Db<'_>, batch: &mut [Box<dyn Operation>]) -> StoreResult<()> {
    execute(conn, "BEGIN IMMEDIATE")?;
    run_begun(conn, batch)
}

/// Runs the batch in the transaction just begun, and ends it.
fn run_begun(conn: &Db<'_>, batch: &mut [Box<dyn Operation>]) -> StoreResult<()> {
    let alone = batch.len() == 1;
    let mut succeeded = true;
    for operation in batch.iter_mut() {
        succeeded = if alone {
            operation.run(conn)
        } else {
            run_isolated(conn, operation.as_mut()).map_err(|error| abort(conn, error))?
        };
        // Some errors (a full disk, an I/O error) make SQLite roll the whole transaction back.
        if conn.is_autocommit() {
            return Err(StoreError::Unavailable(
                "SQLite rolled the transaction back (disk full or I/O error)".into(),
            ));
        }
    }
    // A batch of one that failed rolls back; in a larger one, a failure rolled back its savepoint.
    let end = if alone && !succeeded {
        "ROLLBACK"
    } else {
        "COMMIT"
    };
    execute(conn, end).map_err(|error| abort(conn, error))
}

/// Ends a transaction that cannot commit; returns why.
fn abort(conn: &Db<'_>, error: rusqlite::Error) -> StoreError {
    let _ = execute(conn, "ROLLBACK");
    StoreError::from(error)
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    /// A writer on a fresh WAL file in `dir`, its connection with the store's busy handler.
    fn start_writer(dir: &tempfile::TempDir) -> (GroupCommit, std::path::PathBuf) {
        let path = dir.path().join("db.sqlite3");
        let conn = schema::connect(&path).expect("open");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        conn.execute("CREATE TABLE t (x INTEGER)", [])
            .expect("table");
        let checkpointer =
            Checkpointer::start(Connection::open(&path).expect("open")).expect("checkpointer");
        (GroupCommit::start(conn, checkpointer).expect("start"), path)
    }

    /// Runs one operation that writes a row and says which thread it ran on.
    async fn thread_of_a_commit(writer: &GroupCommit) -> String {
        writer
            .run(|conn| {
                conn.statement("INSERT INTO t VALUES (1)")?.execute([])?;
                Ok(std::thread::current().name().unwrap_or("").to_owned())
            })
            .await
            .expect("an operation")
    }

    /// Commits go through the writer's thread until a spell of commits alone has passed; then a
    /// commit alone runs on its caller's thread, and is committed when it returns.
    #[tokio::test]
    async fn commits_alone_run_on_the_caller_s_thread_after_a_quiet_spell() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (writer, path) = start_writer(&dir);
        let here = std::thread::current().name().unwrap_or("").to_owned();
        assert_ne!(here, WRITER_THREAD);
        let mut threads = Vec::new();
        for _ in 0..20 {
            threads.push(thread_of_a_commit(&writer).await);
        }
        assert_eq!(threads[0], WRITER_THREAD, "{threads:?}");
        assert_eq!(threads[19], here, "{threads:?}");
        // Every row is committed: another connection sees them all.
        let rows: i64 = Connection::open(&path)
            .expect("open")
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .expect("count");
        assert_eq!(rows, 20);
    }

    /// A caller's commit never waits on its runtime worker for a lock held elsewhere (here another
    /// connection's transaction, as `askuser keys` or a restart checkpoint would hold it): it goes
    /// to the writer's thread, which waits for it.
    #[tokio::test]
    async fn a_caller_never_waits_for_a_lock_held_elsewhere() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (writer, path) = start_writer(&dir);
        for _ in 0..20 {
            thread_of_a_commit(&writer).await;
        }
        let other = Connection::open(&path).expect("open");
        other.execute_batch("BEGIN IMMEDIATE").expect("the lock");
        // The lock is let go a while later: a caller that waited for it on this thread would then
        // have run the commit itself.
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            other.execute_batch("COMMIT").expect("release");
        });
        assert_eq!(thread_of_a_commit(&writer).await, WRITER_THREAD);
        holder.join().expect("the holder");
    }

    /// An operation that panics on its caller's thread, holding the connection inside its
    /// transaction, leaves the store usable: its write is rolled back, the next commit goes to the
    /// writer's thread, and callers commit on their own again after that.
    #[tokio::test]
    async fn a_caller_s_operation_that_panics_leaves_the_store_usable() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (writer, path) = start_writer(&dir);
        let here = std::thread::current().name().unwrap_or("").to_owned();
        for _ in 0..20 {
            thread_of_a_commit(&writer).await;
        }
        let panics = |conn: &Db<'_>| -> StoreResult<()> {
            conn.statement("INSERT INTO t VALUES (2)")?.execute([])?;
            panic!("a bug in an operation");
        };
        let outcome = std::panic::AssertUnwindSafe(writer.run(panics))
            .catch_unwind()
            .await;
        assert!(outcome.is_err(), "the operation ran on this thread");
        assert_eq!(thread_of_a_commit(&writer).await, WRITER_THREAD);
        assert_eq!(thread_of_a_commit(&writer).await, here);
        let count = |sql: &str| -> i64 {
            Connection::open(&path)
                .and_then(|conn| conn.query_row(sql, [], |row| row.get(0)))
                .expect("count")
        };
        assert_eq!(count("SELECT count(*) FROM t WHERE x = 2"), 0);
        assert_eq!(count("SELECT count(*) FROM t"), 22);
    }

    /// An operation that says, as its outcome is delivered, whether the connection was free then.
    struct SeesTheConnection {
        conn: Arc<Mutex<Connection>>,
        free: mpsc::Sender<bool>,
    }

    impl Operation for SeesTheConnection {
        fn run(&mut self, _: &Db<'_>) -> bool {
            true
        }

        fn deliver(self: Box<Self>, _: Option<&StoreError>) {
            let _ = self.free.send(self.conn.try_lock().is_ok());
        }
    }

    /// The writer's thread lets go of the connection before it delivers an outcome: a caller
    /// woken by it, about to commit its next operation itself, finds the connection free.
    #[test]
    fn outcomes_are_delivered_with_the_connection_let_go() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (writer, _) = start_writer(&dir);
        let (free, seen) = mpsc::channel();
        let requests: [fn(Box<dyn Operation>) -> Request; 2] = [Request::Batched, Request::Alone];
        for request in requests {
            let operation = SeesTheConnection {
                conn: Arc::clone(&writer.conn),
                free: free.clone(),
            };
            writer
                .requests
                .send(request(Box::new(operation)))
                .expect("queued");
            let free = seen
                .recv_timeout(Duration::from_secs(10))
                .expect("delivered");
            assert!(
                free,
                "the connection was still held when the outcome was delivered"
            );
        }
    }

    /// The writer's operations run on its own thread, not on the runtime that asked for them.
    #[tokio::test]
    async fn operations_run_on_the_writer_s_own_thread() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (writer, _) = start_writer(&dir);
        assert_eq!(thread_of_a_commit(&writer).await, WRITER_THREAD);
    }
}
