//! Metrics as an operator sees them: a real Prometheus (Debian's `prometheus`, installed by
//! `ensure_prometheus` in scripts/tools.sh) scrapes `--metrics-listen` every second while a scripted
//! workload runs (runs answered, one answer rejected, one question expired, one run cancelled,
//! one failed, one left waiting), and PromQL through its HTTP API finds the counts the workload made.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use askuser::proto::v1 as pb;
use common::{RunStream, Server, free_port, report_figures, scripted_agent, scripted_agent_with};

/// How long a query may take to show what the workload did: scrapes every second, gauges read
/// from the store every 10 s, and a slow machine.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(90);

const GREETED: usize = 3;

fn agents() -> String {
    [
        scripted_agent(
            "greeter",
            &[
                r#"ask = [{ question = "What is your name?" }]"#,
                r#"say = "Hello, {{answer.1}}!""#,
            ],
        ),
        scripted_agent(
            "picker",
            &[
                r#"ask = [{ question = "Which environment?", options = [{ label = "staging" }, { label = "production" }] }]"#,
                r#"say = "Deploying to {{answer.1}}""#,
            ],
        ),
        scripted_agent_with(
            "expiring",
            r#"question_ttl = "1s""#,
            &[
                r#"ask = [{ question = "Quick?" }]"#,
                r#"say = "expired: {{answer.1}}""#,
            ],
        ),
        scripted_agent("failing", &[r#"fail = "the model is down""#]),
    ]
    .concat()
}

/// A Prometheus server scraping one target every second, killed on drop.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: askuser\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log file");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot run prometheus ({error}): install it with \
                     `source scripts/tools.sh && ensure_prometheus`"
                )
            });
        Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The value of an instant PromQL query that yields one sample; `None` while it yields none.
    async fn query(&self, http: &reqwest::Client, promql: &str) -> Option<f64> {
        let response = http
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", promql)])
            .send()
            .await
            .ok()?;
        let body: serde_json::Value = response.json().await.ok()?;
        assert_eq!(body["status"], "success", "{promql}: {body}");
        let result = body["data"]["result"].as_array()?;
        assert!(result.len() <= 1, "{promql} yields several series: {body}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }

    /// Waits until `promql` yields `expected` (Prometheus has scraped what the workload did);
    /// fails with the last value seen when it does not within [`SETTLE_TIMEOUT`].
    async fn expect(&self, http: &reqwest::Client, promql: &str, expected: f64) -> f64 {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let value = self.query(http, promql).await;
            if value == Some(expected) {
                return expected;
            }
            assert!(
                Instant::now() < deadline,
                "{promql} = {value:?}, expected {expected}; prometheus log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn started(server: &Server, agent_id: &str) -> RunStream {
    RunStream::start(&mut server.agents().await, agent_id).await
}

#[tokio::test]
async fn prometheus_scrapes_the_counts_of_a_workload_on_sqlite() {
    scrape_a_workload("sqlite", &[]).await;
}

// The gauges' counting queries and the suspension read of the time to answer, on PostgreSQL.
#[tokio::test]
async fn prometheus_scrapes_the_counts_of_a_workload_on_postgres() {
    let Some(url) = common::fresh_database().await else {
        return;
    };
    scrape_a_workload("postgres", &["--database-url", &url]).await;
}

/// Runs the workload on a server started with `store_args`, and checks what Prometheus scraped.
async fn scrape_a_workload(store: &str, store_args: &[&str]) {
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let mut args = vec!["--metrics-listen", &metrics_addr];
    args.extend_from_slice(store_args);
    let server = Server::process_with(Some(&agents()), &args);
    let prometheus = Prometheus::start(&metrics_addr);
    let http = reqwest::Client::new();

    // Greeted: asked, answered, completed.
    for index in 0..GREETED {
        let mut run = started(&server, "greeter").await;
        let asked = run.next_suspended().await;
        run.send_text(&asked.tool_call_id, &format!("person {index}"))
            .await;
        assert_eq!(
            run.completed_text().await,
            format!("Hello, person {index}!")
        );
    }
    // An answer that does not fit the question is rejected; the next one completes the run.
    let mut picked = started(&server, "picker").await;
    let asked = picked.next_suspended().await;
    picked
        .send_selections(&asked.tool_call_id, &["nowhere"])
        .await;
    assert_eq!(picked.next_rejected().await.reason, "INVALID_ANSWER");
    picked
        .send_selections(&asked.tool_call_id, &["staging"])
        .await;
    assert_eq!(picked.completed_text().await, "Deploying to staging");
    // A question nobody answers expires; the run goes on without the answer.
    let mut expiring = started(&server, "expiring").await;
    expiring.next_suspended().await;
    assert!(expiring.completed_text().await.starts_with("expired: "));
    // Cancelled while it waits.
    let mut cancelled = started(&server, "picker").await;
    cancelled.next_suspended().await;
    server
        .agents()
        .await
        .cancel_run(pb::CancelRunRequest {
            run_id: cancelled.run_id.clone(),
            reason: "not needed".into(),
        })
        .await
        .expect("cancel");
    // The model fails.
    let mut failing = started(&server, "failing").await;
    loop {
        match failing.next().await.event {
            Some(pb::run_agent_response::Event::RunFailed(_)) => break,
            Some(pb::run_agent_response::Event::RunCompleted(_)) => panic!("completed"),
            _ => {}
        }
    }
    // Left waiting, its stream open, for the gauges.
    let mut waiting = started(&server, "greeter").await;
    waiting.next_suspended().await;

    let p = &prometheus;
    let figures = [
        (
            "greeter_started",
            p.expect(
                &http,
                r#"askuser_runs_started_total{agent="greeter"}"#,
                (GREETED + 1) as f64,
            )
            .await,
        ),
        (
            "picker_started",
            p.expect(&http, r#"askuser_runs_started_total{agent="picker"}"#, 2.0)
                .await,
        ),
        (
            "completed",
            p.expect(
                &http,
                r#"sum(askuser_runs_finished_total{status="completed"})"#,
                (GREETED + 2) as f64,
            )
            .await,
        ),
        (
            "greeter_completed",
            p.expect(
                &http,
                r#"askuser_runs_finished_total{agent="greeter",status="completed"}"#,
                GREETED as f64,
            )
            .await,
        ),
        (
            "cancelled",
            p.expect(
                &http,
                r#"askuser_runs_finished_total{agent="picker",status="cancelled"}"#,
                1.0,
            )
            .await,
        ),
        (
            "failed",
            p.expect(
                &http,
                r#"askuser_runs_finished_total{agent="failing",status="failed"}"#,
                1.0,
            )
            .await,
        ),
        (
            "rejected_invalid_answer",
            p.expect(
                &http,
                r#"askuser_answers_rejected_total{reason="INVALID_ANSWER"}"#,
                1.0,
            )
            .await,
        ),
        (
            "questions_expired",
            p.expect(
                &http,
                r#"askuser_calls_expired_total{kind="question"}"#,
                1.0,
            )
            .await,
        ),
        (
            "answered_questions",
            p.expect(
                &http,
                r#"askuser_time_to_answer_seconds_count{kind="question"}"#,
                (GREETED + 1) as f64,
            )
            .await,
        ),
        (
            "answered_within_60s",
            p.expect(
                &http,
                r#"askuser_time_to_answer_seconds_bucket{kind="question",le="60"}"#,
                (GREETED + 1) as f64,
            )
            .await,
        ),
        (
            "runs_created",
            p.expect(
                &http,
                r#"askuser_store_commit_duration_seconds_count{operation="create_run"}"#,
                8.0,
            )
            .await,
        ),
        (
            "questions_pending",
            p.expect(&http, r#"askuser_calls_pending{kind="question"}"#, 1.0)
                .await,
        ),
        (
            // The question left waiting has waited some time (a 0/1 answer: its age varies).
            "question_waiting_has_an_age",
            p.expect(
                &http,
                r#"askuser_calls_pending_oldest_seconds{kind="question"} > bool 0"#,
                1.0,
            )
            .await,
        ),
        (
            "runs_suspended",
            p.expect(&http, r#"askuser_runs_unfinished{status="suspended"}"#, 1.0)
                .await,
        ),
        (
            "open_streams",
            p.expect(&http, "askuser_open_streams", 1.0).await,
        ),
    ];
    // Two turns (ask, say) of each run that completed, one of the cancelled, the failing and the
    // waiting run each.
    let model_turns = p
        .expect(
            &http,
            r#"askuser_model_request_duration_seconds_count{provider="scripted",model="scripted"}"#,
            (2 * (GREETED + 2) + 3) as f64,
        )
        .await;
    let model_errors = p
        .expect(
            &http,
            r#"askuser_model_request_errors_total{provider="scripted"}"#,
            1.0,
        )
        .await;
    report_figures(
        &format!("metrics scraped by prometheus ({store})"),
        &figures
            .iter()
            .map(|(name, value)| (*name, *value as u64))
            .chain([
                ("model_turns", model_turns as u64),
                ("model_errors", model_errors as u64),
            ])
            .collect::<Vec<_>>(),
    );
    drop(waiting);
}
