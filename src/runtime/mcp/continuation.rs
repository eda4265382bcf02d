//! What an MCP call goes on with after it asked a person for input (a multi round-trip request of
//! the 2026-07-28 revision): the server's request state to echo, its input requests and the
//! answers so far. Kept with the call in the store, so any replica can go on after a restart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Rounds of input one call may ask for, as the SDK bounds them.
pub const MAX_ROUNDS: u32 = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS as u32;

/// The key of a live call's one input request.
const LIVE_KEY: &str = "live";

/// The largest request state kept (it is stored with the call and sent back).
pub const MAX_REQUEST_STATE_BYTES: usize = 64 * 1024;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Continuation {
    /// The server's opaque state, echoed as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Input requests by key: each an `elicitation/create` request's params.
    pub requests: BTreeMap<String, Value>,
    /// Answers by key: each an elicitation result (`{"action": ..., "content": ...}`).
    #[serde(default)]
    pub responses: BTreeMap<String, Value>,
    /// Which round of input this is (1 for the first).
    pub round: u32,
    /// The input was asked within the live call (`elicitation/create`, before the 2026-07-28
    /// revision): the process holding that call hands the answer over; any other (after a
    /// restart) makes the call again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
}

impl Continuation {
    /// A live call's input request.
    pub fn live(params: Value) -> Self {
        Continuation {
            requests: [(LIVE_KEY.to_owned(), params)].into(),
            round: 1,
            live: true,
            ..Continuation::default()
        }
    }

    /// The answer to a live call's input request, once given.
    pub fn live_answer(&self) -> Option<&Value> {
        self.responses.get(LIVE_KEY)
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("a stored MCP continuation: {e}"))
    }

    pub fn to_text(&self) -> String {
        // A struct of strings and JSON values always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The request that waits for a person next: the first without an answer.
    pub fn next_request(&self) -> Option<(&str, &Value)> {
        self.requests
            .iter()
            .find(|(key, _)| !self.responses.contains_key(*key))
            .map(|(key, request)| (key.as_str(), request))
    }

    /// With `response` as the answer to the request that waited.
    pub fn answered(mut self, response: Value) -> Self {
        if let Some(key) = self.next_request().map(|(key, _)| key.to_owned()) {
            self.responses.insert(key, response);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_answered_one_at_a_time_and_survive_the_store() {
        let continuation = Continuation {
            request_state: Some("sealed".into()),
            requests: [
                ("a".to_owned(), json!({"message": "first"})),
                ("b".to_owned(), json!({"message": "second"})),
            ]
            .into(),
            responses: BTreeMap::new(),
            round: 1,
            live: false,
        };
        let stored = Continuation::parse(&continuation.to_text()).expect("parses");
        assert_eq!(stored, continuation);
        assert_eq!(stored.next_request().map(|(k, _)| k), Some("a"));
        let once = stored.answered(json!({"action": "decline"}));
        assert_eq!(once.next_request().map(|(k, _)| k), Some("b"));
        let twice = once.answered(json!({"action": "cancel"}));
        assert_eq!(twice.next_request(), None);
        assert_eq!(twice.responses["a"], json!({"action": "decline"}));
        assert_eq!(twice.responses["b"], json!({"action": "cancel"}));
    }
}
