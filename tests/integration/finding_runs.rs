//! Finding runs through the API: `ListRuns` filtered by metadata, creation time and the kind of a
//! waiting call, paged with tokens bound to the filters; `GetRun` saying when calls waited and were
//! settled. (Both stores run the same filters in store_suite.rs.)

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use common::{
    RunStream, Server, field_violations, get_run, report_figures, resume, scripted_agent,
    text_answer, timestamp_ms,
};
use tonic::transport::Channel;

/// Starts a run of `agent_id` with `team` in its metadata; returns it once it waits or ends.
async fn start(client: &mut AgentServiceClient<Channel>, agent_id: &str, team: &str) -> String {
    let mut stream = RunStream::open(
        client,
        Frame::Start(pb::StartRun {
            agent_id: agent_id.into(),
            prompt: "go".into(),
            metadata: HashMap::from([("team".to_owned(), team.to_owned())]),
            ..Default::default()
        }),
    )
    .await
    .expect("start run");
    let run_id = stream.next().await.run_id;
    match agent_id {
        "asker" => {
            stream.next_suspended().await;
        }
        _ => {
            stream.completed_text().await;
        }
    }
    run_id
}

/// Every page of `request`, `page_size` runs each, following the tokens.
async fn pages(
    client: &mut AgentServiceClient<Channel>,
    request: pb::ListRunsRequest,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = client
            .list_runs(pb::ListRunsRequest {
                page_token,
                ..request.clone()
            })
            .await
            .expect("list runs")
            .into_inner();
        pages.push(page.runs.into_iter().map(|run| run.run_id).collect());
        if page.next_page_token.is_empty() {
            return pages;
        }
        page_token = page.next_page_token;
    }
}

#[tokio::test]
async fn list_runs_filters_page_and_get_run_shows_timings() {
    let agents = [
        scripted_agent(
            "asker",
            &[
                r#"ask = [{ question = "Which region?" }]"#,
                r#"say = "ok {{answer.1}}""#,
            ],
        ),
        scripted_agent("sayer", &[r#"say = "done""#]),
    ]
    .join("\n");
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    // Newest first: ids are time-ordered.
    let mut runs = Vec::new();
    for (agent, team) in [
        ("asker", "storage"),
        ("sayer", "storage"),
        ("asker", "compute"),
        ("asker", "storage"),
        ("sayer", "compute"),
    ] {
        runs.push(start(&mut client, agent, team).await);
        // Each run in a millisecond of its own: the creation-time window below is bounded by the
        // third's and the fifth's, which must differ (five runs can start within one).
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let newest_first =
        |indexes: &[usize]| -> Vec<String> { indexes.iter().map(|&i| runs[i].clone()).collect() };

    let storage = pb::ListRunsRequest {
        metadata: HashMap::from([("team".to_owned(), "storage".to_owned())]),
        page_size: 1,
        ..Default::default()
    };
    let storage_pages = pages(&mut client, storage.clone()).await;
    assert_eq!(storage_pages.concat(), newest_first(&[3, 1, 0]));
    assert_eq!(storage_pages.len(), 3, "one run a page");

    let waiting_storage = pb::ListRunsRequest {
        pending_kind: pb::SuspendKind::Question as i32,
        ..storage.clone()
    };
    assert_eq!(
        pages(&mut client, waiting_storage.clone()).await.concat(),
        newest_first(&[3, 0])
    );
    // A token is its listing's only.
    let first = client
        .list_runs(waiting_storage.clone())
        .await
        .expect("list runs")
        .into_inner();
    let other_filter = client
        .list_runs(pb::ListRunsRequest {
            page_token: first.next_page_token,
            ..storage.clone()
        })
        .await
        .expect_err("a token of another listing");
    assert_eq!(other_filter.code(), tonic::Code::InvalidArgument);

    // Created at or after the third run, and before the fifth.
    let third = get_run(&mut client, &runs[2]).await;
    let fifth = get_run(&mut client, &runs[4]).await;
    let window = pb::ListRunsRequest {
        create_time_after: third.create_time,
        create_time_before: fifth.create_time,
        page_size: 1,
        ..Default::default()
    };
    let in_window = pages(&mut client, window).await.concat();
    // (Runs started in the same millisecond as the third are in the window too: the store tests
    // check the bounds exactly.)
    assert!(
        in_window.contains(&runs[2]) && !in_window.contains(&runs[4]),
        "{in_window:?}"
    );

    let unknown_kind = client
        .list_runs(pb::ListRunsRequest {
            pending_kind: 42,
            ..Default::default()
        })
        .await
        .expect_err("an unknown kind");
    assert_eq!(field_violations(&unknown_kind)[0].0, "pending_kind");

    // GetRun: when the question started waiting, and when it was settled.
    let waiting = get_run(&mut client, &runs[0]).await;
    let [call] = &waiting.pending_tool_calls[..] else {
        panic!("one waiting call: {waiting:?}");
    };
    let suspend_time = call.suspend_time.expect("since when it waits");
    assert!(timestamp_ms(&suspend_time) >= timestamp_ms(&waiting.create_time.expect("created")));
    resume(
        &mut client,
        text_answer(&runs[0], &call.tool_call_id, "eu-west"),
    )
    .await
    .expect("answer");
    let answered = get_run(&mut client, &runs[0]).await;
    let [settled] = &answered.settled_tool_calls[..] else {
        panic!("one settled call: {answered:?}");
    };
    assert_eq!(settled.suspend_time, Some(suspend_time));
    let settle_time = settled.settle_time.expect("when it was settled");
    assert!(timestamp_ms(&settle_time) >= timestamp_ms(&suspend_time));
    // No longer waiting: out of the pending-kind listing.
    assert_eq!(
        pages(&mut client, waiting_storage).await.concat(),
        newest_first(&[3])
    );

    report_figures(
        "finding_runs",
        &[
            ("runs", runs.len() as u64),
            ("storage_pages", storage_pages.len() as u64),
            (
                "wait_ms",
                u64::try_from(timestamp_ms(&settle_time) - timestamp_ms(&suspend_time))
                    .unwrap_or(0),
            ),
        ],
    );
}
