//! The life of a run over the real server: reattaching after a dropped stream, declining,
//! question expiry, cancellation, heartbeats, retention, client disconnects, one-shot `ResumeRun`
//! and `WatchRun` of a finished run.

use crate::common;

use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    RunStream, Server, Verdict, assert_contiguous, completions, decline_answer, error_reason,
    event_name, field_violations, get_run, now_ms, resume, resume_verdict, scripted_agent,
    scripted_agent_with, selections_answer, text_answer, timestamp_ms, tool_results,
    watch_until_end,
};
use tonic::Code;
use tonic::transport::Channel;

const EXPIRED_RESULT: &str = "No answer: the question expired";
const CANCELLED_RESULT: &str = "No answer: the run was cancelled";

/// The agents every test here runs; each one's final text shows the answers it got.
fn agents() -> String {
    [
        scripted_agent(
            "free",
            &[
                r#"ask = [{ question = "Your name?" }]"#,
                r#"say = "free: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "single",
            &[
                r#"ask = [{ question = "Which one?", options = [{ label = "red" }, { label = "blue" }] }]"#,
                r#"say = "single: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "multi",
            &[
                r#"ask = [{ question = "Which ones?", options = [{ label = "red" }, { label = "blue" }], selection_mode = "multi_select" }]"#,
                r#"say = "multi: {{answer.1}}""#,
            ],
        ),
        scripted_agent_with(
            "long_ttl",
            r#"question_ttl = "1h""#,
            &[
                r#"ask = [{ question = "Your name?" }]"#,
                r#"say = "long_ttl: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "two_questions",
            &[
                r#"ask = [{ question = "First?" }]"#,
                r#"ask = [{ question = "Second?" }]"#,
                r#"say = "two: {{answer.1}} then {{answer.2}}""#,
            ],
        ),
        scripted_agent(
            "parallel",
            &[
                r#"ask = [{ question = "Which environment?", options = [{ label = "staging" }, { label = "production" }] }]"#,
                r#"ask = [{ question = "Which checks?", options = [{ label = "lint" }, { label = "unit" }], selection_mode = "multi_select" }, { question = "Any note?" }]"#,
                r#"say = "parallel: {{answer.1}} with {{answer.2}}; note: {{answer.3}}""#,
            ],
        ),
        scripted_agent(
            "slow_start",
            &[
                "delay = \"1s\"\nask = [{ question = \"Ready?\" }]",
                r#"say = "slow start: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "slow_second",
            &[
                r#"ask = [{ question = "First?" }]"#,
                "delay = \"1s\"\nask = [{ question = \"Second?\" }]",
                r#"say = "slow second: {{answer.1}} then {{answer.2}}""#,
            ],
        ),
    ]
    .concat()
}

fn start_server(extra_args: &[&str]) -> Server {
    Server::start_with(Some(&agents()), extra_args)
}

/// Reads frames into `seen` until `count` `tool_call_suspended` frames came; returns their ids.
async fn read_suspensions(
    stream: &mut RunStream,
    count: usize,
    seen: &mut Vec<pb::RunAgentResponse>,
) -> Vec<String> {
    let mut ids = Vec::new();
    while ids.len() < count {
        let frame = stream.next().await;
        if let Some(Event::ToolCallSuspended(suspended)) = &frame.event {
            ids.push(suspended.tool_call_id.clone());
        }
        seen.push(frame);
    }
    ids
}

fn stored(frames: &[pb::RunAgentResponse]) -> Vec<pb::RunAgentResponse> {
    frames.iter().filter(|f| f.sequence > 0).cloned().collect()
}

fn names(frames: &[pb::RunAgentResponse]) -> Vec<&'static str> {
    frames.iter().map(event_name).collect()
}

fn only_tool_result(frame: &pb::RunAgentResponse) -> &pb::ToolResult {
    match &frame.event {
        Some(Event::ToolResult(result)) => result,
        other => panic!("expected tool_result, got {other:?}"),
    }
}

/// The `GetRun` status of a run, or the status code it fails with.
async fn run_status(
    client: &mut AgentServiceClient<Channel>,
    run_id: &str,
) -> Result<pb::RunStatus, Code> {
    client
        .get_run(pb::GetRunRequest {
            run_id: run_id.into(),
        })
        .await
        .map(|response| response.into_inner().run.expect("run").status())
        .map_err(|status| status.code())
}

/// Polls `GetRun` until `done` holds for the run's status (or error code); fails after 20 s.
async fn wait_for_status(
    client: &mut AgentServiceClient<Channel>,
    run_id: &str,
    done: impl Fn(Result<pb::RunStatus, Code>) -> bool,
) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !done(run_status(client, run_id).await) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("run {run_id} never reached the awaited state"));
}

/// Starts a run with a `StartRun.question_ttl`, and reads its `run_started` frame.
async fn start_with_ttl(
    client: &mut AgentServiceClient<Channel>,
    agent_id: &str,
    question_ttl: Option<Duration>,
) -> RunStream {
    let mut stream = RunStream::open(
        client,
        Frame::Start(pb::StartRun {
            agent_id: agent_id.into(),
            prompt: "test".into(),
            question_ttl: question_ttl.map(|ttl| prost_types::Duration {
                seconds: i64::try_from(ttl.as_secs()).expect("seconds"),
                nanos: i32::try_from(ttl.subsec_nanos()).expect("nanos"),
            }),
            ..Default::default()
        }),
    )
    .await
    .expect("start run");
    let first = stream.next().await;
    assert_eq!(event_name(&first), "run_started");
    stream.run_id = first.run_id;
    stream
}

#[tokio::test]
async fn reattached_streams_miss_and_double_nothing() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut original = RunStream::start(&mut client, "parallel").await;
    let run_id = original.run_id.clone();
    let mut before_drop = Vec::new();
    let environment = read_suspensions(&mut original, 1, &mut before_drop).await;
    drop(original);

    // From 0: everything again, including the pending question's suspend frame.
    let mut from_start = RunStream::attach(&mut client, &run_id, 0).await;
    let mut seen_from_start = Vec::new();
    for _ in 0..=before_drop.len() {
        seen_from_start.push(from_start.next().await);
    }
    assert_eq!(event_name(&seen_from_start[0]), "run_started");
    assert_eq!(seen_from_start[1..], before_drop[..]);
    assert_eq!(
        event_name(seen_from_start.last().expect("frame")),
        "tool_call_suspended"
    );

    // From the middle: only what came after.
    let middle = before_drop[0].sequence;
    let mut from_middle = RunStream::attach(&mut client, &run_id, middle).await;
    let mut seen_from_middle = Vec::new();
    assert_eq!(
        read_suspensions(&mut from_middle, 1, &mut seen_from_middle).await,
        environment
    );
    assert_eq!(seen_from_middle[..], before_drop[1..]);

    // Both follow live while the run goes on, answered over three different paths.
    from_start
        .send_selections(&environment[0], &["production"])
        .await;
    let checks_and_note = read_suspensions(&mut from_start, 2, &mut seen_from_start).await;
    assert_eq!(
        read_suspensions(&mut from_middle, 2, &mut seen_from_middle).await,
        checks_and_note
    );
    let resumed = resume(
        &mut client,
        selections_answer(&run_id, &checks_and_note[0], &["lint", "unit"]),
    )
    .await
    .expect("resume");
    assert_eq!(names(&resumed), ["answer_accepted", "tool_result"]);
    from_middle.send_text(&checks_and_note[1], "ship it").await;
    seen_from_start.extend(from_start.frames_until_end().await);
    seen_from_middle.extend(from_middle.frames_until_end().await);

    let log = watch_until_end(&mut client, &run_id, 0).await;
    assert_contiguous(&log, 1);
    assert_eq!(
        completions(&log),
        ["parallel: production with lint, unit; note: ship it"]
    );
    assert_eq!(stored(&seen_from_start), log);
    let after_middle: Vec<_> = log
        .iter()
        .filter(|f| f.sequence > middle)
        .cloned()
        .collect();
    assert_eq!(stored(&seen_from_middle), after_middle);
    // Each stream saw the verdict on its own answer, and only that one.
    let accepted = |frames: &[pb::RunAgentResponse]| {
        frames
            .iter()
            .filter_map(|f| match &f.event {
                Some(Event::AnswerAccepted(accepted)) => Some(accepted.tool_call_id.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(accepted(&seen_from_start), [environment[0].clone()]);
    assert_eq!(accepted(&seen_from_middle), [checks_and_note[1].clone()]);
    assert_eq!(resumed[1], log[resumed[1].sequence as usize - 1]);
}

#[tokio::test]
async fn decline_settles_every_kind_of_question() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    for agent in ["free", "single", "multi"] {
        for reason in ["", "not my call"] {
            let mut run = RunStream::start(&mut client, agent).await;
            let question = run.next_suspended().await;
            run.send(decline_answer(&run.run_id, &question.tool_call_id, reason))
                .await;
            assert_eq!(
                run.next_verdict(&question.tool_call_id).await,
                Verdict::Accepted { duplicate: false },
                "{agent} declined with {reason:?}"
            );
            let expected = if reason.is_empty() {
                "User declined to answer".to_owned()
            } else {
                format!("User declined to answer: {reason}")
            };
            let result = run.next().await;
            let result = only_tool_result(&result);
            assert_eq!(result.tool_call_id, question.tool_call_id);
            assert_eq!(result.content, expected);
            assert_eq!(result.kind(), pb::ToolResultKind::Declined);
            assert!(!result.is_error);
            assert_eq!(run.completed_text().await, format!("{agent}: {expected}"));
        }
    }
}

#[tokio::test]
async fn questions_expire_with_capped_ttls_and_the_runs_go_on() {
    let server = start_server(&["--max-question-ttl", "1s"]);
    let mut client = server.agents().await;
    let short = Duration::from_millis(300);
    let hour = Duration::from_secs(3600);
    // (agent, StartRun.question_ttl, the TTL the server must apply)
    let cases = [
        ("long_ttl", None, Duration::from_secs(1)),
        ("free", Some(hour), Duration::from_secs(1)),
        ("free", Some(short), short),
        ("long_ttl", Some(short), short),
    ];
    let mut never_expires = RunStream::start(&mut client, "free").await;
    let open_question = never_expires.next_suspended().await;
    assert_eq!(open_question.expire_time, None);

    let mut runs = Vec::new();
    for (agent, requested, applied) in cases {
        let before = now_ms();
        let mut run = start_with_ttl(&mut client, agent, requested).await;
        let question = run.next_suspended().await;
        let after = now_ms();
        let expire_ms = timestamp_ms(question.expire_time.as_ref().expect("expire_time"));
        let applied_ms = i64::try_from(applied.as_millis()).expect("ms");
        assert!(
            (before + applied_ms..=after + applied_ms).contains(&expire_ms),
            "{agent} {requested:?}: expire_time {expire_ms} is not {applied:?} after the question \
             was asked (between {before} and {after})"
        );
        runs.push((agent, run, question.tool_call_id, expire_ms));
    }
    for (agent, mut run, tool_call_id, expire_ms) in runs {
        let frame = run.next().await;
        let result = only_tool_result(&frame);
        assert_eq!(result.tool_call_id, tool_call_id);
        assert_eq!(result.content, EXPIRED_RESULT);
        assert_eq!(result.kind(), pb::ToolResultKind::Expired);
        assert!(timestamp_ms(frame.time.as_ref().expect("time")) >= expire_ms);
        assert_eq!(
            run.completed_text().await,
            format!("{agent}: {EXPIRED_RESULT}")
        );
        assert_eq!(
            resume_verdict(&mut client, text_answer(&run.run_id, &tool_call_id, "late")).await,
            Verdict::Rejected {
                reason: "QUESTION_EXPIRED".into()
            }
        );
    }

    // The question without a TTL is still open after all the others expired.
    let waiting = get_run(&mut client, &never_expires.run_id).await;
    assert_eq!(waiting.status(), pb::RunStatus::Suspended);
    never_expires
        .send_text(&open_question.tool_call_id, "Ada")
        .await;
    assert_eq!(never_expires.completed_text().await, "free: Ada");
}

#[tokio::test]
async fn a_question_that_expires_while_the_server_is_down_expires_at_restart() {
    let mut server = Server::process_with(Some(&agents()), &[]);
    let mut client = server.agents().await;
    let mut run = start_with_ttl(&mut client, "free", Some(Duration::from_secs(2))).await;
    let run_id = run.run_id.clone();
    let question = run.next_suspended().await;
    let expire_ms = timestamp_ms(question.expire_time.as_ref().expect("expire_time"));
    drop(run);
    server.kill();
    let wait = u64::try_from(expire_ms + 200 - now_ms()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let restarted_ms = now_ms();
    server.restart();
    let mut client = server.agents().await;

    let log = watch_until_end(&mut client, &run_id, 0).await;
    assert_contiguous(&log, 1);
    let results = tool_results(&log, &question.tool_call_id);
    assert_eq!(results.len(), 1, "{log:?}");
    assert_eq!(results[0].content, EXPIRED_RESULT);
    assert_eq!(results[0].kind(), pb::ToolResultKind::Expired);
    let expired_at = log
        .iter()
        .find(|f| event_name(f) == "tool_result")
        .and_then(|f| f.time.as_ref())
        .map(timestamp_ms)
        .expect("tool_result time");
    assert!(
        expired_at >= restarted_ms,
        "the question expired at {expired_at}, before the restart at {restarted_ms}"
    );
    assert_eq!(completions(&log), [format!("free: {EXPIRED_RESULT}")]);
    assert_eq!(
        resume_verdict(
            &mut client,
            text_answer(&run_id, &question.tool_call_id, "late")
        )
        .await,
        Verdict::Rejected {
            reason: "QUESTION_EXPIRED".into()
        }
    );
}

async fn cancel(
    client: &mut AgentServiceClient<Channel>,
    run_id: &str,
    reason: &str,
) -> Result<pb::Run, tonic::Status> {
    client
        .cancel_run(pb::CancelRunRequest {
            run_id: run_id.into(),
            reason: reason.into(),
        })
        .await
        .map(|response| response.into_inner().run.expect("run"))
}

#[tokio::test]
async fn cancelling_a_suspended_run_settles_its_question_and_ends_its_streams() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "two_questions").await;
    let run_id = run.run_id.clone();
    let question = run.next_suspended().await;
    let mut watcher = RunStream::attach(&mut client, &run_id, 0).await;
    assert_eq!(
        watcher.next_suspended().await.tool_call_id,
        question.tool_call_id
    );

    let cancelled = cancel(&mut client, &run_id, "changed my mind")
        .await
        .expect("cancel");
    assert_eq!(cancelled.status(), pb::RunStatus::Cancelled);
    assert_eq!(cancelled.error_message, "changed my mind");
    assert!(cancelled.pending_tool_calls.is_empty());
    for stream in [&mut run, &mut watcher] {
        let rest = stream.frames_until_end().await;
        assert_eq!(names(&rest), ["tool_result", "run_cancelled"]);
        let result = only_tool_result(&rest[0]);
        assert_eq!(result.tool_call_id, question.tool_call_id);
        assert_eq!(result.content, CANCELLED_RESULT);
        assert_eq!(result.kind(), pb::ToolResultKind::Cancelled);
        assert_eq!(
            rest[1].event,
            Some(Event::RunCancelled(pb::RunCancelled {
                reason: "changed my mind".into()
            }))
        );
    }

    let again = cancel(&mut client, &run_id, "again")
        .await
        .expect("cancel again");
    assert_eq!(again.status(), pb::RunStatus::Cancelled);
    assert_eq!(again.error_message, "changed my mind");
    let log = watch_until_end(&mut client, &run_id, 0).await;
    assert_contiguous(&log, 1);
    assert_eq!(
        names(&log),
        [
            "run_started",
            "tool_call",
            "tool_call_suspended",
            "tool_result",
            "run_cancelled"
        ]
    );
    assert_eq!(
        resume_verdict(
            &mut client,
            text_answer(&run_id, &question.tool_call_id, "too late")
        )
        .await,
        Verdict::Rejected {
            reason: "RUN_NOT_SUSPENDED".into()
        }
    );
}

#[tokio::test]
async fn cancelling_a_working_run_discards_its_step() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "slow_start").await;
    let run_id = run.run_id.clone();
    let working = get_run(&mut client, &run_id).await;
    assert_eq!(working.status(), pb::RunStatus::Running);
    assert_eq!(working.last_sequence, 1);

    let cancelled = cancel(&mut client, &run_id, "stop").await.expect("cancel");
    assert_eq!(cancelled.status(), pb::RunStatus::Cancelled);
    assert_eq!(names(&run.frames_until_end().await), ["run_cancelled"]);

    // Let the model's step finish: what it produced must not be committed.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let log = watch_until_end(&mut client, &run_id, 0).await;
    assert_eq!(names(&log), ["run_started", "run_cancelled"]);
    assert_eq!(
        get_run(&mut client, &run_id).await.status(),
        pb::RunStatus::Cancelled
    );
    let again = cancel(&mut client, &run_id, "stop")
        .await
        .expect("cancel again");
    assert_eq!(again.status(), pb::RunStatus::Cancelled);
}

