//! `HumanService.Ask`: a question, a form or an approval asked from outside any run, answered from
//! another client, retried with its `request_id`, listed as a request; on SQLite and PostgreSQL.

use crate::common;
use crate::forms::{boolean, form_answer, number};

use askuser::proto::v1 as pb;
use askuser::proto::v1::human_service_client::HumanServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use tonic::Code;

use common::{
    Server, decision_answer, field_violations, fresh_database, get_run, resume, selections_answer,
};

type Frames = tonic::Streaming<pb::RunAgentResponse>;

async fn human(server: &Server) -> HumanServiceClient<tonic::transport::Channel> {
    HumanServiceClient::new(server.channel().await)
}

/// Sends `request` and reads its stream up to the call's suspension: (request id, call id, the
/// suspension, the stream).
async fn asked(
    server: &Server,
    request: pb::AskRequest,
) -> (String, pb::ToolCallSuspended, Frames) {
    let mut frames = human(server)
        .await
        .ask(request)
        .await
        .expect("Ask")
        .into_inner();
    let mut run_id = String::new();
    // Heartbeats keep the stream busy: the deadline is for the suspension, not for any frame.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let frame = tokio::time::timeout_at(deadline, frames.message())
            .await
            .expect("the call is suspended in time")
            .expect("stream")
            .expect("not ended");
        match frame.event {
            Some(Event::RunStarted(started)) => {
                assert_eq!(started.agent_id, "", "a request is a run of no agent");
                run_id = frame.run_id.clone();
            }
            Some(Event::ToolCallSuspended(suspended)) => return (run_id, suspended, frames),
            _ => {}
        }
    }
}

/// The rest of a request's stream: its result and its output.
async fn outcome(mut frames: Frames) -> (pb::ToolResult, String) {
    let mut result = None;
    while let Some(frame) = frames.message().await.expect("stream") {
        match frame.event {
            Some(Event::ToolResult(found)) => result = Some(found),
            Some(Event::RunCompleted(done)) => {
                return (result.expect("a result"), done.output_text);
            }
            _ => {}
        }
    }
    panic!("the request's stream ended before it completed");
}

fn question(request_id: &str) -> pb::AskRequest {
    pb::AskRequest {
        call: Some(pb::ask_request::Call::Question(pb::AskUserInput {
            question: "Ship api to production?".into(),
            options: ["yes", "no"]
                .map(|label| pb::AskUserOption {
                    label: label.into(),
                    description: String::new(),
                })
                .to_vec(),
            selection_mode: None,
        })),
        context: "The **nightly build** is green.".into(),
        request_id: request_id.into(),
        metadata: [("source".to_owned(), "langgraph".to_owned())].into(),
        ..Default::default()
    }
}

fn approval(reason: &str) -> pb::AskRequest {
    pb::AskRequest {
        call: Some(pb::ask_request::Call::Approval(pb::ApprovalRequest {
            tool_name: "deploy".into(),
            arguments_json: r#"{"service": "api", "environment": "production"}"#.into(),
            reason: reason.into(),
        })),
        context: "A deploy the agent wants to make.".into(),
        ..Default::default()
    }
}

