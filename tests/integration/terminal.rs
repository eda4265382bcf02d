//! The terminal client (`askuser start | pending | answer | runs | watch | cancel`) against the real
//! server with API keys: its flag paths and `--json` output as scripts use them, and its prompts
//! driven in a pseudo-terminal as a person uses them.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::credentials::{create_key, sqlite_store};
use common::{Server, report_figures};
use expectrl::Expect;
use expectrl::session::{OsProcess, OsStream, Session};
use expectrl::stream::log::LogStream;
use serde_json::Value;

/// `pick`, `checks` and `name` ask one question each (single select, multi select, free text);
/// `gate` calls the client tool `deploy`, which always waits for approval first; `form` asks a
/// form of a text, a number, a yes/no and a choice field with "Other".
const AGENTS: &str = r#"
[[agent]]
id = "form"
tools = ["ask_user_form", "ask_user_questions"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{ tool = "ask_user_form", arguments_json = '{"message": "Release details", "requestedSchema": {"type": "object", "required": ["version", "replicas", "announce"], "properties": {"version": {"type": "string", "pattern": "\\d+\\.\\d+"}, "replicas": {"type": "integer", "minimum": 1}, "announce": {"type": "boolean"}}}}' }]
[[agent.model.turns]]
call = [{ tool = "ask_user_questions", arguments = { questions = [{ question = "Which zone?", header = "Zone", multiSelect = false, options = [{ label = "eu", description = "Europe" }, { label = "us", description = "America" }] }] } }]
[[agent.model.turns]]
say = "Release {{result.1.content.version}} x{{result.1.content.replicas}} announce={{result.1.content.announce}} in {{result.2.answers.Which zone?}}"

[[tool]]
name = "deploy"
kind = "client"
description = "Deploy a service"
parameters = { type = "object", properties = { service = { type = "string" }, environment = { enum = ["staging", "production"] } }, required = ["service", "environment"], additionalProperties = false }
approval = "always"

[[agent]]
id = "pick"
[agent.model]
provider = "scripted"
[[agent.model.turns]]
ask = [{ question = "Which environment?", options = [{ label = "staging", description = "safe" }, { label = "production", description = "careful" }] }]
[[agent.model.turns]]
say = "Deploying to {{answer.1}}"

[[agent]]
id = "checks"
[agent.model]
provider = "scripted"
[[agent.model.turns]]
ask = [{ question = "Which checks?", options = [{ label = "lint" }, { label = "unit" }, { label = "e2e" }], selection_mode = "multi_select" }]
[[agent.model.turns]]
say = "Checks [{{answer.1}}]"

[[agent]]
id = "name"
[agent.model]
provider = "scripted"
[[agent.model.turns]]
ask = [{ question = "What is your name?" }]
[[agent.model.turns]]
say = "Hello, {{answer.1}}!"

[[agent]]
id = "brief"
instructions = "Asks one question that expires soon.\nA second line."
question_ttl = "4s"
[agent.model]
provider = "scripted"
[[agent.model.turns]]
ask = [{ question = "Quick, which colour?", options = [{ label = "red" }, { label = "blue" }] }]
[[agent.model.turns]]
say = "Colour: {{answer.1}}"

[[agent]]
id = "gate"
tools = ["deploy"]
[agent.model]
provider = "scripted"
[[agent.model.turns]]
call = [{ tool = "deploy", arguments = { service = "api", environment = "production" } }]
[[agent.model.turns]]
say = "deploy said: {{result.1}}"
"#;

/// A server with API keys on, and a key that may do everything the client does.
struct Setup {
    server: Server,
    key: String,
}

impl Setup {
    fn new() -> Setup {
        let server = Server::start_with(Some(AGENTS), &["--auth", "keys"]);
        let key = create_key(
            &sqlite_store(&server),
            "acme",
            "alice",
            "runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read",
        );
        Setup { server, key }
    }

