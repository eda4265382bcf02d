//! The unary steps: `get_run`, `cancel`, `ask_user`.

use serde_json::{Map, Value, json};

use super::{Reply, ScenarioRun, fields};
use crate::Outcome;
use crate::message::{self, normalize};

impl ScenarioRun<'_> {
    /// A unary call's result, or its failure checked against the step's `expect_error`; `None`
    /// when the call failed as expected.
    pub(super) fn unary(
        &self,
        reply: Reply,
        body: &Map<String, Value>,
        what: &str,
        error_fields: &[&str],
    ) -> Outcome<Option<Value>> {
        match (reply, body.get("expect_error")) {
            (Reply::Ok(ok), None) => Ok(Some(ok)),
            (Reply::Error(status), Some(want)) => self
                .expect_status(&status, want, error_fields)
                .map(|()| None),
            (Reply::Ok(ok), Some(_)) => Err(format!("expected {what} to fail, got {ok}")),
            (Reply::Error(status), None) => Err(format!("{what} failed: {status}")),
        }
    }

    pub(super) async fn get_run(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "run_id",
                "status",
                "pending",
                "output_text",
                "last_sequence",
                "expect_error",
                "as",
                "timeout_ms",
            ],
        )?;
        let request = json!({
            "op": "get_run",
            "as": self.caller(body)?,
            "run_id": self.string(body, "run_id")?,
            "timeout_ms": self.optional_number(body, "timeout_ms")?,
        });
        let reply = self.client.call(request).await?;
        let Some(ok) = self.unary(reply, body, "GetRun", &["code"])? else {
            return Ok(());
        };
        let run = normalize(ok.get("run").cloned().ok_or("get_run returned no run")?);
        if body.contains_key("status") {
            let want = self.string(body, "status")?;
            let actual = message::enum_name(&run, "status", "RUN_STATUS");
            if actual != want {
                return Err(format!("expected status {want}, got {run}"));
            }
        }
        if let Some(pending) = body.get("pending") {
            let want = self.strings(pending, "pending")?;
            let actual: Vec<String> = message::items(&run, "pending_tool_calls")
                .iter()
                .map(|call| message::text(call, "tool_call_id"))
                .collect();
            if actual != want {
                return Err(format!("expected pending {want:?}, got {run}"));
            }
        }
        if body.contains_key("output_text") {
            let want = self.string(body, "output_text")?;
            if message::text(&run, "output_text") != want {
                return Err(format!("expected output_text {want:?}, got {run}"));
            }
        }
        if let Some(value) = body.get("last_sequence") {
            let want = self.number(value, "last_sequence")?;
            if message::number(&run, "last_sequence")? != want {
                return Err(format!("expected last_sequence {want}, got {run}"));
            }
        }
        Ok(())
    }

    pub(super) async fn cancel(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["run_id", "reason", "expect_error", "as"])?;
        let request = json!({
            "op": "cancel",
            "as": self.caller(body)?,
            "run_id": self.string(body, "run_id")?,
            "reason": self.string(body, "reason")?,
        });
        let reply = self.client.call(request).await?;
        let Some(ok) = self.unary(reply, body, "CancelRun", &["code", "reason"])? else {
            return Ok(());
        };
        let run = normalize(ok.get("run").cloned().ok_or("cancel returned no run")?);
        match message::enum_name(&run, "status", "RUN_STATUS").as_str() {
            "RUN_STATUS_CANCELLED" => Ok(()),
            _ => Err(format!("expected a cancelled run, got {run}")),
        }
    }

    pub(super) async fn ask_user(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["input", "content", "expect_error", "as"])?;
        let input = fields(
            body.get("input").ok_or("ask_user needs input")?,
            &["question", "options", "selection_mode"],
        )?;
        let options = match input.get("options") {
            None => Vec::new(),
            Some(Value::Array(options)) => options
                .iter()
                .map(|option| {
                    let option = fields(option, &["label", "description"])?;
                    Ok(json!({
                        "label": self.string(option, "label")?,
                        "description": self.string(option, "description")?,
                    }))
                })
                .collect::<Outcome<_>>()?,
            Some(other) => return Err(format!("options must be an array, got {other}")),
        };
        let mut request_input =
            json!({"question": self.string(input, "question")?, "options": options});
        if input.contains_key("selection_mode") {
            request_input["selection_mode"] = Value::String(self.string(input, "selection_mode")?);
        }
        let request = json!({"op": "ask_user", "as": self.caller(body)?, "input": request_input});
        let reply = self.client.call(request).await?;
        let Some(ok) = self.unary(reply, body, "AskUser", &["code", "fields"])? else {
            return Ok(());
        };
        let want = self.string(body, "content")?;
        let content = message::text(&ok, "content");
        if content == want {
            Ok(())
        } else {
            Err(format!("expected content {want:?}, got {content:?}"))
        }
    }
}
