//! An MCP server's elicitation reaches a person: the fixture's `rollout` tool asks how to roll out
//! (a multi round-trip request, as the Python SDK makes one on the 2026-07-28 revision), the call
//! waits as a form like any other, and the answer (or a decline, a reply, an expiry) goes back to
//! the tool, which finishes the call. The wait is stored: it survives a SIGKILL, and on
//! PostgreSQL another replica goes on with it.

use crate::common;
use crate::forms::{answer, boolean, form_answer, number};
use crate::mcp_tools::{CallLog, agent, stdio_server, wait_up};

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;

use common::{RunStream, Server, fresh_database, get_run, resume};

const ROLLOUT: &str = r#"{ tool = "team__rollout", arguments = { service = "api" } }"#;

fn agents(log: &CallLog, settings: &str) -> String {
    stdio_server("team", log, &format!("approval = \"never\"\n{settings}"))
        + &agent("ops", &["team"], &[ROLLOUT])
}

/// Starts `ops` and returns its stream and the form it waits on.
async fn started(server: &Server) -> (RunStream, pb::ToolCallSuspended) {
    wait_up(server, "ops").await;
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "ops").await;
    let suspended = run.next_suspended().await;
    (run, suspended)
}

/// The result of the run's one call and its end, from `ResumeRun` with `answer`.
pub(crate) async fn answered(server: &Server, answer: pb::Answer) -> (pb::ToolResult, String) {
    let mut client = server.agents().await;
    let frames = resume(&mut client, answer).await.expect("ResumeRun");
    ended(&frames)
}

fn ended(frames: &[pb::RunAgentResponse]) -> (pb::ToolResult, String) {
    let result = frames
        .iter()
        .find_map(|frame| match &frame.event {
            Some(Event::ToolResult(result)) => Some(result.clone()),
            _ => None,
        })
        .expect("a tool result");
    let output = common::completions(frames)
        .first()
        .map(|s| s.to_string())
        .expect("the run completed");
    (result, output)
}

fn rollout_answer(run_id: &str, call: &str) -> pb::Answer {
    form_answer(
        run_id,
        call,
        &[("replicas", number(3.0)), ("confirm", boolean(true))],
    )
}

#[tokio::test]
async fn an_elicitation_waits_as_a_form_and_the_answer_goes_back_to_the_tool() {
    let log = CallLog::new();
    let server = Server::start_with(Some(&agents(&log, "")), &[]);
    let (run, suspended) = started(&server).await;
    assert_eq!(suspended.kind(), pb::SuspendKind::Form);
    assert_eq!(suspended.tool_name, "team__rollout");
    let form = suspended.form.clone().expect("a form");
    assert_eq!(form.message, "How should api roll out?");
    // The SDK hands the schema over as a map sorted by name, so fields come in that order.
    let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["confirm", "replicas"]);
    match &form.fields[1].kind {
        Some(pb::form_field::Kind::Number(number)) => {
            assert!(number.integer);
            assert_eq!((number.minimum, number.maximum), (Some(1.0), Some(10.0)));
        }
        other => panic!("replicas is a number field: {other:?}"),
    }
    // While it waits the run is suspended and the call is listed as pending, like any form.
    let mut client = server.agents().await;
    let stored = get_run(&mut client, &run.run_id).await;
    assert_eq!(stored.status(), pb::RunStatus::Suspended);
    assert_eq!(stored.pending_tool_calls.len(), 1);
    assert!(stored.pending_tool_calls[0].form.is_some());
    assert!(
        log.calls().is_empty(),
        "the tool's body waits for the answer"
    );

    // An answer that does not fit the server's schema is refused; the form stays answerable.
    let mut client = server.agents().await;
    let refused = client
        .resume_run(pb::ResumeRunRequest {
            answer: Some(form_answer(
                &run.run_id,
                &suspended.tool_call_id,
                &[("replicas", number(11.0)), ("confirm", boolean(true))],
            )),
        })
        .await
        .expect_err("11 replicas is past the maximum");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);

    let (result, output) = answered(
        &server,
        rollout_answer(&run.run_id, &suspended.tool_call_id),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "api: 3 replicas, confirm=True");
    assert_eq!(output, "api: 3 replicas, confirm=True");
    let calls = log.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["arguments"]["action"], "accept");
}