    /// `askuser ARGS` as the key's holder, its stdin not a terminal.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_askuser"));
        command
            .args(args)
            .env("ASKUSER_ADDR", &self.server.addr)
            .env("ASKUSER_API_KEY", &self.key)
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run askuser")
    }

    /// Runs `askuser ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "askuser {args:?}: {}\nserver log:\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.server.log()
        );
        String::from_utf8(output.stdout).expect("utf-8")
    }

    /// Runs `askuser ARGS --json`, which must succeed; one JSON object per line.
    fn json(&self, args: &[&str]) -> Vec<Value> {
        let mut args = args.to_vec();
        args.push("--json");
        json_lines(&self.ok(&args))
    }

    /// Starts a run without a terminal: the stream ends when the run first waits. Its run id and
    /// the id of the call it waits on.
    fn start_waiting(&self, agent: &str) -> (String, String) {
        let frames = self.json(&["start", agent, "go"]);
        let suspended = frames
            .iter()
            .find_map(|frame| frame.get("toolCallSuspended"))
            .unwrap_or_else(|| panic!("no suspension in {frames:?}"));
        (text(&frames[0]["runId"]), text(&suspended["toolCallId"]))
    }

    /// The calls the pending-calls snapshot lists, as (run id, call id, kind).
    fn pending(&self, extra: &[&str]) -> Vec<(String, String, String)> {
        let mut args = vec!["pending"];
        args.extend_from_slice(extra);
        self.json(&args)
            .iter()
            .map(|event| {
                let pending = &event["callPending"];
                (
                    text(&pending["runId"]),
                    text(&pending["call"]["toolCallId"]),
                    text(&pending["call"]["kind"]),
                )
            })
            .collect()
    }

    /// The status of a run, from `askuser runs --json`.
    fn status(&self, run_id: &str) -> String {
        self.json(&["runs"])
            .iter()
            .find(|run| run["runId"] == run_id)
            .map(|run| text(&run["status"]))
            .unwrap_or_else(|| panic!("run {run_id} is not listed"))
    }

    /// `askuser ARGS` in a 120×40 pseudo-terminal, through `sh` so that its exit status shows as
    /// `EXIT=<status>` at the end.
    fn terminal(&self, args: &[&str]) -> Terminal {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            // The size set before the program starts, so that its first look at it sees it.
            .arg(r#"stty cols 120 rows 40; "$0" "$@"; echo "EXIT=$?""#)
            .arg(env!("CARGO_BIN_EXE_askuser"))
            .args(args)
            .env("ASKUSER_ADDR", &self.server.addr)
            .env("ASKUSER_API_KEY", &self.key)
            .env("TERM", "xterm-256color")
            // Approvals' edits are asked inline, not in an editor.
            .env_remove("VISUAL")
            .env_remove("EDITOR");
        let log = tempfile::NamedTempFile::new().expect("terminal log");
        let session = Session::spawn(command).expect("spawn in a pseudo-terminal");
        let mut session = expectrl::session::log(session, log.reopen().expect("terminal log"))
            .expect("log the terminal");
        // A guard against a hang, not a measurement.
        session.set_expect_timeout(Some(Duration::from_secs(60)));
        Terminal { session, log }
    }
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
        .to_owned()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A program in a pseudo-terminal, with a log of what went through it for failure messages.
struct Terminal {
    session: Session<OsProcess, LogStream<OsStream, std::fs::File>>,
    log: tempfile::NamedTempFile,
}

impl Terminal {
    /// Waits for `needle` in the terminal's output.
    fn expect(&mut self, needle: &str) {
        if let Err(error) = self.session.expect(needle) {
            let log = std::fs::read(self.log.path()).unwrap_or_default();
            panic!(
                "waiting for {needle:?} in the terminal: {error}; its traffic:\n{}",
                String::from_utf8_lossy(&log)
            );
        }
    }

    /// Types keys.
    fn send(&mut self, keys: &str) {
        self.session.send(keys).expect("send keys");
    }
}

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const CTRL_C: &str = "\x03";
const ESC: &str = "\x1b";
const CTRL_A: &str = "\x01";
const CTRL_E: &str = "\x05";
const CTRL_K: &str = "\x0b";
const CTRL_U: &str = "\x15";
const CTRL_W: &str = "\x17";
const LEFT: &str = "\x1b[D";
const CTRL_LEFT: &str = "\x1b[1;5D";
const ALT_F: &str = "\x1bf";
const HOME: &str = "\x1b[H";
const DELETE: &str = "\x1b[3~";

#[test]
fn start_without_a_terminal_prints_the_json_mapping_and_names_the_call_to_answer() {
    let setup = Setup::new();
    let output = setup.run(&["start", "pick", "go", "--json"]);
    assert!(output.status.success(), "{}", stderr_of(&output));
    let frames = json_lines(&String::from_utf8_lossy(&output.stdout));
    // The proto3 JSON mapping: lowerCamelCase names, 64-bit integers as strings, enums by name,
    // timestamps in RFC 3339.
    let first = &frames[0];
    assert_eq!(first["sequence"], "1");
    assert_eq!(first["runStarted"]["agentId"], "pick");
    assert!(
        text(&first["time"]).ends_with('Z'),
        "an RFC 3339 time: {first}"
    );
    let suspended = &frames.last().expect("frames")["toolCallSuspended"];
    assert_eq!(suspended["kind"], "SUSPEND_KIND_QUESTION");
    assert_eq!(
        suspended["suspendPayload"]["selectionMode"],
        "SELECTION_MODE_SINGLE_SELECT"
    );
    assert_eq!(
        suspended["suspendPayload"]["options"][0],
        serde_json::json!({"label": "staging", "description": "safe"})
    );
    let run_id = text(&first["runId"]);
    let call_id = text(&suspended["toolCallId"]);
    assert!(
        stderr_of(&output).contains(&format!("askuser answer {run_id} {call_id}")),
        "{}",
        stderr_of(&output)
    );
    report_figures("terminal start --json", &[("frames", frames.len() as u64)]);
}

#[test]
fn answer_flags_settle_each_kind_and_a_bad_answer_is_one_error_line() {
    let setup = Setup::new();

    // A label the question does not offer: one line naming the flag and the offered labels, exit
    // status 1, and the question still waits.
    let (run_id, call_id) = setup.start_waiting("pick");
    let refused = setup.run(&["answer", &run_id, &call_id, "--select", "moon"]);
    assert_eq!(refused.status.code(), Some(1));
    let line = stderr_of(&refused);
    assert_eq!(line.lines().count(), 1, "{line}");
    for part in ["--select moon", "staging, production"] {
        assert!(line.contains(part), "{part} missing from {line}");
    }
    assert!(
        setup.pending(&[]).contains(&(
            run_id.clone(),
            call_id.clone(),
            "SUSPEND_KIND_QUESTION".into()
        )),
        "the question no longer waits"
    );
    let answered = setup.ok(&["answer", &run_id, &call_id, "--select", "production"]);
    assert!(answered.contains("Deploying to production"), "{answered}");
    assert_eq!(setup.status(&run_id), "RUN_STATUS_COMPLETED");

    let (run_id, call_id) = setup.start_waiting("checks");
    let answered = setup.ok(&[
        "answer", &run_id, &call_id, "--select", "lint", "--select", "e2e",
    ]);
    assert!(answered.contains("Checks [lint, e2e]"), "{answered}");

    let (run_id, call_id) = setup.start_waiting("checks");
    let answered = setup.ok(&["answer", &run_id, &call_id, "--none"]);
    assert!(answered.contains("Checks []"), "{answered}");

    let (run_id, call_id) = setup.start_waiting("name");
    let answered = setup.ok(&["answer", &run_id, &call_id, "--text", "Ada"]);
    assert!(answered.contains("Hello, Ada!"), "{answered}");

    let (run_id, call_id) = setup.start_waiting("name");
    let frames = setup.json(&["answer", &run_id, &call_id, "--decline", "rather not"]);
    let result = frames
        .iter()
        .find_map(|frame| frame.get("toolResult"))
        .expect("a tool result");
    assert_eq!(result["kind"], "TOOL_RESULT_KIND_DECLINED");
    assert_eq!(result["settledBy"]["subject"], "key:alice");

    // Approvals: a rejection; an edit the schema refuses, then one it takes, then the tool's output.
    let (run_id, call_id) = setup.start_waiting("gate");
    let answered = setup.ok(&["answer", &run_id, &call_id, "--reject", "not today"]);
    assert!(answered.contains("not today"), "{answered}");
    assert_eq!(setup.status(&run_id), "RUN_STATUS_COMPLETED");

    let (run_id, call_id) = setup.start_waiting("gate");
    let refused = setup.run(&[
        "answer",
        &run_id,
        &call_id,
        "--edit",
        r#"{"service":"api","environment":"moon"}"#,
    ]);
    assert_eq!(refused.status.code(), Some(1));
    // The server's refusal in the command line's words: the flag, and its reason said once.
    let line = stderr_of(&refused);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("askuser: INVALID_ARGUMENT: --edit: "),
        "{line}"
    );
    assert!(!line.contains("answer.approval"), "{line}");
    assert_eq!(line.matches("is not one of").count(), 1, "{line}");
    let edited = setup.json(&[
        "answer",
        &run_id,
        &call_id,
        "--edit",
        r#"{"service":"api","environment":"staging"}"#,
    ]);
    let to_run = edited
        .iter()
        .find_map(|frame| frame.get("toolCallSuspended"))
        .expect("the approved call waits for its output");
    assert_eq!(to_run["kind"], "SUSPEND_KIND_CLIENT_TOOL");
    assert_eq!(
        serde_json::from_str::<Value>(&text(&to_run["argumentsJson"])).expect("JSON"),
        serde_json::json!({"service": "api", "environment": "staging"})
    );
    let finished = setup.ok(&["answer", &run_id, &call_id, "--output", "deployed v7"]);
    assert!(
        finished.contains("deploy said: User edited the arguments to"),
        "{finished}"
    );
    assert!(finished.contains("Result: deployed v7"), "{finished}");

    let (run_id, call_id) = setup.start_waiting("gate");
    setup.ok(&["answer", &run_id, &call_id, "--approve"]);
    assert_eq!(
        setup.pending(&["--kind", "client-tool"]),
        vec![(
            run_id.clone(),
            call_id.clone(),
            "SUSPEND_KIND_CLIENT_TOOL".into()
        )]
    );
    let failed = setup.ok(&[
        "answer", &run_id, &call_id, "--output", "no disk", "--error",
    ]);
    assert!(failed.contains("deploy said: no disk"), "{failed}");
}

