//! One scenario against one client under test: each step becomes requests to the client, and every
//! assertion of tests/conformance/README.md is made here, on what the client reports.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use serde_json::{Map, Value, json};

mod asks;
mod calls;
mod feed;

use crate::Outcome;
use crate::checks::{frame_event, frame_field};
use crate::client::{ClientUnderTest, Reply};
use crate::message::{self, Status, fields, normalize};
use crate::server::Server;

/// The keys that say what an `answer` or `resume` step answers with; exactly one is given.
const ANSWER_KINDS: [&str; 9] = [
    "text",
    "selections",
    "decline",
    "tool_output",
    "approve",
    "reject",
    "edit",
    "form",
    "reply",
];

/// What reading a stream gave: a frame other than a heartbeat, the end with OK, or a failure.
enum Next {
    Frame(Value),
    End,
    Failed(Status),
}

/// Where a check's frames come from: a live `RunAgent` stream of the client, or the frames a
/// `resume` / `watch` call returned.
enum Source {
    Live(String),
    Recorded(VecDeque<Next>),
}

/// A live `RunAgent` stream: the run its frames must belong to, and a failure at open that the
/// next read reports.
struct Stream {
    run_id: String,
    open_error: Option<Status>,
}

pub struct ScenarioRun<'a> {
    client: &'a mut ClientUnderTest,
    server: &'a mut Server,
    saved: HashMap<String, String>,
    streams: HashMap<String, Stream>,
    /// Open feeds, with a failure at open that the next read reports.
    feeds: HashMap<String, Option<Status>>,
    /// Put before each `request_id` an `ask` step gives, so that runs of a scenario do not meet.
    request_prefix: String,
}

fn name_of(step: &Map<String, Value>, key: &str) -> Outcome<String> {
    match step.get(key) {
        None => Ok("main".into()),
        Some(Value::String(name)) => Ok(name.clone()),
        Some(other) => Err(format!("{key} must be a string, got {other}")),
    }
}

/// A step's allowed keys: its own, then every kind of answer.
fn with_answer_kinds<'k>(own: &[&'k str]) -> Vec<&'k str> {
    own.iter().copied().chain(ANSWER_KINDS).collect()
}

impl<'a> ScenarioRun<'a> {
    pub fn new(client: &'a mut ClientUnderTest, server: &'a mut Server) -> Self {
        ScenarioRun {
            client,
            server,
            saved: HashMap::new(),
            streams: HashMap::new(),
            feeds: HashMap::new(),
            request_prefix: uuid::Uuid::now_v7().to_string(),
        }
    }

    pub async fn run(&mut self, steps: &[Value]) -> Outcome {
        let connect = json!({
            "op": "connect",
            "address": self.server.addr,
            "keys": {"own": self.server.own_key, "other": self.server.other_key},
        });
        self.client.call(connect).await?.ok("connect")?;
        for (index, step) in steps.iter().enumerate() {
            self.step(step)
                .await
                .map_err(|error| format!("step {} {step}: {error}", index + 1))?;
        }
        Ok(())
    }

