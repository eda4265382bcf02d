//! Assignees against the real server with API keys (a key's subject is `key:<name>`): a question
//! or an approval that names assignees is settled only by them; anyone else gets PERMISSION_DENIED
//! `NOT_ASSIGNEE` (or an `answer_rejected` frame on a stream) and the call stays pending; the
//! pending-calls feed can show only the calls assigned to the caller, and says who settled a call.

use crate::common;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use askuser::proto::v1::watch_pending_calls_response::Event as Pending;
use common::credentials::{authorized, create_key, resume_as, sqlite_store};
use common::{FRAME_TIMEOUT, RunStream, Server, pending_snapshot, text_answer, tool_output_answer};
use tonic::Code;
use tonic::transport::Channel;

const AGENTS: &str = r#"
[[tool]]
name = "deploy"
kind = "client"
approval = "always"
assignees = ["key:bob"]

[[agent]]
id = "reviewed"
assignees = ["key:alice"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
ask = [{ question = "Ship it?" }]
[[agent.model.turns]]
say = "shipped: {{answer.1}}"

[[agent]]
id = "deployer"
assignees = ["key:alice"]
tools = ["deploy"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{ tool = "deploy", arguments = { service = "api" } }]
[[agent.model.turns]]
say = "deployed: {{result.1}}"
"#;

const SCOPES: &str = "runs:start,runs:read,runs:answer,tools:execute";

/// A key of tenant `acme` named `name` (its subject is `key:<name>`).
fn key(server: &Server, name: &str) -> String {
    create_key(&sqlite_store(server), "acme", name, SCOPES)
}

fn answer(run_id: &str, tool_call_id: &str, answer: pb::answer::Answer) -> pb::Answer {
    pb::Answer {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(answer),
        ..Default::default()
    }
}

fn approve(run_id: &str, tool_call_id: &str) -> pb::Answer {
    answer(
        run_id,
        tool_call_id,
        pb::answer::Answer::Approval(pb::ApprovalDecision {
            decision: Some(pb::approval_decision::Decision::Approve(
                pb::approval_decision::Approve {},
            )),
        }),
    )
}

/// The ids of the calls of the pending-calls snapshot `key` sees, with `assigned_to_me` as given.
async fn snapshot(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    assigned_to_me: bool,
) -> Vec<String> {
    let request = pb::WatchPendingCallsRequest {
        assigned_to_me,
        ..Default::default()
    };
    pending_snapshot(client, Some(key), request)
        .await
        .into_iter()
        .filter_map(|pending| pending.call.map(|call| call.tool_call_id))
        .collect()
}

/// Starts `agent_id` as `key`; returns the stream and its first suspension.
async fn suspended(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    agent_id: &str,
) -> (RunStream, pb::ToolCallSuspended) {
    let start = Frame::Start(pb::StartRun {
        agent_id: agent_id.into(),
        prompt: "go".into(),
        ..Default::default()
    });
    let mut stream = RunStream::open_as(client, Some(key), start)
        .await
        .expect("start");
    stream.run_id = stream.next().await.run_id;
    let suspended = stream.next_suspended().await;
    (stream, suspended)
}

#[tokio::test]
async fn only_assignees_answer_and_the_feed_shows_each_principal_its_own() {
    let server = Server::start_with(Some(AGENTS), &["--auth", "keys"]);
    let (alice, carol) = (key(&server, "alice"), key(&server, "carol"));
    let mut client = server.agents().await;

    let (mut stream, question) = suspended(&mut client, &alice, "reviewed").await;
    assert_eq!(question.assignees, ["key:alice"]);
    let call_id = question.tool_call_id.clone();
    let run_id = stream.run_id.clone();

    // Carol may answer questions in general, but not this one: refused, and it stays pending.
    let refused = resume_as(&mut client, &carol, text_answer(&run_id, &call_id, "yes")).await;
    assert_eq!(
        refused,
        Err((Code::PermissionDenied, Some("NOT_ASSIGNEE".to_owned())))
    );
    let mut attached = RunStream::open_as(
        &mut client,
        Some(&carol),
        Frame::Attach(pb::AttachRun {
            run_id: run_id.clone(),
            after_sequence: 0,
        }),
    )
    .await
    .expect("attach");
    attached
        .send(text_answer(&run_id, &call_id, "yes on a stream"))
        .await;
    // The attach replays the run's events first; the rejection follows.
    let rejected = loop {
        if let Some(Event::AnswerRejected(rejected)) = attached.next().await.event {
            break rejected;
        }
    };
    assert_eq!(rejected.reason, "NOT_ASSIGNEE");
    assert_eq!(
        snapshot(&mut client, &carol, false).await,
        [call_id.as_str()]
    );
    assert_eq!(
        snapshot(&mut client, &carol, true).await,
        Vec::<String>::new()
    );
    assert_eq!(
        snapshot(&mut client, &alice, true).await,
        [call_id.as_str()]
    );

    // Carol watches the feed live; Alice's answer reaches it with who settled the call.
    let mut feed = client
        .watch_pending_calls(authorized(
            pb::WatchPendingCallsRequest::default(),
            Some(&carol),
        ))
        .await
        .expect("watch pending calls")
        .into_inner();
    let mut next_event = async || {
        tokio::time::timeout(FRAME_TIMEOUT, feed.message())
            .await
            .expect("timed out waiting for the feed")
            .expect("feed")
            .expect("feed open")
            .event
    };
    while !matches!(next_event().await, Some(Pending::SnapshotDone(_))) {}

    stream.send_text(&call_id, "ship").await;
    let settled = loop {
        if let Some(Pending::CallSettled(settled)) = next_event().await {
            break settled;
        }
    };
    assert_eq!(
        (settled.run_id.as_str(), settled.tool_call_id.as_str()),
        (run_id.as_str(), call_id.as_str())
    );
    assert_eq!(settled.kind, pb::ToolResultKind::Answered as i32);
    let settled_by = settled.settled_by.expect("who settled the call");
    assert_eq!(
        (settled_by.tenant.as_str(), settled_by.subject.as_str()),
        ("acme", "key:alice")
    );
    assert_eq!(settled_by.method, pb::AuthMethod::ApiKey as i32);

    let mut by = None;
    let output = loop {
        match stream.next().await.event {
            Some(Event::ToolResult(result)) => by = result.settled_by,
            Some(Event::RunCompleted(done)) => break done.output_text,
            _ => {}
        }
    };
    assert_eq!(output, "shipped: ship");
    assert_eq!(by.map(|by| by.subject), Some("key:alice".to_owned()));
}

#[tokio::test]
async fn a_tools_approvers_decide_and_any_worker_responds_after() {
    let server = Server::start_with(Some(AGENTS), &["--auth", "keys"]);
    let (alice, bob, carol) = (
        key(&server, "alice"),
        key(&server, "bob"),
        key(&server, "carol"),
    );
    let mut client = server.agents().await;

    let (mut stream, approval) = suspended(&mut client, &alice, "deployer").await;
    assert_eq!(approval.kind, pb::SuspendKind::Approval as i32);
    // The tool's approvers, not the agent's.
    assert_eq!(approval.assignees, ["key:bob"]);
    let (run_id, call_id) = (stream.run_id.clone(), approval.tool_call_id.clone());
    let refused = resume_as(&mut client, &alice, approve(&run_id, &call_id)).await;
    assert_eq!(
        refused,
        Err((Code::PermissionDenied, Some("NOT_ASSIGNEE".to_owned())))
    );
    let accepted = resume_as(&mut client, &bob, approve(&run_id, &call_id)).await;
    assert!(
        matches!(accepted, Ok(Event::AnswerAccepted(_))),
        "{accepted:?}"
    );

    // Approved: the call now waits for a worker's output, which names no assignees.
    let output = stream.next_suspended().await;
    assert_eq!(output.kind, pb::SuspendKind::ClientTool as i32);
    assert!(output.assignees.is_empty(), "{output:?}");
    let responded = resume_as(
        &mut client,
        &carol,
        answer(
            &run_id,
            &call_id,
            pb::answer::Answer::ToolOutput(pb::ToolOutput {
                content: "ok".into(),
                is_error: false,
            }),
        ),
    )
    .await;
    assert!(
        matches!(responded, Ok(Event::AnswerAccepted(_))),
        "{responded:?}"
    );
    assert_eq!(stream.completed_text().await, "deployed: ok");
}

/// The same agents, whose calls name no assignees, so that only scopes decide who settles them.
fn unassigned() -> String {
    AGENTS
        .lines()
        .filter(|line| !line.starts_with("assignees"))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Attaches to `run_id` as `key`, sends `answer` on the stream and returns the `answer_rejected`
/// frame it gets (the attach replays the run's events first).
async fn answer_on_attached_stream(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    run_id: &str,
    answer: pb::Answer,
) -> pb::AnswerRejected {
    let mut attached = RunStream::open_as(
        client,
        Some(key),
        Frame::Attach(pb::AttachRun {
            run_id: run_id.into(),
            after_sequence: 0,
        }),
    )
    .await
    .expect("attach");
    attached.send(answer).await;
    loop {
        match attached.next().await.event {
            Some(Event::AnswerRejected(rejected)) => return rejected,
            Some(Event::AnswerAccepted(accepted)) => panic!("accepted: {accepted:?}"),
            _ => {}
        }
    }
}

/// Whether the call `call_id` of `run_id` still waits, as `key` sees it.
async fn still_pending(
    client: &mut AgentServiceClient<Channel>,
    key: &str,
    run_id: &str,
    call_id: &str,
) -> bool {
    let request = authorized(
        pb::GetRunRequest {
            run_id: run_id.into(),
        },
        Some(key),
    );
    let run = client
        .get_run(request)
        .await
        .expect("get run")
        .into_inner()
        .run
        .expect("run");
    run.pending_tool_calls
        .iter()
        .any(|call| call.tool_call_id == call_id)
}

/// Every way of settling a call checks the scope the call's kind needs: a `runs:read` key that
/// attaches to a run cannot answer its question, grant its approval or forge its client tool's
/// output with answer frames; a `runs:answer` key cannot give a client tool's output through
/// `ResumeRun`, a `tools:execute` key can; each refusal leaves the call pending and answerable.
#[tokio::test]
async fn each_kind_of_call_is_settled_only_with_its_scope_on_every_path() {
    let server = Server::start_with(Some(&unassigned()), &["--auth", "keys"]);
    let store = sqlite_store(&server);
    let owner = create_key(&store, "acme", "owner", "runs:start,runs:read");
    let reader = create_key(&store, "acme", "reader", "runs:read");
    let answerer = create_key(&store, "acme", "answerer", "runs:read,runs:answer");
    let worker = create_key(&store, "acme", "worker", "runs:read,tools:execute");
    let mut client = server.agents().await;

    // A question: the reader's answer frame is refused, the answerer's ResumeRun settles it.
    let (mut stream, question) = suspended(&mut client, &owner, "reviewed").await;
    let (run_id, call_id) = (stream.run_id.clone(), question.tool_call_id.clone());
    let rejected = answer_on_attached_stream(
        &mut client,
        &reader,
        &run_id,
        text_answer(&run_id, &call_id, "forged"),
    )
    .await;
    assert_eq!(rejected.reason, "MISSING_SCOPE", "{rejected:?}");
    assert!(rejected.message.contains("runs:answer"), "{rejected:?}");
    assert!(still_pending(&mut client, &owner, &run_id, &call_id).await);
    // The worker may reach ResumeRun, but a question is not its to answer.
    let refused = resume_as(&mut client, &worker, text_answer(&run_id, &call_id, "w")).await;
    assert_eq!(
        refused,
        Err((Code::PermissionDenied, Some("MISSING_SCOPE".to_owned())))
    );
    let accepted = resume_as(
        &mut client,
        &answerer,
        text_answer(&run_id, &call_id, "yes"),
    )
    .await;
    assert!(
        matches!(accepted, Ok(Event::AnswerAccepted(_))),
        "{accepted:?}"
    );
    assert_eq!(stream.completed_text().await, "shipped: yes");

    // An approval, then the client tool's output it waits for after.
    let (mut stream, approval) = suspended(&mut client, &owner, "deployer").await;
    assert_eq!(approval.kind, pb::SuspendKind::Approval as i32);
    let (run_id, call_id) = (stream.run_id.clone(), approval.tool_call_id.clone());
    let rejected =
        answer_on_attached_stream(&mut client, &reader, &run_id, approve(&run_id, &call_id)).await;
    assert_eq!(rejected.reason, "MISSING_SCOPE", "{rejected:?}");
    let refused = resume_as(&mut client, &worker, approve(&run_id, &call_id)).await;
    assert_eq!(
        refused,
        Err((Code::PermissionDenied, Some("MISSING_SCOPE".to_owned())))
    );
    assert!(still_pending(&mut client, &owner, &run_id, &call_id).await);
    let accepted = resume_as(&mut client, &answerer, approve(&run_id, &call_id)).await;
    assert!(
        matches!(accepted, Ok(Event::AnswerAccepted(_))),
        "{accepted:?}"
    );

    let output = stream.next_suspended().await;
    assert_eq!(output.kind, pb::SuspendKind::ClientTool as i32);
    let call_id = output.tool_call_id.clone();
    let rejected = answer_on_attached_stream(
        &mut client,
        &reader,
        &run_id,
        tool_output_answer(&run_id, &call_id, "forged output"),
    )
    .await;
    assert_eq!(rejected.reason, "MISSING_SCOPE", "{rejected:?}");
    assert!(rejected.message.contains("tools:execute"), "{rejected:?}");
    let refused = resume_as(
        &mut client,
        &answerer,
        tool_output_answer(&run_id, &call_id, "forged output"),
    )
    .await;
    assert_eq!(
        refused,
        Err((Code::PermissionDenied, Some("MISSING_SCOPE".to_owned())))
    );
    assert!(still_pending(&mut client, &owner, &run_id, &call_id).await);
    let accepted = resume_as(
        &mut client,
        &worker,
        tool_output_answer(&run_id, &call_id, "deployed v2"),
    )
    .await;
    assert!(
        matches!(accepted, Ok(Event::AnswerAccepted(_))),
        "{accepted:?}"
    );
    assert_eq!(stream.completed_text().await, "deployed: deployed v2");
}