#[test]
fn pending_runs_watch_and_cancel() {
    let setup = Setup::new();
    let (question_run, question) = setup.start_waiting("pick");
    let (approval_run, approval) = setup.start_waiting("gate");

    let mut everything = setup.pending(&[]);
    everything.sort();
    let mut expected = vec![
        (
            question_run.clone(),
            question.clone(),
            "SUSPEND_KIND_QUESTION".to_owned(),
        ),
        (
            approval_run.clone(),
            approval.clone(),
            "SUSPEND_KIND_APPROVAL".to_owned(),
        ),
    ];
    expected.sort();
    assert_eq!(everything, expected);
    assert_eq!(
        setup.pending(&["--kind", "approval"]),
        vec![(
            approval_run.clone(),
            approval.clone(),
            "SUSPEND_KIND_APPROVAL".into()
        )]
    );
    assert_eq!(
        setup.pending(&["--agent", "pick"]),
        vec![(
            question_run.clone(),
            question.clone(),
            "SUSPEND_KIND_QUESTION".into()
        )]
    );
    let human = setup.ok(&["pending", "--kind", "question"]);
    assert!(
        human.contains("Which environment? [staging | production]"),
        "{human}"
    );

    let cancelled = setup.json(&["cancel", &approval_run, "--reason", "changed my mind"]);
    assert_eq!(cancelled[0]["status"], "RUN_STATUS_CANCELLED");
    let listed: Vec<String> = setup
        .json(&["runs", "--status", "cancelled"])
        .iter()
        .map(|run| text(&run["runId"]))
        .collect();
    assert_eq!(listed, vec![approval_run.clone()]);
    let suspended: Vec<String> = setup
        .json(&["runs", "--status", "suspended"])
        .iter()
        .map(|run| text(&run["runId"]))
        .collect();
    assert_eq!(suspended, vec![question_run.clone()]);

    // `watch` replays a finished run from its start and ends with it.
    let watched = setup.ok(&["watch", &approval_run]);
    assert!(
        watched.contains("run cancelled: changed my mind"),
        "{watched}"
    );
    setup.ok(&["answer", &question_run, &question, "--text", "staging"]);
    let frames = setup.json(&["watch", &question_run]);
    let sequences: Vec<u64> = frames
        .iter()
        .map(|frame| text(&frame["sequence"]).parse().expect("a number"))
        .collect();
    assert_eq!(sequences.first(), Some(&1));
    assert!(
        sequences.windows(2).all(|pair| pair[0] < pair[1]),
        "{sequences:?}"
    );
    assert_eq!(
        frames.last().expect("frames")["runCompleted"]["outputText"],
        "Deploying to staging"
    );
    let after = setup.json(&["watch", &question_run, "--after", "2"]);
    assert_eq!(after.len(), frames.len() - 2);
    report_figures(
        "terminal watch",
        &[
            ("frames", frames.len() as u64),
            ("after_2", after.len() as u64),
        ],
    );
}

