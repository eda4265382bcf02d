//! Fuzzing of the agents-file loader (`config::parse_agents`, which `load_agents` wraps): arbitrary
//! text, and agents files built from the format's own keys and values (with the odd bad value)
//! then damaged at random, are loaded or refused with an error that names the file. Nothing
//! panics, nothing hangs.

use std::sync::mpsc;
use std::time::Duration;

use askuser::config::{DEMO_AGENTS, parse_agents};
use askuser::runtime::AskUserLimits;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Cases per property.
const CASES: u32 = 2048;
/// A liveness bound, not a timing assertion: a property still running after this long has hung.
const HANG: Duration = Duration::from_secs(300);
const ORIGIN: &str = "fuzzed.toml";

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// A TOML string of one of `values`; now and then any string, or a value of another type.
fn quoted(values: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        30 => prop::sample::select(values).prop_map(toml_string),
        1 => "\\PC{0,10}".prop_map(|v| toml_string(&v)),
        1 => prop::sample::select(&["1", "-1", "true", "[]", "{}", "1.5e400", "nan"][..])
            .prop_map(str::to_owned),
    ]
}

/// `key = <value>` for each value `values` makes.
fn line(
    key: &'static str,
    values: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    values
        .prop_map(move |value| format!("{key} = {value}"))
        .boxed()
}

/// One of `values`, as written.
fn raw(values: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(values).prop_map(str::to_owned)
}

/// A table: its required lines, and each optional line or not.
fn table(
    header: &'static str,
    required: Vec<BoxedStrategy<String>>,
    optional: Vec<BoxedStrategy<String>>,
) -> impl Strategy<Value = String> {
    let optional: Vec<_> = optional
        .into_iter()
        .map(|line| prop::option::weighted(0.3, line))
        .collect();
    (required, optional).prop_map(move |(required, optional)| {
        let lines: Vec<String> = required
            .into_iter()
            .chain(optional.into_iter().flatten())
            .collect();
        format!("{header}\n{}\n", lines.join("\n"))
    })
}

fn tool() -> impl Strategy<Value = String> {
    table(
        "[[tool]]",
        vec![
            line(
                "name",
                quoted(&["probe", "deploy", "probe_2", "ask_user", "", "bad name"]),
            ),
            line(
                "kind",
                quoted(&["client", "client", "client", "http", "http", "other"]),
            ),
        ],
        vec![
            line("description", quoted(&["does things"])),
            line(
                "parameters",
                raw(&[
                    "{ type = \"object\" }",
                    "{ type = \"object\", properties = { n = { type = \"integer\" } }, required = [\"n\"] }",
                    "{ type = \"string\", pattern = \"^(a+)+$\" }",
                    "{ type = \"string\", pattern = \"(\" }",
                    "{ \"$ref\" = \"#\" }",
                    "{ \"$ref\" = \"#/definitions/a\", definitions = { a = { \"$ref\" = \"#/definitions/a\" } } }",
                    "{ type = \"nonsense\" }",
                    "{ minimum = 1e308, maximum = -1e308 }",
                    "1",
                    "\"text\"",
                ]),
            ),
            line(
                "approval",
                quoted(&[
                    "never",
                    "always",
                    "args.n > 3",
                    "run.metadata.env == 'prod'",
                    "args.n >",
                    "((((((((((((((((((((1))))))))))))))))))))",
                    "size('x') * 9223372036854775807 * 2",
                    "'a' + 1",
                    "undefined_function()",
                    "args.n / 0 == 1",
                ]),
            ),
            line(
                "url",
                quoted(&[
                    "http://127.0.0.1:9/hook",
                    "https://user:pass@example.invalid/x?token=1",
                    "not a url",
                    "ftp://example.invalid",
                    "",
                ]),
            ),
            line("method", quoted(&["GET", "POST", "BREW", "", "G E T"])),
            line(
                "timeout",
                quoted(&["30s", "0s", "1ms", "forever", "99999999999999999999d", ""]),
            ),
            line("max_retries", raw(&["0", "3", "4294967295", "-1", "\"3\""])),
            line(
                "headers_env",
                raw(&[
                    "{ Authorization = \"ASKUSER_FUZZ_UNSET\" }",
                    "{ \"Bad Header\" = \"PATH\" }",
                    "{ X-Ok = \"PATH\" }",
                    "{}",
                ]),
            ),
        ],
    )
}

fn agent() -> impl Strategy<Value = String> {
    let head = table(
        "[[agent]]",
        vec![line("id", quoted(&["a", "b", "c", "", "deploy"]))],
        vec![
            line("name", quoted(&["Agent"])),
            line("instructions", quoted(&["Be brief."])),
            line(
                "tools",
                raw(&[
                    "[\"ask_user\"]",
                    "[]",
                    "[\"ask_user\", \"ask_user\"]",
                    "[\"probe\"]",
                    "[\"ask_user\", \"probe\", \"deploy\"]",
                    "[\"missing\"]",
                    "\"ask_user\"",
                ]),
            ),
            line(
                "max_steps",
                raw(&["1", "8", "8", "8", "0", "4294967295", "-3"]),
            ),
            line(
                "question_ttl",
                quoted(&["10m", "0s", "7d", "soon", "18446744073709551616s"]),
            ),
        ],
    );
    (head, prop::option::weighted(0.97, model()))
        .prop_map(|(head, model)| head + &model.unwrap_or_default())
}

