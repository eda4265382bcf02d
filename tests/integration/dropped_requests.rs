//! A write outlives the request that caused it: a client that goes away right after sending a
//! start, an answer or a cancel does not leave the write committed and unpublished, nor the run
//! waiting for its lease to lapse.
//!
//! The window is hit reliably by holding SQLite's write lock from the test: the server's write
//! waits for it, the client goes away meanwhile (its request future is dropped), and then the lock
//! is released. The lease is far longer than the tests wait, so a run that continues at all
//! continues because the write's follow-up ran, not because the run was taken over.

use crate::common;

use std::time::Duration;

use askuser::proto::v1 as pb;
use common::{
    FRAME_TIMEOUT, RunStream, Server, WriteLock, event_name, scripted_agent, text_answer,
};
use tokio_stream::StreamExt;

const LEASE: &str = "300s";
/// How long the client waits, with its request sent and the store locked, before it goes away.
const SENT: Duration = Duration::from_millis(600);
/// How long the store stays locked after the client went away.
const GONE: Duration = Duration::from_millis(300);

fn agents() -> String {
    [
        scripted_agent(
            "asks",
            &[
                r#"ask = [{ question = "Your name?" }]"#,
                r#"say = "hello {{answer.1}}""#,
            ],
        ),
        scripted_agent("says", &[r#"say = "done""#]),
    ]
    .join("\n")
}

fn start_server() -> Server {
    Server::start_with(Some(&agents()), &["--lease-ttl", LEASE])
}

/// Runs `request` and abandons it after [`SENT`]: the client goes away with it in flight. The
/// request's client must be its own (moved into `request`), so that its connection closes too.
async fn send_and_go_away<F>(request: F)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + std::fmt::Debug,
{
    let call = tokio::spawn(request);
    tokio::time::sleep(SENT).await;
    assert!(
        !call.is_finished(),
        "the request finished while the store was locked: {:?}",
        call.await
    );
    call.abort();
    let _ = call.await;
    // Let the reset reach the server, which drops the request's future, before the lock goes.
    tokio::time::sleep(GONE).await;
}

/// Frames of `stream` until the run ends, or a panic after [`FRAME_TIMEOUT`] without one.
async fn frames_until_end(
    server: &Server,
    stream: &mut tonic::Streaming<pb::RunAgentResponse>,
) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        let frame = tokio::time::timeout(FRAME_TIMEOUT, stream.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the run stalled; frames so far: {names:?}\n{}",
                    server.log()
                )
            })
            .expect("the stream ended without the run's end")
            .expect("frame");
        let name = event_name(&frame);
        names.push(name.to_owned());
        if matches!(name, "run_completed" | "run_failed" | "run_cancelled") {
            return names;
        }
    }
}

#[tokio::test]
async fn an_answer_whose_client_went_away_is_published_and_the_run_goes_on() {
    let server = start_server();
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "asks").await;
    let question = run.next_suspended().await;
    let mut watch = client
        .watch_run(pb::WatchRunRequest {
            run_id: run.run_id.clone(),
            after_sequence: 0,
        })
        .await
        .expect("watch")
        .into_inner();

    let lock = WriteLock::take(&server).await;
    let mut answering = server.agents().await;
    let answer = text_answer(&run.run_id, &question.tool_call_id, "Ada");
    send_and_go_away(async move {
        answering
            .resume_run(pb::ResumeRunRequest {
                answer: Some(answer),
            })
            .await
            .map(|_| ())
    })
    .await;
    drop(lock);

    let names = frames_until_end(&server, &mut watch).await;
    assert!(names.contains(&"tool_result".to_owned()), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("run_completed"));
    let run = common::get_run(&mut client, &run.run_id).await;
    assert_eq!(run.output_text, "hello Ada");
}

#[tokio::test]
async fn a_start_whose_client_went_away_runs_at_once() {
    let server = start_server();
    let mut client = server.agents().await;

    let lock = WriteLock::take(&server).await;
    let mut starting = server.agents().await;
    send_and_go_away(async move {
        let (sender, receiver) = tokio::sync::mpsc::channel(1);
        sender
            .send(pb::RunAgentRequest {
                frame: Some(pb::run_agent_request::Frame::Start(pb::StartRun {
                    agent_id: "says".into(),
                    ..Default::default()
                })),
            })
            .await
            .expect("queue the start");
        let response = starting
            .run_agent(tokio_stream::wrappers::ReceiverStream::new(receiver))
            .await;
        (response.map(|_| ()), sender)
    })
    .await;
    drop(lock);

    // The run was created by a request nobody waits for; it must run to its end by itself.
    let deadline = tokio::time::Instant::now() + FRAME_TIMEOUT;
    loop {
        let runs = client
            .list_runs(pb::ListRunsRequest {
                agent_id: "says".into(),
                ..Default::default()
            })
            .await
            .expect("list")
            .into_inner()
            .runs;
        let status = runs.first().map(|r| r.status());
        if status == Some(pb::RunStatus::Completed) {
            assert_eq!(runs.len(), 1);
            assert_eq!(runs[0].output_text, "done");
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the started run did not finish: {status:?}\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_cancel_whose_client_went_away_reaches_followers() {
    let server = start_server();
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "asks").await;
    run.next_suspended().await;

    let lock = WriteLock::take(&server).await;
    let mut cancelling = server.agents().await;
    let run_id = run.run_id.clone();
    send_and_go_away(async move {
        cancelling
            .cancel_run(pb::CancelRunRequest {
                run_id,
                reason: "changed my mind".into(),
            })
            .await
            .map(|_| ())
    })
    .await;
    drop(lock);

    let names = frames_until_end(&server, &mut run.inbound).await;
    assert_eq!(
        names.last().map(String::as_str),
        Some("run_cancelled"),
        "{names:?}"
    );
}
