//! `ListRuns` page tokens: opaque to clients, and bound to the listing they were made for, so that
//! a token of another filter, or garbage, is refused rather than silently reinterpreted.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::ask_user::Violation;
use crate::domain::RunStatus;

/// What a token holds: where the next page starts, and the filter of its listing.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Token {
    /// The next page lists runs with an id below this one.
    before: String,
    status: Option<RunStatus>,
    agent_id: Option<String>,
}

/// The token of the page after `last_run_id` in the listing of `status` and `agent_id`.
pub fn encode(status: Option<RunStatus>, agent_id: Option<&str>, last_run_id: &str) -> String {
    let token = Token {
        before: last_run_id.to_owned(),
        status,
        agent_id: agent_id.map(str::to_owned),
    };
    // Serializing a struct of strings cannot fail.
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// Where the page of `text` starts, if it is a token of this listing.
pub fn decode(
    text: &str,
    status: Option<RunStatus>,
    agent_id: Option<&str>,
) -> Result<String, Violation> {
    let invalid = |why: &str| Violation::new("page_token", why);
    let token: Token = URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| invalid("page_token is not a token this server made"))?;
    if token.status != status || token.agent_id.as_deref() != agent_id {
        return Err(invalid(
            "page_token belongs to a listing with another status or agent filter",
        ));
    }
    Ok(token.before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_within_its_listing_only() {
        let token = encode(Some(RunStatus::Suspended), Some("deployer"), "run-9");
        assert_eq!(
            decode(&token, Some(RunStatus::Suspended), Some("deployer")),
            Ok("run-9".to_owned())
        );
        assert!(decode(&token, None, Some("deployer")).is_err());
        assert!(decode(&token, Some(RunStatus::Suspended), None).is_err());
        assert!(decode("run-9", None, None).is_err());
        assert!(decode("!!!", None, None).is_err());
    }
}
