//! Client tools and server-enforced approval against a real server: a turn that mixes a question,
//! an approval and a client call; expiry of approvals and client calls; invalid calls; per-run tools
//! (checked at start, stored with the run); and workers sharing the pending-calls feed with claims.

use crate::common;

use std::collections::HashSet;

use futures::StreamExt;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use askuser::proto::v1::watch_pending_calls_response::Event as Feed;
use tonic::transport::Channel;

use common::{
    FRAME_TIMEOUT, RunStream, Server, decision_answer, error_reason, field_violations, get_run,
    resume, scripted_agent_with, text_answer, tool_output_answer as output, tool_results,
    watch_until_end,
};

/// `probe` is a client tool; `gate` a client tool that always needs approval; `slow` a client tool
/// whose output may take one second.
const TOOLS: &str = r#"
[[tool]]
name = "probe"
kind = "client"
parameters = { type = "object", properties = { target = { type = "string" } }, required = ["target"], additionalProperties = false }

[[tool]]
name = "gate"
kind = "client"
parameters = { type = "object", properties = { n = { type = "integer" } }, required = ["n"] }
approval = "always"

[[tool]]
name = "slow"
kind = "client"
timeout = "1s"
"#;

fn agents(agents: &[String]) -> String {
    format!("{TOOLS}{}", agents.concat())
}

fn agent(id: &str, settings: &str, turns: &[&str]) -> String {
    scripted_agent_with(
        id,
        &format!("tools = [\"ask_user\", \"probe\", \"gate\", \"slow\"]\n{settings}"),
        turns,
    )
}

fn approve(run_id: &str, tool_call_id: &str) -> pb::Answer {
    let approve = pb::approval_decision::Decision::Approve(pb::approval_decision::Approve {});
    decision_answer(run_id, tool_call_id, approve)
}

/// Reads the suspensions of one turn: `count` `tool_call_suspended` frames.
async fn suspensions(run: &mut RunStream, count: usize) -> Vec<pb::ToolCallSuspended> {
    let mut found = Vec::new();
    while found.len() < count {
        found.push(run.next_suspended().await);
    }
    found
}