#[test]
fn errors_are_one_line_with_a_failing_status() {
    let setup = Setup::new();
    let mut no_key = setup.command(&["runs"]);
    no_key.env_remove("ASKUSER_API_KEY");
    let output = no_key.output().expect("run askuser");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output).starts_with("askuser: UNAUTHENTICATED"),
        "{}",
        stderr_of(&output)
    );

    let output = setup.run(&["watch", "no-such-run"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output).contains("NOT_FOUND"),
        "{}",
        stderr_of(&output)
    );

    // Without answer flags and without a terminal nothing can be asked.
    let output = setup.run(&["answer", "some-run", "some-call"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output).contains("--text"),
        "{}",
        stderr_of(&output)
    );

    let output = setup.run(&["runs", "--addr", "127.0.0.1:1", "--timeout", "5s"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output).starts_with("askuser: cannot connect to 127.0.0.1:1"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn start_in_a_terminal_asks_a_single_select_with_the_arrow_keys() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "pick", "go"]);
    terminal.expect("Which environment?");
    terminal.expect("careful");
    terminal.expect("esc to decline");
    terminal.send(DOWN);
    terminal.send(ENTER);
    terminal.expect("Deploying to production");
    terminal.expect("EXIT=0");
}

#[test]
fn start_in_a_terminal_asks_a_multi_select_with_the_space_bar() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "checks", "go"]);
    terminal.expect("space to toggle");
    terminal.send(" ");
    terminal.send(DOWN);
    terminal.send(DOWN);
    terminal.send(" ");
    terminal.send(ENTER);
    terminal.expect("Checks [lint, e2e]");
    terminal.expect("EXIT=0");
}

