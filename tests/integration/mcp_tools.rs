//! MCP servers as agents' tools, against real MCP servers: ones written with the official Python
//! SDK (`tests/fixtures/mcp/servers.py`, over stdio and Streamable HTTP) and the published
//! `@modelcontextprotocol/server-filesystem` from the npm registry, installed by `scripts/test`
//! (`ensure_mcp_servers` in scripts/tools.sh).

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_response::Event;

use common::{RunStream, Server, decision_answer};

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with the MCP SDK, from `scripts/test`; a clear failure (not a skip) without it.
pub(crate) fn python() -> String {
    let python = root().join(".tools/venv-mcp/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `source scripts/tools.sh && ensure_mcp_servers` (scripts/test does)",
        python.display()
    );
    python.display().to_string()
}

pub(crate) fn fixture() -> String {
    root()
        .join("tests/fixtures/mcp/servers.py")
        .display()
        .to_string()
}

pub(crate) fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A file the fixture servers append each call they get to, one JSON line each.
pub(crate) struct CallLog {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl CallLog {
    pub(crate) fn new() -> CallLog {
        let dir = tempfile::tempdir().expect("temp dir");
        CallLog {
            path: dir.path().join("calls.jsonl"),
            _dir: dir,
        }
    }

    pub(crate) fn calls(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    pub(crate) fn path(&self) -> String {
        self.path.display().to_string()
    }
}

/// An `[[mcp_server]]` running the fixture's tools server over stdio.
pub(crate) fn stdio_server(name: &str, log: &CallLog, settings: &str) -> String {
    format!(
        r#"
[[mcp_server]]
name = "{name}"
command = "{python}"
args = ["{fixture}", "tools"]
env = {{ MCP_CALL_LOG = "{log}" }}
{settings}
"#,
        python = python(),
        fixture = fixture(),
        log = log.path(),
    )
}

/// An agent offered `servers`' tools that makes `calls` (TOML inline tables) in one turn, then
/// says each result.
pub(crate) fn agent(id: &str, servers: &[&str], calls: &[&str]) -> String {
    let says = (1..=calls.len())
        .map(|n| format!("{{{{result.{n}}}}}"))
        .collect::<Vec<_>>()
        .join(" | ");
    format!(
        r#"
[[agent]]
id = "{id}"
tools = []
mcp_servers = [{servers}]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{calls}]
[[agent.model.turns]]
say = "{says}"
"#,
        servers = servers
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", "),
        calls = calls.join(", "),
    )
}

/// The agent as `ListAgents` shows it.
pub(crate) async fn listed(server: &Server, agent_id: &str) -> pb::Agent {
    let mut client = server.agents().await;
    client
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("ListAgents")
        .into_inner()
        .agents
        .into_iter()
        .find(|agent| agent.agent_id == agent_id)
        .expect("the agent is listed")
}

