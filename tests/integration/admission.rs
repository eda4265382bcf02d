//! How much works at once is bounded: steps of one agent's runs, steps over all runs, and requests
//! to one model endpoint. Runs beyond a limit wait, running, and finish one after another.
//!
//! Each scripted turn takes [`TURN`]; with room for one at a time, runs started together finish
//! at least a turn apart (more on a slow machine, never less), while without the limit they
//! finish together.

use crate::common;

use std::time::{Duration, Instant};

use common::{RunStream, Server, report_figures, scripted_agent, scripted_agent_with};

const TURN: Duration = Duration::from_millis(500);

fn slow_agent(id: &str, settings: &str) -> String {
    scripted_agent_with(id, settings, &["delay = \"500ms\"\nsay = \"done\""])
}

/// Starts one run of each agent at once; returns when each completed, in order.
async fn completion_times(server: &Server, agents: &[&str]) -> Vec<Instant> {
    let runs = agents.iter().map(|agent| async move {
        let mut client = server.agents().await;
        let mut run = RunStream::start(&mut client, agent).await;
        assert_eq!(run.completed_text().await, "done");
        Instant::now()
    });
    let mut finished = futures::future::join_all(runs).await;
    finished.sort();
    finished
}

/// The gaps between completions in order.
fn gaps(finished: &[Instant]) -> Vec<Duration> {
    finished.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

/// Starts one run of each agent at once; returns the gaps between their completions, in order.
async fn completion_gaps(server: &Server, agents: &[&str]) -> Vec<Duration> {
    gaps(&completion_times(server, agents).await)
}

fn assert_one_at_a_time(title: &str, gaps: &[Duration]) {
    let millis: Vec<(String, u64)> = gaps
        .iter()
        .enumerate()
        .map(|(index, gap)| (format!("gap_{index}_ms"), gap.as_millis() as u64))
        .collect();
    let figures: Vec<(&str, u64)> = millis.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    report_figures(title, &figures);
    for gap in gaps {
        // A little under a turn: the timer may fire a hair early relative to our clock.
        assert!(*gap >= TURN - Duration::from_millis(50), "{gaps:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_runs_take_turns_beyond_its_max_concurrent_steps() {
    let agents = [
        slow_agent("one_at_a_time", "max_concurrent_steps = 1"),
        slow_agent("free", ""),
    ]
    .join("\n");
    let server = Server::start_with(Some(&agents), &[]);
    // Another agent's runs are not held back by it: started together with the held ones, the free
    // runs (one turn each, side by side) all finish before the last held one (three turns in a row).
    let (held, free) = futures::future::join(
        completion_times(&server, &["one_at_a_time"; 3]),
        completion_times(&server, &["free"; 3]),
    )
    .await;
    assert_one_at_a_time("admission: max_concurrent_steps = 1, 3 runs", &gaps(&held));
    assert!(free.last() < held.last(), "free {free:?}, held {held:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_over_all_runs_take_turns_beyond_max_running_steps() {
    let agents = [slow_agent("a", ""), slow_agent("b", "")].join("\n");
    let server = Server::start_with(Some(&agents), &["--max-running-steps", "1"]);
    let gaps = completion_gaps(&server, &["a", "b", "a"]).await;
    assert_one_at_a_time("admission: --max-running-steps 1, 3 runs", &gaps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_one_model_endpoint_take_turns_beyond_max_model_requests() {
    // Both agents' models are the scripted provider: one endpoint.
    let agents = [slow_agent("a", ""), slow_agent("b", "")].join("\n");
    let server = Server::start_with(Some(&agents), &["--max-model-requests", "1"]);
    let gaps = completion_gaps(&server, &["a", "b"]).await;
    assert_one_at_a_time("admission: --max-model-requests 1, 2 runs", &gaps);
}

/// Runs `serve` with an agents file and flags that it must refuse; returns what it printed.
fn refused(agents_toml: &str, args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("agents.toml");
    std::fs::write(&config, agents_toml).expect("write agents file");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .args(args)
        .output()
        .expect("run askuser");
    assert!(!output.status.success(), "{args:?} was accepted");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn zero_limits_are_refused() {
    let agents = scripted_agent_with("zero", "max_concurrent_steps = 0", &["say = \"x\""]);
    let output = refused(&agents, &[]);
    assert!(
        output.contains("max_concurrent_steps must be at least 1"),
        "{output}"
    );
    let agents = scripted_agent("any", &["say = \"x\""]);
    for flag in [
        "--max-running-steps",
        "--max-model-requests",
        "--max-step-attempts",
    ] {
        let output = refused(&agents, &[flag, "0"]);
        assert!(output.contains("must be at least 1"), "{flag}: {output}");
    }
}
