//! Store faults and time: PostgreSQL's timeouts and health while it is unreachable, the database's
//! clock, a SQLite disk that fills up, and retention of runs that never finish or are many.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use askuser::store::{PostgresSettings, PostgresStore, StoreService};
use common::{
    FRAME_TIMEOUT, RunStream, Server, TcpProxy, fresh_database, get_run, next_status,
    postgres_client, report_figures, resume, scripted_agent, text_answer, url_address, url_through,
};
use tonic::Code;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// An agent that asks one question, with no time to live, and greets whoever answers.
fn greeter() -> String {
    scripted_agent(
        "greeter",
        &[
            r#"ask = [{ question = "Your name?" }]"#,
            r#"say = "hello {{answer.1}}""#,
        ],
    )
}

/// Starts a `greeter` run and reads it up to its question; returns the stream and the call's id.
async fn suspended_greeting(server: &Server) -> (RunStream, String) {
    let mut run = RunStream::start(&mut server.agents().await, "greeter").await;
    let call = run.next_suspended().await.tool_call_id;
    (run, call)
}

/// `askuser serve` with `args` (and nothing to connect to): the message it exits with.
fn refused_at_start(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .output()
        .expect("run askuser");
    assert!(!output.status.success(), "{args:?} was accepted");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn zero_pool_sizes_and_timeouts_are_refused_at_start() {
    let url = "postgres://askuser@127.0.0.1:1/askuser";
    let cases = [
        ("--database-pool-size", "0"),
        ("--database-pool-wait-timeout", "0s"),
        ("--database-connect-timeout", "0s"),
        ("--database-recycle-timeout", "0s"),
        ("--database-statement-timeout", "0s"),
        ("--database-lock-timeout", "0s"),
        ("--database-idle-in-transaction-timeout", "0s"),
        ("--store-unhealthy-after", "0s"),
        ("--max-run-age", "0s"),
    ];
    for (flag, value) in cases {
        let message = refused_at_start(&["--database-url", url, flag, value]);
        assert!(message.contains(flag), "{flag}: {message}");
        assert!(
            message.contains("must be at least 1") || message.contains("must be more than 0"),
            "{flag}: {message}"
        );
    }
}

/// A run whose row another session holds locked: a change to it fails with UNAVAILABLE once the
/// lock timeout passes, instead of waiting as long as the lock is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_waiting_on_a_lock_fails_unavailable_after_the_lock_timeout() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let server = Server::start_with(
        Some(&greeter()),
        &[
            "--database-url",
            &database,
            "--database-lock-timeout",
            "300ms",
        ],
    );
    let (run, _call) = suspended_greeting(&server).await;
    let mut db = postgres_client(&database).await;
    let holder = db.transaction().await.expect("begin");
    holder
        .execute(
            "SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE",
            &[&run.run_id],
        )
        .await
        .expect("lock the run");

    let mut agents = server.agents().await;
    let cancel = pb::CancelRunRequest {
        run_id: run.run_id.clone(),
        reason: "stop".into(),
    };
    let started = Instant::now();
    let status = tokio::time::timeout(FRAME_TIMEOUT, agents.cancel_run(cancel.clone()))
        .await
        .expect("the cancel waited on the lock past the lock timeout")
        .expect_err("a cancel of a locked run succeeded");
    let waited = started.elapsed();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("correlation id"), "{status:?}");
    assert!(!status.message().contains("lock"), "{status:?}");

    holder.rollback().await.expect("release the lock");
    let cancelled = agents
        .cancel_run(cancel)
        .await
        .expect("cancel once the lock is free")
        .into_inner()
        .run
        .expect("run");
    assert_eq!(cancelled.status(), pb::RunStatus::Cancelled);
    report_figures(
        "lock timeout 300ms",
        &[("waited_ms", waited.as_millis() as u64)],
    );
}

