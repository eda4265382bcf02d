//! The flight plumbing: statements prepared once per pooled connection, and [`TxClient`], whose
//! `BEGIN` and `COMMIT` travel in the flights of a transaction.
//!
//! Round trips, not fsyncs, bound this store, so statements go in *flights*. tokio-postgres sends
//! a request when its future is first polled and matches replies in order, so futures joined with
//! `try_join!` travel together and cost one round trip between them. The server still runs them
//! one by one in the order sent (the order of the join: `try_join!` polls its futures in order,
//! and each sends all its statements on its first poll), in the same transaction: a flight may
//! take the run's lock first and read or write under it, and a read sees the writes sent before
//! it. `BEGIN` and `COMMIT` are statements of flights too ([`TxClient`]), so a change is a flight
//! of `BEGIN` and the reads that decide it (the lock first), then one of every write and `COMMIT`
//! (with the commit's notice, [`TxClient::commit_announcing`]): two round trips, one for a change
//! that needs no reads. A change decided against after its reads ends with `ROLLBACK`. A flight's
//! statements are prepared before it starts ([`prepare()`]), as a future still waiting on its own
//! preparation would send out of order; and a flight joins no `try_join_all` of more than 30
//! futures, which may poll some only later, after the `COMMIT` (a turn's calls are thus one
//! statement, like its events).

use futures::TryStreamExt;

use super::*;

/// The most rows [`TxClient::select_by_index`] makes room for before any has come: a snapshot's
/// page (2,048) and a listing's; a larger `limit` (a command line's) grows as rows come.
const PREALLOCATED_ROWS: usize = 4096;

/// Runs a statement prepared once per pooled connection: it then takes one round trip to the
/// server instead of two (parse, then execute).
pub(super) async fn execute(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<u64> {
    exec(client, &client.prepare_cached(sql).await?, params).await
}

/// [`execute`] for a query's rows.
pub(super) async fn select(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<Row>> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query(&statement, params).await?)
}

/// [`execute`] for a query of exactly one row.
pub(super) async fn select_one(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Row> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query_one(&statement, params).await?)
}

/// Prepares the statements of a flight, together. Each is prepared once per pooled connection;
/// after that this costs no round trip.
pub(super) async fn prepare<const N: usize>(
    client: &impl GenericClient,
    sql: [&str; N],
) -> StoreResult<[Statement; N]> {
    let statements = try_join_all(sql.map(|sql| client.prepare_cached(sql))).await?;
    <[Statement; N]>::try_from(statements)
        .map_err(|_| StoreError::Postgres("a statement of a flight went unprepared".into()))
}