    async fn step(&mut self, step: &Value) -> Outcome {
        let object = step
            .as_object()
            .filter(|object| object.len() == 1)
            .ok_or("a step is an object with exactly one key")?;
        let (kind, body) = object.iter().next().ok_or("empty step")?;
        match kind.as_str() {
            "start" => self.start(body).await,
            "attach" => self.attach(body).await,
            "answer" => self.answer(body).await,
            "expect" => {
                // The check's own fields are validated as it is compared.
                let mut check = body.as_object().cloned().ok_or("a check is an object")?;
                let name = name_of(&check, "stream")?;
                check.remove("stream");
                let run_id = self.stream(&name)?.run_id.clone();
                self.expect(&mut Source::Live(name), &run_id, &check).await
            }
            "expect_end" => {
                let name = name_of(fields(body, &["stream"])?, "stream")?;
                self.expect_end(&mut Source::Live(name)).await
            }
            "expect_stream_error" => {
                let body = fields(body, &["stream", "code", "field"])?;
                let mut want = body.clone();
                want.remove("stream");
                match self
                    .next(&mut Source::Live(name_of(body, "stream")?))
                    .await?
                {
                    Next::Failed(status) => {
                        self.expect_status(&status, &Value::Object(want), &["code", "field"])
                    }
                    Next::Frame(frame) => Err(format!("expected an error, got the frame {frame}")),
                    Next::End => Err("expected an error, the stream ended with OK".into()),
                }
            }
            "close" => {
                let name = name_of(fields(body, &["stream"])?, "stream")?;
                self.streams
                    .remove(&name)
                    .ok_or_else(|| format!("no open stream {name:?}"))?;
                self.client
                    .call(json!({"op": "close", "stream": name}))
                    .await?
                    .ok("close")
                    .map(drop)
            }
            "watch_pending" => self.watch_pending(body).await,
            "expect_pending" => self.expect_pending(body).await,
            "close_pending" => {
                let name = name_of(fields(body, &["feed"])?, "feed")?;
                self.feeds
                    .remove(&name)
                    .ok_or_else(|| format!("no open feed {name:?}"))?;
                self.client
                    .call(json!({"op": "close_pending", "feed": name}))
                    .await?
                    .ok("close_pending")
                    .map(drop)
            }
            "claim" => self.claim(body).await,
            "cancel" => self.cancel(body).await,
            "resume" => self.resume(body).await,
            "watch" => self.watch(body).await,
            "get_run" => self.get_run(body).await,
            "ask_user" => self.ask_user(body).await,
            "ask" => self.ask(body).await,
            "ask_result" => self.ask_result(body).await,
            "restart_server" => {
                let body = fields(body, &["down_ms"])?;
                let down = match body.get("down_ms") {
                    Some(value) => self.number(value, "down_ms")?,
                    None => 0,
                };
                self.server.restart(Duration::from_millis(down))
            }
            other => Err(format!("unknown step kind {other:?}")),
        }
    }

    /// The scenario's end: a restart still in progress must have brought the server back.
    pub fn finish(&mut self) -> Outcome {
        self.server.wait_until_up()
    }

    fn stream(&self, name: &str) -> Outcome<&Stream> {
        self.streams
            .get(name)
            .ok_or_else(|| format!("no open stream {name:?}"))
    }

