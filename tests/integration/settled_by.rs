//! Who settled each call is recorded in its `tool_result` event, live and in the stored log: the
//! principal that answered or cancelled, or the server itself for an expiry.

use crate::common;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    RunStream, Server, get_run, scripted_agent, scripted_agent_with, timestamp_ms, watch_until_end,
};

fn settlers(log: &[pb::RunAgentResponse]) -> Vec<(i32, Option<pb::SettledBy>)> {
    log.iter()
        .filter_map(|frame| match &frame.event {
            Some(Event::ToolResult(result)) => Some((result.kind, result.settled_by.clone())),
            _ => None,
        })
        .collect()
}

fn anonymous() -> pb::SettledBy {
    pb::SettledBy {
        tenant: "default".into(),
        subject: "anonymous".into(),
        method: pb::AuthMethod::None as i32,
    }
}

#[tokio::test]
async fn an_expiry_is_settled_by_the_server_and_a_cancel_by_its_caller() {
    let agents = [
        scripted_agent_with(
            "brief",
            "question_ttl = \"300ms\"",
            &[r#"ask = [{ question = "Quick?" }]"#, r#"say = "done""#],
        ),
        scripted_agent("asks", &[r#"ask = [{ question = "Name?" }]"#]),
    ]
    .join("\n");
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;

    let mut expiring = RunStream::start(&mut client, "brief").await;
    expiring.completed_text().await;
    let mut cancelled = RunStream::start(&mut client, "asks").await;
    cancelled.next_suspended().await;
    client
        .cancel_run(pb::CancelRunRequest {
            run_id: cancelled.run_id.clone(),
            reason: "not needed".into(),
        })
        .await
        .expect("cancel");

    // From the stored log: the events as they were committed.
    let expired = watch_until_end(&mut client, &expiring.run_id, 0).await;
    assert_eq!(
        settlers(&expired),
        [(
            pb::ToolResultKind::Expired as i32,
            Some(pb::SettledBy {
                tenant: String::new(),
                subject: "askuser".into(),
                method: pb::AuthMethod::Server as i32,
            })
        )]
    );
    let cancel = watch_until_end(&mut client, &cancelled.run_id, 0).await;
    assert_eq!(
        settlers(&cancel),
        [(pb::ToolResultKind::Cancelled as i32, Some(anonymous()))]
    );

    // GetRun says the same, with the time of each settle.
    for (run_id, log) in [(&expiring.run_id, &expired), (&cancelled.run_id, &cancel)] {
        let run = get_run(&mut client, run_id).await;
        let settled: Vec<(i32, Option<pb::SettledBy>)> = run
            .settled_tool_calls
            .iter()
            .map(|call| (call.kind, call.settled_by.clone()))
            .collect();
        assert_eq!(settled, settlers(log));
        for call in &run.settled_tool_calls {
            let settled_ms = timestamp_ms(call.settle_time.as_ref().expect("settle time"));
            assert!(settled_ms >= timestamp_ms(run.create_time.as_ref().expect("created")));
            assert!(call.result_sequence > 0 && call.result_sequence <= run.last_sequence);
        }
    }
}
