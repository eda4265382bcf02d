//! Several replicas on one PostgreSQL database: a run started on one replica is answered on
//! another and watched live on a third; answers raced through different replicas have one winner;
//! a replica killed mid-step has its run taken over once its lease expires; a replica stopped with
//! SIGTERM finishes its steps in flight and leaves the rest to the others.

use crate::common;

use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    FRAME_TIMEOUT, RunStream, Server, Verdict, answer_result, assert_contiguous, completions,
    decision_answer, event_name, finish_race_run, fresh_database, get_run, next_status, now_ms,
    postgres_client, race_agents, race_completion, report_figures, resume, resume_verdict,
    scripted_agent, scripted_agent_with, text_answer, timestamp_ms, tool_output_answer,
    tool_results, watch_until_end,
};
use futures::future::join_all;
use tokio::sync::{Barrier, mpsc};
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Starts `count` replicas on one fresh database, each with the agents file and `extra_args`;
/// returns the database URL and the replicas (`None` without PostgreSQL: see `fresh_database`).
async fn replicas(
    agents: &str,
    count: usize,
    extra_args: &[&str],
) -> Option<(String, Vec<Server>)> {
    let database_url = fresh_database().await?;
    let servers = (0..count)
        .map(|_| replica(agents, &database_url, extra_args))
        .collect();
    Some((database_url, servers))
}

fn replica(agents: &str, database_url: &str, extra_args: &[&str]) -> Server {
    let mut args = vec!["--database-url", database_url];
    args.extend_from_slice(extra_args);
    Server::process_with(Some(agents), &args)
}

/// A frame of a watched run and when the test received it.
struct Arrival {
    frame: pb::RunAgentResponse,
    at: Instant,
    /// The arrival on the clock of the events' `time` (the machine's wall clock).
    at_ms: i64,
}

/// A `WatchRun` read by a background task that stamps each frame with its arrival, so the arrival
/// times are not skewed by when the test gets round to reading.
struct TimedWatch {
    arrivals: mpsc::UnboundedReceiver<Arrival>,
    reader: JoinHandle<()>,
    received: Vec<Arrival>,
}

impl TimedWatch {
    async fn open(server: &Server, run_id: &str) -> TimedWatch {
        let mut stream = server
            .agents()
            .await
            .watch_run(pb::WatchRunRequest {
                run_id: run_id.into(),
                after_sequence: 0,
            })
            .await
            .expect("watch run")
            .into_inner();
        let (sender, arrivals) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            loop {
                let frame = tokio::time::timeout(FRAME_TIMEOUT, stream.message())
                    .await
                    .expect("timed out waiting for a watched frame")
                    .expect("watch stream error");
                let Some(frame) = frame else { return };
                if matches!(frame.event, Some(Event::Heartbeat(_))) {
                    continue;
                }
                let arrival = Arrival {
                    frame,
                    at: Instant::now(),
                    at_ms: now_ms(),
                };
                if sender.send(arrival).is_err() {
                    return;
                }
            }
        });
        TimedWatch {
            arrivals,
            reader,
            received: Vec::new(),
        }
    }

    /// Waits until the frame of `sequence` arrived: the watch follows live from there on.
    async fn wait_for(&mut self, sequence: u64) {
        while self
            .received
            .last()
            .is_none_or(|a| a.frame.sequence < sequence)
        {
            match self.arrivals.recv().await {
                Some(arrival) => self.received.push(arrival),
                None => {
                    (&mut self.reader).await.expect("watch reader");
                    panic!("the watch ended before sequence {sequence}");
                }
            }
        }
    }

    /// Every frame until the run ends.
    async fn until_end(mut self) -> Vec<Arrival> {
        while let Some(arrival) = self.arrivals.recv().await {
            self.received.push(arrival);
        }
        self.reader.await.expect("watch reader");
        self.received
    }
}

