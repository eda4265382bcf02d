//! The pending-calls feed and claims: `watch_pending`, `expect_pending`, `close_pending`, `claim`.

use serde_json::{Map, Value, json};

use super::{Reply, ScenarioRun, fields, name_of};
use crate::Outcome;
use crate::checks::{PENDING_KINDS, pending_field};
use crate::message::{self, normalize};

impl ScenarioRun<'_> {
    pub(super) async fn watch_pending(&mut self, body: &Value) -> Outcome {
        let body = fields(body, &["feed", "agent_ids", "tool_names", "kinds", "as"])?;
        let name = name_of(body, "feed")?;
        if self.feeds.contains_key(&name) {
            return Err(format!("feed {name:?} is already open"));
        }
        let request = json!({
            "op": "watch_pending",
            "feed": name,
            "as": self.caller(body)?,
            "agent_ids": self.optional_strings(body, "agent_ids")?,
            "tool_names": self.optional_strings(body, "tool_names")?,
            "kinds": self.optional_strings(body, "kinds")?,
        });
        let open_error = match self.client.call(request).await? {
            Reply::Ok(_) => None,
            Reply::Error(status) => Some(status),
        };
        self.feeds.insert(name, open_error);
        Ok(())
    }

    /// The next feed event that is not a heartbeat: its kind and fields.
    async fn next_pending(&mut self, name: &str) -> Outcome<(&'static str, Value)> {
        let open_error = self
            .feeds
            .get_mut(name)
            .ok_or_else(|| format!("no open feed {name:?}"))?
            .take();
        if let Some(status) = open_error {
            return Err(format!("the feed failed: {status}"));
        }
        loop {
            let ok = match self
                .client
                .call(json!({"op": "next_pending", "feed": name}))
                .await?
            {
                Reply::Error(status) => return Err(format!("the feed failed: {status}")),
                Reply::Ok(ok) => ok,
            };
            if ok.get("end") == Some(&Value::Bool(true)) {
                return Err("the feed ended".into());
            }
            let event = normalize(
                ok.get("event")
                    .cloned()
                    .ok_or_else(|| format!("next_pending returned neither event nor end: {ok}"))?,
            );
            let (kind, fields) = message::one_of(&event, &PENDING_KINDS)?;
            if kind != "heartbeat" {
                return Ok((kind, fields.clone()));
            }
        }
    }

    /// Reads the feed until an event matches the check's kind (and run), as the README says.
    pub(super) async fn expect_pending(&mut self, body: &Value) -> Outcome {
        let mut check = body.as_object().cloned().ok_or("a check is an object")?;
        let name = name_of(&check, "feed")?;
        check.remove("feed");
        let kind = self.string(&check, "kind")?;
        let run_id = check
            .contains_key("run_id")
            .then(|| self.string(&check, "run_id"))
            .transpose()?;
        // Calls the snapshot must not hold; checked on every event read up to the snapshot's end.
        let absent = match check.remove("absent") {
            None => Vec::new(),
            Some(_) if kind != "snapshot_done" => {
                return Err("absent goes with a snapshot_done check".into());
            }
            Some(ids) => self.strings(&ids, "absent")?,
        };
        loop {
            let (actual_kind, event) = self.next_pending(&name).await?;
            if actual_kind == "call_pending"
                && let Some(Value::String(id)) = pending_field(actual_kind, &event, "tool_call_id")
                && absent.contains(&id)
            {
                return Err(format!("the snapshot holds an absent call: {event}"));
            }
            let this_run = match (&run_id, pending_field(actual_kind, &event, "run_id")) {
                (Some(want), Some(Value::String(actual))) => *want == actual,
                (Some(_), _) => false,
                (None, _) => true,
            };
            if actual_kind != kind || !this_run {
                if run_id.is_some() && this_run {
                    return Err(format!("expected {kind}, got {actual_kind} {event}"));
                }
                continue;
            }
            return self.check_pending(actual_kind, &event, &check);
        }
    }

    fn check_pending(&mut self, kind: &str, event: &Value, check: &Map<String, Value>) -> Outcome {
        for (field, want) in check {
            match field.as_str() {
                "kind" => {}
                "save" => {
                    let name = want.as_str().ok_or("save names a value")?;
                    let Some(Value::String(id)) = pending_field(kind, event, "tool_call_id") else {
                        return Err("save needs an event with a tool_call_id".into());
                    };
                    self.saved.insert(name.into(), id);
                }
                _ => {
                    let actual = pending_field(kind, event, field)
                        .ok_or_else(|| format!("{kind} events have no field {field:?}"))?;
                    let want = self.resolve(want)?;
                    if actual != want {
                        return Err(format!("{field}: expected {want}, got {actual} in {event}"));
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) async fn claim(&mut self, body: &Value) -> Outcome {
        let body = fields(
            body,
            &[
                "run_id",
                "tool_call_id",
                "claimant",
                "ttl_ms",
                "expect_error",
                "as",
            ],
        )?;
        let request = json!({
            "op": "claim",
            "as": self.caller(body)?,
            "run_id": self.string(body, "run_id")?,
            "tool_call_id": self.string(body, "tool_call_id")?,
            "claimant": self.string(body, "claimant")?,
            "ttl_ms": self.optional_number(body, "ttl_ms")?,
        });
        let reply = self.client.call(request).await?;
        self.unary(reply, body, "ClaimCall", &["code", "reason"])
            .map(drop)
    }
}