/// With every pooled connection busy (the only one waits on a lock), a request waits for a
/// connection at most the pool wait timeout, then fails with UNAVAILABLE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waits_for_a_pooled_connection_at_most_the_pool_wait_timeout() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let server = Server::start_with(
        Some(&greeter()),
        &[
            "--database-url",
            &database,
            "--database-pool-size",
            "1",
            "--database-pool-wait-timeout",
            "300ms",
        ],
    );
    let (run, _call) = suspended_greeting(&server).await;
    let mut db = postgres_client(&database).await;
    let holder = db.transaction().await.expect("begin");
    holder
        .execute(
            "SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE",
            &[&run.run_id],
        )
        .await
        .expect("lock the run");
    // The cancel takes the pool's one connection and waits on the lock (10 s by default).
    let mut canceller = server.agents().await;
    let cancel = tokio::spawn(async move {
        canceller
            .cancel_run(pb::CancelRunRequest {
                run_id: run.run_id.clone(),
                reason: "stop".into(),
            })
            .await
    });
    // Until the cancel holds the connection, a read may still get it.
    let mut agents = server.agents().await;
    let started = Instant::now();
    let status = loop {
        let read = tokio::time::timeout(
            FRAME_TIMEOUT,
            agents.list_runs(pb::ListRunsRequest::default()),
        )
        .await
        .expect("a read waited for a connection past the pool wait timeout");
        match read {
            Ok(_) => assert!(
                started.elapsed() < FRAME_TIMEOUT,
                "the cancel never took the connection"
            ),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("correlation id"), "{status:?}");

    holder.rollback().await.expect("release the lock");
    let cancelled = cancel
        .await
        .expect("cancel task")
        .expect("the cancel once the lock is free")
        .into_inner()
        .run
        .expect("run");
    assert_eq!(cancelled.status(), pb::RunStatus::Cancelled);
}

/// Health follows the database: NOT_SERVING for "" and both services once it has been unreachable
/// for `--store-unhealthy-after`, SERVING again once it is back, and runs work again then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_not_serving_while_the_database_is_unreachable() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let proxy = TcpProxy::start(url_address(&database)).await;
    let server = Server::start_with(
        Some(&greeter()),
        &[
            "--database-url",
            &url_through(&database, proxy.addr),
            "--store-unhealthy-after",
            "1s",
            "--database-connect-timeout",
            "1s",
            "--database-pool-wait-timeout",
            "1s",
        ],
    );
    let mut health = HealthClient::new(server.channel().await);
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("watch health")
        .into_inner();
    assert_eq!(next_status(&mut watch).await, ServingStatus::Serving);

    let cut = Instant::now();
    proxy.cut();
    assert_eq!(next_status(&mut watch).await, ServingStatus::NotServing);
    let noticed = cut.elapsed();
    for service in ["askuser.v1.AgentService", "askuser.v1.ToolService"] {
        let status = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("check health")
            .into_inner()
            .status();
        assert_eq!(status, ServingStatus::NotServing, "{service}");
    }
    // A call meanwhile fails at once, and says to try again.
    let status = server
        .agents()
        .await
        .get_run(pb::GetRunRequest {
            run_id: "0190a3c4-0000-7000-8000-000000000000".into(),
        })
        .await
        .expect_err("a read while the database is unreachable");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");

    let restored = Instant::now();
    proxy.restore();
    assert_eq!(next_status(&mut watch).await, ServingStatus::Serving);
    let recovered = restored.elapsed();
    let (run, call) = suspended_greeting(&server).await;
    let frames = resume(
        &mut server.agents().await,
        text_answer(&run.run_id, &call, "Ada"),
    )
    .await
    .expect("answer once the database is back");
    assert!(
        frames
            .iter()
            .any(|frame| matches!(&frame.event, Some(Event::RunCompleted(done)) if done.output_text == "hello Ada")),
        "{frames:?}"
    );
    report_figures(
        "health with the database cut (unhealthy after 1s)",
        &[
            ("not_serving_after_ms", noticed.as_millis() as u64),
            ("serving_again_after_ms", recovered.as_millis() as u64),
        ],
    );
}

