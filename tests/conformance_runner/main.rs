//! The conformance runner: every scenario in `tests/conformance` (the format and the protocol are in
//! its README), for each language's client under test, against one server of its own. It holds every
//! assertion; a client under test only turns requests into calls on its client's API.
//!
//!     cargo test --test conformance_runner                       # the Rust stubs, in process
//!     cargo test --test conformance_runner -- --client python    # clients/python/client-under-test
//!     cargo test --test conformance_runner -- --client go=PATH   # any client-under-test executable
//!
//! Prints `<language>: N passed, N failed` per language and the totals last; exits 1 when any failed.

mod checks;
mod client;
mod message;
mod rust_client;
mod scenario;
mod server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use client::{ClientUnderTest, ProcessClient};
use scenario::ScenarioRun;
use server::Server;

/// A scenario fails with a message saying which step went wrong and how.
pub type Outcome<T = ()> = Result<T, String>;

/// A whole scenario may take this long; a hung client then fails one scenario, not the run.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(180);

/// A language under test and how to start its client under test; `None` for the Rust stubs.
struct Language {
    name: String,
    program: Option<String>,
}

/// `--client NAME[=PATH]` options; other arguments (test filters cargo passes on) are ignored.
fn languages(root: &Path) -> Result<Vec<Language>, String> {
    let mut args = std::env::args().skip(1);
    let mut languages = Vec::new();
    while let Some(arg) = args.next() {
        let spec = match arg.strip_prefix("--client=") {
            Some(spec) => spec.to_owned(),
            None if arg == "--client" => args.next().ok_or("--client needs NAME[=PATH]")?,
            None => continue,
        };
        let (name, program) = match spec.split_once('=') {
            Some((name, path)) => (name.to_owned(), Some(path.to_owned())),
            None if spec == "rust" => (spec, None),
            None => {
                let path = root.join("clients").join(&spec).join("client-under-test");
                (spec, Some(path.to_string_lossy().into_owned()))
            }
        };
        languages.push(Language { name, program });
    }
    if languages.is_empty() {
        languages.push(Language {
            name: "rust".into(),
            program: None,
        });
    }
    Ok(languages)
}

/// Every scenario file, sorted by name: ASKUSER_CONFORMANCE_DIR, or tests/conformance.
fn scenario_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = std::env::var_os("ASKUSER_CONFORMANCE_DIR")
        .map_or_else(|| root.join("tests/conformance"), PathBuf::from);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|error| format!("cannot read {}: {error}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no scenarios in {}", dir.display()));
    }
    Ok(files)
}

/// A scenario file: its name and steps.
fn load(path: &Path) -> Outcome<(String, Vec<Value>)> {
    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let scenario: Value = serde_json::from_str(&text).map_err(|error| error.to_string())?;
    let scenario = message::fields(&scenario, &["name", "description", "steps"])?;
    let name = scenario
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a scenario needs a name")?;
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .filter(|steps| !steps.is_empty())
        .ok_or("steps must be a non-empty array")?;
    Ok((name.to_owned(), steps.clone()))
}

/// Runs one scenario with a fresh client under test; the error says what failed, with the client's
/// log.
async fn run_one(
    language: &Language,
    steps: &[Value],
    server: &mut Server,
    scratch: &Path,
) -> Outcome {
    let mut client = match &language.program {
        Some(program) => ClientUnderTest::Process(Box::new(ProcessClient::spawn(
            program,
            scratch.join(format!("{}.stderr", language.name)),
        )?)),
        None => ClientUnderTest::InProcess(Box::default()),
    };
    let mut run = ScenarioRun::new(&mut client, server);
    let outcome = match tokio::time::timeout(SCENARIO_TIMEOUT, run.run(steps)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("did not finish within {SCENARIO_TIMEOUT:?}")),
    };
    let finished = run.finish();
    let outcome = outcome.and(finished);
    outcome.map_err(|error| {
        let log = client.log();
        if log.trim().is_empty() {
            error
        } else {
            format!("{error}\n  client under test's stderr:\n{log}")
        }
    })
}

#[tokio::main]
async fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let setup = || -> Result<_, String> {
        let languages = languages(root)?;
        let files = scenario_files(root)?;
        let scratch = tempfile::tempdir().map_err(|error| error.to_string())?;
        let server = Server::start(scratch.path(), &root.join("tests/conformance/agents.toml"))?;
        Ok((languages, files, scratch, server))
    };
    let (languages, files, scratch, mut server) = setup().unwrap_or_else(|error| {
        eprintln!("conformance runner: {error}");
        std::process::exit(2);
    });
    let (mut total_passed, mut total_failed) = (0, 0);
    for language in &languages {
        let (mut passed, mut failed) = (0, 0);
        for path in &files {
            let file_name = path
                .file_name()
                .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
            let outcome = match load(path) {
                Ok((name, steps)) => run_one(language, &steps, &mut server, scratch.path())
                    .await
                    .map(|()| name.clone())
                    .map_err(|error| (name, error)),
                Err(error) => Err((file_name, error)),
            };
            match outcome {
                Ok(name) => {
                    passed += 1;
                    println!("PASS {} {name}", language.name);
                }
                Err((name, error)) => {
                    failed += 1;
                    println!("FAIL {} {name}: {error}", language.name);
                }
            }
        }
        println!("{}: {passed} passed, {failed} failed", language.name);
        total_passed += passed;
        total_failed += failed;
    }
    if total_failed > 0 {
        eprintln!("server log:\n{}", server.log());
    }
    println!("{total_passed} passed, {total_failed} failed");
    // Exiting skips destructors: stop the server and remove its files first.
    drop(server);
    drop(scratch);
    if total_failed > 0 {
        std::process::exit(1);
    }
}