#[test]
fn start_in_a_terminal_asks_for_text() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "name", "go"]);
    terminal.expect("What is your name?");
    terminal.expect("esc to decline");
    terminal.send("Ada");
    terminal.send(ENTER);
    terminal.expect("Hello, Ada!");
    terminal.expect("EXIT=0");
}

#[test]
fn start_in_a_terminal_asks_an_approval_again_after_a_bad_edit() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "gate", "go"]);
    // The tool and its arguments, formatted, then the decision.
    terminal.expect("deploy waits for approval");
    terminal.expect("\"environment\": \"production\"");
    terminal.expect("Run deploy?");
    terminal.send(DOWN);
    terminal.send(DOWN);
    terminal.send(ENTER);
    terminal.expect("Arguments (JSON):");
    terminal.expect("esc to go back");
    // Clear the arguments offered for editing, then type ones the tool's schema refuses.
    let offered = r#"{"environment":"production","service":"api"}"#;
    terminal.send(&"\x7f".repeat(offered.len()));
    terminal.send(r#"{"service":"api","environment":"moon"}"#);
    terminal.send(ENTER);
    terminal.expect("answer rejected: INVALID_ANSWER: ");
    terminal.expect("do not fit deploy");
    // Asked again: approve as called.
    terminal.expect("Run deploy?");
    terminal.expect("enter to choose");
    terminal.send(ENTER);
    terminal.expect("waits for a worker");
    let waiting = setup.pending(&["--kind", "client-tool"]);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let (run_id, call_id, _) = &waiting[0];
    setup.ok(&["answer", run_id, call_id, "--output", "shipped"]);
    terminal.expect("deploy said: shipped");
    terminal.expect("EXIT=0");
}

#[test]
fn answer_in_a_terminal_asks_the_waiting_question() {
    let setup = Setup::new();
    let (run_id, call_id) = setup.start_waiting("pick");
    let mut terminal = setup.terminal(&["answer", &run_id, &call_id]);
    terminal.expect("Which environment?");
    terminal.expect("esc to decline");
    terminal.send(ENTER);
    terminal.expect("Deploying to staging");
    terminal.expect("EXIT=0");
}

#[test]
fn ctrl_c_leaves_the_run_waiting_and_says_how_to_come_back() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "pick", "go"]);
    terminal.expect("esc to decline");
    terminal.send(CTRL_C);
    terminal.expect("goes on: follow it with `askuser watch");
    terminal.expect("EXIT=130");
    let waiting = setup.pending(&[]);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(setup.status(&waiting[0].0), "RUN_STATUS_SUSPENDED");
}

#[test]
fn answer_flags_fill_a_form_and_reply() {
    let setup = Setup::new();
    let (run_id, call_id) = setup.start_waiting("form");
    // A value the pattern refuses: one error line naming the field; the form still waits.
    let refused = setup.run(&[
        "answer",
        &run_id,
        &call_id,
        "--field",
        "version=v1",
        "--field",
        "replicas=2",
        "--field",
        "announce=no",
    ]);
    assert_eq!(refused.status.code(), Some(1));
    let line = stderr_of(&refused);
    assert!(line.contains("--field version: "), "{line}");
    assert!(!line.contains("answer.form"), "{line}");
    // A flag the form cannot take is refused before anything is sent.
    let refused = setup.run(&["answer", &run_id, &call_id, "--field", "replicas=two"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr_of(&refused).contains("not a number"),
        "{}",
        stderr_of(&refused)
    );
    let answered = setup.ok(&[
        "answer",
        &run_id,
        &call_id,
        "--field",
        "version=1.4",
        "--field",
        "replicas=2",
        "--field",
        "announce=yes",
    ]);
    assert!(answered.contains("Which zone?"), "{answered}");
    let call_id = setup
        .pending(&[])
        .into_iter()
        .find(|(run, _, _)| run == &run_id)
        .map(|(_, call, kind)| {
            assert_eq!(kind, "SUSPEND_KIND_FORM");
            call
        })
        .expect("the questions wait");
    // Not one of the choices: the person's own answer ("Other").
    let answered = setup.ok(&["answer", &run_id, &call_id, "--field", "q1=asia"]);
    assert!(
        answered.contains("Release 1.4 x2 announce=true in asia"),
        "{answered}"
    );

    // --field on a call that is no form says what answers it instead.
    let (question_run, question) = setup.start_waiting("name");
    let refused = setup.run(&["answer", &question_run, &question, "--field", "a=b"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr_of(&refused).contains("is a question: answer it with --text"),
        "{}",
        stderr_of(&refused)
    );

    let (run_id, call_id) = setup.start_waiting("form");
    let replied = setup.ok(&["answer", &run_id, &call_id, "--reply", "ask Dana"]);
    assert!(
        replied.contains("User replied instead of answering: ask Dana"),
        "{replied}"
    );
}

#[test]
fn start_in_a_terminal_asks_a_form_field_by_field() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "form", "go"]);
    terminal.expect("Release details");
    terminal.expect("version");
    terminal.send("2.0");
    terminal.send(ENTER);
    terminal.expect("replicas");
    terminal.send("3");
    terminal.send(ENTER);
    terminal.expect("announce");
    terminal.send("y");
    terminal.send(ENTER);
    terminal.expect("[Zone] Which zone?");
    terminal.expect("Other");
    terminal.send(DOWN);
    terminal.send(ENTER);
    terminal.expect("Release 2.0 x3 announce=true in us");
    terminal.expect("EXIT=0");
}

