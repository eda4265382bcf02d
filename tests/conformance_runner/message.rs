//! Reading what a client under test reports: messages in the proto3 JSON mapping (either field
//! naming, defaults present or omitted, 64-bit numbers as strings or numbers) and gRPC statuses.

use serde_json::{Map, Value};

use crate::Outcome;

/// A message with every field name in proto (snake_case) form, so checks need one spelling.
pub fn normalize(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .map(|(key, value)| (snake_case(&key), normalize(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(normalize).collect()),
        other => other,
    }
}

fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for character in name.chars() {
        if character.is_ascii_uppercase() {
            out.push('_');
            out.push(character.to_ascii_lowercase());
        } else {
            out.push(character);
        }
    }
    out
}

/// A string field; an omitted one is `""`, its default.
pub fn text(message: &Value, field: &str) -> String {
    message
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// An integer field, written as a number or a string; an omitted one is 0.
pub fn number(message: &Value, field: &str) -> Outcome<u64> {
    match message.get(field) {
        None | Some(Value::Null) => Some(0),
        Some(Value::Number(number)) => number.as_u64(),
        Some(Value::String(text)) => text.parse().ok(),
        Some(_) => None,
    }
    .ok_or_else(|| format!("{field} is not an unsigned integer in {message}"))
}

pub fn boolean(message: &Value, field: &str) -> bool {
    message
        .get(field)
        .and_then(Value::as_bool)
        .unwrap_or_default()
}

/// An enum field by name; an omitted one is its zero value, `<PREFIX>_UNSPECIFIED`.
pub fn enum_name(message: &Value, field: &str, prefix: &str) -> String {
    match message.get(field) {
        Some(Value::String(name)) => name.clone(),
        Some(Value::Number(number)) if number.as_u64() != Some(0) => format!("{prefix}_{number}"),
        _ => format!("{prefix}_UNSPECIFIED"),
    }
}

/// The one field of a `oneof` that is set, among `names`, and its value.
pub fn one_of<'a>(
    message: &'a Value,
    names: &[&'static str],
) -> Outcome<(&'static str, &'a Value)> {
    let mut set = names
        .iter()
        .filter_map(|name| message.get(*name).map(|value| (*name, value)));
    match (set.next(), set.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => Err(format!("none of {names:?} is set in {message}")),
        (Some(_), Some(_)) => Err(format!("more than one of {names:?} is set in {message}")),
    }
}

/// The items of a repeated field; an omitted one is empty.
pub fn items<'a>(message: &'a Value, field: &str) -> &'a [Value] {
    message
        .get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A failed call as the client under test decoded it with its own error type.
#[derive(Debug)]
pub struct Status {
    pub code: String,
    pub message: String,
    /// The `google.rpc.ErrorInfo` reason; `""` when there is none.
    pub reason: String,
    /// The `field` of each `google.rpc.BadRequest` field violation, in order.
    pub fields: Vec<String>,
}

impl Status {
    pub fn from_json(value: &Value) -> Outcome<Status> {
        let fields = items(value, "fields")
            .iter()
            .map(|field| {
                field
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("fields must hold strings: {value}"))
            })
            .collect::<Outcome<_>>()?;
        let code = text(value, "code");
        if code.is_empty() {
            return Err(format!("an error without a code: {value}"));
        }
        Ok(Status {
            code,
            message: text(value, "message"),
            reason: text(value, "reason"),
            fields,
        })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.code, self.message)?;
        if !self.reason.is_empty() {
            write!(f, " (reason {})", self.reason)?;
        }
        if !self.fields.is_empty() {
            write!(f, " (fields {:?})", self.fields)?;
        }
        Ok(())
    }
}

/// A step's fields, rejecting any key the step does not know (a typo would otherwise pass).
pub fn fields<'a>(value: &'a Value, allowed: &[&str]) -> Outcome<&'a Map<String, Value>> {
    let object = value
        .as_object()
        .ok_or_else(|| format!("expected an object, got {value}"))?;
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!("unknown field {key:?}")),
        None => Ok(object),
    }
}
