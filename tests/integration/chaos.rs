//! Chaos: many runs of an agent that asks two questions, driven by concurrent clients while the
//! server is SIGKILLed at random points (SQLite), or while the PostgreSQL server under three
//! replicas is crashed and restarted. Clients behave as careful clients do: a start carries a
//! request id and is retried with it; an answer carries a unique answer id and is resent with it
//! until a verdict arrives; a broken stream is reattached after the last sequence it delivered.
//!
//! Afterwards every run has completed, with its own answers (none lost), each applied once (one
//! tool result per call), its events contiguous with one `run_completed`, its turns as scripted,
//! and there is one run per request id. The seed is printed with the figures; set CHAOS_SEED to
//! replay its choices (the interleaving is up to the machine).

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use askuser::proto::v1::agent_service_client::AgentServiceClient;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::postgres_cluster::Postgres;
use common::{
    Server, assert_contiguous, error_reason, event_name, get_run, report_figures,
    scripted_agent_with, watch_until_end,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

/// One chaos test at a time: each wants the machine's two cores to itself.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// No frame for this long while a run should progress is a stall: the client reattaches (and the
/// stall is counted). A liveness bound, not a timing assertion.
const STALL: Duration = Duration::from_secs(15);
/// A run that has not completed after this long of trying never ends.
const RUN_DEADLINE: Duration = Duration::from_secs(120);
/// Pause before a client retries after a failure.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

const AGENT: &str = "chaos";
const COLOUR: &str = "Colour?";
const SIZE: &str = "Size?";

/// Two questions, one after the other, then an answer that quotes both. The delays widen the
/// windows a kill can fall in mid-step.
fn agents() -> String {
    scripted_agent_with(
        AGENT,
        "",
        &[
            &format!("ask = [{{ question = \"{COLOUR}\" }}]"),
            &format!(
                "delay = \"15ms\"\nask = [{{ question = \"{SIZE}\", options = [{{ label = \"small\" }}, {{ label = \"large\" }}] }}]"
            ),
            "delay = \"15ms\"\nsay = \"chaos: {{answer.1}} / {{answer.2}}\"",
        ],
    )
}

/// What run `index` answers, and so what it must end with.
struct Script {
    colour: String,
    size: &'static str,
}

impl Script {
    fn of(index: usize) -> Script {
        Script {
            colour: format!("c{index}"),
            size: if index.is_multiple_of(2) {
                "small"
            } else {
                "large"
            },
        }
    }

    fn output(&self) -> String {
        format!("chaos: {} / {}", self.colour, self.size)
    }

    /// The answer to the question asked as `suspended` (the same content, and id, every time).
    fn answer(&self, index: usize, run_id: &str, suspended: &pb::ToolCallSuspended) -> pb::Answer {
        let question = suspended
            .suspend_payload
            .as_ref()
            .map(|payload| payload.question.as_str())
            .unwrap_or_default();
        let answer = if question == COLOUR {
            pb::answer::Answer::Text(self.colour.clone())
        } else {
            pb::answer::Answer::Selections(pb::Selections {
                labels: vec![self.size.to_owned()],
            })
        };
        pb::Answer {
            run_id: run_id.to_owned(),
            tool_call_id: suspended.tool_call_id.clone(),
            answer: Some(answer),
            answer_id: format!("run {index} {question}"),
        }
    }

    /// The tool results the run's two calls must get, in order.
    fn results(&self) -> [String; 2] {
        [
            format!("User answered: {}", self.colour),
            format!("User answered: {}", self.size),
        ]
    }
}

/// Counts across all clients.
#[derive(Default)]
struct Tally {
    /// Streams or calls that failed (the server died, or was unreachable).
    disconnects: AtomicU64,
    /// Streams that went quiet for [`STALL`] while their run should have moved.
    stalls: AtomicU64,
    /// Answers sent, resends included.
    answers_sent: AtomicU64,
    accepted: AtomicU64,
    /// Resends recognised as such.
    duplicates: AtomicU64,
    rejected: AtomicU64,
    via_resume_run: AtomicU64,
}

impl Tally {
    fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Where the clients find the server: the replicas' addresses, replaced on a restart.
struct Shared {
    urls: RwLock<Vec<String>>,
    /// Runs handed to clients so far; the chaos is paced by it.
    started: AtomicUsize,
    runs: usize,
    tally: Tally,
    /// Runs whose streams stalled, to pick out of the server logs.
    stalled: std::sync::Mutex<Vec<String>>,
}

impl Shared {
    fn url(&self, rng: &mut StdRng) -> String {
        let urls = self.urls.read().unwrap_or_else(|e| e.into_inner());
        urls[rng.random_range(0..urls.len())].clone()
    }
}

/// What a client saw of one run.
#[derive(Default)]
struct Outcome {
    index: usize,
    run_id: Option<String>,
    output: Option<String>,
    /// Why the run did not end well, as the client saw it.
    failure: Option<String>,
    /// Tool call id of each answer the server acknowledged (new or duplicate).
    acknowledged: Vec<String>,
    rejections: Vec<String>,
}

async fn connect(url: String) -> Option<AgentServiceClient<Channel>> {
    let endpoint = Endpoint::from_shared(url)
        .ok()?
        .connect_timeout(Duration::from_secs(2));
    endpoint.connect().await.ok().map(AgentServiceClient::new)
}

/// Drives run `index` to its end, through whatever the server goes through.
async fn drive(shared: &Shared, index: usize, rng: &mut StdRng) -> Outcome {
    let script = Script::of(index);
    let tally = &shared.tally;
    let deadline = Instant::now() + RUN_DEADLINE;
    let mut outcome = Outcome {
        index,
        ..Outcome::default()
    };
    let mut last_sequence = 0;
    // Answers sent without a verdict yet, by tool call id: resent on every new stream.
    let mut unsettled: BTreeMap<String, pb::Answer> = BTreeMap::new();
    'streams: while outcome.output.is_none() {
        if Instant::now() > deadline {
            outcome.failure = Some(format!("not completed after {RUN_DEADLINE:?}"));
            break;
        }
        let url = shared.url(rng);
        let Some(mut client) = connect(url.clone()).await else {
            Tally::add(&tally.disconnects);
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let first = match &outcome.run_id {
            None => Frame::Start(pb::StartRun {
                agent_id: AGENT.into(),
                prompt: format!("run {index}"),
                request_id: format!("chaos run {index}"),
                ..Default::default()
            }),
            Some(run_id) => Frame::Attach(pb::AttachRun {
                run_id: run_id.clone(),
                after_sequence: last_sequence,
            }),
        };
        let (sender, receiver) = mpsc::channel(8);
        let _ = sender
            .send(pb::RunAgentRequest { frame: Some(first) })
            .await;
        let mut inbound = match client.run_agent(ReceiverStream::new(receiver)).await {
            Ok(response) => response.into_inner(),
            Err(_) => {
                Tally::add(&tally.disconnects);
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        for answer in unsettled.clone().into_values() {
            let delivery = send_answer(shared, &mut client, &sender, &answer, rng).await;
            if !delivered(
                shared,
                &mut outcome,
                &mut unsettled,
                &answer.tool_call_id,
                delivery,
            ) {
                tokio::time::sleep(RETRY_PAUSE).await;
                continue 'streams;
            }
        }
        loop {
            let frame = match tokio::time::timeout(STALL, inbound.message()).await {
                Err(_) => {
                    Tally::add(&tally.stalls);
                    // Not a failure by itself (the run may still end), but worth a look.
                    eprintln!(
                        "stall: run {index} ({:?}) on {url}: nothing after sequence {last_sequence} for {STALL:?}; unsettled {:?}",
                        outcome.run_id,
                        unsettled.keys().collect::<Vec<_>>()
                    );
                    if let Some(run_id) = &outcome.run_id {
                        shared
                            .stalled
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(run_id.clone());
                    }
                    continue 'streams;
                }
                Ok(Err(_)) => {
                    Tally::add(&tally.disconnects);
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue 'streams;
                }
                // The stream ended: the run ended, or the server is shutting down.
                Ok(Ok(None)) => continue 'streams,
                Ok(Ok(Some(frame))) => frame,
            };
            if frame.sequence > 0 {
                // A retried start replays the run from its beginning.
                if frame.sequence <= last_sequence {
                    continue;
                }
                if frame.sequence != last_sequence + 1 {
                    outcome.failure = Some(format!(
                        "sequence {} delivered after {last_sequence}",
                        frame.sequence
                    ));
                    return outcome;
                }
                last_sequence = frame.sequence;
            }
            match frame.event {
                Some(Event::RunStarted(_)) => match &outcome.run_id {
                    Some(run_id) if *run_id != frame.run_id => {
                        outcome.failure = Some(format!(
                            "a retried start made a second run {} beside {run_id}",
                            frame.run_id
                        ));
                        return outcome;
                    }
                    _ => outcome.run_id = Some(frame.run_id),
                },
                Some(Event::ToolCallSuspended(suspended)) => {
                    let run_id = outcome.run_id.clone().unwrap_or_default();
                    let answer = script.answer(index, &run_id, &suspended);
                    unsettled.insert(suspended.tool_call_id.clone(), answer.clone());
                    let delivery = send_answer(shared, &mut client, &sender, &answer, rng).await;
                    if !delivered(
                        shared,
                        &mut outcome,
                        &mut unsettled,
                        &answer.tool_call_id,
                        delivery,
                    ) {
                        tokio::time::sleep(RETRY_PAUSE).await;
                        continue 'streams;
                    }
                }
                Some(Event::AnswerAccepted(accepted)) => {
                    acknowledge(shared, &mut outcome, &mut unsettled, &accepted);
                }
                Some(Event::AnswerRejected(rejected)) => {
                    Tally::add(&tally.rejected);
                    unsettled.remove(&rejected.tool_call_id);
                    outcome.rejections.push(rejected.reason);
                }
                Some(Event::RunCompleted(done)) => outcome.output = Some(done.output_text),
                Some(Event::RunFailed(failed)) => {
                    outcome.failure = Some(format!("run failed: {}", failed.message));
                    return outcome;
                }
                Some(Event::RunCancelled(cancelled)) => {
                    outcome.failure = Some(format!("run cancelled: {}", cancelled.reason));
                    return outcome;
                }
                _ => {}
            }
        }
    }
    outcome
}

fn acknowledge(
    shared: &Shared,
    outcome: &mut Outcome,
    unsettled: &mut BTreeMap<String, pb::Answer>,
    accepted: &pb::AnswerAccepted,
) {
    if unsettled.remove(&accepted.tool_call_id).is_none() {
        // A late verdict of a resend already acknowledged.
        return;
    }
    if accepted.duplicate {
        Tally::add(&shared.tally.duplicates);
    } else {
        Tally::add(&shared.tally.accepted);
    }
    outcome.acknowledged.push(accepted.tool_call_id.clone());
}

/// What became of an answer sent.
enum Delivery {
    /// Sent on the stream: its verdict comes as a frame.
    OnStream,
    /// `ResumeRun`'s verdict.
    Accepted(pb::AnswerAccepted),
    Rejected(String),
    /// `ResumeRun` failed without a verdict: resend.
    Failed,
}

/// Sends an answer on the stream, or now and then with `ResumeRun` (whose verdict is its first
/// frame or its status).
async fn send_answer(
    shared: &Shared,
    client: &mut AgentServiceClient<Channel>,
    sender: &mpsc::Sender<pb::RunAgentRequest>,
    answer: &pb::Answer,
    rng: &mut StdRng,
) -> Delivery {
    let tally = &shared.tally;
    Tally::add(&tally.answers_sent);
    if rng.random_bool(0.7) {
        let _ = sender
            .send(pb::RunAgentRequest {
                frame: Some(Frame::Answer(answer.clone())),
            })
            .await;
        return Delivery::OnStream;
    }
    Tally::add(&tally.via_resume_run);
    let request = pb::ResumeRunRequest {
        answer: Some(answer.clone()),
    };
    match client.resume_run(request).await {
        Ok(response) => {
            let first = tokio::time::timeout(STALL, response.into_inner().message()).await;
            match first {
                Ok(Ok(Some(pb::RunAgentResponse {
                    event: Some(Event::AnswerAccepted(accepted)),
                    ..
                }))) => Delivery::Accepted(accepted),
                _ => Delivery::Failed,
            }
        }
        Err(status) if status.code() == tonic::Code::FailedPrecondition => {
            Delivery::Rejected(error_reason(&status).unwrap_or_else(|| status.message().to_owned()))
        }
        Err(_) => Delivery::Failed,
    }
}

/// Records what became of an answer; false when it must be sent again.
fn delivered(
    shared: &Shared,
    outcome: &mut Outcome,
    unsettled: &mut BTreeMap<String, pb::Answer>,
    tool_call_id: &str,
    delivery: Delivery,
) -> bool {
    match delivery {
        Delivery::OnStream => true,
        Delivery::Accepted(accepted) => {
            acknowledge(shared, outcome, unsettled, &accepted);
            true
        }
        Delivery::Rejected(reason) => {
            Tally::add(&shared.tally.rejected);
            unsettled.remove(tool_call_id);
            outcome.rejections.push(reason);
            true
        }
        Delivery::Failed => {
            Tally::add(&shared.tally.disconnects);
            false
        }
    }
}

/// Clients take runs until `shared.runs` have been handed out.
async fn drive_all(shared: Arc<Shared>, clients: usize, seed: u64) -> Vec<Outcome> {
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(seed.wrapping_add(client as u64 + 1));
                let mut outcomes = Vec::new();
                loop {
                    let index = shared.started.fetch_add(1, Ordering::SeqCst);
                    if index >= shared.runs {
                        return outcomes;
                    }
                    outcomes.push(drive(&shared, index, &mut rng).await);
                }
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(task.await.expect("client task"));
    }
    outcomes.sort_by_key(|o| o.index);
    outcomes
}

/// What the event logs show, run by run.
#[derive(Default)]
struct Audit {
    completed: u64,
    /// Runs that did not end, or ended otherwise than completed with their answers.
    unfinished: u64,
    /// Answers acknowledged (or scripted) whose result is not in the run's log.
    lost: u64,
    /// Calls with more than one result, runs with more than one end.
    doubled: u64,
    /// Runs whose events are not contiguous, or whose turns are not the script's.
    malformed: u64,
    step_restarts: u64,
    problems: Vec<String>,
}

/// The event names of a run that went as scripted, text deltas and restarted steps aside.
const TURNS: [&str; 8] = [
    "run_started",
    "tool_call",
    "tool_call_suspended",
    "tool_result",
    "tool_call",
    "tool_call_suspended",
    "tool_result",
    "run_completed",
];

async fn audit(url: String, outcomes: &[Outcome]) -> Audit {
    let mut client = connect(url).await.expect("connect for the audit");
    let mut audit = Audit::default();
    for outcome in outcomes {
        let script = Script::of(outcome.index);
        let problem = |audit: &mut Audit, what: String| {
            audit.problems.push(format!(
                "run {} ({:?}): {what}",
                outcome.index, outcome.run_id
            ));
        };
        if let Some(failure) = &outcome.failure {
            problem(&mut audit, failure.clone());
        }
        let Some(run_id) = &outcome.run_id else {
            audit.unfinished += 1;
            continue;
        };
        let run = get_run(&mut client, run_id).await;
        if run.status() != pb::RunStatus::Completed {
            audit.unfinished += 1;
            problem(
                &mut audit,
                format!("ended {:?}: {}", run.status(), run.error_message),
            );
            continue;
        }
        audit.completed += 1;
        let log = watch_until_end(&mut client, run_id, 0).await;
        let contiguous = std::panic::catch_unwind(|| assert_contiguous(&log, 1)).is_ok();
        let turns: Vec<&str> = log
            .iter()
            .map(event_name)
            .filter(|name| !matches!(*name, "text_delta" | "step_restarted"))
            .collect();
        audit.step_restarts += log
            .iter()
            .filter(|f| event_name(f) == "step_restarted")
            .count() as u64;
        let ends = log
            .iter()
            .filter(|f| {
                matches!(
                    event_name(f),
                    "run_completed" | "run_failed" | "run_cancelled"
                )
            })
            .count();
        let calls: Vec<&str> = log
            .iter()
            .filter_map(|f| match &f.event {
                Some(Event::ToolCall(call)) => Some(call.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let results_of = |call: &str| -> Vec<&str> {
            log.iter()
                .filter_map(|f| match &f.event {
                    Some(Event::ToolResult(r)) if r.tool_call_id == call => {
                        Some(r.content.as_str())
                    }
                    _ => None,
                })
                .collect()
        };
        if calls.iter().any(|call| results_of(call).len() > 1) || ends > 1 {
            audit.doubled += 1;
            problem(
                &mut audit,
                format!(
                    "doubled: {:?}",
                    log.iter().map(event_name).collect::<Vec<_>>()
                ),
            );
        }
        // Each acknowledged answer shows as its call's result; the output quotes both answers.
        let expected = script.results();
        let lost = outcome
            .acknowledged
            .iter()
            .filter(|call| match calls.iter().position(|c| c == *call) {
                Some(at) => !results_of(call).contains(&expected[at.min(1)].as_str()),
                None => true,
            })
            .count() as u64
            + u64::from(run.output_text != script.output());
        if lost > 0 {
            audit.lost += lost;
            problem(
                &mut audit,
                format!(
                    "output {:?}, expected {:?}",
                    run.output_text,
                    script.output()
                ),
            );
        }
        // The final step's text, deltas of restarted attempts aside, is the output.
        let final_step = log
            .iter()
            .rposition(|f| matches!(event_name(f), "tool_result" | "step_restarted"))
            .map_or(0, |at| at + 1);
        let said: String = log[final_step..]
            .iter()
            .filter_map(|f| match &f.event {
                Some(Event::TextDelta(delta)) => Some(delta.text.as_str()),
                _ => None,
            })
            .collect();
        if !contiguous
            || turns != TURNS
            || said != run.output_text
            || run.last_sequence != log.len() as u64
        {
            audit.malformed += 1;
            problem(
                &mut audit,
                format!(
                    "malformed: said {said:?}, events {:?}",
                    log.iter().map(event_name).collect::<Vec<_>>()
                ),
            );
        }
    }
    audit
}

/// Every run the server lists, across pages.
async fn listed_runs(url: String) -> usize {
    let mut client = connect(url).await.expect("connect to list");
    let mut count = 0;
    let mut page_token = String::new();
    loop {
        let page = client
            .list_runs(pb::ListRunsRequest {
                page_size: 500,
                page_token: page_token.clone(),
                ..Default::default()
            })
            .await
            .expect("list runs")
            .into_inner();
        count += page.runs.len();
        if page.next_page_token.is_empty() {
            return count;
        }
        page_token = page.next_page_token;
    }
}

fn seed() -> u64 {
    std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(rand::random)
}

/// Points in the run count at which to strike: `count` of them, spread at random over the middle of
/// the load.
fn strike_points(rng: &mut StdRng, runs: usize, count: usize) -> Vec<usize> {
    let mut points: Vec<usize> = (0..count)
        .map(|_| rng.random_range(runs / 50..runs - runs / 20))
        .collect();
    points.sort_unstable();
    points
}

/// Waits (on a plain thread) until `point` runs have been handed out, or the load is over.
fn wait_for_point(shared: &Shared, done: &AtomicBool, point: usize) -> bool {
    while shared.started.load(Ordering::SeqCst) < point {
        if done.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The figures of a chaos test besides the audit's and the clients'.
struct Figures {
    title: &'static str,
    seed: u64,
    /// Kills of the server, or restarts of the database.
    strikes: u64,
    runs: usize,
    listed: usize,
    began: Instant,
}

/// Checks the audit and prints the figures.
fn conclude(figures: Figures, audit: &Audit, tally: &Tally) {
    let Figures {
        title,
        seed,
        strikes,
        runs,
        listed,
        began,
    } = figures;
    let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    report_figures(
        title,
        &[
            ("seed", seed),
            ("runs", runs as u64),
            ("strikes", strikes),
            ("completed", audit.completed),
            ("unfinished", audit.unfinished),
            ("answers_sent", get(&tally.answers_sent)),
            ("accepted", get(&tally.accepted)),
            ("duplicates", get(&tally.duplicates)),
            ("rejected", get(&tally.rejected)),
            ("via_resume_run", get(&tally.via_resume_run)),
            ("lost", audit.lost),
            ("doubled", audit.doubled),
            ("malformed", audit.malformed),
            ("step_restarts", audit.step_restarts),
            ("disconnects", get(&tally.disconnects)),
            ("stalls", get(&tally.stalls)),
            ("listed_runs", listed as u64),
            ("seconds", began.elapsed().as_secs()),
        ],
    );
    for problem in audit.problems.iter().take(20) {
        eprintln!("{title}: {problem}");
    }
    assert!(
        audit.problems.is_empty(),
        "{} problems (seed {seed})",
        audit.problems.len()
    );
    assert_eq!(audit.completed, runs as u64, "seed {seed}");
    assert_eq!(
        (audit.lost, audit.doubled, audit.malformed),
        (0, 0, 0),
        "seed {seed}"
    );
    assert_eq!(
        get(&tally.rejected),
        0,
        "an answer resent with its id was rejected (seed {seed})"
    );
    assert_eq!(
        listed, runs,
        "a retried start made a second run (seed {seed})"
    );
}

const SQLITE_RUNS: usize = 1000;
const SQLITE_CLIENTS: usize = 8;
const SQLITE_KILLS: usize = 24;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_runs_survive_sigkills() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let seed = seed();
    let began = Instant::now();
    // A short lease: a run the killed server was working on is taken over soon after a restart.
    let server = Server::process_with(Some(&agents()), &["--lease-ttl", "1s"]);
    let shared = Arc::new(Shared {
        urls: RwLock::new(vec![server.url()]),
        started: AtomicUsize::new(0),
        runs: SQLITE_RUNS,
        tally: Tally::default(),
        stalled: Default::default(),
    });
    let done = Arc::new(AtomicBool::new(false));
    let killer = {
        let shared = Arc::clone(&shared);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut server = server;
            let mut rng = StdRng::seed_from_u64(seed);
            let mut kills = 0u64;
            for point in strike_points(&mut rng, SQLITE_RUNS, SQLITE_KILLS) {
                if !wait_for_point(&shared, &done, point) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(rng.random_range(0..40)));
                server.kill();
                kills += 1;
                server.restart();
                *shared.urls.write().unwrap_or_else(|e| e.into_inner()) = vec![server.url()];
            }
            (server, kills)
        })
    };
    let outcomes = drive_all(Arc::clone(&shared), SQLITE_CLIENTS, seed).await;
    done.store(true, Ordering::SeqCst);
    let (server, kills) = killer.join().expect("killer thread");
    let audit = audit(server.url(), &outcomes).await;
    let listed = listed_runs(server.url()).await;
    if !audit.problems.is_empty() {
        eprintln!("server log (tail):\n{}", tail(&server.log(), 60));
    }
    conclude(
        Figures {
            title: "chaos_sqlite",
            seed,
            strikes: kills,
            runs: SQLITE_RUNS,
            listed,
            began,
        },
        &audit,
        &shared.tally,
    );
    assert!(kills >= 20, "only {kills} kills (seed {seed})");
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

const POSTGRES_RUNS: usize = 500;
const POSTGRES_CLIENTS: usize = 6;
const POSTGRES_REPLICAS: usize = 3;
const POSTGRES_RESTARTS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_replicas_survive_database_restarts() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let seed = seed();
    let began = Instant::now();
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let database_url = postgres.database().await;
    let agents = agents();
    let replicas: Vec<Server> = (0..POSTGRES_REPLICAS)
        .map(|_| {
            Server::process_with(
                Some(&agents),
                &["--database-url", &database_url, "--lease-ttl", "2s"],
            )
        })
        .collect();
    let shared = Arc::new(Shared {
        urls: RwLock::new(replicas.iter().map(Server::url).collect()),
        started: AtomicUsize::new(0),
        runs: POSTGRES_RUNS,
        tally: Tally::default(),
        stalled: Default::default(),
    });
    let done = Arc::new(AtomicBool::new(false));
    let restarter = {
        let shared = Arc::clone(&shared);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut restarts = 0u64;
            for point in strike_points(&mut rng, POSTGRES_RUNS, POSTGRES_RESTARTS) {
                if !wait_for_point(&shared, &done, point) {
                    break;
                }
                postgres.crash();
                std::thread::sleep(Duration::from_millis(rng.random_range(100..1000)));
                postgres.pg_ctl_start();
                restarts += 1;
            }
            (postgres, restarts)
        })
    };
    let outcomes = drive_all(Arc::clone(&shared), POSTGRES_CLIENTS, seed).await;
    done.store(true, Ordering::SeqCst);
    let (_postgres, restarts) = restarter.join().expect("restarter thread");
    let audit = audit(replicas[0].url(), &outcomes).await;
    let listed = listed_runs(replicas[1].url()).await;
    let stalled = shared
        .stalled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for (index, replica) in replicas.iter().enumerate() {
        for line in replica
            .log()
            .lines()
            .filter(|line| stalled.iter().any(|run| line.contains(run.as_str())))
        {
            eprintln!("replica {index}: {line}");
        }
    }
    if !audit.problems.is_empty() {
        for (index, replica) in replicas.iter().enumerate() {
            eprintln!("replica {index} log (tail):\n{}", tail(&replica.log(), 30));
        }
    }
    conclude(
        Figures {
            title: "chaos_postgres",
            seed,
            strikes: restarts,
            runs: POSTGRES_RUNS,
            listed,
            began,
        },
        &audit,
        &shared.tally,
    );
    assert_eq!(restarts, POSTGRES_RESTARTS as u64, "seed {seed}");
}