fn frames(arrivals: &[Arrival]) -> Vec<pb::RunAgentResponse> {
    arrivals.iter().map(|a| a.frame.clone()).collect()
}

/// The tool call ids of the `tool_call_suspended` frames in a stretch of a run's log.
fn suspended_calls(frames: &[pb::RunAgentResponse]) -> Vec<String> {
    frames
        .iter()
        .filter_map(|frame| match &frame.event {
            Some(Event::ToolCallSuspended(suspended)) => Some(suspended.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

/// Median and maximum of some samples.
fn median_and_max(mut samples: Vec<u64>) -> (u64, u64) {
    samples.sort_unstable();
    (
        samples.get(samples.len() / 2).copied().unwrap_or(0),
        samples.last().copied().unwrap_or(0),
    )
}

/// How many questions the relay run asks, one after the other.
const RELAY_QUESTIONS: usize = 12;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_started_on_one_replica_is_answered_on_another_and_watched_on_a_third() {
    let mut turns: Vec<String> = (1..=RELAY_QUESTIONS)
        .map(|n| format!(r#"ask = [{{ question = "Question {n}?" }}]"#))
        .collect();
    turns.push(
        r#"say = "All answered, the first was {{answer.1}} and the last {{answer.12}}.""#.into(),
    );
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let agents = scripted_agent_with("relay", "max_steps = 20", &turns);
    let Some((_database, servers)) = replicas(&agents, 3, &["--lease-ttl", "1s"]).await else {
        return;
    };
    let (a, b, c) = (&servers[0], &servers[1], &servers[2]);

    let mut client_a = a.agents().await;
    let mut started = RunStream::start(&mut client_a, "relay").await;
    let run_id = started.run_id.clone();
    let mut tool_call_id = started.next_suspended().await.tool_call_id;
    // Watches on every replica (A also has the starting stream), live before the first answer.
    let before_answers = get_run(&mut client_a, &run_id).await.last_sequence;
    let mut watches = Vec::new();
    for server in [a, b, c] {
        let mut watch = TimedWatch::open(server, &run_id).await;
        watch.wait_for(before_answers).await;
        watches.push(watch);
    }

    // Every answer goes to B, which so executes every step that follows.
    let mut client_b = b.agents().await;
    for n in 1..=RELAY_QUESTIONS {
        let answer = text_answer(&run_id, &tool_call_id, &format!("answer {n}"));
        let resumed = resume(&mut client_b, answer).await.expect("resume on B");
        assert!(
            matches!(&resumed[0].event, Some(Event::AnswerAccepted(a)) if a.tool_call_id == tool_call_id),
            "{:?}",
            resumed[0]
        );
        assert_contiguous(&resumed[1..], resumed[1].sequence);
        if n < RELAY_QUESTIONS {
            let asked = suspended_calls(&resumed[1..]);
            assert_eq!(asked.len(), 1, "{resumed:?}");
            tool_call_id = asked[0].clone();
        } else {
            assert_eq!(event_name(resumed.last().expect("frames")), "run_completed");
        }
    }

    let expected_text = "All answered, the first was answer 1 and the last answer 12.";
    assert_eq!(started.completed_text().await, expected_text);
    let log = watch_until_end(&mut client_a, &run_id, 0).await;
    assert_contiguous(&log, 1);
    assert_eq!(completions(&log), [expected_text]);
    assert!(
        log.iter().any(|frame| event_name(frame) == "text_delta"),
        "the final step streams text"
    );
    let mut arrivals = Vec::new();
    for (name, watch) in ["A", "B", "C"].into_iter().zip(watches) {
        let watched = watch.until_end().await;
        assert_eq!(
            frames(&watched),
            log,
            "the live watch on {name} differs from the log"
        );
        arrivals.push(watched);
    }

    // The events B committed, from the first answer's result on: when each watch saw them after
    // their time stamp (taken as the commit starts), and how much later than the watch on B the
    // watches on the other replicas saw them.
    let first_result = log
        .iter()
        .find(|frame| event_name(frame) == "tool_result")
        .expect("a tool result")
        .sequence;
    let committed_by_b = |watched: &[Arrival]| -> Vec<(u64, Instant)> {
        watched
            .iter()
            .filter(|a| a.frame.sequence >= first_result)
            .map(|a| {
                let time = timestamp_ms(a.frame.time.as_ref().expect("event time"));
                (u64::try_from(a.at_ms - time).unwrap_or(0), a.at)
            })
            .collect()
    };
    let (on_a, on_b, on_c) = (
        committed_by_b(&arrivals[0]),
        committed_by_b(&arrivals[1]),
        committed_by_b(&arrivals[2]),
    );
    let after_time_stamp_ms =
        |seen: &[(u64, Instant)]| median_and_max(seen.iter().map(|(ms, _)| *ms).collect());
    let later_than_b_us = |seen: &[(u64, Instant)]| {
        median_and_max(
            seen.iter()
                .zip(&on_b)
                .map(|((_, at), (_, at_b))| at.saturating_duration_since(*at_b).as_micros() as u64)
                .collect(),
        )
    };
    let (b_median_ms, b_max_ms) = after_time_stamp_ms(&on_b);
    let (a_median_ms, a_max_ms) = after_time_stamp_ms(&on_a);
    let (added_a_median_us, added_a_max_us) = later_than_b_us(&on_a);
    let (added_c_median_us, added_c_max_us) = later_than_b_us(&on_c);
    report_figures(
        "replicas live events committed on B",
        &[
            ("events", on_b.len() as u64),
            ("seen_on_B_after_event_time_median_ms", b_median_ms),
            ("seen_on_B_after_event_time_max_ms", b_max_ms),
            ("seen_on_A_after_event_time_median_ms", a_median_ms),
            ("seen_on_A_after_event_time_max_ms", a_max_ms),
            ("added_on_A_vs_B_median_us", added_a_median_us),
            ("added_on_A_vs_B_max_us", added_a_max_us),
            ("added_on_C_vs_B_median_us", added_c_median_us),
            ("added_on_C_vs_B_max_us", added_c_max_us),
        ],
    );
}

/// Questions raced for, one run each.
const RACE_ROUNDS: usize = 200;
/// Rounds raced at the same time.
const RACE_ROUNDS_IN_FLIGHT: usize = 10;
const RACE_REPLICAS: usize = 3;
/// Client tool calls and approvals raced for, one run each.
const TOOL_RACE_ROUNDS: usize = 40;

/// One raced question: every replica gets one answer on an attached `RunAgent` stream and one
/// with `ResumeRun`, all sent at the same moment.
struct RaceRound {
    answers: Vec<pb::Answer>,
    verdicts: Vec<Verdict>,
    /// The contents of the question's `tool_result` events in the run's log.
    results: Vec<String>,
    completions: Vec<String>,
}

impl RaceRound {
    fn accepted(&self) -> Vec<&pb::Answer> {
        self.answers
            .iter()
            .zip(&self.verdicts)
            .filter(|(_, verdict)| **verdict == Verdict::Accepted { duplicate: false })
            .map(|(answer, _)| answer)
            .collect()
    }
}

/// The answer number `index` of round `round` sends to call `tool_call_id` of run `run_id`.
type MakeAnswer = fn(&str, &str, usize, usize) -> pb::Answer;

/// Races the answers to the first call of a run of `agent` started on replica `round % 3`.
async fn race_round(
    clients: &[AgentServiceClient<Channel>],
    agent: &str,
    round: usize,
    make_answer: MakeAnswer,
) -> RaceRound {
    let mut starter = clients[round % clients.len()].clone();
    let mut run = RunStream::start(&mut starter, agent).await;
    let question = run.next_suspended().await.tool_call_id;
    let after_sequence = get_run(&mut starter, &run.run_id).await.last_sequence;

    let answers: Vec<pb::Answer> = (0..clients.len() * 2)
        .map(|index| make_answer(&run.run_id, &question, round, index))
        .collect();
    let barrier = std::sync::Arc::new(Barrier::new(answers.len()));
    let tasks = answers.iter().cloned().enumerate().map(|(index, answer)| {
        let mut client = clients[index / 2].clone();
        let barrier = std::sync::Arc::clone(&barrier);
        tokio::spawn(async move {
            if index % 2 == 0 {
                let mut stream =
                    RunStream::attach(&mut client, &answer.run_id, after_sequence).await;
                let tool_call_id = answer.tool_call_id.clone();
                barrier.wait().await;
                stream.send(answer).await;
                stream.next_verdict(&tool_call_id).await
            } else {
                barrier.wait().await;
                resume_verdict(&mut client, answer).await
            }
        })
    });
    // A task that fails before the barrier would leave the others waiting forever.
    let verdicts = tokio::time::timeout(Duration::from_secs(120), join_all(tasks))
        .await
        .expect("answers did not all get a verdict")
        .into_iter()
        .map(|verdict| verdict.expect("answer task"))
        .collect();

    finish_race_run(&mut run, &question).await;
    // The log as another replica reads it.
    let mut reader = clients[(round + 1) % clients.len()].clone();
    let log = watch_until_end(&mut reader, &run.run_id, 0).await;
    RaceRound {
        answers,
        verdicts,
        results: tool_results(&log, &question)
            .into_iter()
            .map(|result| result.content.clone())
            .collect(),
        completions: completions(&log).into_iter().map(str::to_owned).collect(),
    }
}

/// Races `rounds` runs of `agent` across the replicas and checks each had one winner whose result
/// is the call's only result; prints the figures under `title`.
async fn race_across_replicas(title: &str, agent: &str, rounds: usize, make_answer: MakeAnswer) {
    let Some((_database, servers)) = replicas(&race_agents(), RACE_REPLICAS, &[]).await else {
        return;
    };
    let mut clients = Vec::new();
    for server in &servers {
        clients.push(server.agents().await);
    }

    let mut done = Vec::with_capacity(rounds);
    while done.len() < rounds {
        let first = done.len();
        let batch = RACE_ROUNDS_IN_FLIGHT.min(rounds - first);
        done.extend(
            join_all(
                (first..first + batch).map(|round| race_round(&clients, agent, round, make_answer)),
            )
            .await,
        );
    }

    let already_answered = Verdict::Rejected {
        reason: "ALREADY_ANSWERED".into(),
    };
    let attempted: usize = done.iter().map(|r| r.answers.len()).sum();
    let accepted: usize = done.iter().map(|r| r.accepted().len()).sum();
    let lost: usize = done
        .iter()
        .map(|round| {
            round
                .accepted()
                .into_iter()
                .filter(|answer| !round.results.contains(&answer_result(answer)))
                .count()
        })
        .sum();
    report_figures(
        title,
        &[
            ("replicas", RACE_REPLICAS as u64),
            ("rounds", done.len() as u64),
            ("answers_attempted", attempted as u64),
            ("accepted", accepted as u64),
            ("lost", lost as u64),
        ],
    );
    for (index, round) in done.iter().enumerate() {
        let winners = round.accepted();
        assert_eq!(winners.len(), 1, "round {index}: {:?}", round.verdicts);
        let rejected = round
            .verdicts
            .iter()
            .filter(|v| **v == already_answered)
            .count();
        assert_eq!(
            rejected,
            round.answers.len() - 1,
            "round {index}: every loser is ALREADY_ANSWERED: {:?}",
            round.verdicts
        );
        assert_eq!(round.results, [answer_result(winners[0])], "round {index}");
        assert_eq!(
            round.completions,
            [race_completion(winners[0])],
            "round {index}"
        );
    }
    assert_eq!(lost, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_raced_through_different_replicas_have_exactly_one_winner() {
    race_across_replicas(
        "replicas answer race",
        "race",
        RACE_ROUNDS,
        |run_id, call, round, index| {
            text_answer(run_id, call, &format!("answer {index} of round {round}"))
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_outputs_raced_through_different_replicas_have_exactly_one_winner() {
    race_across_replicas(
        "replicas tool output race",
        "race_tool",
        TOOL_RACE_ROUNDS,
        |run_id, call, round, index| {
            tool_output_answer(run_id, call, &format!("output {index} of round {round}"))
        },
    )
    .await;
}

/// Rejections and edits, all different, race for one approval through different replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_decisions_raced_through_different_replicas_have_exactly_one_winner() {
    use pb::approval_decision::{Decision, Edit, Reject};
    race_across_replicas(
        "replicas approval race",
        "race_approval",
        TOOL_RACE_ROUNDS,
        |run_id, call, round, index| {
            let choice = if index % 2 == 0 {
                Decision::Reject(Reject {
                    reason: format!("no {index} of round {round}"),
                })
            } else {
                Decision::Edit(Edit {
                    arguments_json: format!(r#"{{"n": {}}}"#, round * 10 + index),
                })
            };
            decision_answer(run_id, call, choice)
        },
    )
    .await;
}

/// The index of the replica whose executor holds the run's lease, once one does. Lease owners
/// are named `<process id>-<uuid>` by the runtime.
async fn executing_replica(
    db: &tokio_postgres::Client,
    run_id: &str,
    replicas: &[&Server],
) -> usize {
    let deadline = Instant::now() + FRAME_TIMEOUT;
    loop {
        let owner: Option<String> = db
            .query_one("SELECT lease_owner FROM runs WHERE run_id = $1", &[&run_id])
            .await
            .expect("read lease")
            .get(0);
        if let Some(owner) = owner {
            let pid = owner.split('-').next().unwrap_or_default().to_owned();
            return replicas
                .iter()
                .position(|replica| replica.pid().map(|p| p.to_string()) == Some(pid.clone()))
                .unwrap_or_else(|| panic!("lease owner {owner} is none of the replicas"));
        }
        assert!(Instant::now() < deadline, "no executor took run {run_id}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_of_a_killed_replica_is_taken_over_and_completes_once() {
    let agents = scripted_agent(
        "slow",
        &[
            r#"ask = [{ question = "Name?" }]"#,
            r#"ask = [{ question = "Colour?" }]"#,
            "delay = \"3s\"\nsay = \"slow: {{answer.1}} in {{answer.2}}\"",
        ],
    );
    let Some((database, mut servers)) = replicas(&agents, 3, &["--lease-ttl", "1s"]).await else {
        return;
    };
    let db = postgres_client(&database).await;

    // Started on A, first answer on B, second on C: C executes the slow last step.
    let mut client_a = servers[0].agents().await;
    let mut started = RunStream::start(&mut client_a, "slow").await;
    let run_id = started.run_id.clone();
    let name = text_answer(&run_id, &started.next_suspended().await.tool_call_id, "Ada");
    let mut client_b = servers[1].agents().await;
    assert_eq!(
        resume_verdict(&mut client_b, name.clone()).await,
        Verdict::Accepted { duplicate: false }
    );
    let colour = text_answer(
        &run_id,
        &started.next_suspended().await.tool_call_id,
        "teal",
    );
    drop(started);
    let mut client_c = servers[2].agents().await;
    let after_sequence = get_run(&mut client_c, &run_id).await.last_sequence;
    let mut answering = RunStream::attach(&mut client_c, &run_id, after_sequence).await;
    answering.send(colour.clone()).await;
    assert_eq!(
        answering.next_verdict(&colour.tool_call_id).await,
        Verdict::Accepted { duplicate: false }
    );

    // Kill whichever replica executes the step (C, unless another took the run first).
    let executing = executing_replica(&db, &run_id, &servers.iter().collect::<Vec<_>>()).await;
    let survivor = (executing + 1) % servers.len();
    let last_sequence = get_run(&mut servers[survivor].agents().await, &run_id)
        .await
        .last_sequence;
    let mut watch = TimedWatch::open(&servers[survivor], &run_id).await;
    watch.wait_for(last_sequence).await;
    drop(answering);
    let killed_at = Instant::now();
    let killed_at_ms = now_ms();
    servers[executing].kill();

    let watched = watch.until_end().await;
    let completed = watched
        .iter()
        .find(|a| event_name(&a.frame) == "run_completed")
        .expect("the run completes on a survivor");
    let completed_ms = timestamp_ms(completed.frame.time.as_ref().expect("event time"));
    assert!(
        completed_ms >= killed_at_ms,
        "the step finished before the kill: nothing was taken over"
    );
    report_figures(
        "replicas takeover after SIGKILL",
        &[
            ("lease_ttl_ms", 1_000),
            ("step_delay_ms", 3_000),
            (
                "kill_to_run_completed_ms",
                completed.at.duration_since(killed_at).as_millis() as u64,
            ),
        ],
    );

    let log = frames(&watched);
    assert_contiguous(&log, 1);
    assert_eq!(
        completions(&log),
        ["slow: Ada in teal"],
        "completed exactly once"
    );
    for answer in [&name, &colour] {
        let results: Vec<&str> = tool_results(&log, &answer.tool_call_id)
            .into_iter()
            .map(|result| result.content.as_str())
            .collect();
        assert_eq!(results, [answer_result(answer)]);
    }
    let run = get_run(&mut servers[survivor].agents().await, &run_id).await;
    assert_eq!(run.status(), pb::RunStatus::Completed);
    assert_eq!(run.output_text, "slow: Ada in teal");
}

/// The model turns the run has committed, as the database has it.
async fn stored_turns(db: &tokio_postgres::Client, run_id: &str) -> i64 {
    db.query_one("SELECT turns FROM runs WHERE run_id = $1", &[&run_id])
        .await
        .expect("read turns")
        .get(0)
}

/// Runs with a step in flight when their replica is told to stop.
const DRAINED_RUNS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_steps_in_flight_and_survivors_finish_the_runs() {
    // The second step is slow and makes an invalid call, so the run still works after it: its
    // last step is left to whichever replica takes it.
    let agents = [
        scripted_agent(
            "drain",
            &[
                r#"ask = [{ question = "Go?" }]"#,
                "delay = \"6s\"\nask = [{ question = \"\" }]",
                r#"say = "drained: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "parked",
            &[
                r#"ask = [{ question = "Later?" }]"#,
                r#"say = "parked: {{answer.1}}""#,
            ],
        ),
    ]
    .concat();
    let Some(database) = fresh_database().await else {
        return;
    };
    let db = postgres_client(&database).await;
    // A runs alone until its steps are in flight, so it is sure to execute them.
    let flags = ["--lease-ttl", "2s"];
    let mut a = replica(
        &agents,
        &database,
        &[flags.as_slice(), &["--shutdown-timeout", "60s"]].concat(),
    );
    let mut client_a = a.agents().await;
    let mut drained = Vec::new();
    for n in 0..DRAINED_RUNS {
        let mut run = RunStream::start(&mut client_a, "drain").await;
        let question = run.next_suspended().await.tool_call_id;
        let answer = text_answer(&run.run_id, &question, &format!("go {n}"));
        assert_eq!(
            resume_verdict(&mut client_a, answer).await,
            Verdict::Accepted { duplicate: false }
        );
        drained.push(run);
    }
    let steps_started = Instant::now();
    let mut parked = RunStream::start(&mut client_a, "parked").await;
    let parked_question = parked.next_suspended().await.tool_call_id;
    for run in &drained {
        assert_eq!(executing_replica(&db, &run.run_id, &[&a]).await, 0);
    }

    let b = replica(&agents, &database, &flags);
    let c = replica(&agents, &database, &flags);
    let mut client_b = b.agents().await;
    let watches: Vec<JoinHandle<Vec<pb::RunAgentResponse>>> = drained
        .iter()
        .map(|run| {
            let (mut client, run_id) = (client_b.clone(), run.run_id.clone());
            tokio::spawn(async move { watch_until_end(&mut client, &run_id, 0).await })
        })
        .collect();
    let mut health = HealthClient::new(a.channel().await)
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("health watch")
        .into_inner();
    assert_eq!(next_status(&mut health).await, ServingStatus::Serving);

    // Still in flight: no run got past the slow step yet.
    for run in &drained {
        assert_eq!(
            stored_turns(&db, &run.run_id).await,
            1,
            "the slow step of {} finished before SIGTERM",
            run.run_id
        );
    }
    let terminated_at = Instant::now();
    let steps_started_to_sigterm_ms = steps_started.elapsed().as_millis() as u64;
    let mut child = a.send_terminate().expect("A runs");
    assert_eq!(
        next_status(&mut health).await,
        ServingStatus::NotServing,
        "a draining replica reports NOT_SERVING"
    );
    let not_serving_ms = terminated_at.elapsed().as_millis() as u64;
    drop(health);
    let exit = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::task::spawn_blocking(move || child.wait()),
    )
    .await
    .expect("the draining replica must exit")
    .expect("wait task")
    .expect("wait for A");
    let exited_ms = terminated_at.elapsed().as_millis() as u64;
    assert!(exit.success(), "A exited with {exit}; log:\n{}", a.log());

    // A committed its steps in flight before it exited: none is run a second time.
    for run in &drained {
        assert!(
            stored_turns(&db, &run.run_id).await >= 2,
            "A exited without committing the step of {}",
            run.run_id
        );
    }
    for (n, (run, watch)) in drained.iter().zip(watches).enumerate() {
        let log = watch.await.expect("watch task");
        assert_contiguous(&log, 1);
        assert_eq!(
            completions(&log),
            [format!("drained: go {n}")],
            "{}",
            run.run_id
        );
        let tool_calls = log.iter().filter(|f| event_name(f) == "tool_call").count();
        assert_eq!(tool_calls, 2, "each step ran once: {log:?}");
    }
    drop(drained);

    // A run waiting on a question when A stopped is answered and finished elsewhere.
    let mut client_c = c.agents().await;
    let resumed = resume(
        &mut client_c,
        text_answer(&parked.run_id, &parked_question, "yes"),
    )
    .await
    .expect("resume on C");
    assert_eq!(completions(&resumed), ["parked: yes"]);
    assert_eq!(
        get_run(&mut client_b, &parked.run_id).await.status(),
        pb::RunStatus::Completed
    );
    report_figures(
        "replicas SIGTERM drain",
        &[
            ("runs_in_flight", DRAINED_RUNS as u64),
            ("step_delay_ms", 6_000),
            ("steps_started_to_sigterm_ms", steps_started_to_sigterm_ms),
            ("sigterm_to_not_serving_ms", not_serving_ms),
            ("sigterm_to_exit_ms", exited_ms),
        ],
    );
}

/// Notices sent while a replica's LISTEN connection is down are lost; when it reconnects, its
/// followers must look at the store, or a run that finished meanwhile would never reach them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_catch_up_on_commits_made_while_notices_were_lost() {
    let agents = scripted_agent(
        "pick",
        &[
            r#"ask = [{ question = "Which?" }]"#,
            r#"say = "Picked {{answer.1}}""#,
        ],
    );
    // One pooled connection each: it stays open throughout, so the replicas never need a new
    // connection while new ones are refused below.
    let Some((database_url, servers)) = replicas(&agents, 2, &["--database-pool-size", "1"]).await
    else {
        return;
    };
    let (watcher, answerer) = (&servers[0], &servers[1]);
    let mut answers = answerer.agents().await;
    let mut run = RunStream::start(&mut answers, "pick").await;
    let question = run.next_suspended().await;
    let mut watch = watcher
        .agents()
        .await
        .watch_run(pb::WatchRunRequest {
            run_id: run.run_id.clone(),
            after_sequence: 0,
        })
        .await
        .expect("watch")
        .into_inner();
    // Read the watch up to the question, so it is following live.
    loop {
        let frame = tokio::time::timeout(FRAME_TIMEOUT, watch.message())
            .await
            .expect("frame in time")
            .expect("watch frame")
            .expect("watch open");
        if matches!(frame.event, Some(Event::ToolCallSuspended(_))) {
            break;
        }
    }
    // Cut every LISTEN connection and keep new connections out, so the commit below happens while
    // no replica listens; the replicas' pools keep their open connections.
    let database = database_url
        .rsplit('/')
        .next()
        .expect("database name")
        .to_owned();
    let admin_url = std::env::var("ASKUSER_TEST_DATABASE_URL").expect("set by fresh_database");
    let admin = postgres_client(&admin_url).await;
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {database} WITH ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{database}' AND query LIKE 'LISTEN%'"
        ))
        .await
        .expect("cut the LISTEN connections");
    run.send_text(&question.tool_call_id, "blue").await;
    assert_eq!(run.completed_text().await, "Picked blue");
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {database} WITH ALLOW_CONNECTIONS true"
        ))
        .await
        .expect("let connections in again");
    // The watcher's listener reconnects, reports that notices were missed, and the watch reads
    // the rest of the run from the store.
    let mut rest = Vec::new();
    while let Some(frame) = tokio::time::timeout(FRAME_TIMEOUT, watch.message())
        .await
        .expect("the watch caught up in time")
        .expect("watch frame")
    {
        rest.push(event_name(&frame));
    }
    assert!(
        rest.contains(&"run_completed"),
        "frames after the gap: {rest:?}"
    );
}

/// The pending-calls feed's fan-out knows the tenant of the runs started on its own replica; a run
/// started on another replica it looks up once, in the store: the feed still sees its question
/// come and go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_on_one_replica_sees_calls_of_runs_started_on_another() {
    use pb::watch_pending_calls_response::Event as Pending;
    let agents = scripted_agent(
        "asker",
        &[r#"ask = [{ question = "Name?" }]"#, r#"say = "done""#],
    );
    let Some((_url, servers)) = replicas(&agents, 2, &[]).await else {
        return;
    };
    let mut watcher = servers[0].agents().await;
    let mut feed = watcher
        .watch_pending_calls(pb::WatchPendingCallsRequest::default())
        .await
        .expect("feed")
        .into_inner();
    let mut next = async || {
        tokio::time::timeout(FRAME_TIMEOUT, feed.message())
            .await
            .expect("timed out waiting for the feed")
            .expect("feed")
            .expect("feed open")
            .event
            .expect("an event")
    };
    while !matches!(next().await, Pending::SnapshotDone(_)) {}
    let mut client = servers[1].agents().await;
    let mut run = RunStream::start(&mut client, "asker").await;
    let asked = run.next_suspended().await;
    let pending = loop {
        if let Pending::CallPending(pending) = next().await {
            break pending;
        }
    };
    assert_eq!(pending.run_id, run.run_id);
    run.send_text(&asked.tool_call_id, "Ada").await;
    assert_eq!(run.completed_text().await, "done");
    let settled = loop {
        if let Pending::CallSettled(settled) = next().await {
            break settled;
        }
    };
    assert_eq!(settled.run_id, run.run_id);
}