/// Runs a prepared statement; the number of rows it changed.
pub(super) async fn exec(
    client: &impl GenericClient,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<u64> {
    Ok(client.execute(statement, params).await?)
}

/// Runs a write of a plan, prepared as `statement` (from the write's text).
pub(super) async fn exec_write(
    client: &impl GenericClient,
    statement: &Statement,
    write: &Write,
) -> StoreResult<u64> {
    let params: Vec<_> = write.params.iter().map(SqlValue::as_postgres).collect();
    exec(client, statement, &params).await
}

/// Begins a transaction that reads at read committed, as writes do: they lock the run first.
pub(super) const BEGIN: &str = "BEGIN";

/// Begins a transaction whose reads share one snapshot.
pub(super) const BEGIN_SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ";

/// Has the planner of the transaction's statements walk an index in its order rather than sort
/// what a bitmap of it found: a page (of the feed, of a listing) is then one range of an index,
/// whatever the statistics. On tables filled and not yet analyzed (autovacuum analyzes a table
/// once a tenth of it changed), the planner made each page a bitmap of every row of the tenant,
/// sorted: a snapshot of the feed of 100,000 calls took 14 s instead of half a second.
pub(super) const PLAN_BY_INDEX: &str = "SELECT set_config('enable_bitmapscan', 'off', true), \
     set_config('enable_sort', 'off', true)";

/// A pooled connection for one transaction whose `BEGIN` and `COMMIT` are statements of its
/// first and last flights ([`Self::begin`], [`Self::commit`]) rather than round trips of their
/// own; one that changes nothing after all ends with [`Self::rollback`].
///
/// The pool gives a connection back out as long as it is alive, in whatever state: one returned
/// inside a transaction would run its next user's statements in it and hold its locks meanwhile.
/// So this guard knows whether a transaction may be open, from when `BEGIN` is sent until
/// `COMMIT` or `ROLLBACK` has answered, and dropped in that state it detaches the connection from
/// the pool and drops it, which closes it: PostgreSQL rolls the transaction back. That is when
/// the operation's future was dropped during or between flights, and when a flight failed:
/// `try_join!` returns at its first error, before `COMMIT` answered, maybe before it was sent (a
/// statement that fails to encode fails at once, and the flight's later statements are never
/// sent). Errors are rare, and a new connection is cheap next to a leaked transaction.
pub(super) struct TxClient {
    /// `Some` until dropped.
    client: Option<Client>,
    begin: Statement,
    commit: Statement,
    rollback: Statement,
    /// Whether a transaction may be open.
    open: AtomicBool,
}

impl TxClient {
    /// A connection of the pool, for a transaction begun by `begin` ([`BEGIN`] or
    /// [`BEGIN_SNAPSHOT`]).
    pub(super) async fn get(pool: &Pool, begin: &str) -> StoreResult<Self> {
        let client = pool.get().await?;
        let [begin, commit, rollback] = prepare(&client, [begin, "COMMIT", "ROLLBACK"]).await?;
        Ok(Self {
            client: Some(client),
            begin,
            commit,
            rollback,
            open: AtomicBool::new(false),
        })
    }

    pub(super) fn client(&self) -> StoreResult<&Client> {
        self.client
            .as_ref()
            .ok_or_else(|| StoreError::Postgres("the connection was detached".into()))
    }

    pub(super) async fn run(&self, statement: &Statement) -> StoreResult<()> {
        exec(self.client()?, statement, &[]).await?;
        Ok(())
    }

    /// The rows of `sql` (at most `limit`) as a transaction of one flight reads them, planned by
    /// the index ([`PLAN_BY_INDEX`]). They are collected into a vector made for `limit` rows (up
    /// to [`PREALLOCATED_ROWS`]): `query`'s grew by doubling, copying the rows so far each time.
    pub(super) async fn select_by_index(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        limit: usize,
    ) -> StoreResult<Vec<Row>> {
        let client = self.client()?;
        let [plan_by_index, query] = prepare(client, [PLAN_BY_INDEX, sql]).await?;
        let ((), (), rows, ()) = try_join!(
            self.begin(),
            self.run(&plan_by_index),
            async {
                let mut rows = Vec::with_capacity(limit.min(PREALLOCATED_ROWS));
                let stream = client.query_raw(&query, params.iter().copied()).await?;
                futures::pin_mut!(stream);
                while let Some(row) = stream.try_next().await? {
                    rows.push(row);
                }
                Ok(rows)
            },
            self.commit(),
        )?;
        Ok(rows)
    }

    /// `BEGIN`: the first statement of the first flight.
    pub(super) async fn begin(&self) -> StoreResult<()> {
        self.open.store(true, Ordering::Relaxed);
        self.run(&self.begin).await
    }

    /// `COMMIT`: the last statement of the last flight. Once it has answered, no transaction is
    /// open, even when it rolled back one that a failed statement of the flight had aborted
    /// (the flight then returns that statement's error).
    pub(super) async fn commit(&self) -> StoreResult<()> {
        self.run(&self.commit).await?;
        self.open.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// [`Self::commit`], then `notice` ([`NOTIFY`], prepared as `statement`) to every replica as a
    /// statement of its own (its own transaction), in the same flight.
    ///
    /// PostgreSQL holds a database-wide lock from a `NOTIFY` until its transaction has committed,
    /// WAL flush included. Inside the change's transaction, that made every commit of every
    /// replica wait for the one before, their flushes never shared (at 64 concurrent round trips
    /// most backends were seen waiting for it). A transaction that only notifies writes nothing
    /// to flush, so it holds the lock for microseconds. The notice still goes only once the change
    /// has committed: only if the run has reached the notice's sequence (a change that failed
    /// leaves it below). And it is as sure to go as before: it is on the wire with the `COMMIT`,
    /// so PostgreSQL runs it even if this process dies right after; should PostgreSQL itself
    /// crash, every listener reconnects and reads everything again. A notice that fails after
    /// the `COMMIT` (its connection broke between the two) is logged, not returned: the change
    /// is made, and other replicas' followers of the run see it at the run's next notice.
    pub(super) async fn commit_announcing(
        &self,
        statement: &Statement,
        notice: Notice<'_>,
    ) -> StoreResult<()> {
        let client = self.client()?;
        let Notice {
            run_id,
            last_sequence,
            payload,
        } = &notice;
        let params: [&(dyn ToSql + Sync); 4] = [&NOTIFY_CHANNEL, payload, run_id, last_sequence];
        let (committed, noticed) = futures::join!(self.commit(), exec(client, statement, &params));
        committed?;
        // The change is made: a failed notice must not report it as failed (and have it retried).
        if let Err(error) = noticed {
            warn!(%error, run_id, "a commit's notice to the other replicas failed");
        }
        Ok(())
    }

    /// Ends with `ROLLBACK` a transaction that changes nothing after all, and gives back
    /// `outcome`, which its reads decided: should `ROLLBACK` fail, the connection is dropped.
    pub(super) async fn rollback<T>(&self, outcome: T) -> T {
        match self.run(&self.rollback).await {
            Ok(()) => self.open.store(false, Ordering::Relaxed),
            Err(error) => warn!(%error, "ROLLBACK failed; the connection is dropped"),
        }
        outcome
    }
}

impl Drop for TxClient {
    fn drop(&mut self) {
        if self.open.load(Ordering::Relaxed)
            && let Some(client) = self.client.take()
        {
            // Dropping the detached connection aborts its task, which closes the socket.
            drop(Client::take(client));
        }
    }
}
