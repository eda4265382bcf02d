//! A text field's `pattern`: compiled by the `regex` crate, whose matching is linear in the text
//! (no look-around, no back-references), with a bounded compiled size, and kept compiled for the
//! answers that follow.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use regex::{Regex, RegexBuilder};

/// The most compiled memory one pattern may take.
const SIZE_LIMIT: usize = 1 << 20;
/// Patterns kept compiled; past it the cache starts again (patterns are few in practice).
const KEPT: usize = 256;

static COMPILED: LazyLock<Mutex<HashMap<String, Arc<Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// `pattern` compiled to match a whole value (as JSON Schema's `pattern` is anchored by
/// convention in forms), or why it cannot be.
pub fn compile(pattern: &str) -> Result<Arc<Regex>, String> {
    if let Some(regex) = COMPILED
        .lock()
        .ok()
        .and_then(|compiled| compiled.get(pattern).cloned())
    {
        return Ok(regex);
    }
    let regex = RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .map(Arc::new)
        .map_err(|error| match error {
            regex::Error::CompiledTooBig(_) => "it is too big once compiled".to_owned(),
            // The syntax error's own text spans several lines with a caret; its last line says what.
            other => other
                .to_string()
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("invalid syntax")
                .trim()
                .trim_start_matches("error: ")
                .to_owned(),
        })?;
    if let Ok(mut compiled) = COMPILED.lock() {
        if compiled.len() >= KEPT {
            compiled.clear();
        }
        compiled.insert(pattern.to_owned(), Arc::clone(&regex));
    }
    Ok(regex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_values_and_bad_ones_say_why() {
        let version = compile(r"\d+\.\d+\.\d+").expect("compiles");
        assert!(version.is_match("1.2.3"));
        assert!(!version.is_match("v1.2.3"));
        assert!(!version.is_match("1.2.3-rc"));
        let error = compile(r"(a").expect_err("unclosed group");
        assert!(error.contains("unclosed"), "{error}");
        // Back-references would need backtracking: refused, not run.
        assert!(compile(r"(a)\1").is_err());
        assert!(compile(r"a{100000}{100000}").is_err());
    }
}
