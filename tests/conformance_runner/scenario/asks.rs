//! The steps of `HumanService.Ask` through the client's own call: `ask` (the request exists and its
//! call waits) and `ask_result` (the typed outcome once it is settled).

use serde_json::{Map, Value, json};

use super::{ScenarioRun, fields};
use crate::Outcome;
use crate::message;

impl ScenarioRun<'_> {
    pub(super) async fn ask(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "ask",
                "as",
                "request_id",
                "context",
                "ttl_ms",
                "timeout_ms",
                "question",
                "form",
                "approval",
                "save_run",
                "save_call",
                "run_id",
                "tool_call_id",
                "expect_error",
            ],
        )?;
        let calls = ["question", "form", "approval"]
            .iter()
            .filter(|key| body.contains_key(**key))
            .count();
        if calls != 1 {
            return Err("an ask step gives exactly one of question, form, approval".into());
        }
        let mut request = json!({
            "op": "ask",
            "ask": super::name_of(body, "ask")?,
            "as": self.caller(body)?,
            // Each run of the scenario asks its own requests.
            "request_id": format!("{}-{}", self.request_prefix, self.string(body, "request_id")?),
            "context": self.string(body, "context")?,
            "ttl_ms": self.optional_number(body, "ttl_ms")?,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        for key in ["question", "form", "approval"] {
            if let Some(call) = body.get(key) {
                request[key] = call.clone();
            }
        }
        let reply = self.client.call(request).await?;
        let Some(ok) = self.unary(reply, body, "ask", &["code", "reason", "field"])? else {
            return Ok(());
        };
        let run_id = message::text(&ok, "run_id");
        let tool_call_id = message::text(&ok, "tool_call_id");
        if run_id.is_empty() || tool_call_id.is_empty() {
            return Err(format!("ask returned no run_id or tool_call_id: {ok}"));
        }
        for (key, got) in [("run_id", &run_id), ("tool_call_id", &tool_call_id)] {
            if body.contains_key(key) {
                let want = self.string(body, key)?;
                if &want != got {
                    return Err(format!("ask: {key} is {got:?}, expected {want:?}"));
                }
            }
        }
        for (key, got) in [("save_run", run_id), ("save_call", tool_call_id)] {
            if let Some(name) = body.get(key) {
                let name = name.as_str().ok_or("save_run / save_call name a value")?;
                self.saved.insert(name.to_owned(), got);
            }
        }
        Ok(())
    }

    pub(super) async fn ask_result(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["ask", "timeout_ms", "outcome", "expect_error"])?;
        let request = json!({
            "op": "ask_result",
            "ask": super::name_of(body, "ask")?,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        let reply = self.client.call(request).await?;
        let Some(ok) = self.unary(reply, body, "ask_result", &["code", "reason", "field"])? else {
            return Ok(());
        };
        let got = ok.get("outcome").ok_or("ask_result returned no outcome")?;
        let want = body
            .get("outcome")
            .and_then(Value::as_object)
            .ok_or("an ask_result step gives outcome or expect_error")?;
        check_outcome(got, want)
    }
}

/// Compares each key the step gives; `kind` is always given. A form's numbers compare as numbers
/// (3 and 3.0 are one value).
fn check_outcome(got: &Value, want: &Map<String, Value>) -> Outcome {
    if !want.contains_key("kind") {
        return Err("an outcome to expect names its kind".into());
    }
    for (key, want_value) in want {
        let got_value = got.get(key).unwrap_or(&Value::Null);
        if !same(got_value, want_value) {
            return Err(format!(
                "outcome {key} is {got_value}, expected {want_value} (outcome {got})"
            ));
        }
    }
    Ok(())
}

fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Object(a), Value::Object(b)) => {
            // A choice's empty `other` may be left out.
            let keys = a.keys().chain(b.keys());
            keys.into_iter().all(|key| {
                let (x, y) = (a.get(key), b.get(key));
                match (x, y) {
                    (Some(x), Some(y)) => same(x, y),
                    (Some(v), None) | (None, Some(v)) => v == &json!("") || v.is_null(),
                    (None, None) => true,
                }
            })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        _ => got == want,
    }
}
