//! Parsers of flag values that more than one command takes; a leaf, so that the terminal client
//! can use them without the rest of the configuration.

use std::time::Duration;

pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| e.to_string())
}

/// A duration that must be more than zero (a zero interval would spin, a zero TTL expire at once).
pub(crate) fn positive_duration(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        value if value.is_zero() => Err("must be more than 0".into()),
        value => Ok(value),
    }
}

/// A fraction of a time to live: more than 0, less than 1.
pub(crate) fn ttl_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>().map_err(|e| e.to_string())? {
        value if value > 0.0 && value < 1.0 => Ok(value),
        _ => Err("must be more than 0 and less than 1".into()),
    }
}

/// A 32-bit count that must be at least 1.
pub(crate) fn positive_u32(text: &str) -> Result<u32, String> {
    u32::try_from(positive(text)?).map_err(|e| e.to_string())
}

/// A count or size that must be at least 1.
pub(crate) fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>().map_err(|e| e.to_string())? {
        0 => Err("must be at least 1".into()),
        value => Ok(value),
    }
}

/// Header name → the environment variable holding its value (a `headers_env` table), read now;
/// the error names a variable that is unset or empty (never a value).
pub(crate) fn headers_from_env(
    headers_env: std::collections::BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, String> {
    headers_env
        .into_iter()
        .map(|(header, variable)| {
            std::env::var(&variable)
                .ok()
                .filter(|value| !value.is_empty())
                .map(|value| (header.clone(), value))
                .ok_or_else(|| {
                    format!("headers_env: the environment variable {variable} (header {header}) is not set or empty")
                })
        })
        .collect()
}
