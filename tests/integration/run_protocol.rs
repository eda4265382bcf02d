//! The `RunAgent` protocol: question and answer round trips, answer checks, parallel questions,
//! failing runs and the shape of the stream.

use crate::common;

use std::collections::HashSet;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    FRAME_TIMEOUT, RunStream, Server, error_reason, field_violations, get_run, scripted_agent,
    scripted_agent_with, text_answer, watch_until_end,
};
use pb::SelectionMode::{MultiSelect, SingleSelect};
use tonic::Code;
use tonic::transport::Channel;

fn text(text: &str) -> pb::answer::Answer {
    pb::answer::Answer::Text(text.into())
}

fn selections(labels: &[&str]) -> pb::answer::Answer {
    pb::answer::Answer::Selections(pb::Selections {
        labels: labels.iter().map(|label| label.to_string()).collect(),
    })
}

fn answer(run: &RunStream, tool_call_id: &str, answer: pb::answer::Answer) -> pb::Answer {
    pb::Answer {
        run_id: run.run_id.clone(),
        tool_call_id: tool_call_id.into(),
        answer: Some(answer),
        answer_id: String::new(),
    }
}

fn labels(payload: &pb::SuspendPayload) -> Vec<&str> {
    payload.options.iter().map(|o| o.label.as_str()).collect()
}

/// Reads what an accepted answer sends first: `answer_accepted`, then the call's `tool_result`.
async fn expect_accepted_then_result(run: &mut RunStream, tool_call_id: &str, content: &str) {
    let accepted = run.next().await;
    assert_eq!(accepted.sequence, 0, "{accepted:?}");
    match accepted.event {
        Some(Event::AnswerAccepted(accepted)) => {
            assert_eq!(accepted.tool_call_id, tool_call_id);
            assert!(!accepted.duplicate);
        }
        other => panic!("expected answer_accepted, got {other:?}"),
    }
    let result = run.next().await;
    assert!(result.sequence > 0, "{result:?}");
    assert_eq!(
        result.event,
        Some(Event::ToolResult(pb::ToolResult {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: false,
            kind: pb::ToolResultKind::Answered as i32,
            // Without authentication every caller is the default tenant's anonymous principal.
            settled_by: Some(pb::SettledBy {
                tenant: "default".into(),
                subject: "anonymous".into(),
                method: pb::AuthMethod::None as i32,
            }),
        }))
    );
}

/// Reads the rest of a run that must complete with `output`, streamed as text deltas; checks that
/// the stream then ends and that `GetRun` shows the run completed.
async fn expect_completed(
    client: &mut AgentServiceClient<Channel>,
    run: &mut RunStream,
    output: &str,
) {
    let frames = run.frames_until_end().await;
    let (last, deltas) = frames.split_last().expect("frames");
    let streamed: String = deltas
        .iter()
        .map(|frame| match &frame.event {
            Some(Event::TextDelta(delta)) => delta.text.as_str(),
            other => panic!("expected text_delta, got {other:?}"),
        })
        .collect();
    assert_eq!(streamed, output);
    match &last.event {
        Some(Event::RunCompleted(done)) => assert_eq!(done.output_text, output),
        other => panic!("expected run_completed, got {other:?}"),
    }
    let stored = get_run(client, &run.run_id).await;
    assert_eq!(stored.status, pb::RunStatus::Completed as i32);
    assert_eq!(stored.output_text, output);
    assert!(stored.pending_tool_calls.is_empty());
}

/// Reads the rest of a run that must fail with a message containing `message`; checks `GetRun`.
async fn expect_failed(
    client: &mut AgentServiceClient<Channel>,
    run: &mut RunStream,
    message: &str,
) {
    let frames = run.frames_until_end().await;
    match &frames.last().expect("frames").event {
        Some(Event::RunFailed(failed)) => {
            assert!(failed.message.contains(message), "{}", failed.message)
        }
        other => panic!("expected run_failed, got {other:?}"),
    }
    assert!(
        !frames
            .iter()
            .any(|f| matches!(f.event, Some(Event::TextDelta(_) | Event::RunCompleted(_)))),
        "{frames:?}"
    );
    let stored = get_run(client, &run.run_id).await;
    assert_eq!(stored.status, pb::RunStatus::Failed as i32);
    assert!(
        stored.error_message.contains(message),
        "{}",
        stored.error_message
    );
}