/// The longest prefix two ids share.
fn common_prefix(a: &str, b: &str) -> String {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

#[test]
fn agents_are_listed_and_a_typo_gets_a_did_you_mean() {
    let setup = Setup::new();
    // Instructions are shown to `admin` keys only.
    let admin = create_key(&sqlite_store(&setup.server), "acme", "root", "admin");
    let output = setup
        .command(&["agents"])
        .env("ASKUSER_API_KEY", &admin)
        .output()
        .expect("run askuser");
    assert!(output.status.success(), "{}", stderr_of(&output));
    let listing = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines: Vec<&str> = listing.lines().collect();
    assert!(
        lines[0].starts_with("ID")
            && lines[0].contains("TOOLS")
            && lines[0].contains("DESCRIPTION"),
        "{listing}"
    );
    let brief = lines
        .iter()
        .find(|line| line.starts_with("brief "))
        .unwrap_or_else(|| panic!("no brief in {listing}"));
    // Its description's first line, and its tools.
    assert!(
        brief.contains("Asks one question that expires soon."),
        "{brief}"
    );
    assert!(!brief.contains("A second line"), "{brief}");
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("form ")
                && line.contains("ask_user_form,ask_user_questions")),
        "{listing}"
    );
    let json = setup.json(&["agents"]);
    let ids: Vec<String> = json.iter().map(|agent| text(&agent["agentId"])).collect();
    assert_eq!(ids, ["brief", "checks", "form", "gate", "name", "pick"]);
    let gate = &json[3];
    assert_eq!(gate["tools"], serde_json::json!(["deploy"]));
    assert_eq!(gate["modelProvider"], "scripted");

    let typo = setup.run(&["start", "pikc", "go"]);
    assert_eq!(typo.status.code(), Some(1));
    let line = stderr_of(&typo);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains("no agent \"pikc\": did you mean pick?"),
        "{line}"
    );
    assert!(
        line.contains("brief, checks, form, gate, name, pick"),
        "{line}"
    );
    // Nothing close: the list alone.
    let far = stderr_of(&setup.run(&["start", "zzzzzzzzzz", "go"]));
    assert!(!far.contains("did you mean"), "{far}");
    assert!(far.contains("The agents are: brief, checks"), "{far}");
}

#[test]
fn run_and_call_ids_take_a_unique_prefix() {
    let setup = Setup::new();
    let (pick_run, pick_call) = setup.start_waiting("pick");
    let (name_run, name_call) = setup.start_waiting("name");

    // Too short, whatever it matches.
    let short = setup.run(&["watch", &pick_run[..4]]);
    assert_eq!(short.status.code(), Some(1));
    assert!(
        stderr_of(&short).contains("too short"),
        "{}",
        stderr_of(&short)
    );
    let short_call = setup.run(&["answer", &pick_run, "call_", "--text", "staging"]);
    assert!(
        stderr_of(&short_call).contains("too short"),
        "{}",
        stderr_of(&short_call)
    );

    // Two runs made a moment apart share the start of their (time-ordered) ids: ambiguous, and
    // both are named.
    let shared = common_prefix(&pick_run, &name_run);
    if shared.len() >= 6 {
        let ambiguous = setup.run(&["cancel", &shared]);
        assert_eq!(ambiguous.status.code(), Some(1));
        let line = stderr_of(&ambiguous);
        assert!(line.contains("ambiguous"), "{line}");
        assert!(
            line.contains(&pick_run) && line.contains(&name_run),
            "{line}"
        );
    }
    assert_eq!(setup.status(&pick_run), "RUN_STATUS_SUSPENDED");

    // Unique prefixes: the run's up to one character past the shared part, the call's without its
    // `call_` start.
    let pick_prefix = &pick_run[..(shared.len() + 1).max(6)];
    let call_prefix = &pick_call["call_".len().."call_".len() + 20];
    let answered = setup.ok(&["answer", pick_prefix, call_prefix, "--select", "production"]);
    assert!(answered.contains("Deploying to production"), "{answered}");
    let watched = setup.ok(&["watch", pick_prefix]);
    assert!(watched.contains("run completed"), "{watched}");

    // A run that waits on one call: the call may be left out.
    let name_prefix = &name_run[..(shared.len() + 1).max(6)];
    let answered = setup.ok(&["answer", name_prefix, "--text", "Ada"]);
    assert!(answered.contains("Hello, Ada!"), "{answered}");
    let _ = name_call;
}