#[tokio::test]
async fn a_decline_a_reply_and_an_expiry_reach_the_tool_as_decline_decline_and_cancel() {
    let log = CallLog::new();
    let server = Server::start_with(Some(&agents(&log, "elicitation_timeout = \"1s\"")), &[]);

    let (run, suspended) = started(&server).await;
    let decline = answer(
        &run.run_id,
        &suspended.tool_call_id,
        pb::answer::Answer::Decline(pb::Decline {
            reason: "not today".into(),
        }),
    );
    assert_eq!(answered(&server, decline).await.1, "api: decline");

    let (run, suspended) = started(&server).await;
    let reply = answer(
        &run.run_id,
        &suspended.tool_call_id,
        pb::answer::Answer::Reply("ask ops first".into()),
    );
    assert_eq!(answered(&server, reply).await.1, "api: decline");

    // Unanswered past the server's elicitation_timeout: cancel.
    let (mut run, suspended) = started(&server).await;
    assert!(suspended.expire_time.is_some());
    let frames = run.frames_until_end().await;
    assert_eq!(ended(&frames).1, "api: cancel");
    let actions: Vec<String> = log
        .calls()
        .iter()
        .map(|c| {
            c["arguments"]["action"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(actions, ["decline", "decline", "cancel"]);
}

#[tokio::test]
async fn an_elicitation_answered_after_a_sigkill_goes_on_after_the_restart() {
    let log = CallLog::new();
    let mut server = Server::process_with(Some(&agents(&log, "")), &["--lease-ttl", "1s"]);
    let (run, suspended) = started(&server).await;
    let run_id = run.run_id.clone();
    drop(run);
    server.kill();
    server.restart();
    wait_up(&server, "ops").await;
    let (result, output) =
        answered(&server, rollout_answer(&run_id, &suspended.tool_call_id)).await;
    assert_eq!(result.content, "api: 3 replicas, confirm=True");
    assert_eq!(output, "api: 3 replicas, confirm=True");
}

#[tokio::test]
async fn on_postgresql_another_replica_goes_on_with_an_elicitation() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let log = CallLog::new();
    let toml = agents(&log, "");
    let args = ["--database-url", database.as_str(), "--lease-ttl", "1s"];
    let mut first = Server::process_with(Some(&toml), &args);
    let second = Server::process_with(Some(&toml), &args);
    let (run, suspended) = started(&first).await;
    let run_id = run.run_id.clone();
    drop(run);
    first.kill();
    wait_up(&second, "ops").await;
    let (result, output) =
        answered(&second, rollout_answer(&run_id, &suspended.tool_call_id)).await;
    assert_eq!(result.content, "api: 3 replicas, confirm=True");
    assert_eq!(output, "api: 3 replicas, confirm=True");
    let calls = log.calls();
    assert_eq!(calls.len(), 1, "the tool's body ran once: {calls:?}");
}

/// The fixture pinned to the 2025-11-25 revision: it asks with `elicitation/create` within the
/// open call.
fn live_agents(log: &CallLog, settings: &str) -> String {
    agents(
        log,
        &format!("protocol_version = \"2025-11-25\"\n{settings}"),
    )
}

#[tokio::test]
async fn within_a_live_call_an_elicitation_is_answered_and_one_left_unanswered_is_cancelled() {
    let log = CallLog::new();
    let server = Server::start_with(
        Some(&live_agents(&log, "elicitation_timeout = \"2s\"")),
        &[],
    );
    let (run, suspended) = started(&server).await;
    assert_eq!(suspended.kind(), pb::SuspendKind::Form);
    assert_eq!(
        suspended.form.as_ref().map(|f| f.message.as_str()),
        Some("How should api roll out?")
    );
    // The live call waits while the person takes their time; the run waits with it.
    let mut client = server.agents().await;
    assert_eq!(
        get_run(&mut client, &run.run_id)
            .await
            .pending_tool_calls
            .len(),
        1
    );
    let (result, output) = answered(
        &server,
        rollout_answer(&run.run_id, &suspended.tool_call_id),
    )
    .await;
    assert_eq!(result.content, "api: 3 replicas, confirm=True");
    assert_eq!(output, "api: 3 replicas, confirm=True");

    let (mut run, _) = started(&server).await;
    let frames = run.frames_until_end().await;
    assert_eq!(ended(&frames).1, "api: cancel");
}

/// SIGKILL while a live call waits for a person: after the restart the form is withdrawn, the
/// call made again, and the server's new question is a new form on the same call.
#[tokio::test]
async fn a_live_elicitation_cut_by_a_sigkill_is_asked_again_after_the_restart() {
    let log = CallLog::new();
    let mut server = Server::process_with(Some(&live_agents(&log, "")), &["--lease-ttl", "1s"]);
    let (run, first) = started(&server).await;
    let run_id = run.run_id.clone();
    drop(run);
    server.kill();
    server.restart();
    let mut client = server.agents().await;
    let mut watch = client
        .watch_run(pb::WatchRunRequest {
            run_id: run_id.clone(),
            after_sequence: 0,
        })
        .await
        .expect("WatchRun")
        .into_inner();
    let mut asked = 0;
    while asked < 2 {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(60), watch.message())
            .await
            .expect("the call is asked again")
            .expect("stream")
            .expect("not ended");
        if let Some(Event::ToolCallSuspended(suspended)) = frame.event {
            assert_eq!(suspended.tool_call_id, first.tool_call_id);
            asked += 1;
        }
    }
    let (result, output) = answered(&server, rollout_answer(&run_id, &first.tool_call_id)).await;
    assert_eq!(result.content, "api: 3 replicas, confirm=True");
    assert_eq!(output, "api: 3 replicas, confirm=True");
}