#[tokio::test]
async fn cancelling_a_completed_or_unknown_run_is_refused() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "free").await;
    let question = run.next_suspended().await;
    run.send_text(&question.tool_call_id, "Ada").await;
    assert_eq!(run.completed_text().await, "free: Ada");

    let refused = cancel(&mut client, &run.run_id, "too late")
        .await
        .expect_err("cancel a completed run");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(error_reason(&refused).as_deref(), Some("RUN_FINISHED"));
    let completed = get_run(&mut client, &run.run_id).await;
    assert_eq!(completed.status(), pb::RunStatus::Completed);
    assert_eq!(completed.output_text, "free: Ada");

    let unknown = cancel(&mut client, "no-such-run", "")
        .await
        .expect_err("cancel an unknown run");
    assert_eq!(unknown.code(), Code::NotFound);
}

#[tokio::test]
async fn idle_streams_get_heartbeats() {
    let server = start_server(&["--heartbeat-interval", "200ms"]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "free").await;
    let question = run.next_suspended().await;
    for _ in 0..3 {
        let frame = run.next_raw().await.expect("frame");
        assert_eq!(event_name(&frame), "heartbeat");
        assert_eq!(frame.sequence, 0);
        assert_eq!(frame.run_id, run.run_id);
    }
    let last_sequence = get_run(&mut client, &run.run_id).await.last_sequence;
    let mut watch = client
        .watch_run(pb::WatchRunRequest {
            run_id: run.run_id.clone(),
            after_sequence: last_sequence,
        })
        .await
        .expect("watch")
        .into_inner();
    let frame = tokio::time::timeout(common::FRAME_TIMEOUT, watch.message())
        .await
        .expect("timed out waiting for a heartbeat")
        .expect("watch stream")
        .expect("frame");
    assert_eq!(event_name(&frame), "heartbeat");
    assert_eq!(frame.sequence, 0);

    // A pending-calls feed idle after its snapshot gets them too, again and again (its one timer
    // is armed anew after each).
    let mut feed = client
        .watch_pending_calls(pb::WatchPendingCallsRequest::default())
        .await
        .expect("feed")
        .into_inner();
    let mut events = Vec::new();
    while events.len() < 4 {
        let message = tokio::time::timeout(common::FRAME_TIMEOUT, feed.message())
            .await
            .expect("timed out waiting for the feed")
            .expect("feed")
            .expect("feed open");
        events.push(match message.event {
            Some(pb::watch_pending_calls_response::Event::CallPending(pending)) => {
                assert_eq!(pending.run_id, run.run_id);
                "call_pending"
            }
            Some(pb::watch_pending_calls_response::Event::SnapshotDone(_)) => "snapshot_done",
            Some(pb::watch_pending_calls_response::Event::Heartbeat(_)) => "heartbeat",
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(
        events,
        ["call_pending", "snapshot_done", "heartbeat", "heartbeat"]
    );

    run.send_text(&question.tool_call_id, "Ada").await;
    assert_eq!(run.completed_text().await, "free: Ada");
}

#[tokio::test]
async fn retention_prunes_finished_runs_but_never_suspended_ones() {
    let server = start_server(&["--retention", "1s", "--prune-interval", "200ms"]);
    let mut client = server.agents().await;
    let mut waiting = RunStream::start(&mut client, "free").await;
    let open_question = waiting.next_suspended().await;

    let mut completed = RunStream::start(&mut client, "free").await;
    let question = completed.next_suspended().await;
    completed.send_text(&question.tool_call_id, "Ada").await;
    assert_eq!(completed.completed_text().await, "free: Ada");
    let mut cancelled = RunStream::start(&mut client, "free").await;
    cancelled.next_suspended().await;
    cancel(&mut client, &cancelled.run_id, "")
        .await
        .expect("cancel");

    let gone = |status: Result<pb::RunStatus, Code>| status == Err(Code::NotFound);
    wait_for_status(&mut client, &completed.run_id, gone).await;
    wait_for_status(&mut client, &cancelled.run_id, gone).await;
    let watch = client
        .watch_run(pb::WatchRunRequest {
            run_id: completed.run_id.clone(),
            after_sequence: 0,
        })
        .await
        .expect_err("watch a pruned run");
    assert_eq!(watch.code(), Code::NotFound);

    // Suspended since before the others finished, so past retention too, yet kept and answerable.
    let kept = get_run(&mut client, &waiting.run_id).await;
    assert_eq!(kept.status(), pb::RunStatus::Suspended);
    assert_eq!(kept.pending_tool_calls.len(), 1);
    assert_eq!(
        kept.pending_tool_calls[0].tool_call_id,
        open_question.tool_call_id
    );
    waiting.send_text(&open_question.tool_call_id, "Bob").await;
    assert_eq!(waiting.completed_text().await, "free: Bob");
    // Once finished, it goes the same way.
    wait_for_status(&mut client, &waiting.run_id, gone).await;
}

#[tokio::test]
async fn a_run_works_on_after_its_client_disconnects() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "slow_second").await;
    let run_id = run.run_id.clone();
    let first = run.next_suspended().await;
    run.send_text(&first.tool_call_id, "one").await;
    assert_eq!(
        run.next_verdict(&first.tool_call_id).await,
        Verdict::Accepted { duplicate: false }
    );
    drop(run);
    assert_eq!(
        get_run(&mut client, &run_id).await.status(),
        pb::RunStatus::Running
    );

    // Nobody follows the run now; it must still reach its next question.
    wait_for_status(&mut client, &run_id, |status| {
        status == Ok(pb::RunStatus::Suspended)
    })
    .await;
    let waiting = get_run(&mut client, &run_id).await;
    assert_eq!(waiting.pending_tool_calls.len(), 1);
    let second = &waiting.pending_tool_calls[0];
    assert_eq!(
        second.suspend_payload.as_ref().expect("payload").question,
        "Second?"
    );

    let mut attached = RunStream::attach(&mut client, &run_id, 0).await;
    let mut replayed = Vec::new();
    let suspended = read_suspensions(&mut attached, 2, &mut replayed).await;
    assert_eq!(
        suspended,
        [first.tool_call_id.clone(), second.tool_call_id.clone()]
    );
    assert_contiguous(&replayed, 1);
    assert_eq!(
        names(&replayed),
        [
            "run_started",
            "tool_call",
            "tool_call_suspended",
            "tool_result",
            "tool_call",
            "tool_call_suspended"
        ]
    );
    attached.send_text(&second.tool_call_id, "two").await;
    assert_eq!(attached.completed_text().await, "slow second: one then two");
}

#[tokio::test]
async fn resume_run_streams_until_the_next_suspension_or_the_end() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "two_questions").await;
    let run_id = run.run_id.clone();
    let first = run.next_suspended().await.tool_call_id;
    drop(run);

    // Bad answers are statuses, and the question stays answerable.
    let unknown_call = resume(&mut client, text_answer(&run_id, "call_unknown", "x"))
        .await
        .expect_err("unknown call");
    assert_eq!(unknown_call.code(), Code::FailedPrecondition);
    assert_eq!(
        error_reason(&unknown_call).as_deref(),
        Some("TOOL_CALL_NOT_PENDING")
    );
    let blank = resume(&mut client, text_answer(&run_id, &first, "  "))
        .await
        .expect_err("blank answer");
    assert_eq!(blank.code(), Code::InvalidArgument);
    let fields: Vec<String> = field_violations(&blank).into_iter().map(|v| v.0).collect();
    assert_eq!(fields, ["answer.text"]);
    let no_run = resume(&mut client, text_answer("", &first, "x"))
        .await
        .expect_err("no run id");
    assert_eq!(no_run.code(), Code::InvalidArgument);
    let fields: Vec<String> = field_violations(&no_run).into_iter().map(|v| v.0).collect();
    assert_eq!(fields, ["answer.run_id"]);
    let unknown_run = resume(&mut client, text_answer("no-such-run", &first, "x"))
        .await
        .expect_err("unknown run");
    assert_eq!(unknown_run.code(), Code::NotFound);

    let to_second = resume(&mut client, text_answer(&run_id, &first, "alpha"))
        .await
        .expect("resume first");
    assert_eq!(
        names(&to_second),
        [
            "answer_accepted",
            "tool_result",
            "tool_call",
            "tool_call_suspended"
        ]
    );
    assert_eq!(
        to_second[0].event,
        Some(Event::AnswerAccepted(pb::AnswerAccepted {
            tool_call_id: first.clone(),
            answer_id: String::new(),
            duplicate: false
        }))
    );
    assert_eq!(to_second[1].sequence, 4);
    assert_contiguous(&to_second[1..], 4);
    assert_eq!(
        only_tool_result(&to_second[1]).content,
        "User answered: alpha"
    );
    let Some(Event::ToolCallSuspended(second)) = &to_second[3].event else {
        unreachable!("checked above")
    };
    assert_eq!(
        get_run(&mut client, &run_id).await.status(),
        pb::RunStatus::Suspended
    );
    assert_eq!(
        resume_verdict(&mut client, text_answer(&run_id, &first, "other")).await,
        Verdict::Rejected {
            reason: "ALREADY_ANSWERED".into()
        }
    );

    let to_end = resume(
        &mut client,
        text_answer(&run_id, &second.tool_call_id, "beta"),
    )
    .await
    .expect("resume second");
    assert_eq!(event_name(&to_end[0]), "answer_accepted");
    assert_eq!(event_name(&to_end[1]), "tool_result");
    assert_eq!(event_name(to_end.last().expect("frame")), "run_completed");
    assert_contiguous(&to_end[1..], 7);
    assert_eq!(completions(&to_end), ["two: alpha then beta"]);
    let done = get_run(&mut client, &run_id).await;
    assert_eq!(done.status(), pb::RunStatus::Completed);
    assert_eq!(done.output_text, "two: alpha then beta");
}