    /// Substitutes every `"$name"` string in `value` with the saved string.
    fn resolve(&self, value: &Value) -> Outcome<Value> {
        Ok(match value {
            Value::String(text) => match text.strip_prefix('$') {
                Some(name) => Value::String(
                    self.saved
                        .get(name)
                        .cloned()
                        .ok_or_else(|| format!("nothing saved as ${name}"))?,
                ),
                None => value.clone(),
            },
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.resolve(item))
                    .collect::<Outcome<_>>()?,
            ),
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, item)| Ok((key.clone(), self.resolve(item)?)))
                    .collect::<Outcome<_>>()?,
            ),
            other => other.clone(),
        })
    }

    fn string(&self, step: &Map<String, Value>, key: &str) -> Outcome<String> {
        match self.resolve(step.get(key).unwrap_or(&Value::Null))? {
            Value::String(text) => Ok(text),
            Value::Null => Ok(String::new()),
            other => Err(format!("{key} must be a string, got {other}")),
        }
    }

    /// A number field, written as a number or as a saved `"$name"`.
    fn number(&self, value: &Value, key: &str) -> Outcome<u64> {
        match self.resolve(value)? {
            Value::Number(number) => number.as_u64(),
            Value::String(text) => text.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("{key} must be a non-negative integer, got {value}"))
    }

    fn optional_number(&self, step: &Map<String, Value>, key: &str) -> Outcome<u64> {
        step.get(key).map_or(Ok(0), |value| self.number(value, key))
    }

    fn strings(&self, value: &Value, key: &str) -> Outcome<Vec<String>> {
        match self.resolve(value)? {
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(text) => Ok(text),
                    other => Err(format!("{key} must hold strings, got {other}")),
                })
                .collect(),
            other => Err(format!("{key} must be an array, got {other}")),
        }
    }

    fn optional_strings(&self, step: &Map<String, Value>, key: &str) -> Outcome<Vec<String>> {
        step.get(key)
            .map_or(Ok(Vec::new()), |value| self.strings(value, key))
    }

    /// Who a call goes as: `"own"`, or `"other"` for `"as": "other"`.
    fn caller(&self, step: &Map<String, Value>) -> Outcome<&'static str> {
        match step.get("as") {
            None => Ok("own"),
            Some(Value::String(name)) if name == "other" => Ok("other"),
            Some(other) => Err(format!("as must be \"other\", got {other}")),
        }
    }

    async fn start(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "stream",
                "agent_id",
                "prompt",
                "metadata",
                "tools",
                "as",
                "timeout_ms",
            ],
        )?;
        let name = name_of(body, "stream")?;
        if self.streams.contains_key(&name) {
            return Err(format!("stream {name:?} is already open"));
        }
        let metadata = match self.resolve(body.get("metadata").unwrap_or(&Value::Null))? {
            Value::Null => Map::new(),
            Value::Object(entries) if entries.values().all(Value::is_string) => entries,
            other => {
                return Err(format!(
                    "metadata must be an object of strings, got {other}"
                ));
            }
        };
        let request = json!({
            "op": "start",
            "stream": name,
            "as": self.caller(body)?,
            "agent_id": self.string(body, "agent_id")?,
            "prompt": self.string(body, "prompt")?,
            "metadata": metadata,
            "tools": self.run_tools(body.get("tools"))?,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        let stream = match self.client.call(request).await? {
            Reply::Ok(ok) => {
                let run_id = message::text(&ok, "run_id");
                if run_id.is_empty() {
                    return Err(format!("start returned no run_id: {ok}"));
                }
                self.saved.insert("run_id".into(), run_id.clone());
                Stream {
                    run_id,
                    open_error: None,
                }
            }
            Reply::Error(status) => Stream {
                run_id: String::new(),
                open_error: Some(status),
            },
        };
        self.streams.insert(name, stream);
        Ok(())
    }

    async fn attach(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &["stream", "run_id", "after_sequence", "as", "timeout_ms"],
        )?;
        let name = name_of(body, "stream")?;
        if self.streams.contains_key(&name) {
            return Err(format!("stream {name:?} is already open"));
        }
        let run_id = self.string(body, "run_id")?;
        let request = json!({
            "op": "attach",
            "stream": name,
            "as": self.caller(body)?,
            "run_id": run_id,
            "after_sequence": self.optional_number(body, "after_sequence")?,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        let open_error = match self.client.call(request).await? {
            Reply::Ok(_) => None,
            Reply::Error(status) => Some(status),
        };
        self.streams.insert(name, Stream { run_id, open_error });
        Ok(())
    }

    /// The answer object of the protocol, from an `answer` or `resume` step.
    fn answer_of(&self, body: &Map<String, Value>) -> Outcome<Value> {
        let given: Vec<&str> = ANSWER_KINDS
            .into_iter()
            .filter(|kind| body.contains_key(*kind))
            .collect();
        let [kind] = given[..] else {
            return Err(format!(
                "an answer has exactly one of {}",
                ANSWER_KINDS.join(", ")
            ));
        };
        let value = match kind {
            "selections" => Value::from(self.strings(&body[kind], kind)?),
            "tool_output" => {
                let output = fields(&body[kind], &["content", "is_error"])?;
                let is_error = output.get("is_error").map_or(Ok(false), |value| {
                    value.as_bool().ok_or("is_error must be a boolean")
                })?;
                json!({"content": self.string(output, "content")?, "is_error": is_error})
            }
            "form" => match &body[kind] {
                Value::Object(values) => Value::Object(values.clone()),
                _ => return Err("form must be an object of field values".into()),
            },
            "approve" if body[kind] == Value::Bool(true) => Value::Bool(true),
            "approve" => return Err("approve must be true".into()),
            _ => Value::String(self.string(body, kind)?),
        };
        let mut answer = Map::new();
        answer.insert("run_id".into(), self.string(body, "run_id")?.into());
        answer.insert(
            "tool_call_id".into(),
            self.string(body, "tool_call_id")?.into(),
        );
        answer.insert("answer_id".into(), self.string(body, "answer_id")?.into());
        answer.insert(kind.into(), value);
        Ok(Value::Object(answer))
    }

    async fn answer(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &with_answer_kinds(&["stream", "run_id", "tool_call_id", "answer_id"]),
        )?;
        let name = name_of(body, "stream")?;
        self.stream(&name)?;
        let request = json!({"op": "send", "stream": name, "answer": self.answer_of(body)?});
        self.client.call(request).await?.ok("send").map(drop)
    }

    /// The next frame of a source that is not a heartbeat.
    async fn next(&mut self, source: &mut Source) -> Outcome<Next> {
        let name = match source {
            Source::Recorded(frames) => return Ok(frames.pop_front().unwrap_or(Next::End)),
            Source::Live(name) => name.clone(),
        };
        let stream = self
            .streams
            .get_mut(&name)
            .ok_or_else(|| format!("no open stream {name:?}"))?;
        if let Some(status) = stream.open_error.take() {
            return Ok(Next::Failed(status));
        }
        loop {
            let reply = self
                .client
                .call(json!({"op": "next", "stream": name}))
                .await?;
            let ok = match reply {
                Reply::Error(status) => return Ok(Next::Failed(status)),
                Reply::Ok(ok) => ok,
            };
            if ok.get("end") == Some(&Value::Bool(true)) {
                return Ok(Next::End);
            }
            let frame = normalize(
                ok.get("frame")
                    .cloned()
                    .ok_or_else(|| format!("next returned neither frame nor end: {ok}"))?,
            );
            if frame_event(&frame)?.0 != "heartbeat" {
                return Ok(Next::Frame(frame));
            }
        }
    }

    /// The next frame, which must exist and belong to `run_id`.
    async fn next_frame(&mut self, source: &mut Source, run_id: &str) -> Outcome<Value> {
        match self.next(source).await? {
            Next::Frame(frame) if message::text(&frame, "run_id") == run_id => Ok(frame),
            Next::Frame(frame) => Err(format!(
                "a frame of another run on a stream of run {run_id:?}: {frame}"
            )),
            Next::End => Err("the stream ended; a frame was expected".into()),
            Next::Failed(status) => Err(format!("the stream failed: {status}")),
        }
    }

    async fn expect_end(&mut self, source: &mut Source) -> Outcome {
        match self.next(source).await? {
            Next::End => Ok(()),
            Next::Frame(frame) => Err(format!("expected the end of the stream, got {frame}")),
            Next::Failed(status) => Err(format!(
                "expected the end of the stream, it failed: {status}"
            )),
        }
    }

    /// Reads the frame (or, for `text_deltas`, the frames) one check describes and compares.
    async fn expect(
        &mut self,
        source: &mut Source,
        run_id: &str,
        check: &Map<String, Value>,
    ) -> Outcome {
        let kind = self.string(check, "kind")?;
        if kind == "text_deltas" {
            fields(&Value::Object(check.clone()), &["kind", "text"])?;
            return self
                .expect_text_deltas(source, run_id, &self.string(check, "text")?)
                .await;
        }
        let frame = self.next_frame(source, run_id).await?;
        let (actual_kind, event) = frame_event(&frame)?;
        if actual_kind != kind {
            return Err(format!("expected {kind}, got {frame}"));
        }
        for (field, want) in check {
            match field.as_str() {
                "kind" => {}
                "save" => {
                    let name = want.as_str().ok_or("save names a value")?;
                    let Some(Value::String(id)) = frame_field(&kind, event, "tool_call_id") else {
                        return Err("save needs a frame with a tool_call_id".into());
                    };
                    self.saved.insert(name.into(), id);
                }
                "save_sequence" => {
                    let name = want.as_str().ok_or("save_sequence names a value")?;
                    let sequence = message::number(&frame, "sequence")?;
                    self.saved.insert(name.into(), sequence.to_string());
                }
                "sequence" => {
                    let want = self.number(want, "sequence")?;
                    if message::number(&frame, "sequence")? != want {
                        return Err(format!("expected sequence {want}, got {frame}"));
                    }
                }
                _ => {
                    let actual = frame_field(&kind, event, field)
                        .ok_or_else(|| format!("{kind} frames have no field {field:?}"))?;
                    let want = self.resolve(want)?;
                    if actual != want {
                        return Err(format!("{field}: expected {want}, got {actual} in {frame}"));
                    }
                }
            }
        }
        Ok(())
    }

    async fn expect_text_deltas(
        &mut self,
        source: &mut Source,
        run_id: &str,
        want: &str,
    ) -> Outcome {
        let mut text = String::new();
        while text != want {
            let frame = self.next_frame(source, run_id).await?;
            match frame_event(&frame)? {
                ("text_delta", delta) => text.push_str(&message::text(delta, "text")),
                _ => return Err(format!("text deltas {text:?} end before {want:?}: {frame}")),
            }
            if !want.starts_with(&text) {
                return Err(format!("text deltas {text:?} do not spell {want:?}"));
            }
        }
        Ok(())
    }

    /// Compares a failed call's status with `{"code", "reason", "field", "fields"}`.
    fn expect_status(&self, status: &Status, want: &Value, allowed: &[&str]) -> Outcome {
        let want = fields(want, allowed)?;
        let code = self.string(want, "code")?;
        if status.code != code {
            return Err(format!("expected {code}, got {status}"));
        }
        if want.contains_key("reason") {
            let reason = self.string(want, "reason")?;
            if status.reason != reason {
                return Err(format!("expected reason {reason}, got {status}"));
            }
        }
        if want.contains_key("field") {
            let field = self.string(want, "field")?;
            if !status.fields.contains(&field) {
                return Err(format!("no violation of {field}; got {status}"));
            }
        }
        if let Some(expected) = want.get("fields") {
            let expected = self.strings(expected, "fields")?;
            if status.fields != expected {
                return Err(format!("expected violations {expected:?}, got {status}"));
            }
        }
        Ok(())
    }

    async fn resume(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &with_answer_kinds(&[
                "run_id",
                "tool_call_id",
                "answer_id",
                "expect",
                "expect_error",
                "as",
                "timeout_ms",
            ]),
        )?;
        let answer = self.answer_of(body)?;
        let run_id = message::text(&answer, "run_id");
        let request = json!({
            "op": "resume",
            "as": self.caller(body)?,
            "answer": answer,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        let reply = self.client.call(request).await?;
        self.expect_call(reply, body, &run_id, &["code", "reason", "field"])
            .await
    }

    async fn watch(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "run_id",
                "after_sequence",
                "expect",
                "expect_error",
                "as",
                "timeout_ms",
            ],
        )?;
        let run_id = self.string(body, "run_id")?;
        let request = json!({
            "op": "watch",
            "as": self.caller(body)?,
            "run_id": run_id,
            "after_sequence": self.optional_number(body, "after_sequence")?,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        let reply = self.client.call(request).await?;
        self.expect_call(reply, body, &run_id, &["code"]).await
    }

    /// Checks a server-streaming call's frames against the step's `expect` checks, then its end
    /// against `expect_error` (or the end with OK).
    async fn expect_call(
        &mut self,
        reply: Reply,
        body: &Map<String, Value>,
        run_id: &str,
        error_fields: &[&str],
    ) -> Outcome {
        if !body.contains_key("expect") && !body.contains_key("expect_error") {
            return Err("give expect, expect_error or both".into());
        }
        let mut recorded = VecDeque::new();
        match reply {
            Reply::Error(status) => recorded.push_back(Next::Failed(status)),
            Reply::Ok(ok) => {
                for frame in message::items(&ok, "frames") {
                    let frame = normalize(frame.clone());
                    if frame_event(&frame)?.0 != "heartbeat" {
                        recorded.push_back(Next::Frame(frame));
                    }
                }
                match ok.get("error") {
                    None | Some(Value::Null) => recorded.push_back(Next::End),
                    Some(status) => recorded.push_back(Next::Failed(Status::from_json(status)?)),
                }
            }
        }
        let mut source = Source::Recorded(recorded);
        let checks = match body.get("expect") {
            None => &[][..],
            Some(checks) => checks
                .as_array()
                .ok_or("expect must be an array")?
                .as_slice(),
        };
        for (index, check) in checks.iter().enumerate() {
            let check = check.as_object().ok_or("a check is an object")?;
            self.expect(&mut source, run_id, check)
                .await
                .map_err(|error| format!("check {}: {error}", index + 1))?;
        }
        match body.get("expect_error") {
            None => self.expect_end(&mut source).await,
            Some(want) => match self.next(&mut source).await? {
                Next::Failed(status) => self.expect_status(&status, want, error_fields),
                Next::Frame(frame) => Err(format!("expected an error, got {frame}")),
                Next::End => Err("expected an error, the stream ended with OK".into()),
            },
        }
    }

    /// The per-run tools of a `start` step, as the protocol writes them.
    fn run_tools(&self, tools: Option<&Value>) -> Outcome<Vec<Value>> {
        let Some(tools) = tools else {
            return Ok(Vec::new());
        };
        tools
            .as_array()
            .ok_or("tools must be an array")?
            .iter()
            .map(|tool| {
                let tool = fields(
                    tool,
                    &["name", "description", "parameters_json_schema", "approval"],
                )?;
                Ok(json!({
                    "name": self.string(tool, "name")?,
                    "description": self.string(tool, "description")?,
                    "parameters_json_schema": self.string(tool, "parameters_json_schema")?,
                    "approval": self.string(tool, "approval")?,
                }))
            })
            .collect()
    }
}