/// Checks that `GetRun` shows the run suspended on exactly these questions, in order.
async fn expect_pending(client: &mut AgentServiceClient<Channel>, run_id: &str, pending: &[&str]) {
    let stored = get_run(client, run_id).await;
    assert_eq!(stored.status, pb::RunStatus::Suspended as i32);
    let ids: Vec<&str> = stored
        .pending_tool_calls
        .iter()
        .map(|call| call.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, pending);
}

#[tokio::test]
async fn free_text_round_trip() {
    let agents = scripted_agent(
        "greeter",
        &[
            r#"ask = [{ question = "What is your name?" }]"#,
            r#"say = "Hello, {{answer.1}}! Nice to meet you.""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "greeter").await;
    let question = run.next_suspended().await;
    assert_eq!(question.tool_name, "ask_user");
    assert_eq!(question.expire_time, None);
    assert_eq!(
        question.suspend_payload,
        Some(pb::SuspendPayload {
            question: "What is your name?".into(),
            options: vec![],
            selection_mode: None,
        })
    );
    run.send_text(&question.tool_call_id, "Ada Lovelace").await;
    expect_accepted_then_result(
        &mut run,
        &question.tool_call_id,
        "User answered: Ada Lovelace",
    )
    .await;
    expect_completed(
        &mut client,
        &mut run,
        "Hello, Ada Lovelace! Nice to meet you.",
    )
    .await;
}

#[tokio::test]
async fn single_select_round_trip_by_text_and_by_selection() {
    let agents = scripted_agent(
        "pick",
        &[
            r#"ask = [{ question = "Which environment?", options = [{ label = "staging", description = "safe" }, { label = "production" }] }]"#,
            r#"say = "Deploying to {{answer.1}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    for (choice, label) in [
        (text("production"), "production"),
        (selections(&["staging"]), "staging"),
    ] {
        let mut run = RunStream::start(&mut client, "pick").await;
        let question = run.next_suspended().await;
        let payload = question.suspend_payload.expect("payload");
        assert_eq!(payload.question, "Which environment?");
        assert_eq!(labels(&payload), ["staging", "production"]);
        assert_eq!(payload.options[0].description, "safe");
        assert_eq!(payload.options[1].description, "");
        assert_eq!(payload.selection_mode, Some(SingleSelect as i32));
        run.send(answer(&run, &question.tool_call_id, choice)).await;
        expect_accepted_then_result(
            &mut run,
            &question.tool_call_id,
            &format!("User answered: {label}"),
        )
        .await;
        expect_completed(&mut client, &mut run, &format!("Deploying to {label}")).await;
    }
}

#[tokio::test]
async fn multi_select_round_trip_including_no_selection() {
    let agents = scripted_agent(
        "checks",
        &[
            r#"ask = [{ question = "Which checks?", options = [{ label = "lint" }, { label = "unit" }, { label = "e2e" }], selection_mode = "multi_select" }]"#,
            r#"say = "Checks: [{{answer.1}}]""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    for (chosen, joined) in [(&["unit", "lint"][..], "unit, lint"), (&[][..], "")] {
        let mut run = RunStream::start(&mut client, "checks").await;
        let question = run.next_suspended().await;
        let payload = question.suspend_payload.expect("payload");
        assert_eq!(labels(&payload), ["lint", "unit", "e2e"]);
        assert_eq!(payload.selection_mode, Some(MultiSelect as i32));
        run.send_selections(&question.tool_call_id, chosen).await;
        expect_accepted_then_result(
            &mut run,
            &question.tool_call_id,
            &format!("User answered: {joined}"),
        )
        .await;
        expect_completed(&mut client, &mut run, &format!("Checks: [{joined}]")).await;
    }
}

#[tokio::test]
async fn answers_that_do_not_fit_the_question_are_rejected_in_band() {
    let agents = [
        scripted_agent(
            "name",
            &[r#"ask = [{ question = "Name?" }]"#, r#"say = "Got {{answer.1}}""#],
        ),
        scripted_agent(
            "pick",
            &[
                r#"ask = [{ question = "Where?", options = [{ label = "staging" }, { label = "production" }] }]"#,
                r#"say = "Got {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "checks",
            &[
                r#"ask = [{ question = "Which?", options = [{ label = "lint" }, { label = "unit" }], selection_mode = "multi_select" }]"#,
                r#"say = "Got {{answer.1}}""#,
            ],
        ),
    ]
    .concat();
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let cases: [(&str, Option<pb::answer::Answer>, &[&str]); 14] = [
        ("name", Some(text("")), &["answer.text"]),
        ("name", Some(text(" \n\t")), &["answer.text"]),
        ("name", Some(selections(&["Ada"])), &["answer.selections"]),
        ("name", None, &["answer.answer"]),
        ("pick", Some(text("Staging")), &["answer.text"]),
        ("pick", Some(text("staging ")), &["answer.text"]),
        ("pick", Some(text("qa")), &["answer.text"]),
        ("pick", Some(selections(&[])), &["answer.selections.labels"]),
        (
            "pick",
            Some(selections(&["staging", "production"])),
            &["answer.selections.labels"],
        ),
        (
            "pick",
            Some(selections(&["qa"])),
            &["answer.selections.labels[0]"],
        ),
        ("checks", Some(text("lint")), &["answer.text"]),
        (
            "checks",
            Some(selections(&["lint", "qa"])),
            &["answer.selections.labels[1]"],
        ),
        (
            "checks",
            Some(selections(&["lint", "unit", "lint"])),
            &["answer.selections.labels[2]"],
        ),
        (
            "checks",
            Some(selections(&["qa", "lint", "lint"])),
            &["answer.selections.labels[0]", "answer.selections.labels[2]"],
        ),
    ];
    for (agent, bad, fields) in cases {
        let context = format!("{agent}: {bad:?}");
        let mut run = RunStream::start(&mut client, agent).await;
        let question = run.next_suspended().await;
        run.send(pb::Answer {
            run_id: run.run_id.clone(),
            tool_call_id: question.tool_call_id.clone(),
            answer: bad,
            answer_id: "attempt-1".into(),
        })
        .await;
        let rejected = run.next_rejected().await;
        assert_eq!(rejected.tool_call_id, question.tool_call_id, "{context}");
        assert_eq!(rejected.reason, "INVALID_ANSWER", "{context}");
        assert_eq!(rejected.answer_id, "attempt-1", "{context}");
        assert!(!rejected.message.is_empty(), "{context}");
        let rejected_fields: Vec<&str> = rejected
            .field_violations
            .iter()
            .map(|v| v.field.as_str())
            .collect();
        assert_eq!(rejected_fields, fields, "{context}");
        assert!(
            rejected
                .field_violations
                .iter()
                .all(|v| !v.description.is_empty()),
            "{context}"
        );
        expect_pending(&mut client, &run.run_id, &[&question.tool_call_id]).await;

        let (good, said) = match agent {
            "name" => (text("Ada"), "Ada"),
            "pick" => (selections(&["production"]), "production"),
            _ => (selections(&["unit", "lint"]), "unit, lint"),
        };
        run.send(answer(&run, &question.tool_call_id, good)).await;
        expect_accepted_then_result(
            &mut run,
            &question.tool_call_id,
            &format!("User answered: {said}"),
        )
        .await;
        expect_completed(&mut client, &mut run, &format!("Got {said}")).await;
    }
}

#[tokio::test]
async fn answers_naming_the_wrong_call_or_run_are_rejected_in_band() {
    let agents = scripted_agent(
        "pair",
        &[
            r#"ask = [{ question = "First?" }, { question = "Second?" }]"#,
            r#"say = "{{answer.1}}/{{answer.2}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "pair").await;
    let first = run.next_suspended().await.tool_call_id;
    let second = run.next_suspended().await.tool_call_id;
    let mut other_client = server.agents().await;
    let mut other = RunStream::start(&mut other_client, "pair").await;
    let other_first = other.next_suspended().await.tool_call_id;
    let other_second = other.next_suspended().await.tool_call_id;

    let rejections = [
        (
            text_answer(&run.run_id, "call_unknown", "x"),
            "TOOL_CALL_NOT_PENDING",
        ),
        // A call of another run does not belong to this run, even on the right stream.
        (
            text_answer(&run.run_id, &other_first, "x"),
            "TOOL_CALL_NOT_PENDING",
        ),
        (
            text_answer(&other.run_id, &other_first, "x"),
            "RUN_MISMATCH",
        ),
        (text_answer(&run.run_id, "", "x"), "INVALID_ANSWER"),
    ];
    for (bad, reason) in rejections {
        let tool_call_id = bad.tool_call_id.clone();
        run.send(bad).await;
        let rejected = run.next_rejected().await;
        assert_eq!(rejected.reason, reason, "{rejected:?}");
        assert_eq!(rejected.tool_call_id, tool_call_id);
        expect_pending(&mut client, &run.run_id, &[&first, &second]).await;
        expect_pending(&mut client, &other.run_id, &[&other_first, &other_second]).await;
    }

    run.send_text(&first, "one").await;
    expect_accepted_then_result(&mut run, &first, "User answered: one").await;
    run.send_text(&first, "uno").await;
    let rejected = run.next_rejected().await;
    assert_eq!(rejected.reason, "ALREADY_ANSWERED");
    assert_eq!(rejected.tool_call_id, first);
    expect_pending(&mut client, &run.run_id, &[&second]).await;

    run.send_text(&second, "two").await;
    expect_accepted_then_result(&mut run, &second, "User answered: two").await;
    expect_completed(&mut client, &mut run, "one/two").await;
    // The other run was never touched by the rejected answers.
    other.send_text(&other_first, "1").await;
    expect_accepted_then_result(&mut other, &other_first, "User answered: 1").await;
    other.send_text(&other_second, "2").await;
    expect_accepted_then_result(&mut other, &other_second, "User answered: 2").await;
    expect_completed(&mut other_client, &mut other, "1/2").await;
}

#[tokio::test]
async fn a_suspension_is_stored_before_it_is_announced() {
    let agents = scripted_agent_with(
        "ask",
        r#"question_ttl = "1h""#,
        &[
            r#"ask = [{ question = "Which?", options = [{ label = "a", description = "first" }, { label = "b" }] }]"#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    for _ in 0..5 {
        let mut run = RunStream::start(&mut client, "ask").await;
        let (sequence, suspended) = loop {
            let frame = run.next().await;
            if let Some(Event::ToolCallSuspended(suspended)) = frame.event {
                break (frame.sequence, suspended);
            }
        };
        assert!(suspended.expire_time.is_some());
        // A new connection, so nothing can ride on the stream's.
        let mut observer = server.agents().await;
        let stored = get_run(&mut observer, &run.run_id).await;
        assert_eq!(stored.status, pb::RunStatus::Suspended as i32);
        assert!(stored.last_sequence >= sequence);
        let suspend_time = stored.pending_tool_calls[0].suspend_time;
        assert!(suspend_time.is_some(), "a waiting call says since when");
        assert_eq!(
            stored.pending_tool_calls,
            [pb::PendingToolCall {
                tool_call_id: suspended.tool_call_id,
                tool_name: suspended.tool_name,
                suspend_payload: suspended.suspend_payload,
                form: suspended.form,
                expire_time: suspended.expire_time,
                kind: suspended.kind,
                arguments_json: suspended.arguments_json,
                approval_reason: suspended.approval_reason,
                assignees: suspended.assignees,
                claimant: String::new(),
                claim_expire_time: None,
                suspend_time,
            }]
        );
    }
}

#[tokio::test]
async fn stream_frames_are_numbered_from_run_started() {
    let agents = scripted_agent(
        "pair",
        &[
            r#"ask = [{ question = "First?" }, { question = "Second?" }]"#,
            r#"say = "A long enough answer to take several text deltas: {{answer.1}} and {{answer.2}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::open(
        &mut client,
        Frame::Start(pb::StartRun {
            agent_id: "pair".into(),
            prompt: "go".into(),
            ..Default::default()
        }),
    )
    .await
    .expect("start");
    let mut frames = Vec::new();
    let mut questions = Vec::new();
    while questions.len() < 2 {
        let frame = run.next().await;
        if let Some(Event::ToolCallSuspended(suspended)) = &frame.event {
            questions.push(suspended.tool_call_id.clone());
        }
        frames.push(frame);
    }
    run.run_id = frames[0].run_id.clone();
    for (question, reply) in questions.iter().zip(["one", "two"]) {
        run.send_text(question, reply).await;
    }
    frames.extend(run.frames_until_end().await);

    assert_eq!(
        frames[0].event,
        Some(Event::RunStarted(pb::RunStarted {
            agent_id: "pair".into(),
            prompt: "go".into(),
            metadata: Default::default(),
        }))
    );
    assert!(matches!(
        frames.last().expect("frames").event,
        Some(Event::RunCompleted(_))
    ));
    let mut stored = Vec::new();
    for frame in &frames {
        assert_eq!(frame.run_id, run.run_id);
        assert!(frame.time.is_some());
        if matches!(frame.event, Some(Event::AnswerAccepted(_))) {
            assert_eq!(frame.sequence, 0);
        } else {
            assert_eq!(frame.sequence, stored.len() as u64 + 1, "{frame:?}");
            stored.push(frame.clone());
        }
    }
    assert_eq!(
        frames
            .iter()
            .filter(|f| matches!(f.event, Some(Event::AnswerAccepted(_))))
            .count(),
        2
    );
    assert_eq!(
        get_run(&mut client, &run.run_id).await.last_sequence,
        stored.len() as u64
    );
    // The stored frames are the run's event log, as WatchRun replays it.
    let replayed = watch_until_end(&mut client, &run.run_id, 0).await;
    assert_eq!(replayed, stored);
}

#[tokio::test]
async fn the_first_frame_must_start_or_attach() {
    let agents = scripted_agent("ask", &[r#"ask = [{ question = "Name?" }]"#]);
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;

    let answer_first = RunStream::open(&mut client, Frame::Answer(text_answer("r", "c", "x")))
        .await
        .err()
        .expect("an answer cannot open a stream");
    assert_eq!(
        answer_first.code(),
        Code::InvalidArgument,
        "{answer_first:?}"
    );
    let nothing = client
        .run_agent(tokio_stream::empty::<pb::RunAgentRequest>())
        .await
        .expect_err("a stream without frames is refused");
    assert_eq!(nothing.code(), Code::InvalidArgument, "{nothing:?}");
    let unknown_run = RunStream::open(
        &mut client,
        Frame::Attach(pb::AttachRun {
            run_id: "no-such-run".into(),
            after_sequence: 0,
        }),
    )
    .await
    .err()
    .expect("attaching to an unknown run fails");
    assert_eq!(unknown_run.code(), Code::NotFound, "{unknown_run:?}");

    // A start frame later in the stream ends the stream; the run itself goes on.
    let mut run = RunStream::start(&mut client, "ask").await;
    let question = run.next_suspended().await;
    run.sender
        .send(pb::RunAgentRequest {
            frame: Some(Frame::Start(pb::StartRun {
                agent_id: "ask".into(),
                ..Default::default()
            })),
        })
        .await
        .expect("send");
    let ended = loop {
        match tokio::time::timeout(FRAME_TIMEOUT, run.inbound.message())
            .await
            .expect("stream end")
        {
            Ok(Some(frame)) => {
                assert!(
                    matches!(frame.event, Some(Event::Heartbeat(_))),
                    "{frame:?}"
                )
            }
            Ok(None) => panic!("the stream ended without an error"),
            Err(status) => break status,
        }
    };
    assert_eq!(ended.code(), Code::InvalidArgument, "{ended:?}");
    assert!(
        tokio::time::timeout(FRAME_TIMEOUT, run.inbound.message())
            .await
            .expect("stream end")
            .ok()
            .flatten()
            .is_none()
    );
    expect_pending(&mut client, &run.run_id, &[&question.tool_call_id]).await;
}

#[tokio::test]
async fn an_unknown_agent_is_not_found() {
    let agents = scripted_agent("ask", &[r#"ask = [{ question = "Name?" }]"#]);
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let start = |agent_id: &str| {
        Frame::Start(pb::StartRun {
            agent_id: agent_id.into(),
            prompt: "go".into(),
            ..Default::default()
        })
    };
    let unknown = RunStream::open(&mut client, start("greeter"))
        .await
        .err()
        .expect("unknown agent");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
    assert_eq!(error_reason(&unknown).as_deref(), Some("AGENT_NOT_FOUND"));
    let empty = RunStream::open(&mut client, start(""))
        .await
        .err()
        .expect("empty agent id");
    assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
    assert_eq!(field_violations(&empty)[0].0, "start.agent_id");
    // Neither created a run.
    let runs = client
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("list runs")
        .into_inner()
        .runs;
    assert!(runs.is_empty(), "{runs:?}");
}

#[tokio::test]
async fn parallel_questions_resume_the_model_once_all_are_answered() {
    let agents = scripted_agent(
        "trio",
        &[
            r#"ask = [{ question = "First?" },
                     { question = "Second?", options = [{ label = "x" }, { label = "y" }] },
                     { question = "Third?", options = [{ label = "p" }, { label = "q" }], selection_mode = "multi_select" }]"#,
            r#"say = "{{answer.1}}|{{answer.2}}|{{answer.3}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "trio").await;
    let mut ids = Vec::new();
    for question in ["First?", "Second?", "Third?"] {
        let suspended = run.next_suspended().await;
        assert_eq!(
            suspended.suspend_payload.expect("payload").question,
            question
        );
        ids.push(suspended.tool_call_id);
    }
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3, "{ids:?}");
    let [first, second, third] = [&ids[0], &ids[1], &ids[2]];
    expect_pending(&mut client, &run.run_id, &[first, second, third]).await;

    run.send_selections(third, &["q", "p"]).await;
    expect_accepted_then_result(&mut run, third, "User answered: q, p").await;
    expect_pending(&mut client, &run.run_id, &[first, second]).await;

    run.send_text(first, "alpha").await;
    expect_accepted_then_result(&mut run, first, "User answered: alpha").await;
    expect_pending(&mut client, &run.run_id, &[second]).await;

    run.send_text(second, "y").await;
    expect_accepted_then_result(&mut run, second, "User answered: y").await;
    // The answers fill the template in the order asked, not the order answered.
    expect_completed(&mut client, &mut run, "alpha|y|q, p").await;
}

#[tokio::test]
async fn a_failing_model_turn_fails_the_run() {
    let agents = scripted_agent(
        "flaky",
        &[
            r#"ask = [{ question = "When?" }]"#,
            r#"fail = "no capacity {{answer.1}}""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "flaky").await;
    let question = run.next_suspended().await;
    run.send_text(&question.tool_call_id, "tonight").await;
    expect_accepted_then_result(&mut run, &question.tool_call_id, "User answered: tonight").await;
    expect_failed(&mut client, &mut run, "no capacity tonight").await;
}

#[tokio::test]
async fn exceeding_max_steps_fails_the_run() {
    let agents = scripted_agent_with(
        "chatty",
        "max_steps = 2",
        &[
            r#"ask = [{ question = "One?" }]"#,
            r#"ask = [{ question = "Two?" }]"#,
            r#"say = "never said""#,
        ],
    );
    let server = Server::start_with(Some(&agents), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "chatty").await;
    for reply in ["1", "2"] {
        let question = run.next_suspended().await;
        run.send_text(&question.tool_call_id, reply).await;
    }
    expect_failed(&mut client, &mut run, "max_steps (2)").await;
}