#[tokio::test]
async fn watching_a_finished_run_replays_it_and_ends() {
    let server = start_server(&[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "two_questions").await;
    let run_id = run.run_id.clone();
    let mut seen = Vec::new();
    let first = read_suspensions(&mut run, 1, &mut seen).await;
    run.send_text(&first[0], "alpha").await;
    let second = read_suspensions(&mut run, 1, &mut seen).await;
    run.send_text(&second[0], "beta").await;
    seen.extend(run.frames_until_end().await);

    let log = watch_until_end(&mut client, &run_id, 0).await;
    let last_sequence = get_run(&mut client, &run_id).await.last_sequence;
    assert_contiguous(&log, 1);
    assert_eq!(log.len() as u64, last_sequence);
    assert_eq!(event_name(&log[0]), "run_started");
    assert_eq!(log[1..], stored(&seen)[..]);
    assert_eq!(completions(&log), ["two: alpha then beta"]);
    assert_eq!(event_name(log.last().expect("event")), "run_completed");
    assert_eq!(watch_until_end(&mut client, &run_id, 3).await, log[3..]);
    assert!(
        watch_until_end(&mut client, &run_id, last_sequence)
            .await
            .is_empty()
    );
    let unknown = client
        .watch_run(pb::WatchRunRequest {
            run_id: "no-such-run".into(),
            after_sequence: 0,
        })
        .await
        .expect_err("watch an unknown run");
    assert_eq!(unknown.code(), Code::NotFound);
}