/// Waits until every MCP server of the agent is up; returns the agent as then listed.
pub(crate) async fn wait_up(server: &Server, agent_id: &str) -> pb::Agent {
    for _ in 0..600 {
        let agent = listed(server, agent_id).await;
        if agent.mcp_servers.iter().all(|s| s.up) {
            return agent;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the MCP servers never came up: {:?}",
        listed(server, agent_id).await.mcp_servers
    );
}

/// What one run did: each call's id and result (in call order), approvals asked, and its end.
#[derive(Debug, Default)]
struct Outcome {
    calls: Vec<String>,
    results: Vec<pb::ToolResult>,
    approvals: Vec<pb::ToolCallSuspended>,
    output: String,
}

/// Runs `agent_id`, approving every call that waits for approval; returns what happened.
async fn run_approving(server: &Server, agent_id: &str) -> Outcome {
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, agent_id).await;
    let mut outcome = Outcome::default();
    loop {
        let frame = run.next().await;
        match frame.event {
            Some(Event::ToolCall(call)) => outcome.calls.push(call.tool_call_id),
            Some(Event::ToolCallSuspended(suspended)) => {
                assert_eq!(suspended.kind(), pb::SuspendKind::Approval, "{suspended:?}");
                run.send(decision_answer(
                    &run.run_id,
                    &suspended.tool_call_id,
                    pb::approval_decision::Decision::Approve(pb::approval_decision::Approve {}),
                ))
                .await;
                outcome.approvals.push(suspended);
            }
            Some(Event::ToolResult(result)) => outcome.results.push(result),
            Some(Event::RunCompleted(done)) => {
                outcome.output = done.output_text;
                // Results in the order the calls were made.
                let order = outcome.calls.clone();
                outcome.results.sort_by_key(|r| {
                    order
                        .iter()
                        .position(|id| *id == r.tool_call_id)
                        .unwrap_or(usize::MAX)
                });
                return outcome;
            }
            Some(Event::RunFailed(failed)) => panic!("run failed: {}", failed.message),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_call_waits_for_approval_by_default_then_runs_once_with_its_idempotency_key() {
    let log = CallLog::new();
    let toml = stdio_server("team", &log, "")
        + &agent(
            "ops",
            &["team"],
            &[
                r#"{ tool = "team__deploy", arguments = { service = "api", environment = "production" } }"#,
            ],
        );
    let server = Server::start_with(Some(&toml), &[]);
    let agent = wait_up(&server, "ops").await;
    let deploy = agent
        .agent_tools
        .iter()
        .find(|t| t.name == "team__deploy")
        .expect("team__deploy is listed");
    assert_eq!(deploy.kind(), pb::ToolKind::Mcp);
    assert_eq!(deploy.approval(), pb::ApprovalPolicy::Always);
    assert!(deploy.parameters_json_schema.contains("environment"));
    assert_eq!(agent.mcp_servers[0].name, "team");
    assert_eq!(
        agent.mcp_servers[0].tool_count,
        agent.agent_tools.len() as u32
    );

    let outcome = run_approving(&server, "ops").await;
    assert_eq!(outcome.approvals.len(), 1, "the call waited for approval");
    assert_eq!(outcome.approvals[0].tool_name, "team__deploy");
    assert_eq!(outcome.output, "deployed api to production");
    assert!(!outcome.results[0].is_error);
    let calls = log.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["tool"], "deploy");
    let key = calls[0]["key"]
        .as_str()
        .expect("an idempotency key in _meta");
    assert!(key.ends_with(&format!("/{}", outcome.calls[0])), "{key}");
}

#[tokio::test]
async fn approval_never_a_condition_and_annotations_only_when_trusted() {
    let log = CallLog::new();
    let trusted = stdio_server(
        "team",
        &log,
        r#"approval = 'args.environment == "production"'
tool_approval = { fail = "never" }
trust_annotations = true"#,
    );
    let untrusted = stdio_server("raw", &log, "");
    let toml = trusted
        + &untrusted
        + &agent(
            "ops",
            &["team", "raw"],
            &[
                r#"{ tool = "team__add", arguments = { a = 2, b = 3 } }"#,
                r#"{ tool = "team__deploy", arguments = { service = "api", environment = "staging" } }"#,
                r#"{ tool = "team__deploy", arguments = { service = "api", environment = "production" } }"#,
                r#"{ tool = "team__fail", arguments = { message = "no" } }"#,
                r#"{ tool = "raw__add", arguments = { a = 1, b = 1 } }"#,
            ],
        );
    let server = Server::start_with(Some(&toml), &[]);
    let agent = wait_up(&server, "ops").await;
    let policy = |name: &str| {
        agent
            .agent_tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
            .approval()
    };
    assert_eq!(policy("team__add"), pb::ApprovalPolicy::Never);
    assert_eq!(policy("team__deploy"), pb::ApprovalPolicy::Conditional);
    assert_eq!(policy("team__fail"), pb::ApprovalPolicy::Never);
    assert_eq!(policy("raw__add"), pb::ApprovalPolicy::Always);

    let outcome = run_approving(&server, "ops").await;
    let waited: Vec<(&str, &str)> = outcome
        .approvals
        .iter()
        .map(|a| (a.tool_name.as_str(), a.arguments_json.as_str()))
        .collect();
    assert_eq!(
        waited,
        [
            (
                "team__deploy",
                r#"{"environment":"production","service":"api"}"#
            ),
            ("raw__add", r#"{"a":1,"b":1}"#)
        ]
    );
    let results: Vec<(&str, bool)> = outcome
        .results
        .iter()
        .map(|r| (r.content.as_str(), r.is_error))
        .collect();
    assert_eq!(json(results[0].0), serde_json::json!({ "sum": 5 }));
    assert!(!results[0].1);
    assert_eq!(results[1], ("deployed api to staging", false));
    assert_eq!(results[2], ("deployed api to production", false));
    assert!(results[3].1, "isError is an error result: {results:?}");
    assert!(results[3].0.contains("no"), "{results:?}");
    assert_eq!(json(results[4].0), serde_json::json!({ "sum": 2 }));
    assert_eq!(log.calls().len(), 5);
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anything_is_sent_and_big_results_are_cut() {
    let log = CallLog::new();
    let toml = stdio_server("team", &log, r#"approval = "never""#)
        + &agent(
            "ops",
            &["team"],
            &[
                r#"{ tool = "team__add", arguments = { a = "two", b = 3 } }"#,
                r#"{ tool = "team__big", arguments = { size = 100000 } }"#,
            ],
        );
    let server = Server::start_with(Some(&toml), &["--max-tool-output-bytes", "1000"]);
    wait_up(&server, "ops").await;
    let outcome = run_approving(&server, "ops").await;
    assert!(outcome.results[0].is_error);
    assert!(
        outcome.results[0]
            .content
            .starts_with("Invalid arguments for team__add"),
        "{:?}",
        outcome.results[0]
    );
    let big = &outcome.results[1];
    assert!(!big.is_error);
    assert!(
        big.content.ends_with("[the result was cut at 1000 bytes]"),
        "{}",
        &big.content[big.content.len().saturating_sub(80)..]
    );
    assert!(big.content.len() < 1100);
    let tools: Vec<String> = log
        .calls()
        .iter()
        .map(|c| c["tool"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tools, ["big"], "the invalid call was never sent");
}

#[tokio::test]
async fn a_server_that_does_not_answer_in_time_is_a_failed_call_not_a_stuck_run() {
    let log = CallLog::new();
    let toml = stdio_server("team", &log, "approval = \"never\"\ntimeout = \"1s\"")
        + &agent(
            "ops",
            &["team"],
            &[r#"{ tool = "team__slow", arguments = { seconds = 30 } }"#],
        );
    let server = Server::start_with(Some(&toml), &[]);
    wait_up(&server, "ops").await;
    let outcome = run_approving(&server, "ops").await;
    assert!(outcome.results[0].is_error);
    assert!(
        outcome.results[0]
            .content
            .contains("did not answer within 1s"),
        "{:?}",
        outcome.results[0]
    );
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    let log = CallLog::new();
    let toml = stdio_server("team", &log, r#"approval = "never""#)
        + &agent("ops", &["team"], &[r#"{ tool = "team__grow" }"#]);
    let server = Server::start_with(Some(&toml), &[]);
    let before = wait_up(&server, "ops").await;
    assert!(!before.tools.iter().any(|t| t == "team__late"));
    let outcome = run_approving(&server, "ops").await;
    assert_eq!(outcome.output, "grown");
    for _ in 0..200 {
        if listed(&server, "ops")
            .await
            .tools
            .iter()
            .any(|t| t == "team__late")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("team__late was never listed after notifications/tools/list_changed");
}

/// A free port on 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// The fixture's tools server on Streamable HTTP, stopped when dropped.
pub(crate) struct HttpServer(std::process::Child);

impl HttpServer {
    pub(crate) fn start(port: u16, log: &CallLog) -> HttpServer {
        HttpServer(
            std::process::Command::new(python())
                .args([fixture().as_str(), "tools", "--http", &port.to_string()])
                .env("MCP_CALL_LOG", log.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start the HTTP MCP server"),
        )
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `askuser_mcp_server_up{server="remote"}` as the metrics endpoint shows it.
async fn server_up_metric(addr: &str) -> String {
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("body");
    text.lines()
        .find_map(|line| line.strip_prefix("askuser_mcp_server_up{server=\"remote\"} "))
        .unwrap_or_else(|| panic!("no askuser_mcp_server_up for remote in:\n{text}"))
        .to_owned()
}

const SECRET_ENV: &str = "ASKUSER_TEST_MCP_TOKEN";
const SECRET: &str = "Bearer mcp-secret-4471";

#[tokio::test]
async fn a_server_down_at_start_is_shown_down_then_its_tools_come_when_it_is_up_and_no_secret_is_shown()
 {
    let log = CallLog::new();
    let port = free_port();
    let toml = format!(
        r#"
[[mcp_server]]
name = "remote"
url = "http://user:pw-9313@127.0.0.1:{port}/mcp"
headers_env = {{ Authorization = "{SECRET_ENV}" }}
timeout = "5s"
approval = "never"
"#
    ) + &agent(
        "ops",
        &["remote"],
        &[r#"{ tool = "remote__add", arguments = { a = 20, b = 22 } }"#],
    );
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let server = Server::process_with_env(
        Some(&toml),
        &["--metrics-listen", &metrics_addr],
        &[(SECRET_ENV, SECRET)],
    );
    let down = listed(&server, "ops").await;
    assert!(!down.mcp_servers[0].up);
    assert!(down.agent_tools.is_empty(), "no tools while it is down");
    // Wait for a failed attempt to be logged.
    for _ in 0..200 {
        if server.log().contains("MCP server down") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let down = listed(&server, "ops").await;
    assert!(!down.mcp_servers[0].error.is_empty());
    assert_eq!(server_up_metric(&metrics_addr).await, "0");

    let _http = HttpServer::start(port, &log);
    let up = wait_up(&server, "ops").await;
    assert!(
        up.tools.iter().any(|t| t == "remote__add"),
        "{:?}",
        up.tools
    );
    assert_eq!(server_up_metric(&metrics_addr).await, "1");
    let outcome = run_approving(&server, "ops").await;
    assert_eq!(json(&outcome.output), serde_json::json!({ "sum": 42 }));

    let messages = format!("{down:?} {up:?} {}", server.log());
    for secret in [SECRET, "mcp-secret-4471", "pw-9313"] {
        assert!(
            !messages.contains(secret),
            "a secret ({secret}) is shown in a message or log line"
        );
    }
    assert!(server.log().contains("MCP server down"));
}

#[tokio::test]
async fn the_published_filesystem_server_reads_a_file_over_stdio() {
    let files = tempfile::tempdir().expect("temp dir");
    std::fs::write(files.path().join("notes.txt"), "ship on friday").expect("write");
    let entry =
        root().join(".tools/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        entry.exists(),
        "{} is missing: run `source scripts/tools.sh && ensure_mcp_servers` (scripts/test does)",
        entry.display()
    );
    let path = files.path().canonicalize().expect("path");
    let toml = format!(
        r#"
[[mcp_server]]
name = "files"
command = "node"
args = ["{entry}", "{dir}"]
tool_approval = {{ read_text_file = "never" }}

[[agent]]
id = "reader"
tools = ["files__read_text_file"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{{ tool = "files__read_text_file", arguments = {{ path = "{file}" }} }}]
[[agent.model.turns]]
say = "{{{{result.1}}}}"
"#,
        entry = entry.display(),
        dir = path.display(),
        file = path.join("notes.txt").display(),
    );
    let server = Server::start_with(Some(&toml), &[]);
    let agent = wait_up(&server, "reader").await;
    assert_eq!(
        agent.tools,
        ["files__read_text_file"],
        "only the tool the agent lists is offered"
    );
    let outcome = run_approving(&server, "reader").await;
    assert!(outcome.approvals.is_empty());
    assert!(
        outcome.output.contains("ship on friday"),
        "{:?}",
        outcome.output
    );
}

/// Peak resident memory of a process, in KiB (Linux).
pub(crate) fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[tokio::test]
async fn a_hostile_server_cannot_grow_the_servers_memory_without_bound() {
    let log = CallLog::new();
    let fixture_server = |name: &str, kind: &str, timeout: &str| {
        format!(
            r#"
[[mcp_server]]
name = "{name}"
command = "{python}"
args = ["{fixture}", "{kind}"]
env = {{ MCP_CALL_LOG = "{log}" }}
approval = "never"
timeout = "{timeout}"
"#,
            python = python(),
            fixture = fixture(),
            log = log.path(),
        )
    };
    // The flood's reply is past what one message may be: dropped unread, so the call gets no
    // answer and fails at its timeout.
    let toml = fixture_server("hostile", "hostile", "20s")
        + &fixture_server("flood", "flood", "3s")
        + &agent(
            "victim",
            &["hostile", "flood"],
            &[r#"{ tool = "flood__flood" }"#],
        );
    let server = Server::process_with(Some(&toml), &[]);
    let agent = wait_up(&server, "victim").await;
    let hostile: Vec<&pb::AgentTool> = agent
        .agent_tools
        .iter()
        .filter(|t| t.name.starts_with("hostile__"))
        .collect();
    assert!(
        !hostile.is_empty() && hostile.len() <= 256,
        "{} of the 1,000 tools are offered",
        hostile.len()
    );
    let listing: usize = hostile
        .iter()
        .map(|t| t.description.len() + t.parameters_json_schema.len())
        .sum();
    assert!(listing <= 1024 * 1024, "the listing is {listing} bytes");
    assert!(
        hostile.iter().all(|t| t.description.len() <= 4096),
        "descriptions are cut"
    );
    assert!(
        !agent.tools.iter().any(|t| t.ends_with("__huge_schema")),
        "a 1 MB schema is left out"
    );
    let outcome = run_approving(&server, "victim").await;
    assert!(outcome.results[0].is_error, "{:?}", outcome.results[0]);
    assert!(outcome.results[0].content.len() < 4096);
    let peak = peak_rss_kib(server.pid().expect("a process"));
    assert!(
        peak < 200 * 1024,
        "askuser's peak RSS was {} MiB with a hostile MCP server",
        peak / 1024
    );
}

/// SIGKILL while a call is in flight: after the restart the call is made again with the same
/// idempotency key (its server restarted too), and the run completes once.
#[tokio::test]
async fn a_call_cut_by_a_crash_is_made_again_and_the_run_completes_once() {
    let log = CallLog::new();
    let toml = stdio_server("team", &log, r#"approval = "never""#)
        + &agent(
            "ops",
            &["team"],
            &[r#"{ tool = "team__slow", arguments = { seconds = 2 } }"#],
        );
    let mut server = Server::process_with(Some(&toml), &["--lease-ttl", "1s"]);
    wait_up(&server, "ops").await;
    let mut client = server.agents().await;
    let run = RunStream::start(&mut client, "ops").await;
    let run_id = run.run_id.clone();
    for _ in 0..400 {
        if !log.calls().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(log.calls().len(), 1, "the call reached the MCP server");
    server.kill();
    drop(run);
    server.restart();
    let mut client = server.agents().await;
    let events = common::watch_until_end(&mut client, &run_id, 0).await;
    let calls = log.calls();
    assert_eq!(calls.len(), 2, "made again after the restart: {calls:?}");
    assert_eq!(calls[0]["key"], calls[1]["key"]);
    let key = calls[0]["key"].as_str().expect("a key");
    assert!(key.starts_with(&format!("{run_id}/")), "{key}");
    let call_id = key.rsplit('/').next().expect("call id");
    let results = common::tool_results(&events, call_id);
    assert_eq!(results.len(), 1, "one result, committed once");
    assert_eq!(results[0].content, "slept 2.0");
    assert_eq!(common::completions(&events), ["slept 2.0"]);
}

/// A stdio server's stderr is logged under its name, and the server is stopped with askuser.
#[tokio::test]
async fn a_stdio_servers_stderr_is_logged_under_its_name_and_it_stops_with_askuser() {
    let log = CallLog::new();
    let pid_file = tempfile::NamedTempFile::new().expect("temp file");
    let pid_path = pid_file.path().display().to_string();
    let toml = stdio_server("team", &log, "").replace(
        "env = { MCP_CALL_LOG",
        &format!("env = {{ MCP_PID_FILE = \"{pid_path}\", MCP_CALL_LOG"),
    ) + &agent(
        "ops",
        &["team"],
        &[r#"{ tool = "team__add", arguments = { a = 1, b = 2 } }"#],
    );
    let mut server = Server::process_with(Some(&toml), &[]);
    wait_up(&server, "ops").await;
    let pid: u32 = std::fs::read_to_string(&pid_path)
        .expect("the fixture wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let logged = server.log();
    let line = logged
        .lines()
        .find(|line| line.contains("fixture tools server starting"))
        .unwrap_or_else(|| panic!("the server's stderr is not in the log:\n{logged}"));
    assert!(line.contains("team"), "{line}");
    assert!(server.terminate(), "askuser exits cleanly");
    for _ in 0..100 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        // Gone, or a zombie whose parent is gone too.
        if status.is_empty() || status.contains("State:\tZ") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the MCP server process {pid} outlived askuser");
}
