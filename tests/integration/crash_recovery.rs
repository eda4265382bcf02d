//! Durable runs: the server is SIGKILLed with runs in every state (working, suspended on one and on
//! parallel questions, answered with the next step still thinking, waiting on a question that
//! expires while the server is down) and restarted on the same data. Pending questions keep their
//! tool call ids, and every run completes exactly once with the answers it was given.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_response::Event;
use common::{
    RunStream, Server, Verdict, assert_contiguous, completions, event_name, get_run, now_ms,
    report_figures, resume_verdict, scripted_agent, scripted_agent_with, selections_answer,
    text_answer, timestamp_ms, tool_results, watch_until_end,
};
use tonic::transport::Channel;

/// How many runs of each kind the test drives.
const COPIES: usize = 2;

const EXPIRED_RESULT: &str = "No answer: the question expired";

/// The delays make the kills fall mid-step; each final text shows the answers the run got.
fn agents() -> String {
    [
        scripted_agent(
            "single",
            &[
                r#"ask = [{ question = "Which colour?" }]"#,
                r#"say = "single: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "parallel",
            &[
                r#"ask = [{ question = "Name?" }, { question = "Size?", options = [{ label = "small" }, { label = "large" }] }]"#,
                "delay = \"1s\"\nsay = \"parallel: {{answer.1}} / {{answer.2}}\"",
            ],
        ),
        scripted_agent(
            "slow_start",
            &[
                "delay = \"2s\"\nask = [{ question = \"Ready?\" }]",
                r#"say = "slow start: {{answer.1}}""#,
            ],
        ),
        scripted_agent(
            "slow_finish",
            &[
                r#"ask = [{ question = "Which colour?" }]"#,
                "delay = \"2s\"\nsay = \"slow finish: {{answer.1}}\"",
            ],
        ),
        scripted_agent_with(
            "expiring",
            r#"question_ttl = "2s""#,
            &[
                r#"ask = [{ question = "Quick?" }]"#,
                r#"say = "expiring: {{answer.1}}""#,
            ],
        ),
    ]
    .concat()
}

/// The tool result an accepted answer must produce.
fn answer_result(answer: &pb::Answer) -> String {
    match &answer.answer {
        Some(pb::answer::Answer::Text(text)) => format!("User answered: {text}"),
        Some(pb::answer::Answer::Selections(selections)) => {
            format!("User answered: {}", selections.labels.join(", "))
        }
        other => panic!("no answer text for {other:?}"),
    }
}

/// Every answer sent, and what became of it.
#[derive(Default)]
struct Ledger {
    attempted: u64,
    accepted: u64,
    duplicates: u64,
    rejected: u64,
    /// (run id, tool call id, tool result) of every answer accepted as new.
    accepted_answers: Vec<(String, String, String)>,
}

impl Ledger {
    /// Answers with `ResumeRun`.
    async fn resume(
        &mut self,
        client: &mut AgentServiceClient<Channel>,
        answer: pb::Answer,
    ) -> Verdict {
        let verdict = resume_verdict(client, answer.clone()).await;
        self.record(&answer, &verdict);
        verdict
    }

    /// Answers on a `RunAgent` stream attached to the run.
    async fn on_stream(
        &mut self,
        client: &mut AgentServiceClient<Channel>,
        answer: pb::Answer,
    ) -> Verdict {
        let last_sequence = get_run(client, &answer.run_id).await.last_sequence;
        let mut stream = RunStream::attach(client, &answer.run_id, last_sequence).await;
        stream.send(answer.clone()).await;
        let verdict = stream.next_verdict(&answer.tool_call_id).await;
        self.record(&answer, &verdict);
        verdict
    }

    fn record(&mut self, answer: &pb::Answer, verdict: &Verdict) {
        self.attempted += 1;
        match verdict {
            Verdict::Accepted { duplicate: false } => {
                self.accepted += 1;
                self.accepted_answers.push((
                    answer.run_id.clone(),
                    answer.tool_call_id.clone(),
                    answer_result(answer),
                ));
            }
            Verdict::Accepted { duplicate: true } => self.duplicates += 1,
            Verdict::Rejected { .. } => self.rejected += 1,
        }
    }
}

const NEW: Verdict = Verdict::Accepted { duplicate: false };
const RETRY: Verdict = Verdict::Accepted { duplicate: true };

/// A run and the ids of the questions it asked so far.
struct Asked {
    run_id: String,
    questions: Vec<String>,
}

/// Starts a run and reads until it asked `count` questions.
async fn start_asking(
    client: &mut AgentServiceClient<Channel>,
    agent_id: &str,
    count: usize,
) -> Asked {
    let mut stream = RunStream::start(client, agent_id).await;
    let mut questions = Vec::new();
    for _ in 0..count {
        questions.push(stream.next_suspended().await.tool_call_id);
    }
    Asked {
        run_id: stream.run_id,
        questions,
    }
}

async fn pending_ids(client: &mut AgentServiceClient<Channel>, run_id: &str) -> Vec<String> {
    get_run(client, run_id)
        .await
        .pending_tool_calls
        .into_iter()
        .map(|call| call.tool_call_id)
        .collect()
}

async fn assert_status(
    client: &mut AgentServiceClient<Channel>,
    run_id: &str,
    expected: pb::RunStatus,
) {
    assert_eq!(get_run(client, run_id).await.status(), expected, "{run_id}");
}

/// The runs of one copy of the scenario.
struct Runs {
    single: Asked,
    parallel: Asked,
    /// A parallel run with one question answered before the first kill.
    half: Asked,
    half_first_answer: pb::Answer,
    /// Answered just before the first kill, its next step still thinking.
    slow_finish: Asked,
    slow_finish_answer: pb::Answer,
    /// Its question expires while the server is down.
    expiring: Asked,
    expire_ms: i64,
    /// Working on its first step at the first kill; asks only after the restart.
    slow_start: Asked,
}

impl Runs {
    /// Each run with the final text and the tool results it must end with.
    fn expectations(&self, copy: usize) -> Vec<(&Asked, String, Vec<String>)> {
        let answered = |text: &str| format!("User answered: {text}");
        vec![
            (
                &self.single,
                format!("single: teal {copy}"),
                vec![answered(&format!("teal {copy}"))],
            ),
            (
                &self.parallel,
                format!("parallel: Ada {copy} / large"),
                vec![answered(&format!("Ada {copy}")), answered("large")],
            ),
            (
                &self.half,
                format!("parallel: Bob {copy} / small"),
                vec![answered(&format!("Bob {copy}")), answered("small")],
            ),
            (
                &self.slow_finish,
                format!("slow finish: amber {copy}"),
                vec![answered(&format!("amber {copy}"))],
            ),
            (
                &self.expiring,
                format!("expiring: {EXPIRED_RESULT}"),
                vec![EXPIRED_RESULT.to_owned()],
            ),
            (
                &self.slow_start,
                format!("slow start: go {copy}"),
                vec![answered(&format!("go {copy}"))],
            ),
        ]
    }
}

/// The runs of one copy whose state lasts until they are answered.
struct Lasting {
    single: Asked,
    parallel: Asked,
    half: Asked,
    half_first_answer: pb::Answer,
}

async fn start_lasting(
    client: &mut AgentServiceClient<Channel>,
    ledger: &mut Ledger,
    copy: usize,
) -> Lasting {
    let single = start_asking(client, "single", 1).await;
    let parallel = start_asking(client, "parallel", 2).await;
    let half = start_asking(client, "parallel", 2).await;
    let half_first_answer = pb::Answer {
        answer_id: format!("half name {copy}"),
        ..text_answer(&half.run_id, &half.questions[0], &format!("Bob {copy}"))
    };
    assert_eq!(
        ledger.on_stream(client, half_first_answer.clone()).await,
        NEW
    );
    Lasting {
        single,
        parallel,
        half,
        half_first_answer,
    }
}

/// Adds to `lasting` the runs whose state only lasts a couple of seconds (a step thinking, a
/// question about to expire), so they are set up just before the first kill.
async fn start_short_lived(
    client: &mut AgentServiceClient<Channel>,
    ledger: &mut Ledger,
    copy: usize,
    lasting: Lasting,
) -> Runs {
    let expiring = start_asking(client, "expiring", 1).await;
    let expire_ms = timestamp_ms(
        get_run(client, &expiring.run_id).await.pending_tool_calls[0]
            .expire_time
            .as_ref()
            .expect("expire_time"),
    );
    let slow_start = Asked {
        run_id: RunStream::start(client, "slow_start").await.run_id,
        questions: Vec::new(),
    };
    let slow_finish = start_asking(client, "slow_finish", 1).await;
    let slow_finish_answer = pb::Answer {
        answer_id: format!("slow finish {copy}"),
        ..text_answer(
            &slow_finish.run_id,
            &slow_finish.questions[0],
            &format!("amber {copy}"),
        )
    };
    assert_eq!(ledger.resume(client, slow_finish_answer.clone()).await, NEW);
    Runs {
        single: lasting.single,
        parallel: lasting.parallel,
        half: lasting.half,
        half_first_answer: lasting.half_first_answer,
        slow_finish,
        slow_finish_answer,
        expiring,
        expire_ms,
        slow_start,
    }
}

#[tokio::test]
async fn runs_survive_sigkill_and_complete_exactly_once() {
    let mut server = Server::process_with(Some(&agents()), &[]);
    let mut client = server.agents().await;
    let mut ledger = Ledger::default();
    let mut kills = 0;

    // Kill 1: every state at once.
    let mut lasting = Vec::new();
    for copy in 0..COPIES {
        lasting.push(start_lasting(&mut client, &mut ledger, copy).await);
    }
    let mut copies = Vec::new();
    for (copy, lasting) in lasting.into_iter().enumerate() {
        copies.push(start_short_lived(&mut client, &mut ledger, copy, lasting).await);
    }
    for runs in &copies {
        assert_status(&mut client, &runs.single.run_id, pb::RunStatus::Suspended).await;
        assert_status(&mut client, &runs.parallel.run_id, pb::RunStatus::Suspended).await;
        assert_eq!(
            pending_ids(&mut client, &runs.half.run_id).await,
            runs.half.questions[1..]
        );
        assert_status(&mut client, &runs.expiring.run_id, pb::RunStatus::Suspended).await;
        let slow_start = get_run(&mut client, &runs.slow_start.run_id).await;
        assert_eq!(slow_start.status(), pb::RunStatus::Running);
        assert_eq!(
            slow_start.last_sequence, 1,
            "the first step is still thinking"
        );
        let slow_finish = get_run(&mut client, &runs.slow_finish.run_id).await;
        assert_eq!(slow_finish.status(), pb::RunStatus::Running);
        assert!(slow_finish.output_text.is_empty());
    }
    server.kill();
    kills += 1;
    let expiry_ms = copies
        .iter()
        .map(|runs| runs.expire_ms)
        .max()
        .expect("copies");
    let wait = u64::try_from(expiry_ms + 200 - now_ms()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let restarted_ms = now_ms();
    server.restart();
    let mut client = server.agents().await;

    // Restart 1: the questions are still pending under the same ids; the one that expired while
    // the server was down expires now, and its run goes on.
    for (copy, runs) in copies.iter_mut().enumerate() {
        for asked in [&runs.single, &runs.parallel] {
            assert_eq!(
                pending_ids(&mut client, &asked.run_id).await,
                asked.questions
            );
        }
        assert_eq!(
            pending_ids(&mut client, &runs.half.run_id).await,
            runs.half.questions[1..]
        );
        let log = watch_until_end(&mut client, &runs.expiring.run_id, 0).await;
        let expired = log
            .iter()
            .find(|frame| event_name(frame) == "tool_result")
            .expect("tool_result");
        let expired_ms = timestamp_ms(expired.time.as_ref().expect("time"));
        assert!(
            expired_ms >= restarted_ms,
            "the question expired at {expired_ms}, before the restart at {restarted_ms}"
        );
        let late = text_answer(&runs.expiring.run_id, &runs.expiring.questions[0], "late");
        assert_eq!(
            ledger.resume(&mut client, late).await,
            Verdict::Rejected {
                reason: "QUESTION_EXPIRED".into()
            }
        );
        // Retries of answers accepted before the kill are recognised.
        // (A stream attached to a run that has ended ends too, so the run that may be done by
        // now is answered with ResumeRun.)
        assert_eq!(
            ledger
                .on_stream(&mut client, runs.half_first_answer.clone())
                .await,
            RETRY
        );
        assert_eq!(
            ledger
                .resume(&mut client, runs.slow_finish_answer.clone())
                .await,
            RETRY
        );
        // The step the kill cut short runs again and asks.
        let mut slow_start = RunStream::attach(&mut client, &runs.slow_start.run_id, 0).await;
        runs.slow_start
            .questions
            .push(slow_start.next_suspended().await.tool_call_id);
        let name = text_answer(
            &runs.parallel.run_id,
            &runs.parallel.questions[0],
            &format!("Ada {copy}"),
        );
        assert_eq!(ledger.resume(&mut client, name).await, NEW);
    }
    // Kill 2: right after answers that let runs work on.
    for runs in &copies {
        let size = selections_answer(&runs.half.run_id, &runs.half.questions[1], &["small"]);
        assert_eq!(ledger.resume(&mut client, size).await, NEW);
    }
    for runs in &copies {
        assert_status(&mut client, &runs.half.run_id, pb::RunStatus::Running).await;
    }
    server.kill();
    kills += 1;
    server.restart();
    let mut client = server.agents().await;

    // Restart 2: answer whatever is still pending, then kill 3 right after the last acceptance.
    for (copy, runs) in copies.iter().enumerate() {
        assert_eq!(
            pending_ids(&mut client, &runs.single.run_id).await,
            runs.single.questions
        );
        assert_eq!(
            pending_ids(&mut client, &runs.parallel.run_id).await,
            runs.parallel.questions[1..]
        );
        assert_eq!(
            pending_ids(&mut client, &runs.slow_start.run_id).await,
            runs.slow_start.questions
        );
        let colour = text_answer(
            &runs.single.run_id,
            &runs.single.questions[0],
            &format!("teal {copy}"),
        );
        assert_eq!(ledger.on_stream(&mut client, colour).await, NEW);
        let go = text_answer(
            &runs.slow_start.run_id,
            &runs.slow_start.questions[0],
            &format!("go {copy}"),
        );
        assert_eq!(ledger.resume(&mut client, go).await, NEW);
        let size = selections_answer(
            &runs.parallel.run_id,
            &runs.parallel.questions[1],
            &["large"],
        );
        assert_eq!(ledger.on_stream(&mut client, size).await, NEW);
    }
    server.kill();
    kills += 1;
    server.restart();
    let mut client = server.agents().await;

    // Every run completes exactly once, with every answer it was given, each applied once.
    let mut logs = BTreeMap::new();
    for (copy, runs) in copies.iter().enumerate() {
        for (asked, output, results) in runs.expectations(copy) {
            let log = watch_until_end(&mut client, &asked.run_id, 0).await;
            assert_contiguous(&log, 1);
            assert_eq!(completions(&log), [output], "{log:?}");
            let count = |name: &str| log.iter().filter(|f| event_name(f) == name).count();
            assert_eq!(count("tool_call"), asked.questions.len(), "{log:?}");
            assert_eq!(
                count("tool_call_suspended"),
                asked.questions.len(),
                "{log:?}"
            );
            assert_eq!(count("run_completed"), 1, "{log:?}");
            for (tool_call_id, expected) in asked.questions.iter().zip(&results) {
                let settled: Vec<&str> = tool_results(&log, tool_call_id)
                    .into_iter()
                    .map(|result| result.content.as_str())
                    .collect();
                assert_eq!(settled, [expected.as_str()], "{tool_call_id}: {log:?}");
            }
            logs.insert(asked.run_id.clone(), log);
        }
    }
    let lost = ledger
        .accepted_answers
        .iter()
        .filter(|(run_id, tool_call_id, result)| {
            !logs[run_id].iter().any(|frame| {
                matches!(&frame.event, Some(Event::ToolResult(settled))
                    if settled.tool_call_id == *tool_call_id && settled.content == *result)
            })
        })
        .count();
    report_figures(
        "crash_recovery",
        &[
            ("runs", logs.len() as u64),
            ("kills", kills),
            ("answers_attempted", ledger.attempted),
            ("accepted", ledger.accepted),
            ("duplicates", ledger.duplicates),
            ("rejected", ledger.rejected),
            ("lost", lost as u64),
        ],
    );
    assert_eq!(lost, 0);
    assert_eq!(ledger.accepted, 7 * COPIES as u64);
}

/// A step that never finishes (here: the server is killed during it, again and again) is tried
/// `--max-step-attempts` times; the next start fails the run saying why instead of trying again.
#[tokio::test]
async fn a_step_that_never_finishes_fails_its_run_after_the_max_attempts() {
    let agents = scripted_agent("slow", &["delay = \"30s\"\nsay = \"never\""]);
    let mut server = Server::process_with(Some(&agents), &["--max-step-attempts", "2"]);
    let run_id = {
        let mut client = server.agents().await;
        RunStream::start(&mut client, "slow").await.run_id
    };
    // The first start was the creator's; one more is allowed, the third fails the run.
    for _ in 0..2 {
        // Long enough for the step to be started (taken over) before the kill.
        tokio::time::sleep(Duration::from_secs(1)).await;
        server.kill();
        server.restart();
    }
    let mut client = server.agents().await;
    let log = watch_until_end(&mut client, &run_id, 0).await;
    let failed = log
        .iter()
        .find_map(|frame| match &frame.event {
            Some(Event::RunFailed(failed)) => Some(failed.message.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the run did not fail: {log:?}"));
    assert!(
        failed.contains("tried 2 times without finishing"),
        "{failed}"
    );
}

/// After a restart, every run that was working is taken over and completes once. The takeovers are
/// spread over a quarter of the lease TTL (the schedule is a unit test of the executor); the gaps
/// between completions are printed, not asserted, since a loaded machine stretches them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_runs_are_all_taken_over_after_a_restart() {
    const RUNS: usize = 4;
    let agents = scripted_agent("steady", &["delay = \"1s\"\nsay = \"done\""]);
    // Takeover period 1 s: 4 runs are kicked 250 ms apart.
    let mut server = Server::process_with(Some(&agents), &["--lease-ttl", "4s"]);
    let mut run_ids = Vec::new();
    for _ in 0..RUNS {
        let mut client = server.agents().await;
        run_ids.push(RunStream::start(&mut client, "steady").await.run_id);
    }
    server.kill();
    server.restart();
    let restarted = std::time::Instant::now();
    let finishes = run_ids.iter().map(|run_id| {
        let server = &server;
        async move {
            let mut client = server.agents().await;
            let log = watch_until_end(&mut client, run_id, 0).await;
            assert_eq!(completions(&log), ["done"]);
            restarted.elapsed()
        }
    });
    let mut finished = futures::future::join_all(finishes).await;
    finished.sort();
    let gaps: Vec<u64> = finished
        .windows(2)
        .map(|pair| (pair[1] - pair[0]).as_millis() as u64)
        .collect();
    report_figures(
        "takeovers after a restart, 4 runs, period 1s",
        &[
            ("first_done_ms", finished[0].as_millis() as u64),
            ("gap_min_ms", gaps.iter().copied().min().unwrap_or(0)),
            ("gap_max_ms", gaps.iter().copied().max().unwrap_or(0)),
        ],
    );
}
