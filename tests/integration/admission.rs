//! How much works at once is bounded: steps of one agent's runs, steps over all runs, and requests
//! to one model endpoint. Runs beyond a limit wait, running, and go on one after another.
//!
//! No clock decides anything here: the agents' model is a chat completions endpoint of the test's
//! own that holds every request until the test lets it through, and counts how many it holds at
//! once. With room for one, it never holds two; what the limit does not cover (another agent,
//! another endpoint) reaches it meanwhile, which is also what shows the held runs had every chance
//! to send theirs.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use common::{RunStream, Server, scripted_agent, scripted_agent_with};
use tokio::sync::Semaphore;

const KEY_ENV: &str = "ASKUSER_TEST_GATE_KEY";

/// What the gate saw of one model name's requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Seen {
    arrived: usize,
    held: usize,
    most_held: usize,
}

#[derive(Default)]
struct GateState {
    seen: HashMap<String, Seen>,
    /// Requests each model name may still complete.
    passes: HashMap<String, Arc<Semaphore>>,
}

/// A chat completions endpoint that holds each request (by its `model`) until let through.
#[derive(Clone)]
struct Gate {
    state: Arc<Mutex<GateState>>,
    base_url: String,
}

async fn chat_completions(State(state): State<Arc<Mutex<GateState>>>, body: Bytes) -> Response {
    let body: serde_json::Value = serde_json::from_slice(&body).expect("a JSON body");
    let model = body["model"].as_str().expect("a model").to_owned();
    let passes = {
        let mut state = state.lock().expect("gate");
        let seen = state.seen.entry(model.clone()).or_default();
        seen.arrived += 1;
        seen.held += 1;
        seen.most_held = seen.most_held.max(seen.held);
        Arc::clone(
            state
                .passes
                .entry(model.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(0))),
        )
    };
    passes.acquire().await.expect("open").forget();
    state
        .lock()
        .expect("gate")
        .seen
        .get_mut(&model)
        .expect("seen")
        .held -= 1;
    let reply = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"done\"},\"finish_reason\":null}]}\n\n\
                 data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                 data: [DONE]\n\n";
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(reply))
        .expect("response")
}

impl Gate {
    async fn start() -> Gate {
        let state = Arc::new(Mutex::new(GateState::default()));
        let app = axum::Router::new()
            .route(
                "/v1/chat/completions",
                axum::routing::post(chat_completions),
            )
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Gate {
            state,
            base_url: format!("http://{addr}/v1"),
        }
    }

    fn seen(&self, model: &str) -> Seen {
        let state = self.state.lock().expect("gate");
        state.seen.get(model).copied().unwrap_or_default()
    }

    /// Lets `count` more requests for `model` through.
    fn pass(&self, model: &str, count: usize) {
        let mut state = self.state.lock().expect("gate");
        state
            .passes
            .entry(model.into())
            .or_insert_with(|| Arc::new(Semaphore::new(0)))
            .add_permits(count);
    }

    /// Waits (up to a minute) until `done` holds of what it saw of `model`.
    async fn until(&self, model: &str, what: &str, done: impl Fn(Seen) -> bool) -> Seen {
        for _ in 0..3000 {
            let seen = self.seen(model);
            if done(seen) {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{what}: the gate saw {:?} of {model}", self.seen(model));
    }

    /// An agent `id` whose model (named `model`) is this gate.
    fn agent(&self, id: &str, model: &str, settings: &str) -> String {
        format!(
            "[[agent]]\nid = \"{id}\"\ninstructions = \"Say done.\"\n{settings}\n\
             [agent.model]\nprovider = \"openai\"\nmodel = \"{model}\"\n\
             base_url = \"{}\"\napi_key_env = \"{KEY_ENV}\"\n",
            self.base_url
        )
    }
}

fn serve(agents: &[String], args: &[&str]) -> Server {
    Server::process_with_env(Some(&agents.join("\n")), args, &[(KEY_ENV, "sk-gate")])
}

/// Starts `count` runs of `agent` (each once `run_started`); they finish in the background.
async fn start_runs(
    server: &Server,
    agent: &str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<String>> {
    let mut runs = Vec::new();
    for _ in 0..count {
        let mut client = server.agents().await;
        let mut run = RunStream::start(&mut client, agent).await;
        runs.push(tokio::spawn(async move { run.completed_text().await }));
    }
    runs
}

async fn all_done(runs: Vec<tokio::task::JoinHandle<String>>) {
    for run in runs {
        assert_eq!(run.await.expect("the run's task"), "done");
    }
}

/// Lets `count` requests of `model` through one at a time, checking each time that the one that
/// arrived is the only one held.
async fn one_at_a_time(gate: &Gate, model: &str, count: usize) {
    for arrived in 1..=count {
        let seen = gate
            .until(model, "the next request", |seen| seen.arrived >= arrived)
            .await;
        assert_eq!((seen.arrived, seen.held), (arrived, 1), "{model}: {seen:?}");
        gate.pass(model, 1);
    }
    let seen = gate
        .until(model, "every request through", |seen| seen.held == 0)
        .await;
    assert_eq!(
        seen,
        Seen {
            arrived: count,
            held: 0,
            most_held: 1
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_runs_take_turns_beyond_its_max_concurrent_steps() {
    let gate = Gate::start().await;
    let server = serve(
        &[
            gate.agent("one_at_a_time", "held", "max_concurrent_steps = 1"),
            gate.agent("free", "free", ""),
        ],
        &[],
    );
    // The held runs first; then another agent's, which are not held back by it: all three of
    // theirs reach the model while one held request waits, so the other two held runs had time to
    // send theirs had the limit let them.
    let held = start_runs(&server, "one_at_a_time", 3).await;
    let free = start_runs(&server, "free", 3).await;
    gate.until("free", "the free runs' three requests at once", |seen| {
        seen.held == 3
    })
    .await;
    assert_eq!(gate.seen("held").held, 1, "{:?}", gate.seen("held"));
    gate.pass("free", 3);
    all_done(free).await;
    one_at_a_time(&gate, "held", 3).await;
    all_done(held).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_over_all_runs_take_turns_beyond_max_running_steps() {
    let gate = Gate::start().await;
    let server = serve(
        &[gate.agent("a", "held", ""), gate.agent("b", "held", "")],
        &["--max-running-steps", "1"],
    );
    let mut runs = start_runs(&server, "a", 2).await;
    runs.extend(start_runs(&server, "b", 1).await);
    one_at_a_time(&gate, "held", 3).await;
    all_done(runs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_one_model_endpoint_take_turns_beyond_max_model_requests() {
    let gate = Gate::start().await;
    let other = Gate::start().await;
    let server = serve(
        &[
            gate.agent("a", "held", ""),
            gate.agent("b", "held", ""),
            other.agent("elsewhere", "free", ""),
        ],
        &["--max-model-requests", "1"],
    );
    let mut runs = start_runs(&server, "a", 2).await;
    runs.extend(start_runs(&server, "b", 1).await);
    // Another endpoint has room of its own: its request reaches it while one here waits (each
    // endpoint has room for one).
    let elsewhere = start_runs(&server, "elsewhere", 1).await;
    other
        .until("free", "a request elsewhere meanwhile", |seen| {
            seen.held == 1
        })
        .await;
    assert_eq!(gate.seen("held").held, 1, "{:?}", gate.seen("held"));
    other.pass("free", 1);
    all_done(elsewhere).await;
    one_at_a_time(&gate, "held", 3).await;
    all_done(runs).await;
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
