//! What the server says to a person watching it: an info line per run start, suspension, settle
//! and end, in the text and the JSON log formats.

use crate::common;

use common::{RunStream, Server};

async fn a_greeting_is_logged(format: &str) -> String {
    let server = Server::process_with(None, &["--log-format", format]);
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "greeter").await;
    let asked = run.next_suspended().await;
    run.send_text(&asked.tool_call_id, "Ada").await;
    assert_eq!(run.completed_text().await, "Hello, Ada!");
    // The log is written as the events are published: wait for the last line.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = server.log();
        if log.contains("completed") || std::time::Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_are_logged_a_line_per_step_in_text() {
    let log = a_greeting_is_logged("text").await;
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("askuser::runs"))
        .collect();
    assert_eq!(lines.len(), 4, "{log}");
    assert!(
        lines[0].contains("run started") && lines[0].contains("agent=greeter"),
        "{log}"
    );
    assert!(
        lines[1].contains("waiting for a person") && lines[1].contains("kind=\"question\""),
        "{log}"
    );
    assert!(
        lines[2].contains("settled") && lines[2].contains("by=anonymous"),
        "{log}"
    );
    assert!(lines[3].contains("completed"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_are_logged_a_line_per_step_in_json() {
    let log = a_greeting_is_logged("json").await;
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["target"] == "askuser::runs")
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["fields"]["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "run started",
            "waiting for a person",
            "settled",
            "completed"
        ],
        "{log}"
    );
    assert_eq!(lines[0]["fields"]["agent"], "greeter", "{log}");
    assert_eq!(lines[2]["fields"]["by"], "anonymous", "{log}");
}
