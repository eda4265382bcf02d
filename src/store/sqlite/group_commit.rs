//! Group commit: one task owns the SQLite connection and runs the queued operations in batches,
//! one transaction per batch.
//!
//! In a batch of several, each operation runs in its own savepoint, so one that fails rolls back
//! alone. Every caller of a batch gets its result only after the batch's COMMIT: nothing an
//! operation wrote can be announced before it is committed. Operations queued while a batch runs
//! share the next commit (and its WAL write) instead of paying one each, and callers never contend
//! for the connection.
//!
//! The task runs SQLite on a runtime worker: an operation takes tens of microseconds (commits
//! write to the WAL without waiting for the disk; checkpoints and their fsyncs run on their own
//! thread), and handing each one to a thread of its own costs two cross-thread wake-ups, which
//! measured more than the operations themselves. A batch is bounded by [`MAX_BATCH`].

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::super::{StoreError, StoreResult};
use super::checkpoint::Checkpointer;
use super::statements::Db;

/// The most operations one transaction takes: bounds how long a batch makes its callers wait.
const MAX_BATCH: usize = 256;

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

/// The queue to the task that owns the connection; the task ends when this is dropped.
pub(super) struct GroupCommit {
    requests: mpsc::UnboundedSender<Request>,
}

impl GroupCommit {
    /// Starts the task on the current Tokio runtime; `checkpointer` stops with it.
    pub fn start(conn: Connection, checkpointer: Checkpointer) -> StoreResult<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|error| {
            StoreError::Task(format!("the SQLite store needs a runtime: {error}"))
        })?;
        let (requests, queue) = mpsc::unbounded_channel();
        runtime.spawn(async move {
            serve(conn, queue).await;
            drop(checkpointer);
        });
        Ok(Self { requests })
    }

    /// Runs `work` atomically in the next batch; returns its result once the batch committed.
    pub async fn run<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.submit(Request::Batched, work).await
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

    /// Runs `work` by itself, outside any transaction.
    pub async fn run_alone<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Db<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.submit(Request::Alone, work).await
    }

    async fn submit<T, F>(
        &self,
        request: fn(Box<dyn Operation>) -> Request,
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
        self.requests
            .send(request(Box::new(call)))
            .map_err(|_| StoreError::Task("the SQLite task has stopped".into()))?;
        result
            .await
            .map_err(|_| StoreError::Task("the SQLite task dropped an operation".into()))?
    }
}

/// The task's loop: takes whatever is queued (up to [`MAX_BATCH`]) as one batch; an operation
/// that runs alone splits it.
async fn serve(conn: Connection, mut queue: mpsc::UnboundedReceiver<Request>) {
    let mut requests = Vec::with_capacity(MAX_BATCH);
    while queue.recv_many(&mut requests, MAX_BATCH).await > 0 {
        let mut batch = Vec::with_capacity(requests.len());
        for request in requests.drain(..) {
            match request {
                Request::Batched(operation) => batch.push(operation),
                Request::Alone(mut operation) => {
                    if !batch.is_empty() {
                        commit_batch(&conn, std::mem::take(&mut batch));
                    }
                    operation.run(&Db::new(&conn));
                    operation.deliver(None);
                }
            }
        }
        if !batch.is_empty() {
            commit_batch(&conn, batch);
        }
    }
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

/// Runs a batch in one transaction and delivers every outcome after its end. A batch of one needs
/// no savepoint: its transaction rolls back if it fails.
fn commit_batch(conn: &Connection, mut batch: Vec<Box<dyn Operation>>) {
    // The batch's statements go back to the connection's cache before its callers hear of it.
    let failure = run_batch(&Db::new(conn), &mut batch).err();
    for operation in batch {
        operation.deliver(failure.as_ref());
    }
}

/// Runs the batch; the error is why its transaction failed.
fn run_batch(conn: &Db<'_>, batch: &mut [Box<dyn Operation>]) -> StoreResult<()> {
    execute(conn, "BEGIN IMMEDIATE")?;
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
