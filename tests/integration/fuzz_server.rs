//! End-to-end fuzzing of `RunAgent` against the real server: random sequences of frames (starts,
//! attaches and answers with random and real ids, random content, frames out of protocol, NUL
//! characters, streams dropped at random points). Afterwards the server is still up and SERVING,
//! a run it had before the fuzzing completes as scripted, and every run the fuzzing made has a
//! contiguous event log that GetRun agrees with. The seed is printed (FUZZ_SEED replays its
//! choices).

use crate::common;

use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    RunStream, Server, assert_contiguous, get_run, report_figures, scripted_agent, watch_until_end,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const SEQUENCES: usize = 300;
/// How long a fuzzed stream is read before it is dropped: it may be waiting for an answer.
const READ_WINDOW: Duration = Duration::from_millis(200);

fn agents() -> String {
    [
        scripted_agent(
            "asker",
            &[
                r#"ask = [{ question = "Which?", options = [{ label = "a" }, { label = "b" }], selection_mode = "multi_select" }]"#,
                r#"ask = [{ question = "Name?" }]"#,
                r#"say = "asker: {{answer.1}} / {{answer.2}}""#,
            ],
        ),
        scripted_agent("sayer", &[r#"say = "done""#]),
    ]
    .concat()
}

/// A short text: empty, ordinary, a NUL, or random Unicode.
fn text(rng: &mut StdRng) -> String {
    match rng.random_range(0..5) {
        0 => String::new(),
        1 => "a".into(),
        2 => "b\0".into(),
        3 => (0..rng.random_range(1..20))
            .map(|_| char::from_u32(rng.random_range(1..0x2FFFF)).unwrap_or('?'))
            .collect(),
        _ => "x".repeat(rng.random_range(1..4096)),
    }
}

fn pick<'a>(rng: &mut StdRng, known: &'a [String], fallback: &'a str) -> String {
    if known.is_empty() || rng.random_bool(0.4) {
        fallback.to_owned()
    } else {
        known[rng.random_range(0..known.len())].clone()
    }
}

/// What the fuzzing learnt so far: real ids to aim frames at.
#[derive(Default)]
struct Known {
    runs: Vec<String>,
    calls: Vec<String>,
}

fn answer(rng: &mut StdRng, known: &Known) -> pb::Answer {
    use pb::answer::Answer as Kind;
    let kind = match rng.random_range(0..7) {
        0 => None,
        1 => Some(Kind::Text(text(rng))),
        2 => Some(Kind::Selections(pb::Selections {
            labels: (0..rng.random_range(0..5))
                .map(|_| ["a", "b", "c", ""][rng.random_range(0..4)].to_owned())
                .collect(),
        })),
        3 => Some(Kind::Decline(pb::Decline { reason: text(rng) })),
        4 => Some(Kind::ToolOutput(pb::ToolOutput {
            content: text(rng),
            is_error: rng.random_bool(0.5),
        })),
        5 => Some(Kind::Approval(pb::ApprovalDecision { decision: None })),
        _ => Some(Kind::Selections(pb::Selections {
            labels: vec!["a".into(); rng.random_range(0..200)],
        })),
    };
    pb::Answer {
        run_id: if rng.random_bool(0.5) {
            String::new()
        } else {
            pick(rng, &known.runs, "no-such-run")
        },
        tool_call_id: pick(rng, &known.calls, "call_nope"),
        answer: kind,
        answer_id: if rng.random_bool(0.5) {
            String::new()
        } else {
            text(rng)
        },
    }
}

fn frame(rng: &mut StdRng, known: &Known) -> pb::RunAgentRequest {
    let frame = match rng.random_range(0..6) {
        0 => None,
        1 | 2 => Some(Frame::Start(pb::StartRun {
            agent_id: ["asker", "sayer", "", "missing"][rng.random_range(0..4)].to_owned(),
            prompt: text(rng),
            metadata: (0..rng.random_range(0..3))
                .map(|_| (text(rng), text(rng)))
                .collect(),
            question_ttl: rng.random_bool(0.3).then(|| prost_types::Duration {
                seconds: rng.random_range(-5..100),
                nanos: rng.random_range(-5..1_000_000_005),
            }),
            tools: Vec::new(),
            webhooks: Vec::new(),
            request_id: if rng.random_bool(0.7) {
                String::new()
            } else {
                text(rng)
            },
        })),
        3 => Some(Frame::Attach(pb::AttachRun {
            run_id: pick(rng, &known.runs, "no-such-run"),
            after_sequence: [0, 1, 3, u64::MAX][rng.random_range(0..4)],
        })),
        _ => Some(Frame::Answer(answer(rng, known))),
    };
    pb::RunAgentRequest { frame }
}

/// One fuzzed stream: a few frames, read for a moment, dropped. Returns the frames received.
async fn fuzz_stream(server: &Server, rng: &mut StdRng, known: &mut Known) -> (usize, bool) {
    let mut client = server.agents().await;
    let (sender, receiver) = mpsc::channel(16);
    let frames = rng.random_range(1..6);
    // Half the streams open well, so that the frames after the first reach a live run.
    let first = if rng.random_bool(0.5) {
        pb::RunAgentRequest {
            frame: Some(match known.runs.is_empty() || rng.random_bool(0.5) {
                true => Frame::Start(pb::StartRun {
                    agent_id: "asker".into(),
                    prompt: "fuzz".into(),
                    ..Default::default()
                }),
                false => Frame::Attach(pb::AttachRun {
                    run_id: pick(rng, &known.runs, "no-such-run"),
                    after_sequence: 0,
                }),
            }),
        }
    } else {
        frame(rng, known)
    };
    let _ = sender.send(first).await;
    let mut inbound = match client.run_agent(ReceiverStream::new(receiver)).await {
        Ok(response) => response.into_inner(),
        Err(_) => return (0, true),
    };
    for _ in 1..frames {
        let _ = sender.send(frame(rng, known)).await;
    }
    if rng.random_bool(0.5) {
        drop(sender);
    }
    let mut received = 0;
    let mut refused = false;
    while let Ok(message) = tokio::time::timeout(READ_WINDOW, inbound.message()).await {
        match message {
            Ok(Some(frame)) => {
                received += 1;
                if !frame.run_id.is_empty() && !known.runs.contains(&frame.run_id) {
                    known.runs.push(frame.run_id.clone());
                }
                if let Some(Event::ToolCallSuspended(suspended)) = frame.event {
                    known.calls.push(suspended.tool_call_id);
                }
            }
            Ok(None) => break,
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    (received, refused)
}

#[tokio::test]
async fn random_frame_sequences_hurt_neither_the_server_nor_its_runs() {
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let server = Server::start_with(Some(&agents()), &[]);
    let mut client = server.agents().await;

    // A run started before the fuzzing, left waiting on its first question.
    let mut control = RunStream::start(&mut client, "asker").await;
    let first = control.next_suspended().await.tool_call_id;

    let mut known = Known::default();
    let (mut received, mut refused) = (0, 0);
    for _ in 0..SEQUENCES {
        let (frames, was_refused) = fuzz_stream(&server, &mut rng, &mut known).await;
        received += frames;
        refused += usize::from(was_refused);
    }

    let mut health = HealthClient::new(server.channel().await);
    let status = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("health check")
        .into_inner()
        .status();
    assert_eq!(status, ServingStatus::Serving);

    // The control run may have been answered by the fuzzing (its ids were fair game): it ends, and
    // if it is still waiting, it completes with the answers it gets now.
    let run = get_run(&mut client, &control.run_id).await;
    if run
        .pending_tool_calls
        .iter()
        .any(|call| call.tool_call_id == first)
    {
        control.send_selections(&first, &["a"]).await;
        let second = control.next_suspended().await.tool_call_id;
        control.send_text(&second, "Ada").await;
        assert_eq!(control.completed_text().await, "asker: a / Ada");
    }

    // Every run the fuzzing made or touched has a contiguous log that GetRun agrees with.
    let mut runs = 0;
    for run_id in &known.runs {
        let run = get_run(&mut client, run_id).await;
        let watched = stored_events(&mut client, &run).await;
        assert_contiguous(&watched, 1);
        assert_eq!(watched.len() as u64, run.last_sequence, "{run_id}");
        runs += 1;
    }
    report_figures(
        "fuzz_server",
        &[
            ("seed", seed),
            ("sequences", SEQUENCES as u64),
            ("frames_received", received as u64),
            ("streams_refused", refused as u64),
            ("runs_checked", runs),
        ],
    );
}

/// The events stored for `run` as of that snapshot: all of an ended run's, or (for one still
/// going) its first `last_sequence`.
async fn stored_events(
    client: &mut askuser::proto::v1::agent_service_client::AgentServiceClient<
        tonic::transport::Channel,
    >,
    run: &pb::Run,
) -> Vec<pb::RunAgentResponse> {
    let run_id = run.run_id.as_str();
    if matches!(
        run.status(),
        pb::RunStatus::Completed | pb::RunStatus::Failed | pb::RunStatus::Cancelled
    ) {
        return watch_until_end(client, run_id, 0).await;
    }
    let mut stream = client
        .watch_run(pb::WatchRunRequest {
            run_id: run_id.into(),
            after_sequence: 0,
        })
        .await
        .expect("watch run")
        .into_inner();
    let mut frames = Vec::new();
    while frames.len() < run.last_sequence as usize {
        match tokio::time::timeout(common::FRAME_TIMEOUT, stream.message()).await {
            Ok(Ok(Some(frame))) if frame.sequence > 0 => frames.push(frame),
            Ok(Ok(Some(_))) => {}
            other => panic!("watching {run_id}: {other:?}"),
        }
    }
    frames
}
