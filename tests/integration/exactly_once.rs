//! Exactly-once answers: many clients settle one call at the same moment, each over its own
//! connection, half on `RunAgent` streams and half with `ResumeRun`; exactly one wins, every other
//! one is rejected as `ALREADY_ANSWERED`, and retries of the winner are acknowledged as duplicates
//! without being applied again. The calls raced for are questions, client tool calls (their
//! outputs) and approvals (their decisions).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    RunStream, Server, Verdict, answer_result, completions, decision_answer, finish_race_run,
    get_run, race_agents as agents, race_completion as completion, report_figures, resume,
    resume_verdict, text_answer, tool_output_answer as tool_output, tool_results, watch_until_end,
};
use futures::future::join_all;
use tokio::sync::Barrier;
use tonic::transport::Channel;

/// Answers sent to one question at once.
const ANSWERS_PER_ROUND: usize = 50;
/// Questions raced for, one run each.
const ROUNDS: usize = 100;
/// Rounds raced at the same time; each holds `ANSWERS_PER_ROUND` connections, and both race
/// tests together stay well under the usual limit of 1024 open files.
const ROUNDS_IN_FLIGHT: usize = 5;
/// Rounds of identical retries raced for.
const RETRY_ROUNDS: usize = 10;
/// Client tool calls and approvals raced for, one run each.
const TOOL_ROUNDS: usize = 20;

async fn connect(url: &str) -> AgentServiceClient<Channel> {
    let channel = Channel::from_shared(url.to_owned())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    AgentServiceClient::new(channel)
}