/// The store's clock is the database's: `now_ms` falls between two readings of the database's
/// clock taken around it, give or take the round trips that measured it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_stores_clock_is_the_databases() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let store = PostgresStore::connect(&database, &PostgresSettings::default())
        .await
        .expect("connect");
    let db = postgres_client(&database).await;
    let database_ms = || async {
        db.query_one(
            "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
            &[],
        )
        .await
        .expect("read the database's clock")
        .get::<_, i64>(0)
    };
    store.ping().await.expect("ping");
    let mut worst = 0;
    for _ in 0..20 {
        let sent = Instant::now();
        let before = database_ms().await;
        let now = store.now_ms();
        let after = database_ms().await;
        // Milliseconds are whole on both sides, and the store measured its offset to within half
        // of a round trip of its own.
        let slack = 2 + sent.elapsed().as_millis() as i64;
        assert!(
            before - slack <= now && now <= after + slack,
            "store clock {now} outside the database's [{before}, {after}] ± {slack}"
        );
        worst = worst.max((now - before).abs().max((now - after).abs()));
    }
    report_figures(
        "store clock vs database clock",
        &[("worst_ms", worst as u64)],
    );
}

/// SQLite on a disk that fills up (every write of the server's files fails, EFBIG as under a file
/// size limit): answers fail with UNAVAILABLE and a correlation id, nothing is half-written, and
/// once there is room again the same answer goes through and the run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_answers_fail_unavailable_on_a_full_disk_and_go_through_once_there_is_room() {
    let mut server = Server::process_with(Some(&greeter()), &[]);
    let pid = server.pid().expect("server pid");
    let (earlier, call) = suspended_greeting(&server).await;
    resume(
        &mut server.agents().await,
        text_answer(&earlier.run_id, &call, "Ada"),
    )
    .await
    .expect("answer before the fault");
    let (run, call) = suspended_greeting(&server).await;

    // Soft limit 0: every write to a file fails; the hard limit stays, to raise it again.
    common::set_file_size_limit(pid, "0:unlimited");
    let mut agents = server.agents().await;
    let mut failures = 0;
    for _ in 0..3 {
        let status = resume(&mut agents, text_answer(&run.run_id, &call, "Bob"))
            .await
            .expect_err("an answer committed with no room to write");
        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        assert!(status.message().contains("correlation id"), "{status:?}");
        failures += 1;
    }
    assert_eq!(
        get_run(&mut agents, &run.run_id).await.status(),
        pb::RunStatus::Suspended
    );

    common::set_file_size_limit(pid, "unlimited");
    let frames = resume(&mut agents, text_answer(&run.run_id, &call, "Bob"))
        .await
        .expect("the answer once there is room");
    assert!(
        frames
            .iter()
            .any(|frame| matches!(&frame.event, Some(Event::RunCompleted(done)) if done.output_text == "hello Bob")),
        "{frames:?}"
    );
    let before = get_run(&mut agents, &earlier.run_id).await;
    assert_eq!(before.status(), pb::RunStatus::Completed);
    assert_eq!(before.output_text, "hello Ada");
    assert_eq!(server.pid(), Some(pid), "the server restarted");

    server.kill();
    let conn = rusqlite::Connection::open(server.data_path().join("askuser.sqlite3"))
        .expect("open the database");
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity check");
    assert_eq!(integrity, "ok");
    let statuses: Vec<String> = conn
        .prepare("SELECT status FROM runs ORDER BY run_id")
        .expect("prepare")
        .query_map([], |row| row.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("statuses");
    assert_eq!(statuses, ["completed", "completed"]);
    report_figures(
        "sqlite with no room to write",
        &[("unavailable_answers", failures)],
    );
}

