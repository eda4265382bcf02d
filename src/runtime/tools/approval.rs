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

/// The reason shown on an approval that every call needs.
pub const ALWAYS: &str = "always";

impl ApprovalPolicy {
    /// Parses `never`, `always`, or a CEL expression; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "" | "never" => Ok(ApprovalPolicy::Never),
            "always" => Ok(ApprovalPolicy::Always),
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