/// Sends every answer at the same moment, each over its own connection: even ones on a `RunAgent`
/// stream attached to the run after `after_sequence`, odd ones with `ResumeRun`. Returns the
/// verdicts in the answers' order.
async fn answer_at_once(url: &str, after_sequence: u64, answers: &[pb::Answer]) -> Vec<Verdict> {
    let barrier = Arc::new(Barrier::new(answers.len()));
    let tasks = answers.iter().cloned().enumerate().map(|(index, answer)| {
        let barrier = Arc::clone(&barrier);
        let url = url.to_owned();
        tokio::spawn(async move {
            let mut client = connect(&url).await;
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
    tokio::time::timeout(Duration::from_secs(120), join_all(tasks))
        .await
        .expect("answers did not all get a verdict")
        .into_iter()
        .map(|verdict| verdict.expect("answer task"))
        .collect()
}

/// One raced question and what became of it.
struct Round {
    answers: Vec<pb::Answer>,
    verdicts: Vec<Verdict>,
    /// The contents of the question's `tool_result` events in the run's event log.
    results: Vec<String>,
    /// The output texts of the run's `run_completed` events.
    completions: Vec<String>,
}

impl Round {
    fn accepted(&self) -> Vec<&pb::Answer> {
        self.answers
            .iter()
            .zip(&self.verdicts)
            .filter(|(_, verdict)| **verdict == Verdict::Accepted { duplicate: false })
            .map(|(answer, _)| answer)
            .collect()
    }

    fn count(&self, wanted: &Verdict) -> usize {
        self.verdicts.iter().filter(|v| *v == wanted).count()
    }

    /// Answers accepted as new whose result is not in the run's event log.
    fn lost(&self) -> usize {
        self.accepted()
            .into_iter()
            .filter(|answer| !self.results.contains(&answer_result(answer)))
            .count()
    }
}

/// Starts a run of `agent`, races `make_answer(run_id, tool_call_id, index)` for each of
/// `ANSWERS_PER_ROUND` clients at its first call, then finishes the run and reads its log.
async fn race(url: &str, agent: &str, make_answer: MakeAnswer) -> Round {
    let mut client = connect(url).await;
    let mut run = RunStream::start(&mut client, agent).await;
    let first = run.next_suspended().await.tool_call_id;
    let after_sequence = get_run(&mut client, &run.run_id).await.last_sequence;
    let answers: Vec<pb::Answer> = (0..ANSWERS_PER_ROUND)
        .map(|index| make_answer(&run.run_id, &first, index))
        .collect();
    let verdicts = answer_at_once(url, after_sequence, &answers).await;

    finish_race_run(&mut run, &first).await;
    let log = watch_until_end(&mut client, &run.run_id, 0).await;
    Round {
        answers,
        verdicts,
        results: tool_results(&log, &first)
            .into_iter()
            .map(|result| result.content.clone())
            .collect(),
        completions: completions(&log).into_iter().map(str::to_owned).collect(),
    }
}

/// The answer client `index` sends to call `tool_call_id` of run `run_id`.
type MakeAnswer = fn(&str, &str, usize) -> pb::Answer;

/// Runs `rounds` races on `agent`, `ROUNDS_IN_FLIGHT` at a time, on one server.
async fn race_rounds(
    server: &Server,
    agent: &str,
    rounds: usize,
    make_answer: MakeAnswer,
) -> Vec<Round> {
    let url = server.url();
    let mut done = Vec::with_capacity(rounds);
    while done.len() < rounds {
        let batch = ROUNDS_IN_FLIGHT.min(rounds - done.len());
        done.extend(join_all((0..batch).map(|_| race(&url, agent, make_answer))).await);
    }
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_different_answers_are_accepted_exactly_once() {
    let server = Server::start_with(Some(&agents()), &[]);
    // Every answer differs, so none can pass for a retry of the winner.
    let rounds = race_rounds(&server, "race", ROUNDS, |run_id, tool_call_id, index| {
        text_answer(
            run_id,
            tool_call_id,
            &format!("answer {index} for {run_id}"),
        )
    })
    .await;
    assert_one_winner_per_round("exactly_once race", &rounds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tool_outputs_are_accepted_exactly_once() {
    let server = Server::start_with(Some(&agents()), &[]);
    let rounds = race_rounds(
        &server,
        "race_tool",
        TOOL_ROUNDS,
        |run_id, tool_call_id, index| tool_output(run_id, tool_call_id, &format!("output {index}")),
    )
    .await;
    assert_one_winner_per_round("exactly_once tool outputs", &rounds);
}

/// Rejections and edits, all different, race for one approval: one decision wins; a winning edit
/// runs the tool once, with its arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_approval_decisions_are_applied_exactly_once() {
    use pb::approval_decision::{Decision, Edit, Reject};
    let server = Server::start_with(Some(&agents()), &[]);
    let rounds = race_rounds(
        &server,
        "race_approval",
        TOOL_ROUNDS,
        |run_id, tool_call_id, index| {
            let choice = if index % 2 == 0 {
                Decision::Reject(Reject {
                    reason: format!("no {index}"),
                })
            } else {
                Decision::Edit(Edit {
                    arguments_json: format!(r#"{{"n": {index}}}"#),
                })
            };
            decision_answer(run_id, tool_call_id, choice)
        },
    )
    .await;
    assert_one_winner_per_round("exactly_once approvals", &rounds);
}

/// Every round had exactly one winner, its result is the call's only result, and the run completed
/// once with it; prints the figures under `title`.
fn assert_one_winner_per_round(title: &str, rounds: &[Round]) {
    let already_answered = Verdict::Rejected {
        reason: "ALREADY_ANSWERED".into(),
    };
    let accepted: usize = rounds.iter().map(|r| r.accepted().len()).sum();
    let rejected: usize = rounds.iter().map(|r| r.count(&already_answered)).sum();
    let lost: usize = rounds.iter().map(Round::lost).sum();
    report_figures(
        title,
        &[
            ("rounds", rounds.len() as u64),
            (
                "answers_attempted",
                (rounds.len() * ANSWERS_PER_ROUND) as u64,
            ),
            ("accepted", accepted as u64),
            ("rejected", rejected as u64),
            ("lost", lost as u64),
        ],
    );

    assert_eq!(lost, 0);
    for (index, round) in rounds.iter().enumerate() {
        let winners = round.accepted();
        assert_eq!(winners.len(), 1, "round {index}: {:?}", round.verdicts);
        assert_eq!(
            round.count(&already_answered),
            ANSWERS_PER_ROUND - 1,
            "round {index}: every other answer is ALREADY_ANSWERED, nothing else: {:?}",
            round.verdicts
        );
        assert_eq!(round.results, [answer_result(winners[0])], "round {index}");
        assert_eq!(round.completions, [completion(winners[0])], "round {index}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_identical_answers_are_one_answer_and_its_retries() {
    let server = Server::start_with(Some(&agents()), &[]);
    let rounds = race_rounds(&server, "race", RETRY_ROUNDS, |run_id, tool_call_id, _| {
        pb::Answer {
            answer_id: format!("key for {run_id}"),
            ..text_answer(run_id, tool_call_id, "blue")
        }
    })
    .await;

    let duplicates: usize = rounds
        .iter()
        .map(|r| r.count(&Verdict::Accepted { duplicate: true }))
        .sum();
    let accepted: usize = rounds.iter().map(|r| r.accepted().len()).sum();
    let lost: usize = rounds.iter().map(Round::lost).sum();
    report_figures(
        "exactly_once identical retries",
        &[
            ("rounds", rounds.len() as u64),
            (
                "answers_attempted",
                (rounds.len() * ANSWERS_PER_ROUND) as u64,
            ),
            ("accepted", accepted as u64),
            ("duplicates", duplicates as u64),
            ("lost", lost as u64),
        ],
    );

    assert_eq!(lost, 0);
    for (index, round) in rounds.iter().enumerate() {
        assert_eq!(
            round.accepted().len(),
            1,
            "round {index}: {:?}",
            round.verdicts
        );
        assert_eq!(
            round.count(&Verdict::Accepted { duplicate: true }),
            ANSWERS_PER_ROUND - 1,
            "round {index}: {:?}",
            round.verdicts
        );
        assert_eq!(round.results, ["User answered: blue"], "round {index}");
        assert_eq!(round.completions, ["race: blue then done"], "round {index}");
    }
}

#[tokio::test]
async fn retries_are_duplicates_on_every_path_and_other_answers_are_rejected() {
    let server = Server::start_with(Some(&agents()), &[]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "race").await;
    let run_id = run.run_id.clone();
    let question = run.next_suspended().await.tool_call_id;
    let with_key = |text: &str, answer_id: &str| pb::Answer {
        answer_id: answer_id.into(),
        ..text_answer(&run_id, &question, text)
    };
    run.send(with_key("blue", "key-1")).await;
    assert_eq!(
        run.next_verdict(&question).await,
        Verdict::Accepted { duplicate: false }
    );
    let second = run.next_suspended().await.tool_call_id;

    let duplicate = Verdict::Accepted { duplicate: true };
    let already_answered = Verdict::Rejected {
        reason: "ALREADY_ANSWERED".into(),
    };
    // A key is one answer: reused for other content it is refused, not taken for a retry.
    let key_reused = Verdict::Rejected {
        reason: "ANSWER_ID_REUSED".into(),
    };
    let cases = [
        ("same key, same text", with_key("blue", "key-1"), &duplicate),
        (
            "same key, other text",
            with_key("green", "key-1"),
            &key_reused,
        ),
        ("no key, same text", with_key("blue", ""), &duplicate),
        (
            "other key, same text",
            with_key("blue", "key-2"),
            &duplicate,
        ),
        (
            "no key, other text",
            with_key("green", ""),
            &already_answered,
        ),
        (
            "other key, other text",
            with_key("green", "key-3"),
            &already_answered,
        ),
    ];
    for (case, answer, expected) in &cases {
        assert_eq!(
            &resume_verdict(&mut client, answer.clone()).await,
            *expected,
            "ResumeRun, {case}"
        );
        run.send(answer.clone()).await;
        assert_eq!(
            &run.next_verdict(&question).await,
            *expected,
            "the run's own stream, {case}"
        );
        let last_sequence = get_run(&mut client, &run_id).await.last_sequence;
        let mut attached = RunStream::attach(&mut client, &run_id, last_sequence).await;
        attached.send(answer.clone()).await;
        assert_eq!(
            &attached.next_verdict(&question).await,
            *expected,
            "an attached stream, {case}"
        );
    }

    // A duplicate is acknowledged as the original answer, under its key.
    let retried = resume(&mut client, with_key("blue", ""))
        .await
        .expect("resume a retry");
    assert_eq!(
        retried[0].event,
        Some(Event::AnswerAccepted(pb::AnswerAccepted {
            tool_call_id: question.clone(),
            answer_id: "key-1".into(),
            duplicate: true,
        }))
    );

    run.send_text(&second, "done").await;
    assert_eq!(run.completed_text().await, "race: blue then done");
    let log = watch_until_end(&mut client, &run_id, 0).await;
    let results = tool_results(&log, &question);
    assert_eq!(results.len(), 1, "{log:?}");
    assert_eq!(results[0].content, "User answered: blue");
    assert_eq!(completions(&log), ["race: blue then done"]);
}