/// An `[agent.model]` table and its turns.
fn model() -> impl Strategy<Value = String> {
    let turn = prop_oneof![
        Just("say = \"hi {{answer.1}}\"".to_owned()),
        Just(
            "ask = [{ question = \"Q?\", options = [{ label = \"a\" }, { label = \"a\" }] }]"
                .to_owned()
        ),
        Just("ask = [{ question = \"Q?\", selection_mode = \"many\" }]".to_owned()),
        Just("call = [{ tool = \"probe\", arguments = { n = 1 } }]".to_owned()),
        Just("fail = \"boom\"".to_owned()),
        Just("say = \"x\"\nfail = \"y\"".to_owned()),
        Just("delay = \"1ms\"\nsay = \"{{answer.99999999999999999999}}\"".to_owned()),
        Just("delay = \"never\"\nsay = \"x\"".to_owned()),
        Just(String::new()),
    ];
    let openai = table(
        "[agent.model]\nprovider = \"openai\"",
        vec![
            line("model", quoted(&["gpt-4o-mini", "gpt-4o-mini", ""])),
            line(
                "base_url",
                quoted(&[
                    "http://127.0.0.1:9/v1",
                    "not a url",
                    "https://k:s@example.invalid/v1?key=1",
                ]),
            ),
        ],
        vec![
            line("api_key_env", quoted(&["ASKUSER_FUZZ_UNSET", "PATH"])),
            line("temperature", raw(&["0.2", "-1.0", "nan", "inf", "1e309"])),
            line("max_tokens", raw(&["0", "100", "-5"])),
            line("request_timeout", quoted(&["60s", "0s", "later"])),
            line(
                "headers",
                raw(&["{ X-A = \"b\" }", "{ \"bad header\" = \"\\n\" }"]),
            ),
            line("parallel_tool_calls", raw(&["true", "1"])),
            line("max_retries", raw(&["0", "2"])),
        ],
    );
    prop_oneof![
        8 => prop::collection::vec(turn, 0..4).prop_map(|turns| {
            let mut text = "[agent.model]\nprovider = \"scripted\"\n".to_owned();
            for turn in turns {
                text.push_str("\n[[agent.model.turns]]\n");
                text.push_str(&turn);
                text.push('\n');
            }
            text
        }),
        8 => openai,
        1 => Just("[agent.model]\nprovider = \"psychic\"\n".to_owned()),
    ]
}

/// An agents file in the format's shape, each table with a random subset of its keys.
fn agents_file() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(tool(), 0..3),
        prop::collection::vec(agent(), 0..3),
    )
        .prop_map(|(tools, agents)| [tools.concat(), agents.concat()].concat())
}

/// Damage: bytes replaced, removed or inserted, lines doubled or dropped, the text cut short.
fn damaged(text: String) -> impl Strategy<Value = String> {
    let edits = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..5), 0..4);
    edits.prop_map(move |edits| {
        let mut bytes = text.clone().into_bytes();
        for (at, byte, kind) in edits {
            let len = bytes.len();
            match kind {
                0 if len > 0 => bytes[at.index(len)] = byte,
                1 if len > 0 => {
                    bytes.remove(at.index(len));
                }
                2 => bytes.insert(at.index(len + 1), byte),
                3 => bytes.truncate(at.index(len + 1)),
                _ => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    let mut lines: Vec<&str> = text.lines().collect();
                    if !lines.is_empty() {
                        let line = at.index(lines.len());
                        lines.insert(line, lines[line]);
                    }
                    bytes = lines.join("\n").into_bytes();
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Loads `text`: it parses, or it is refused with an error that names the file.
fn load(text: &str) -> Result<(), TestCaseError> {
    let limits = AskUserLimits::default();
    if let Err(error) = parse_agents(text, ORIGIN, &limits) {
        let message = error.to_string();
        prop_assert!(message.starts_with(ORIGIN), "{message}");
        prop_assert!(message.len() > ORIGIN.len() + 2, "{message}");
    }
    Ok(())
}

/// Loads `CASES` texts of the strategy `make` makes, on a thread; fails if that has not finished
/// within [`HANG`].
fn fuzz<S>(make: impl FnOnce() -> S + Send + 'static)
where
    S: Strategy<Value = String>,
{
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let strategy = make();
        let mut runner = TestRunner::new(Config::with_cases(CASES));
        let _ = done.send(
            runner
                .run(&strategy, |text| load(&text))
                .map_err(|e| e.to_string()),
        );
    });
    match finished.recv_timeout(HANG) {
        Ok(result) => result.expect("agents files load or are refused"),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("loading an agents file hung"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("loading an agents file panicked"),
    }
}

#[test]
fn any_text_loads_or_is_refused() {
    fuzz(|| "\\PC{0,200}");
}

#[test]
fn agents_files_load_or_are_refused() {
    fuzz(agents_file);
}

#[test]
fn damaged_agents_files_load_or_are_refused() {
    fuzz(|| agents_file().prop_flat_map(damaged));
}

#[test]
fn the_damaged_demo_file_loads_or_is_refused() {
    fuzz(|| damaged(DEMO_AGENTS.to_owned()));
}