#[test]
fn pending_has_a_header_age_expiry_and_a_stable_order() {
    let setup = Setup::new();
    let (first, _) = setup.start_waiting("pick");
    std::thread::sleep(Duration::from_millis(20));
    let (second, _) = setup.start_waiting("brief");
    std::thread::sleep(Duration::from_millis(20));
    let (third, _) = setup.start_waiting("gate");
    let listing = setup.ok(&["pending"]);
    let lines: Vec<&str> = listing.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["RUN", "CALL", "AGENT", "KIND", "AGE", "EXPIRES", "ASKS"],
        "{listing}"
    );
    assert_eq!(lines.len(), 4, "{listing}");
    // Oldest first.
    for (line, run) in lines[1..].iter().zip([&first, &second, &third]) {
        assert!(
            line.starts_with(run.as_str()),
            "{run} out of order in\n{listing}"
        );
    }
    let brief: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(brief[2], "brief");
    assert_eq!(brief[3], "question");
    assert!(brief[4].ends_with('s'), "an age: {}", lines[2]);
    assert_eq!(brief[5], "in", "an expiry: {}", lines[2]);
    assert!(lines[1].contains(" never "), "{}", lines[1]);
    assert!(lines[3].contains("approval"), "{}", lines[3]);
    // The same order every time (the ages aside).
    for _ in 0..3 {
        let again = setup.ok(&["pending"]);
        let runs: Vec<&str> = again
            .lines()
            .skip(1)
            .map(|line| line.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(runs, [first.as_str(), second.as_str(), third.as_str()]);
    }
    // --json: the same objects, in the same order.
    let json: Vec<String> = setup
        .pending(&[])
        .into_iter()
        .map(|(run, _, _)| run)
        .collect();
    assert_eq!(json, [first, second, third]);
}

#[test]
fn errors_speak_the_command_lines_words_once() {
    let setup = Setup::new();
    let (run_id, call_id) = setup.start_waiting("pick");
    // The wrong kind of answer: the flags that fit.
    let wrong = setup.run(&["answer", &run_id, &call_id, "--approve"]);
    assert_eq!(wrong.status.code(), Some(1));
    let line = stderr_of(&wrong);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains(
            "is a question: answer it with --text, --select, --none, --reply or --decline"
        ),
        "{line}"
    );
    assert!(!line.contains("selections or decline"), "{line}");

    // No key: the flag that gives one.
    let mut no_key = setup.command(&["pending"]);
    no_key.env_remove("ASKUSER_API_KEY");
    let line = stderr_of(&no_key.output().expect("run askuser"));
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("askuser: UNAUTHENTICATED: "), "{line}");
    assert!(line.contains("--api-key"), "{line}");
    assert!(!line.contains("authorization: Bearer"), "{line}");
    // A wrong key: the same flag.
    let mut bad_key = setup.command(&["pending"]);
    bad_key.env("ASKUSER_API_KEY", "ak_wrong");
    let line = stderr_of(&bad_key.output().expect("run askuser"));
    assert!(line.contains("--api-key"), "{line}");

    // `answer` without a call, off a terminal: say to give RUN CALL.
    let output = setup.run(&["answer", "--text", "hi"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_of(&output).contains("give RUN CALL"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn answer_without_arguments_picks_a_pending_call() {
    let setup = Setup::new();
    let (pick_run, _) = setup.start_waiting("pick");
    std::thread::sleep(Duration::from_millis(20));
    let (name_run, _) = setup.start_waiting("name");
    let mut terminal = setup.terminal(&["answer"]);
    terminal.expect("2 calls wait; which one?");
    // Oldest first: kind, agent, what it asks, age.
    terminal.expect("1. question");
    terminal.expect("Which environment?");
    terminal.expect("2. question");
    terminal.expect("What is your name?");
    terminal.expect("ago)");
    // By its number.
    terminal.send("2");
    terminal.send(ENTER);
    terminal.expect("esc to decline");
    terminal.send("Ada");
    terminal.send(ENTER);
    terminal.expect("Hello, Ada!");
    terminal.expect("EXIT=0");
    assert_eq!(setup.status(&name_run), "RUN_STATUS_COMPLETED");
    assert_eq!(setup.status(&pick_run), "RUN_STATUS_SUSPENDED");
}

#[test]
fn a_question_that_expires_closes_its_open_prompt() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "brief", "go"]);
    terminal.expect("Quick, which colour?");
    terminal.expect("esc to decline");
    // Nothing typed: the question's 4 s pass.
    terminal.expect("the question expired while its prompt was open: nothing was sent");
    terminal.expect("askuser watch");
    terminal.expect("EXIT=1");
}