#[tokio::test]
async fn a_mixed_turn_settled_in_reverse_order_resumes_once_with_every_result() {
    let server = Server::start_with(
        Some(&agents(&[agent(
            "mixed",
            "",
            &[
                r#"call = [{ tool = "ask_user", arguments = { question = "Why?" } }, { tool = "gate", arguments = { n = 7 } }, { tool = "probe", arguments = { target = "db" } }]"#,
                r#"say = "{{result.1}} | {{result.2}} | {{result.3}}""#,
            ],
        )])),
        &[],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "mixed").await;
    let run_id = run.run_id.clone();
    let calls = suspensions(&mut run, 3).await;
    let kinds: Vec<i32> = calls.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            pb::SuspendKind::Question as i32,
            pb::SuspendKind::Approval as i32,
            pb::SuspendKind::ClientTool as i32,
        ]
    );
    let (question, gate, probe) = (&calls[0], &calls[1], &calls[2]);
    assert_eq!(gate.approval_reason, "always");
    assert_eq!(probe.arguments_json, r#"{"target":"db"}"#);

    let pending = |run: pb::Run| -> Vec<String> {
        assert_eq!(run.status, pb::RunStatus::Suspended as i32, "{run:?}");
        run.pending_tool_calls
            .into_iter()
            .map(|c| c.tool_call_id)
            .collect()
    };
    // Last made, first settled: the run keeps waiting for the others.
    resume(
        &mut client,
        output(&run_id, &probe.tool_call_id, "probe ok"),
    )
    .await
    .expect("probe output");
    assert_eq!(
        pending(get_run(&mut client, &run_id).await),
        [question.tool_call_id.clone(), gate.tool_call_id.clone()]
    );
    resume(&mut client, approve(&run_id, &gate.tool_call_id))
        .await
        .expect("approve gate");
    let again = run.next_suspended().await;
    assert_eq!(again.tool_call_id, gate.tool_call_id);
    assert_eq!(again.kind, pb::SuspendKind::ClientTool as i32);
    assert_eq!(again.arguments_json, r#"{"n":7}"#);
    resume(&mut client, output(&run_id, &gate.tool_call_id, "gate ok"))
        .await
        .expect("gate output");
    assert_eq!(
        pending(get_run(&mut client, &run_id).await),
        std::slice::from_ref(&question.tool_call_id)
    );
    resume(
        &mut client,
        text_answer(&run_id, &question.tool_call_id, "because"),
    )
    .await
    .expect("answer");
    // The model saw every result, in the order it made the calls, and ran once more.
    assert_eq!(
        run.completed_text().await,
        "User answered: because | gate ok | probe ok"
    );
    let log = watch_until_end(&mut client, &run_id, 0).await;
    let turns_text: Vec<&pb::RunAgentResponse> = log
        .iter()
        .filter(|f| matches!(f.event, Some(Event::RunCompleted(_))))
        .collect();
    assert_eq!(turns_text.len(), 1);
    for call in &calls {
        assert_eq!(tool_results(&log, &call.tool_call_id).len(), 1);
    }
}

#[tokio::test]
async fn an_expired_approval_never_runs_and_a_client_call_times_out_on_its_tool_timeout() {
    let server = Server::start_with(
        Some(&agents(&[
            agent(
                "gated",
                "question_ttl = \"1s\"",
                &[
                    r#"call = [{ tool = "gate", arguments = { n = 1 } }]"#,
                    r#"say = "{{result.1}}""#,
                ],
            ),
            agent(
                "slow_worker",
                "",
                &[r#"call = [{ tool = "slow" }]"#, r#"say = "{{result.1}}""#],
            ),
        ])),
        &[],
    );
    let mut client = server.agents().await;
    let mut gated = RunStream::start(&mut client, "gated").await;
    let approval = gated.next_suspended().await;
    assert_eq!(approval.kind, pb::SuspendKind::Approval as i32);
    assert!(approval.expire_time.is_some());
    // A client call with no question TTL expires on its tool's own timeout.
    let mut slow = RunStream::start(&mut client, "slow_worker").await;
    let waiting = slow.next_suspended().await;
    assert_eq!(waiting.kind, pb::SuspendKind::ClientTool as i32);
    assert!(waiting.expire_time.is_some());

    assert_eq!(
        gated.completed_text().await,
        "No decision: the approval request expired"
    );
    assert_eq!(
        slow.completed_text().await,
        "No output: the tool call timed out"
    );
    let log = watch_until_end(&mut client, &gated.run_id, 0).await;
    let result = tool_results(&log, &approval.tool_call_id)[0];
    assert_eq!(result.kind, pb::ToolResultKind::Expired as i32);
    assert!(result.is_error);
    // It was never suspended as a client call: the tool never ran.
    let suspended_again = log.iter().any(|f| {
        matches!(&f.event, Some(Event::ToolCallSuspended(s)) if s.kind == pb::SuspendKind::ClientTool as i32)
    });
    assert!(!suspended_again, "{log:?}");
    // Too late: the approval is gone.
    let late = resume(&mut client, approve(&gated.run_id, &approval.tool_call_id))
        .await
        .expect_err("approve after expiry");
    assert_eq!(error_reason(&late).as_deref(), Some("QUESTION_EXPIRED"));
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_become_error_results_and_the_run_goes_on() {
    let server = Server::start_with(
        Some(&agents(&[agent(
            "sloppy",
            "",
            &[
                r#"call = [{ tool = "probe", arguments = { target = 3, extra = true } }, { tool = "shell", arguments = { cmd = "rm" } }]"#,
                r#"say = "{{result.1}} / {{result.2}}""#,
            ],
        )])),
        &[],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "sloppy").await;
    let mut results = Vec::new();
    let text = loop {
        let frame = run.next().await;
        match frame.event {
            Some(Event::ToolResult(result)) => results.push(result),
            Some(Event::ToolCallSuspended(s)) => panic!("an invalid call suspended: {s:?}"),
            Some(Event::RunCompleted(done)) => break done.output_text,
            _ => {}
        }
    };
    assert_eq!(results.len(), 2);
    assert!(
        results
            .iter()
            .all(|r| r.is_error && r.kind == pb::ToolResultKind::InvalidCall as i32)
    );
    assert!(
        results[0]
            .content
            .starts_with("Invalid arguments for probe: "),
        "{}",
        results[0].content
    );
    assert!(
        results[0].content.contains("/target"),
        "{}",
        results[0].content
    );
    assert!(
        results[1].content.starts_with("Unknown tool \"shell\""),
        "{}",
        results[1].content
    );
    assert_eq!(
        text,
        format!("{} / {}", results[0].content, results[1].content)
    );
}

fn run_tool(name: &str, schema: &str, approval: pb::ApprovalPolicy) -> pb::ToolDefinition {
    pb::ToolDefinition {
        name: name.into(),
        description: format!("{name} for one run"),
        parameters_json_schema: schema.into(),
        approval: approval as i32,
    }
}

async fn start_with_tools(
    client: &mut AgentServiceClient<Channel>,
    agent_id: &str,
    tools: Vec<pb::ToolDefinition>,
) -> Result<RunStream, tonic::Status> {
    let mut run = RunStream::open(
        client,
        Frame::Start(pb::StartRun {
            agent_id: agent_id.into(),
            prompt: "go".into(),
            tools,
            ..Default::default()
        }),
    )
    .await?;
    let first = tokio::time::timeout(FRAME_TIMEOUT, run.inbound.message())
        .await
        .expect("first frame")?
        .expect("a frame");
    run.run_id = first.run_id;
    Ok(run)
}

#[tokio::test]
async fn per_run_tools_are_checked_at_start() {
    let server = Server::start_with(Some(&agents(&[agent("host", "", &[r#"say = "hi""#])])), &[]);
    let mut client = server.agents().await;
    let object = r#"{"type": "object"}"#;
    let never = pb::ApprovalPolicy::Never;
    let cases = [
        (
            vec![
                run_tool("lookup", object, never),
                run_tool("lookup", object, never),
            ],
            "start.tools[1].name",
        ),
        (
            vec![run_tool("probe", object, never)],
            "start.tools[0].name",
        ),
        (
            vec![run_tool("ask_user", object, never)],
            "start.tools[0].name",
        ),
        (
            vec![run_tool("bad name!", object, never)],
            "start.tools[0].name",
        ),
        (
            vec![run_tool("lookup", r#"{"type": "nonsense"}"#, never)],
            "start.tools[0].parameters_json_schema",
        ),
        (
            vec![run_tool("lookup", object, pb::ApprovalPolicy::Conditional)],
            "start.tools[0].approval",
        ),
    ];
    for (tools, field) in cases {
        let status = match start_with_tools(&mut client, "host", tools.clone()).await {
            Err(status) => status,
            Ok(run) => panic!("{tools:?} started run {}", run.run_id),
        };
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{tools:?}");
        let fields: Vec<String> = field_violations(&status).into_iter().map(|v| v.0).collect();
        assert_eq!(fields, [field], "{tools:?}");
    }
}

/// A run's own tools are stored with it: after a restart (or on another replica) its calls are
/// still checked, held for approval and settled as that run declared.
#[tokio::test]
async fn per_run_tools_survive_a_restart() {
    let mut server = Server::process_with(
        Some(&agents(&[agent(
            "borrower",
            "",
            &[
                r#"call = [{ tool = "lookup", arguments = { key = "k" } }]"#,
                r#"say = "lookup: {{result.1}}""#,
            ],
        )])),
        &[],
    );
    let mut client = server.agents().await;
    let schema =
        r#"{"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}"#;
    let mut run = start_with_tools(
        &mut client,
        "borrower",
        vec![run_tool("lookup", schema, pb::ApprovalPolicy::Always)],
    )
    .await
    .expect("start");
    let run_id = run.run_id.clone();
    let approval = run.next_suspended().await;
    assert_eq!(approval.kind, pb::SuspendKind::Approval as i32);
    drop(run);
    server.kill();
    server.restart();
    let mut client = server.agents().await;
    let edit = pb::Answer {
        answer: Some(pb::answer::Answer::Approval(pb::ApprovalDecision {
            decision: Some(pb::approval_decision::Decision::Edit(
                pb::approval_decision::Edit {
                    arguments_json: r#"{"key": 5}"#.into(),
                },
            )),
        })),
        ..approve(&run_id, &approval.tool_call_id)
    };
    let bad = resume(&mut client, edit)
        .await
        .expect_err("edit off schema");
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        field_violations(&bad)
            .into_iter()
            .map(|v| v.0)
            .collect::<Vec<_>>(),
        ["answer.approval.edit.arguments_json"]
    );
    resume(&mut client, approve(&run_id, &approval.tool_call_id))
        .await
        .expect("approve");
    resume(&mut client, output(&run_id, &approval.tool_call_id, "v"))
        .await
        .expect("output");
    assert_eq!(get_run(&mut client, &run_id).await.output_text, "lookup: v");
}

/// Two workers share the pending-calls feed: each claims every call it sees, and only the holder of
/// a claim runs the call; every call is run exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_the_feed_run_each_call_once() {
    const RUNS: usize = 8;
    let server = Server::start_with(
        Some(&agents(&[agent(
            "fleet",
            "",
            &[
                r#"call = [{ tool = "probe", arguments = { target = "x" } }]"#,
                r#"say = "{{result.1}}""#,
            ],
        )])),
        &[],
    );
    let worker = |name: &'static str| {
        let url = server.url();
        tokio::spawn(async move {
            let channel = Channel::from_shared(url)
                .expect("url")
                .connect()
                .await
                .expect("connect");
            let mut client = AgentServiceClient::new(channel);
            let mut feed = client
                .watch_pending_calls(pb::WatchPendingCallsRequest {
                    agent_ids: vec!["fleet".into()],
                    tool_names: vec!["probe".into()],
                    kinds: vec![pb::SuspendKind::ClientTool as i32],
                    ..Default::default()
                })
                .await
                .expect("feed")
                .into_inner();
            let (mut ran, mut refused, mut settled) = (Vec::new(), 0, HashSet::new());
            while settled.len() < RUNS {
                let event = tokio::time::timeout(FRAME_TIMEOUT, feed.message())
                    .await
                    .expect("feed event")
                    .expect("feed")
                    .expect("feed open");
                match event.event {
                    Some(Feed::CallPending(pending)) => {
                        let call = pending.call.expect("call");
                        let claim = client
                            .claim_call(pb::ClaimCallRequest {
                                run_id: pending.run_id.clone(),
                                tool_call_id: call.tool_call_id.clone(),
                                ttl: None,
                                claimant: name.into(),
                            })
                            .await;
                        match claim {
                            Ok(_) => {
                                resume(
                                    &mut client,
                                    output(&pending.run_id, &call.tool_call_id, name),
                                )
                                .await
                                .expect("output");
                                ran.push(pending.run_id);
                            }
                            Err(status) => {
                                let reason = error_reason(&status);
                                assert!(
                                    matches!(
                                        reason.as_deref(),
                                        Some("ALREADY_CLAIMED" | "TOOL_CALL_NOT_PENDING")
                                    ),
                                    "{status:?}"
                                );
                                refused += 1;
                            }
                        }
                    }
                    Some(Feed::CallSettled(done)) => {
                        assert_eq!(done.kind, pb::ToolResultKind::Output as i32);
                        settled.insert(done.run_id);
                    }
                    _ => {}
                }
            }
            (ran, refused)
        })
    };
    let (a, b) = (worker("worker-a"), worker("worker-b"));
    let mut client = server.agents().await;
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(RunStream::start(&mut client, "fleet").await);
    }
    let (a, b) = (a.await.expect("worker a"), b.await.expect("worker b"));
    let mut ran: Vec<String> = a.0.iter().chain(&b.0).cloned().collect();
    ran.sort();
    let mut started: Vec<String> = runs.iter().map(|r| r.run_id.clone()).collect();
    started.sort();
    assert_eq!(ran, started, "every call ran once, by one worker");
    assert_eq!(a.1 + b.1, RUNS, "the other worker was refused each call");
    for run in &mut runs {
        let text = run.completed_text().await;
        assert!(text == "worker-a" || text == "worker-b", "{text}");
    }
}

#[tokio::test]
async fn the_feed_filters_by_kind_and_a_reconnect_gets_the_snapshot() {
    let server = Server::start_with(
        Some(&agents(&[agent(
            "both",
            "",
            &[
                r#"call = [{ tool = "ask_user", arguments = { question = "Name?" } }, { tool = "probe", arguments = { target = "y" } }]"#,
                r#"say = "done""#,
            ],
        )])),
        &[],
    );
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "both").await;
    let calls = suspensions(&mut run, 2).await;
    let feed_of = |kinds: Vec<pb::SuspendKind>| {
        let mut client = client.clone();
        async move {
            let mut feed = client
                .watch_pending_calls(pb::WatchPendingCallsRequest {
                    agent_ids: vec!["both".into()],
                    tool_names: Vec::new(),
                    kinds: kinds.into_iter().map(|k| k as i32).collect(),
                    ..Default::default()
                })
                .await
                .expect("feed")
                .into_inner();
            let mut snapshot = Vec::new();
            loop {
                let event = tokio::time::timeout(FRAME_TIMEOUT, feed.message())
                    .await
                    .expect("event")
                    .expect("feed")
                    .expect("open");
                match event.event {
                    Some(Feed::CallPending(pending)) => {
                        snapshot.push(pending.call.expect("call").tool_call_id)
                    }
                    Some(Feed::SnapshotDone(_)) => return snapshot,
                    other => panic!("before the snapshot ended: {other:?}"),
                }
            }
        }
    };
    assert_eq!(
        feed_of(vec![pb::SuspendKind::Question]).await,
        [calls[0].tool_call_id.clone()]
    );
    assert_eq!(
        feed_of(vec![pb::SuspendKind::ClientTool]).await,
        [calls[1].tool_call_id.clone()]
    );
    let mut both = feed_of(Vec::new()).await;
    both.sort();
    let mut expected = vec![calls[0].tool_call_id.clone(), calls[1].tool_call_id.clone()];
    expected.sort();
    assert_eq!(both, expected);
    // An unknown kind is refused.
    let bad = client
        .clone()
        .watch_pending_calls(pb::WatchPendingCallsRequest {
            kinds: vec![pb::SuspendKind::Unspecified as i32],
            ..Default::default()
        })
        .await
        .expect_err("unspecified kind");
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    // A claim lasts at most an hour and needs a claimant.
    let long = client
        .claim_call(pb::ClaimCallRequest {
            run_id: run.run_id.clone(),
            tool_call_id: calls[1].tool_call_id.clone(),
            ttl: Some(prost_types::Duration {
                seconds: 7200,
                nanos: 0,
            }),
            claimant: String::new(),
        })
        .await
        .expect_err("bad claim");
    let fields: Vec<String> = field_violations(&long).into_iter().map(|v| v.0).collect();
    assert_eq!(fields, ["claimant", "ttl"]);
}

/// A snapshot longer than two pages of either store (512 calls each on SQLite, 2,048 on
/// PostgreSQL) comes whole, each call once, and a call that waits after it comes live.
#[tokio::test]
async fn a_snapshot_of_many_pages_comes_whole_then_changes_come_live() {
    const RUNS: usize = 2 * 2048 + 100;
    let server = Server::start();
    let mut client = server.agents().await;
    // Started 32 at a time; each stream ends at its run's first question, which stays pending.
    let waiting: HashSet<(String, String)> = futures::stream::iter(0..RUNS)
        .map(|_| {
            let mut client = client.clone();
            async move {
                let mut run = RunStream::start(&mut client, "greeter").await;
                let call = run.next_suspended().await.tool_call_id;
                (run.run_id.clone(), call)
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert_eq!(waiting.len(), RUNS);
    let mut feed = client
        .watch_pending_calls(pb::WatchPendingCallsRequest::default())
        .await
        .expect("feed")
        .into_inner();
    let mut seen = HashSet::new();
    loop {
        let event = tokio::time::timeout(FRAME_TIMEOUT, feed.message())
            .await
            .expect("timed out waiting for the feed")
            .expect("feed")
            .expect("feed open");
        match event.event {
            Some(Feed::CallPending(pending)) => {
                let call = pending.call.expect("a call").tool_call_id;
                assert!(seen.insert((pending.run_id, call)), "a call came twice");
            }
            Some(Feed::SnapshotDone(_)) => break,
            _ => {}
        }
    }
    assert_eq!(seen, waiting);
    let mut run = RunStream::start(&mut client, "greeter").await;
    let call = run.next_suspended().await.tool_call_id;
    loop {
        let event = tokio::time::timeout(FRAME_TIMEOUT, feed.message())
            .await
            .expect("timed out waiting for the live call")
            .expect("feed")
            .expect("feed open");
        if let Some(Feed::CallPending(pending)) = event.event {
            assert_eq!(pending.run_id, run.run_id);
            assert_eq!(pending.call.expect("a call").tool_call_id, call);
            break;
        }
    }
}
