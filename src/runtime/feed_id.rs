//! A run's or a call's id as a pending-calls feed records it. A feed notes every call it sends,
//! 100,000 of them in a large snapshot, so the ids the server makes are kept in 16 bytes inline:
//! no allocation per id, and growing the feed's map rehashes ids held in the map itself rather
//! than one behind a pointer each (a cache miss apiece, a tenth of a snapshot's server time in a
//! profile). Any other id (a model's call id, a run id from elsewhere) is kept as it is.

use std::fmt;

/// An id as a feed records it. Each string has exactly one form (only the server's own lowercase
/// spellings are packed), so two ids are equal exactly when their strings are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum FeedId {
    /// A run id as the server makes it: a UUID, hyphenated, lowercase.
    Run([u8; 16]),
    /// A call id as the server makes it: `call_` then a UUID's 32 lowercase hex digits.
    Call([u8; 16]),
    /// Any other id.
    Other(Box<str>),
}

/// The prefix of the call ids the server makes.
const CALL_PREFIX: &str = "call_";

impl FeedId {
    /// The id of `id`.
    pub(super) fn of(id: &str) -> Self {
        if let Some(bytes) = hyphenated_uuid(id) {
            FeedId::Run(bytes)
        } else if let Some(bytes) = id.strip_prefix(CALL_PREFIX).and_then(simple_uuid) {
            FeedId::Call(bytes)
        } else {
            FeedId::Other(Box::from(id))
        }
    }

    /// Whether this is the id `id`, without keeping `id`.
    pub(super) fn is(&self, id: &str) -> bool {
        match self {
            FeedId::Run(bytes) => hyphenated_uuid(id).as_ref() == Some(bytes),
            FeedId::Call(bytes) => {
                id.strip_prefix(CALL_PREFIX).and_then(simple_uuid).as_ref() == Some(bytes)
            }
            FeedId::Other(other) => **other == *id,
        }
    }
}

impl fmt::Display for FeedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedId::Run(bytes) => uuid::Uuid::from_bytes(*bytes).hyphenated().fmt(f),
            FeedId::Call(bytes) => {
                write!(
                    f,
                    "{CALL_PREFIX}{}",
                    uuid::Uuid::from_bytes(*bytes).simple()
                )
            }
            FeedId::Other(other) => f.write_str(other),
        }
    }
}

/// The bytes of a UUID spelt as `uuid` spells one hyphenated: 8-4-4-4-12 lowercase hex digits.
fn hyphenated_uuid(id: &str) -> Option<[u8; 16]> {
    let uuid = uuid::Uuid::try_parse(id).ok()?;
    let spelt = uuid
        .hyphenated()
        .encode_lower(&mut uuid::Uuid::encode_buffer())
        == id;
    spelt.then(|| uuid.into_bytes())
}

/// The bytes of a UUID spelt as `uuid` spells one simple: 32 lowercase hex digits.
fn simple_uuid(id: &str) -> Option<[u8; 16]> {
    let uuid = uuid::Uuid::try_parse(id).ok()?;
    let spelt = uuid.simple().encode_lower(&mut uuid::Uuid::encode_buffer()) == id;
    spelt.then(|| uuid.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_ids_are_packed_and_read_back_as_they_were() {
        let run = uuid::Uuid::now_v7().to_string();
        let call = format!("call_{}", uuid::Uuid::now_v7().simple());
        for (id, packed) in [(&run, true), (&call, true)] {
            let feed_id = FeedId::of(id);
            assert_eq!(matches!(feed_id, FeedId::Other(_)), !packed, "{id}");
            assert_eq!(feed_id.to_string(), *id);
            assert!(feed_id.is(id));
        }
        assert!(matches!(FeedId::of(&run), FeedId::Run(_)));
        assert!(matches!(FeedId::of(&call), FeedId::Call(_)));
    }

    #[test]
    fn other_spellings_stay_as_they_are_and_never_equal_a_packed_id() {
        let uuid = uuid::Uuid::now_v7();
        let run = uuid.to_string();
        let others = [
            run.to_uppercase(),
            uuid.simple().to_string(),
            format!("{{{run}}}"),
            format!("call_{}", uuid.simple().to_string().to_uppercase()),
            format!("call_{run}"),
            format!("call_{}0", uuid.simple()),
            format!("{}x", &run[..35]),
            "toolu_01A09q90qw90lq917835lq9".to_owned(),
            String::new(),
        ];
        for other in &others {
            let feed_id = FeedId::of(other);
            assert_eq!(feed_id, FeedId::Other(Box::from(other.as_str())), "{other}");
            assert_eq!(feed_id.to_string(), *other);
            assert!(feed_id.is(other));
            assert!(!FeedId::of(&run).is(other), "{other}");
            assert_ne!(feed_id, FeedId::of(&run));
        }
        let next = uuid::Uuid::now_v7().to_string();
        assert_ne!(FeedId::of(&run), FeedId::of(&next));
        assert!(!FeedId::of(&run).is(&next));
    }
}