#[test]
fn esc_leaves_no_canceled_lines_and_none_of_these_stands_alone() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "checks", "go"]);
    terminal.expect("space to toggle");
    // Enter with nothing ticked asks whether none of these is meant; n goes back to the list.
    terminal.send(ENTER);
    terminal.expect("(none of these)?");
    terminal.send("n");
    terminal.send(ENTER);
    terminal.expect("space to toggle");
    terminal.send(ENTER);
    terminal.expect("(none of these)?");
    terminal.send("y");
    terminal.send(ENTER);
    terminal.expect("Checks []");
    terminal.expect("EXIT=0");

    let mut terminal = setup.terminal(&["start", "name", "go"]);
    terminal.expect("esc to decline");
    terminal.send(ESC);
    terminal.expect("Decline; why (optional)?");
    terminal.send(ESC);
    terminal.expect("What is your name?");
    terminal.send("Ada");
    terminal.send(ENTER);
    terminal.expect("EXIT=0");
    let log =
        String::from_utf8_lossy(&std::fs::read(terminal.log.path()).expect("log")).into_owned();
    assert!(!log.contains("<canceled>"), "{log}");
}

/// Keys typed into `askuser start name`'s free-text question, then Enter: the answer the server
/// got must be `expected` (the call's result, `User answered: …`, and the agent's reply with it).
fn answer_typed(setup: &Setup, keys: &[&str], expected: &str) {
    let mut terminal = setup.terminal(&["start", "name", "go"]);
    terminal.expect("esc to decline");
    for key in keys {
        terminal.send(key);
    }
    terminal.send(ENTER);
    terminal.expect(&format!("User answered: {expected}"));
    terminal.expect(&format!("Hello, {expected}!"));
    terminal.expect("EXIT=0");
}

#[test]
fn free_text_prompts_have_the_line_editing_keys() {
    let setup = Setup::new();
    // Ctrl-A to the start of the line.
    answer_typed(&setup, &["world", CTRL_A, "hello "], "hello world");
    // Ctrl-W deletes the word before.
    answer_typed(&setup, &["abc def", CTRL_W, "xyz"], "abc xyz");
    // Ctrl-U deletes to the start.
    answer_typed(&setup, &["junk", CTRL_U, "clean"], "clean");
    // By word (Ctrl-Left, Alt-F) and by character (Left), Ctrl-K, Home, Delete, Ctrl-E.
    answer_typed(
        &setup,
        &[
            "one two three",
            CTRL_LEFT,
            CTRL_LEFT,
            CTRL_K,
            "three",
            HOME,
            DELETE,
            "Z",
            ALT_F,
            LEFT,
            LEFT,
            CTRL_E,
            "!",
        ],
        "Zne three!",
    );
}

#[test]
fn form_fields_and_reasons_take_the_line_editing_keys() {
    let setup = Setup::new();
    let mut terminal = setup.terminal(&["start", "form", "go"]);
    terminal.expect("Release details");
    terminal.expect("version");
    terminal.send("0");
    terminal.send(CTRL_A);
    terminal.send("2.");
    terminal.send(ENTER);
    // A number field: its validation message, then the line cleared with Ctrl-U.
    terminal.expect("replicas");
    terminal.send("lots");
    terminal.send(ENTER);
    terminal.expect("a number, please");
    terminal.send(CTRL_U);
    terminal.send("3");
    terminal.send(ENTER);
    terminal.expect("announce");
    terminal.send("y");
    terminal.send(ENTER);
    // "Other…" and the person's own answer.
    terminal.expect("[Zone] Which zone?");
    terminal.send(DOWN);
    terminal.send(DOWN);
    terminal.send(ENTER);
    terminal.expect("Your own answer:");
    terminal.send("moon");
    terminal.send(CTRL_U);
    terminal.send("asia");
    terminal.send(ENTER);
    terminal.expect("Release 2.0 x3 announce=true in asia");
    terminal.expect("EXIT=0");

    // A decline's reason.
    let mut terminal = setup.terminal(&["start", "name", "go"]);
    terminal.expect("esc to decline");
    terminal.send(ESC);
    terminal.expect("Decline; why (optional)?");
    terminal.send("not sure");
    terminal.send(CTRL_W);
    terminal.send("today");
    terminal.send(ENTER);
    terminal.expect("User declined to answer: not today");
    terminal.expect("EXIT=0");
}
