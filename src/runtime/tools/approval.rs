//! When a tool call must wait for a person's approval: never, always, or when a CEL condition over
//! the call's arguments and the run's metadata holds. The server evaluates it on the validated
//! arguments; the model is never asked.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// A tool's approval policy.
#[derive(Clone, Debug, Default)]
pub enum ApprovalPolicy {
    #[default]
    Never,
    Always,
    When(Condition),
}

/// A compiled CEL condition, with the text it was written as.
#[derive(Clone)]
pub struct Condition {
    source: String,
    program: Arc<cel::Program>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Condition").field(&self.source).finish()
    }
}

/// How deep a condition may nest brackets. The CEL parser recurses through its whole grammar at
/// each level, and a dozen levels overflowed a 2 MiB thread stack (an abort, not an error), so
/// deeper nesting is refused before it is parsed. Brackets in string literals count too: simpler,
/// and it errs on the side of refusing.
pub const MAX_CONDITION_NESTING: usize = 8;

/// The deepest nesting of `()`, `[]` and `{}` in `text`.
fn nesting(text: &str) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0;
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The reason shown on an approval that every call needs.
pub const ALWAYS: &str = "always";

impl ApprovalPolicy {
    /// Parses `never`, `always`, or a CEL expression; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "" | "never" => Ok(ApprovalPolicy::Never),
            "always" => Ok(ApprovalPolicy::Always),
            source if nesting(source) > MAX_CONDITION_NESTING => Err(format!(
                "the condition nests brackets {} deep; the limit is {MAX_CONDITION_NESTING}",
                nesting(source)
            )),
            source => {
                let program = cel::Program::compile(source).map_err(|e| e.to_string())?;
                Ok(ApprovalPolicy::When(Condition {
                    source: source.to_owned(),
                    program: Arc::new(program),
                }))
            }
        }
    }

    /// The CEL source of a conditional policy.
    pub fn condition(&self) -> Option<&str> {
        match self {
            ApprovalPolicy::When(condition) => Some(&condition.source),
            _ => None,
        }
    }

    /// Why the call must wait for approval, or `None` when it need not. A condition that cannot be
    /// evaluated (an error, or a result that is not a boolean) asks for approval: the policy fails
    /// closed.
    pub fn required(&self, args: &Value, metadata: &BTreeMap<String, String>) -> Option<String> {
        match self {
            ApprovalPolicy::Never => None,
            ApprovalPolicy::Always => Some(ALWAYS.to_owned()),
            ApprovalPolicy::When(condition) => match condition.evaluate(args, metadata) {
                Ok(false) => None,
                Ok(true) => Some(condition.source.clone()),
                Err(error) => Some(format!(
                    "{} (could not be evaluated: {error})",
                    condition.source
                )),
            },
        }
    }
}

impl Condition {
    fn evaluate(&self, args: &Value, metadata: &BTreeMap<String, String>) -> Result<bool, String> {
        let mut context = cel::Context::default();
        context
            .add_variable("args", args)
            .map_err(|e| e.to_string())?;
        context
            .add_variable("run", serde_json::json!({ "metadata": metadata }))
            .map_err(|e| e.to_string())?;
        match self.program.execute(&context) {
            Ok(cel::Value::Bool(value)) => Ok(value),
            Ok(other) => Err(format!("the result is {other:?}, not a boolean")),
            Err(error) => Err(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_condition_decides_per_call() {
        let policy = ApprovalPolicy::parse(r#"args.environment == "production""#).expect("parses");
        let none = BTreeMap::new();
        assert_eq!(
            policy.required(&json!({"environment": "production"}), &none),
            Some(r#"args.environment == "production""#.to_owned())
        );
        assert_eq!(
            policy.required(&json!({"environment": "staging"}), &none),
            None
        );
    }

    #[test]
    fn metadata_is_visible_and_failures_ask_for_approval() {
        let policy = ApprovalPolicy::parse(r#"run.metadata.team != "sre""#).expect("parses");
        let sre = BTreeMap::from([("team".to_owned(), "sre".to_owned())]);
        assert_eq!(policy.required(&json!({}), &sre), None);
        let missing = ApprovalPolicy::parse("args.nothing_here > 3").expect("parses");
        assert!(missing.required(&json!({}), &sre).is_some());
        let not_bool = ApprovalPolicy::parse("1 + 1").expect("parses");
        assert!(not_bool.required(&json!({}), &sre).is_some());
    }

    /// Found by tests/fuzz_agents_file.rs: 12 nested brackets overflowed this 2 MiB test thread.
    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let nested = |depth: usize| format!("{}1{} == 1", "(".repeat(depth), ")".repeat(depth));
        assert!(ApprovalPolicy::parse(&nested(MAX_CONDITION_NESTING)).is_ok());
        let refused = ApprovalPolicy::parse(&nested(64)).expect_err("refused");
        assert!(refused.contains("the limit is 8"), "{refused}");
        assert!(
            ApprovalPolicy::parse(&format!("size({}1{}) == 1", "[".repeat(20), "]".repeat(20)))
                .is_err()
        );
    }

    #[test]
    fn keywords_and_bad_expressions() {
        assert!(matches!(
            ApprovalPolicy::parse("never"),
            Ok(ApprovalPolicy::Never)
        ));
        assert!(matches!(
            ApprovalPolicy::parse("always"),
            Ok(ApprovalPolicy::Always)
        ));
        assert!(ApprovalPolicy::parse("args.x ==").is_err());
    }
}
