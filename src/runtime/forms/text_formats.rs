//! The formats a text field may require (email, URI, date, date-time), checked by the
//! `jsonschema` crate's format validators rather than by hand.

use std::sync::LazyLock;

use jsonschema::Validator;
use serde_json::{Value, json};

use crate::domain::TextFormat;

fn validator(format: &str) -> Option<Validator> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(&json!({ "type": "string", "format": format }))
        .ok()
}

static EMAIL: LazyLock<Option<Validator>> = LazyLock::new(|| validator("email"));
static URI: LazyLock<Option<Validator>> = LazyLock::new(|| validator("uri"));
static DATE: LazyLock<Option<Validator>> = LazyLock::new(|| validator("date"));
static DATE_TIME: LazyLock<Option<Validator>> = LazyLock::new(|| validator("date-time"));

/// Whether `text` has the shape `format` requires: an e-mail address, an absolute URI (RFC 3986),
/// a full date or a date-time with its offset (RFC 3339).
pub fn fits(format: TextFormat, text: &str) -> bool {
    let validator = match format {
        TextFormat::Email => &EMAIL,
        TextFormat::Uri => &URI,
        TextFormat::Date => &DATE,
        TextFormat::DateTime => &DATE_TIME,
    };
    // The validators are built from constant schemas; one that could not be built accepts nothing.
    validator
        .as_ref()
        .is_some_and(|validator| validator.is_valid(&Value::String(text.to_owned())))
}

/// What a value of `format` looks like, for messages.
pub fn example(format: TextFormat) -> &'static str {
    match format {
        TextFormat::Email => "an e-mail address like name@example.com",
        TextFormat::Uri => "an absolute URI like https://example.com/path",
        TextFormat::Date => "a date like 2026-12-02",
        TextFormat::DateTime => "a date-time like 2026-12-02T10:00:00Z",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_their_shape_only() {
        assert!(fits(TextFormat::Email, "ops@example.com"));
        assert!(!fits(TextFormat::Email, "ops at example"));
        assert!(fits(TextFormat::Uri, "https://example.com/a?b=c"));
        assert!(!fits(TextFormat::Uri, "example.com/no scheme"));
        assert!(fits(TextFormat::Date, "2026-12-02"));
        assert!(!fits(TextFormat::Date, "2026-13-02"));
        assert!(!fits(TextFormat::Date, "02/12/2026"));
        assert!(fits(TextFormat::DateTime, "2026-12-02T10:00:00+01:00"));
        assert!(!fits(TextFormat::DateTime, "2026-12-02 10:00"));
    }
}
