//! `ListRuns` page tokens: opaque to clients, and bound to the listing they were made for, so that
//! a token of another filter, or garbage, is refused rather than silently reinterpreted.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ask_user::Violation;
use crate::store::RunFilter;

/// What a token holds: where the next page starts, and the filter of its listing.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Token {
    /// The next page lists runs with an id below this one.
    before: String,
    /// The listing's filter, hashed: a token stays short however many metadata entries the
    /// filter names.
    filter: String,
}

/// The SHA-256 (hex) of a filter's JSON.
fn digest(filter: &RunFilter) -> String {
    // Serializing a struct of strings and numbers cannot fail.
    let json = serde_json::to_vec(filter).unwrap_or_default();
    Sha256::digest(json)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The token of the page after `last_run_id` in the listing of `filter`.
pub fn encode(filter: &RunFilter, last_run_id: &str) -> String {
    let token = Token {
        before: last_run_id.to_owned(),
        filter: digest(filter),
    };
    // Serializing a struct of strings and numbers cannot fail.
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// Where the page of `text` starts, if it is a token of this listing.
pub fn decode(text: &str, filter: &RunFilter) -> Result<String, Violation> {
    let invalid = |why: &str| Violation::new("page_token", why);
    let token: Token = URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| invalid("page_token is not a token this server made"))?;
    if token.filter != digest(filter) {
        return Err(invalid(
            "page_token belongs to a listing with other filters",
        ));
    }
    Ok(token.before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{RunStatus, SuspendKind};

    /// The filter of a status and an agent.
    pub(super) fn of(status: Option<RunStatus>, agent_id: Option<String>) -> RunFilter {
        RunFilter {
            status,
            agent_id,
            ..RunFilter::default()
        }
    }

    #[test]
    fn a_token_round_trips_within_its_listing_only() {
        let filter = RunFilter {
            metadata: [("team".to_owned(), "storage".to_owned())].into(),
            created_after_ms: Some(1),
            pending_kind: Some(SuspendKind::Approval),
            ..of(Some(RunStatus::Suspended), Some("deployer".into()))
        };
        let token = encode(&filter, "run-9");
        assert_eq!(decode(&token, &filter), Ok("run-9".to_owned()));
        assert!(decode(&token, &of(None, Some("deployer".into()))).is_err());
        assert!(decode(&token, &of(Some(RunStatus::Suspended), None)).is_err());
        let other_metadata = RunFilter {
            metadata: [("team".to_owned(), "compute".to_owned())].into(),
            ..filter.clone()
        };
        assert!(decode(&token, &other_metadata).is_err());
        let other_time = RunFilter {
            created_after_ms: Some(2),
            ..filter.clone()
        };
        assert!(decode(&token, &other_time).is_err());
        let other_kind = RunFilter {
            pending_kind: None,
            ..filter
        };
        assert!(decode(&token, &other_kind).is_err());
        assert!(decode("run-9", &RunFilter::default()).is_err());
        assert!(decode("!!!", &RunFilter::default()).is_err());
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::{decode, encode};
        use super::of;
        use crate::domain::RunStatus;

        fn status() -> impl Strategy<Value = Option<RunStatus>> {
            prop_oneof![
                Just(None),
                Just(Some(RunStatus::Running)),
                Just(Some(RunStatus::Suspended)),
                Just(Some(RunStatus::Completed)),
                Just(Some(RunStatus::Failed)),
                Just(Some(RunStatus::Cancelled)),
            ]
        }

        /// A listing's filter; agent ids from a tiny alphabet, so that filters often nearly match.
        fn filter() -> impl Strategy<Value = (Option<RunStatus>, Option<String>)> {
            (
                status(),
                prop::option::of(prop_oneof!["[ab\"\\\\]{0,3}", "\\PC{0,8}"]),
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2048))]

            #[test]
            fn a_token_round_trips_within_its_filter_only(
                (status, agent) in filter(),
                (other_status, other_agent) in filter(),
                run_id in "\\PC{0,40}",
            ) {
                let token = encode(&of(status, agent.clone()), &run_id);
                prop_assert_eq!(decode(&token, &of(status, agent.clone())), Ok(run_id));
                let same = other_status == status && other_agent == agent;
                prop_assert_eq!(decode(&token, &of(other_status, other_agent)).is_ok(), same);
            }

            /// A mutated token is refused, or it is a token of exactly one listing: no text is
            /// taken by two different filters.
            #[test]
            fn a_mutated_token_is_refused_or_belongs_to_one_filter(
                (status, agent) in filter(),
                run_id in "[a-f0-9-]{0,36}",
                edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
                filters in prop::collection::vec(filter(), 1..6),
            ) {
                let mut bytes = encode(&of(status, agent.clone()), &run_id).into_bytes();
                for (at, byte, kind) in edits {
                    match kind {
                        0 if !bytes.is_empty() => { let i = at.index(bytes.len()); bytes[i] = byte; }
                        1 if !bytes.is_empty() => { bytes.remove(at.index(bytes.len())); }
                        _ => bytes.insert(at.index(bytes.len() + 1), byte),
                    }
                }
                let text = String::from_utf8_lossy(&bytes);
                let mut accepted_by = Vec::new();
                for (status, agent) in filters.iter().chain([&(status, agent.clone())]) {
                    let filter = (*status, agent.clone());
                    if decode(&text, &of(*status, agent.clone())).is_ok() && !accepted_by.contains(&filter) {
                        accepted_by.push(filter);
                    }
                }
                prop_assert!(accepted_by.len() <= 1, "{:?} taken by {:?}", text, accepted_by);
            }

            #[test]
            fn garbage_is_refused_naming_the_field((status, agent) in filter(), text in "\\PC{0,64}") {
                // Base64 of a JSON object with `before` and `filter` is no garbage.
                prop_assume!(!text.starts_with("ey"));
                let refused = decode(&text, &of(status, agent)).expect_err("garbage refused");
                prop_assert_eq!(refused.field, "page_token");
            }
        }
    }
}