/// A run waiting on a question without a time to live is cancelled once older than
/// `--max-run-age`; its follower sees `run_cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_older_than_the_max_run_age_is_cancelled() {
    let server = Server::start_with(
        Some(&greeter()),
        &[
            "--max-run-age",
            "2s",
            "--prune-interval",
            "500ms",
            // No heartbeat: a frame is either the cancellation or nothing.
            "--heartbeat-interval",
            "1h",
        ],
    );
    let (mut run, call) = suspended_greeting(&server).await;
    let started = Instant::now();
    let mut results = Vec::new();
    let reason = loop {
        let frame = run.next().await;
        match frame.event {
            Some(Event::ToolResult(result)) => results.push(result.tool_call_id),
            Some(Event::RunCancelled(cancelled)) => break cancelled.reason,
            other => panic!("unexpected frame {other:?}"),
        }
    };
    let waited = started.elapsed();
    assert!(reason.contains("max run age"), "{reason}");
    assert_eq!(results, [call]);
    assert!(run.next_raw().await.is_none(), "the stream goes on");
    let stored = get_run(&mut server.agents().await, &run.run_id).await;
    assert_eq!(stored.status(), pb::RunStatus::Cancelled);
    report_figures(
        "max run age 2s",
        &[("cancelled_after_ms", waited.as_millis() as u64)],
    );
}

/// How many runs the first page of `ListRuns` (up to 1000) holds.
async fn run_count(client: &mut AgentServiceClient<Channel>) -> usize {
    client
        .list_runs(pb::ListRunsRequest {
            page_size: 1000,
            ..Default::default()
        })
        .await
        .expect("list runs")
        .into_inner()
        .runs
        .len()
}

/// More finished runs than one prune transaction takes are all pruned, batch after batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_prunes_more_runs_than_a_batch() {
    const RUNS: usize = 1_100;
    let agents = scripted_agent("hello", &[r#"say = "hi""#]);
    let mut server = Server::process_with(
        Some(&agents),
        &["--retention", "0s", "--log-format", "json"],
    );
    let mut client = server.agents().await;
    for _ in 0..RUNS {
        let mut run = RunStream::start(&mut client, "hello").await;
        assert_eq!(run.completed_text().await, "hi");
    }
    assert_eq!(run_count(&mut client).await, 1000);

    // Retention runs its first prune at start.
    server.restart();
    let mut client = server.agents().await;
    let deadline = Instant::now() + FRAME_TIMEOUT;
    while run_count(&mut client).await > 0 {
        assert!(Instant::now() < deadline, "runs left after the prune");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = server.log();
    let pruned: u64 = log
        .lines()
        .filter(|line| line.contains("pruned finished runs past retention"))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|line| line["fields"]["pruned"].as_u64())
        .sum();
    assert_eq!(pruned, RUNS as u64, "{log}");
    report_figures("retention", &[("runs_pruned", pruned)]);
}

/// SQLite reads have connections of their own: while the database's write lock is held (here by
/// the test, as a long write batch would hold it), GetRun, ListRuns and a replay from the start
/// still answer. Before, every read queued behind the writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reads_do_not_wait_for_writes() {
    let server = Server::start_with(Some(&greeter()), &[]);
    let (run, call) = suspended_greeting(&server).await;
    let mut agents = server.agents().await;

    let lock = common::WriteLock::take(&server).await;
    let reads = async {
        let got = get_run(&mut agents, &run.run_id).await;
        let listed = agents
            .list_runs(pb::ListRunsRequest::default())
            .await
            .expect("list")
            .into_inner()
            .runs;
        let replayed = agents
            .watch_run(pb::WatchRunRequest {
                run_id: run.run_id.clone(),
                after_sequence: 0,
            })
            .await
            .expect("watch")
            .into_inner()
            .message()
            .await
            .expect("first frame")
            .expect("a frame");
        (got, listed, replayed)
    };
    let (got, listed, replayed) = tokio::time::timeout(Duration::from_secs(3), reads)
        .await
        .expect("reads waited for the write lock");
    assert_eq!(got.status(), pb::RunStatus::Suspended);
    assert_eq!(listed.len(), 1);
    assert_eq!(replayed.sequence, 1);

    drop(lock);
    let frames = resume(&mut agents, text_answer(&run.run_id, &call, "Ada"))
        .await
        .expect("the answer once the lock is free");
    assert!(
        frames
            .iter()
            .any(|frame| matches!(&frame.event, Some(Event::RunCompleted(_)))),
        "{frames:?}"
    );
}
