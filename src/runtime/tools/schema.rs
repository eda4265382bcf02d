//! A tool's JSON Schema, compiled once and checked against every call's arguments.

use std::sync::Arc;

use serde_json::Value;

/// How many schema errors a message names; the rest are counted.
const ERRORS_SHOWN: usize = 3;

/// A compiled JSON Schema of a tool's arguments.
#[derive(Clone)]
pub struct ArgumentsSchema {
    source: Value,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for ArgumentsSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ArgumentsSchema")
            .field(&self.source)
            .finish()
    }
}

impl ArgumentsSchema {
    /// Compiles a schema; the error says what is wrong with it. Remote `$ref`s are never fetched.
    pub fn compile(source: Value) -> Result<Self, String> {
        if !source.is_object() {
            return Err("the schema must be a JSON object".into());
        }
        let validator = jsonschema::validator_for(&source).map_err(|e| e.to_string())?;
        Ok(Self {
            source,
            validator: Arc::new(validator),
        })
    }

    /// Any JSON object, compiled once: the schema of arguments nobody described (a standalone
    /// request's approval, an MCP tool gone from its server's list).
    pub fn any_object() -> Result<Self, String> {
        static ANY_OBJECT: std::sync::LazyLock<Result<ArgumentsSchema, String>> =
            std::sync::LazyLock::new(|| {
                ArgumentsSchema::compile(serde_json::json!({ "type": "object" }))
            });
        ANY_OBJECT.clone()
    }

    /// Compiles a schema given as JSON text; empty text is any JSON object.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Self::compile(serde_json::json!({ "type": "object" }));
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        Self::compile(value)
    }

    /// The schema as given.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Parses arguments (a JSON object as text) and checks them; on success returns them in
    /// canonical form (compact, keys sorted), the form stored and shown to whoever settles the call.
    pub fn check(&self, arguments_json: &str) -> Result<(Value, String), String> {
        let value: Value = serde_json::from_str(arguments_json)
            .map_err(|e| format!("the arguments are not valid JSON: {e}"))?;
        if !value.is_object() {
            return Err("the arguments must be a JSON object".into());
        }
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .map(|error| {
                let path = error.instance_path().to_string();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect();
        if !errors.is_empty() {
            let mut message = errors[..errors.len().min(ERRORS_SHOWN)].join("; ");
            if errors.len() > ERRORS_SHOWN {
                message.push_str(&format!(" (and {} more)", errors.len() - ERRORS_SHOWN));
            }
            return Err(message);
        }
        let canonical = value.to_string();
        Ok((value, canonical))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy() -> ArgumentsSchema {
        ArgumentsSchema::compile(json!({
            "type": "object",
            "properties": {
                "service": {"type": "string"},
                "environment": {"enum": ["staging", "production"]}
            },
            "required": ["service", "environment"],
            "additionalProperties": false
        }))
        .expect("schema")
    }

    #[test]
    fn valid_arguments_come_back_canonical() {
        let (_, canonical) = deploy()
            .check(r#"{ "service": "api", "environment": "staging" }"#)
            .expect("valid");
        assert_eq!(canonical, r#"{"environment":"staging","service":"api"}"#);
    }

    #[test]
    fn errors_name_the_place_and_stop_after_a_few() {
        let error = deploy()
            .check(r#"{"service": 1, "environment": "moon"}"#)
            .expect_err("invalid");
        assert!(error.contains("/service"), "{error}");
        assert!(error.contains("/environment"), "{error}");
        let strict = ArgumentsSchema::compile(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                           "c": {"type": "string"}, "d": {"type": "string"}}
        }))
        .expect("schema");
        let error = strict
            .check(r#"{"a": 1, "b": 2, "c": 3, "d": 4}"#)
            .expect_err("invalid");
        assert!(error.ends_with("(and 1 more)"), "{error}");
        assert!(deploy().check("[1]").is_err());
        assert!(deploy().check("not json").is_err());
    }

    #[test]
    fn bad_schemas_are_refused() {
        assert!(ArgumentsSchema::parse(r#"{"type": 12}"#).is_err());
        assert!(ArgumentsSchema::parse("[]").is_err());
        assert!(ArgumentsSchema::parse("{").is_err());
        assert!(ArgumentsSchema::parse("").is_ok());
    }
}