async fn each_kind_is_asked_and_answered_from_another_client(database_url: Option<&str>) {
    let args: Vec<&str> = database_url.map_or_else(Vec::new, |url| vec!["--database-url", url]);
    let server = Server::start_with(None, &args);
    let mut agents = server.agents().await;

    // A question, answered by another client with ResumeRun.
    let (run_id, suspended, frames) = asked(&server, question("")).await;
    assert_eq!(suspended.kind(), pb::SuspendKind::Question);
    assert_eq!(suspended.tool_name, "ask_user");
    let stored = get_run(&mut agents, &run_id).await;
    assert_eq!(stored.status(), pb::RunStatus::Suspended);
    assert_eq!(stored.prompt, "The **nightly build** is green.");
    assert_eq!(stored.metadata["source"], "langgraph");
    resume(
        &mut agents,
        selections_answer(&run_id, &suspended.tool_call_id, &["yes"]),
    )
    .await
    .expect("answered");
    let (result, output) = outcome(frames).await;
    assert_eq!(result.kind(), pb::ToolResultKind::Answered);
    assert_eq!(output, result.content);
    assert!(output.contains("yes"), "{output}");
    let done = get_run(&mut agents, &run_id).await;
    assert_eq!(done.status(), pb::RunStatus::Completed);
    assert_eq!(done.settled_tool_calls.len(), 1);
    assert!(done.settled_tool_calls[0].settled_by.is_some());

    // A form.
    let form = pb::Form {
        title: "Rollout".into(),
        message: "How should api roll out?".into(),
        fields: vec![
            pb::FormField {
                name: "replicas".into(),
                question: "Replicas".into(),
                required: true,
                kind: Some(pb::form_field::Kind::Number(pb::NumberField {
                    integer: true,
                    minimum: Some(1.0),
                    maximum: Some(10.0),
                    default_value: None,
                })),
                ..Default::default()
            },
            pb::FormField {
                name: "canary".into(),
                question: "Canary first?".into(),
                kind: Some(pb::form_field::Kind::Boolean(pb::BooleanField::default())),
                ..Default::default()
            },
        ],
        url: String::new(),
    };
    let (run_id, suspended, frames) = asked(
        &server,
        pb::AskRequest {
            call: Some(pb::ask_request::Call::Form(form)),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(suspended.kind(), pb::SuspendKind::Form);
    resume(
        &mut agents,
        form_answer(
            &run_id,
            &suspended.tool_call_id,
            &[("replicas", number(3.0)), ("canary", boolean(true))],
        ),
    )
    .await
    .expect("answered");
    let (_, output) = outcome(frames).await;
    let output: serde_json::Value = serde_json::from_str(&output).expect("JSON");
    assert_eq!(
        output,
        serde_json::json!({"action": "accept", "content": {"replicas": 3, "canary": true}})
    );

    // Approvals: approved, edited, rejected; askuser runs nothing.
    let approve = pb::approval_decision::Decision::Approve(pb::approval_decision::Approve {});
    let edit = pb::approval_decision::Decision::Edit(pb::approval_decision::Edit {
        arguments_json: r#"{"service": "api", "environment": "staging"}"#.into(),
    });
    let reject = pb::approval_decision::Decision::Reject(pb::approval_decision::Reject {
        reason: "freeze".into(),
    });
    for (decision, expected) in [
        (
            approve,
            r#"{"arguments":{"environment":"production","service":"api"},"decision":"approved"}"#,
        ),
        (
            edit,
            r#"{"arguments":{"environment":"staging","service":"api"},"decision":"edited"}"#,
        ),
        (reject, "User rejected the call: freeze"),
    ] {
        let (run_id, suspended, frames) = asked(&server, approval("production")).await;
        assert_eq!(suspended.kind(), pb::SuspendKind::Approval);
        assert_eq!(suspended.tool_name, "deploy");
        assert_eq!(suspended.approval_reason, "production");
        assert_eq!(
            suspended.arguments_json,
            r#"{"environment":"production","service":"api"}"#
        );
        resume(
            &mut agents,
            decision_answer(&run_id, &suspended.tool_call_id, decision),
        )
        .await
        .expect("decided");
        let (_, output) = outcome(frames).await;
        let parsed = serde_json::from_str::<serde_json::Value>(&output)
            .map(|v| v.to_string())
            .unwrap_or(output);
        assert_eq!(parsed, expected);
    }

    // Requests are listed apart from agents' runs.
    let listed = agents
        .list_runs(pb::ListRunsRequest {
            requests_only: true,
            ..Default::default()
        })
        .await
        .expect("ListRuns")
        .into_inner();
    assert_eq!(listed.runs.len(), 5);
    assert!(listed.runs.iter().all(|run| run.agent_id.is_empty()));
}

#[tokio::test]
async fn each_kind_is_asked_and_answered_from_another_client_on_sqlite() {
    each_kind_is_asked_and_answered_from_another_client(None).await;
}

#[tokio::test]
async fn each_kind_is_asked_and_answered_from_another_client_on_postgresql() {
    let Some(database) = fresh_database().await else {
        return;
    };
    each_kind_is_asked_and_answered_from_another_client(Some(&database)).await;
}

#[tokio::test]
async fn an_ask_retried_with_its_request_id_follows_the_first_request() {
    let server = Server::start_with(None, &[]);
    let (first_run, first_call, _first) = asked(&server, question("order-4417")).await;
    let (again_run, again_call, frames) = asked(&server, question("order-4417")).await;
    assert_eq!(again_run, first_run, "the same request");
    assert_eq!(again_call.tool_call_id, first_call.tool_call_id);
    let mut agents = server.agents().await;
    resume(
        &mut agents,
        selections_answer(&first_run, &first_call.tool_call_id, &["no"]),
    )
    .await
    .expect("answered");
    let (_, output) = outcome(frames).await;
    assert!(output.contains("no"), "{output}");
}

#[tokio::test]
async fn a_bad_ask_is_refused_naming_the_field_and_creates_nothing() {
    let server = Server::start_with(None, &[]);
    let refused = |request: pb::AskRequest| {
        let server = &server;
        async move {
            let status = match human(server).await.ask(request).await {
                Ok(_) => panic!("the request was accepted"),
                Err(status) => status,
            };
            assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
            field_violations(&status)
                .into_iter()
                .map(|(field, _)| field)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(refused(pb::AskRequest::default()).await, ["call"]);
    let mut blank = question("");
    if let Some(pb::ask_request::Call::Question(input)) = &mut blank.call {
        input.question = "  ".into();
    }
    assert_eq!(refused(blank).await, ["question.question"]);
    let mut bad_arguments = approval("");
    if let Some(pb::ask_request::Call::Approval(request)) = &mut bad_arguments.call {
        request.arguments_json = "[1, 2]".into();
        request.tool_name = "no spaces".into();
    }
    assert_eq!(
        refused(bad_arguments).await,
        ["approval.tool_name", "approval.arguments_json"]
    );
    let no_fields = pb::AskRequest {
        call: Some(pb::ask_request::Call::Form(pb::Form::default())),
        ..Default::default()
    };
    assert_eq!(refused(no_fields).await, ["form.fields"]);
    let mut agents = server.agents().await;
    let listed = agents
        .list_runs(pb::ListRunsRequest {
            requests_only: true,
            ..Default::default()
        })
        .await
        .expect("ListRuns")
        .into_inner();
    assert!(listed.runs.is_empty(), "nothing was created");
}
