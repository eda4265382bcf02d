//! `ask_user_form`: an MCP form-mode elicitation (`{message, requestedSchema}`, MCP 2025-11-25),
//! whose flat schema of primitive properties becomes a form. Anything outside that subset (nested
//! objects, `$ref`, unknown types or keywords) is refused, naming the property.

use serde_json::{Map, Value, json};

use super::{AskUserLimits, Violation, arguments_object};
use crate::domain::{
    BooleanField, Choice, ChoiceField, FieldKind, Form, FormField, FormStyle, Number, NumberField,
    TextField, TextFormat,
};

/// What the model is told the tool does.
pub const DESCRIPTION: &str = "Ask the user to fill in a form and wait for it. Give a message \
saying what you need and why, and requestedSchema: a flat JSON Schema object (as MCP form \
elicitation takes it) whose properties are strings (minLength, maxLength, pattern, format email / \
uri / date / date-time), numbers or integers (minimum, maximum), booleans, single-select enums \
(enum, or oneOf of {const, title}) or multi-select arrays (items with enum or anyOf of {const, \
title}, minItems, maxItems), each with an optional title, description and default; list the ones \
that must be filled in under required. The result is JSON: {\"action\": \"accept\", \"content\": \
{...}}, {\"action\": \"decline\"} or {\"action\": \"cancel\"}, or the user's reply in prose.";

/// The arguments' JSON Schema. `requestedSchema` is itself a schema, so it is described, not
/// spelled out (the server checks it when called).
pub fn arguments_schema(limits: &AskUserLimits) -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "description": "What you are asking the user for, and why."
            },
            "requestedSchema": {
                "type": "object",
                "description": format!(
                    "{{\"type\": \"object\", \"properties\": {{...}}, \"required\": [...]}}: at most {} primitive properties.",
                    limits.max_form_fields
                ),
                "properties": {
                    "type": { "const": "object" },
                    "properties": { "type": "object" },
                    "required": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["type", "properties"]
            }
        },
        "required": ["message", "requestedSchema"]
    })
}

/// The form an elicitation's arguments ask: one field per property, in the order written.
pub fn parse(arguments_json: &str) -> Result<Form, Vec<Violation>> {
    let args = arguments_object(arguments_json)?;
    let mut violations = Vec::new();
    let message = match args.get("message") {
        Some(Value::String(message)) => message.clone(),
        _ => {
            violations.push(Violation::new("message", "message must be a string"));
            String::new()
        }
    };
    let Some(Value::Object(schema)) = args.get("requestedSchema") else {
        violations.push(Violation::new(
            "requestedSchema",
            "requestedSchema must be a JSON Schema object",
        ));
        return Err(violations);
    };
    for key in schema.keys() {
        if ![
            "type",
            "properties",
            "required",
            "$schema",
            "title",
            "description",
            "additionalProperties",
        ]
        .contains(&key.as_str())
        {
            violations.push(Violation::new(
                format!("requestedSchema.{key}"),
                format!("requestedSchema.{key} is not part of a form-mode elicitation schema"),
            ));
        }
    }
    if schema.get("type") != Some(&json!("object")) {
        violations.push(Violation::new(
            "requestedSchema.type",
            "requestedSchema.type must be \"object\"",
        ));
    }
    let required: Vec<&str> = match schema.get("required") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(names)) if names.iter().all(Value::is_string) => {
            names.iter().filter_map(Value::as_str).collect()
        }
        Some(_) => {
            violations.push(Violation::new(
                "requestedSchema.required",
                "requestedSchema.required must be an array of property names",
            ));
            Vec::new()
        }
    };
    let Some(Value::Object(properties)) = schema.get("properties") else {
        violations.push(Violation::new(
            "requestedSchema.properties",
            "requestedSchema.properties must be an object of properties",
        ));
        return Err(violations);
    };
    for name in &required {
        if !properties.contains_key(*name) {
            violations.push(Violation::new(
                "requestedSchema.required",
                format!("required names \"{name}\", which is not a property"),
            ));
        }
    }
    let mut fields = Vec::new();
    // Fields in the order the schema writes its properties (a JSON object's keys come back sorted).
    let order = property_order(arguments_json);
    let mut properties: Vec<(&String, &Value)> = properties.iter().collect();
    properties.sort_by_key(|(name, _)| order.iter().position(|written| written == *name));
    for (name, property) in properties {
        let path = format!("requestedSchema.properties.{name}");
        match field(&path, name, property, required.contains(&name.as_str())) {
            Ok(field) => fields.push(field),
            Err(violation) => violations.push(violation),
        }
    }
    if !violations.is_empty() {
        return Err(violations);
    }
    Ok(Form {
        title: schema
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        message,
        fields,
        style: FormStyle::Elicitation,
        url: String::new(),
    })
}

/// The names of `requestedSchema.properties` in the order written; empty if they cannot be read
/// (the arguments were parsed before this, so that is only for odd input the parse refuses).
fn property_order(arguments_json: &str) -> Vec<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

    /// An object's keys, in order.
    struct Keys(Vec<String>);

    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct KeysVisitor;
            impl<'de> Visitor<'de> for KeysVisitor {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Keys, M::Error> {
                    let mut keys = Vec::new();
                    while let Some(key) = map.next_key::<String>()? {
                        map.next_value::<IgnoredAny>()?;
                        keys.push(key);
                    }
                    Ok(Keys(keys))
                }
            }
            deserializer.deserialize_map(KeysVisitor)
        }
    }

    #[derive(serde::Deserialize)]
    struct Schema {
        properties: Option<Keys>,
    }

    #[derive(serde::Deserialize)]
    struct Arguments {
        #[serde(rename = "requestedSchema")]
        requested_schema: Option<Schema>,
    }

    serde_json::from_str::<Arguments>(arguments_json)
        .ok()
        .and_then(|arguments| arguments.requested_schema?.properties)
        .map_or_else(Vec::new, |keys| keys.0)
}

/// One property as a field, or the first thing wrong with it.
fn field(path: &str, name: &str, property: &Value, required: bool) -> Result<FormField, Violation> {
    let invalid = |what: String| Violation::new(path, format!("property \"{name}\": {what}"));
    let Value::Object(property) = property else {
        return Err(invalid("must be a schema object".into()));
    };
    let text = |key: &str| -> Result<String, Violation> {
        match property.get(key) {
            None => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(_) => Err(invalid(format!("{key} must be a string"))),
        }
    };
    let (title, description) = (text("title")?, text("description")?);
    let kind_name = property.get("type").and_then(Value::as_str).unwrap_or("");
    let has = |key: &str| property.contains_key(key);
    let (kind, allowed): (FieldKind, &[&str]) = match kind_name {
        "string" if has("enum") || has("oneOf") => (
            FieldKind::Choice(ChoiceField {
                choices: enum_choices(property, "enum", "oneOf", "enumNames").map_err(&invalid)?,
                default_values: match property.get("default") {
                    None => Vec::new(),
                    Some(Value::String(value)) => vec![value.clone()],
                    Some(_) => return Err(invalid("default must be one of the values".into())),
                },
                ..ChoiceField::default()
            }),
            &["enum", "oneOf", "enumNames", "default"],
        ),
        "string" => (
            FieldKind::Text(TextField {
                min_length: count(property, "minLength").map_err(&invalid)?,
                max_length: count(property, "maxLength").map_err(&invalid)?,
                format: match property.get("format") {
                    None => None,
                    Some(Value::String(format)) => {
                        Some(TextFormat::parse(format).ok_or_else(|| {
                            invalid(format!(
                                "format \"{format}\" is not one of email, uri, date, date-time"
                            ))
                        })?)
                    }
                    Some(_) => return Err(invalid("format must be a string".into())),
                },
                pattern: text("pattern")?,
                multiline: false,
                default_value: match property.get("default") {
                    None => None,
                    Some(Value::String(value)) => Some(value.clone()),
                    Some(_) => return Err(invalid("default must be a string".into())),
                },
            }),
            &["minLength", "maxLength", "format", "pattern", "default"],
        ),
        "number" | "integer" => (
            FieldKind::Number(NumberField {
                integer: kind_name == "integer",
                minimum: number(property, "minimum").map_err(&invalid)?,
                maximum: number(property, "maximum").map_err(&invalid)?,
                default_value: number(property, "default").map_err(&invalid)?,
            }),
            &["minimum", "maximum", "default"],
        ),
        "boolean" => (
            FieldKind::Boolean(BooleanField {
                default_value: match property.get("default") {
                    None => None,
                    Some(Value::Bool(value)) => Some(*value),
                    Some(_) => return Err(invalid("default must be true or false".into())),
                },
            }),
            &["default"],
        ),
        "array" => {
            let Some(Value::Object(items)) = property.get("items") else {
                return Err(invalid(
                    "an array must have items with enum or anyOf (a multi-select)".into(),
                ));
            };
            if items
                .keys()
                .any(|key| !["type", "enum", "anyOf"].contains(&key.as_str()))
                || items.get("type").is_some_and(|kind| *kind != "string")
            {
                return Err(invalid(
                    "items must be {type: string, enum: [...]} or {anyOf: [{const, title}, ...]}"
                        .into(),
                ));
            }
            (
                FieldKind::Choice(ChoiceField {
                    choices: enum_choices(items, "enum", "anyOf", "").map_err(&invalid)?,
                    multiple: true,
                    min_selected: count(property, "minItems").map_err(&invalid)?,
                    max_selected: count(property, "maxItems").map_err(&invalid)?,
                    allow_other: false,
                    default_values: match property.get("default") {
                        None => Vec::new(),
                        Some(Value::Array(values)) if values.iter().all(Value::is_string) => values
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect(),
                        Some(_) => {
                            return Err(invalid("default must be an array of values".into()));
                        }
                    },
                }),
                &["items", "minItems", "maxItems", "default"],
            )
        }
        "object" => return Err(invalid("nested objects are not part of a form".into())),
        "" => return Err(invalid("type is missing".into())),
        other => return Err(invalid(format!("type \"{other}\" is not part of a form"))),
    };
    if let Some(key) = property.keys().find(|key| {
        !["type", "title", "description"].contains(&key.as_str())
            && !allowed.contains(&key.as_str())
    }) {
        return Err(invalid(format!(
            "{key} is not a keyword a {kind_name} property of a form takes"
        )));
    }
    let question = if description.is_empty() {
        if title.is_empty() {
            name.to_owned()
        } else {
            title.clone()
        }
    } else {
        description
    };
    Ok(FormField {
        name: name.to_owned(),
        header: title,
        question,
        required,
        kind,
    })
}

/// The choices of `values` (untitled, strings) or `titled` (`{const, title}` objects); `names` is
/// the legacy `enumNames` beside `enum`.
fn enum_choices(
    schema: &Map<String, Value>,
    values: &str,
    titled: &str,
    names: &str,
) -> Result<Vec<Choice>, String> {
    let choice = |value: &str, label: &str| Choice {
        value: value.to_owned(),
        label: label.to_owned(),
        ..Choice::default()
    };
    match (schema.get(values), schema.get(titled)) {
        (Some(Value::Array(values)), None) => {
            let labels: Vec<&str> = match schema.get(names) {
                Some(Value::Array(labels)) => labels.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            values
                .iter()
                .enumerate()
                .map(|(index, value)| match value {
                    Value::String(value) => Ok(choice(
                        value,
                        labels.get(index).copied().unwrap_or_default(),
                    )),
                    _ => Err("enum values must be strings".to_owned()),
                })
                .collect()
        }
        (None, Some(Value::Array(options))) => options
            .iter()
            .map(|option| match (option.get("const"), option.get("title")) {
                (Some(Value::String(value)), Some(Value::String(title))) => {
                    Ok(choice(value, title))
                }
                (Some(Value::String(value)), None) => Ok(choice(value, "")),
                _ => Err(format!("{titled} entries must be {{const, title}} strings")),
            })
            .collect(),
        _ => Err(format!("give either {values} or {titled}, as an array")),
    }
}

fn count(schema: &Map<String, Value>, key: &str) -> Result<Option<u32>, String> {
    match schema.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|count| u32::try_from(count).ok())
            .map(Some)
            .ok_or_else(|| format!("{key} must be a whole number")),
    }
}

fn number(schema: &Map<String, Value>, key: &str) -> Result<Option<Number>, String> {
    match schema.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_f64()
            .map(|number| Some(Number(number)))
            .ok_or_else(|| format!("{key} must be a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(schema: Value) -> Result<Form, Vec<Violation>> {
        parse(&json!({ "message": "Release details", "requestedSchema": schema }).to_string())
    }

    #[test]
    fn every_mcp_primitive_becomes_a_field() {
        // Written as text: a `json!` object would sort its keys, and the fields keep the order written.
        let form = parse(
            r#"{"message": "Release details", "requestedSchema": {
                "type": "object",
                "properties": {
                    "version": { "type": "string", "title": "Version", "pattern": "\\d+\\.\\d+", "minLength": 3 },
                    "contact": { "type": "string", "format": "email", "default": "ops@example.com" },
                    "replicas": { "type": "integer", "minimum": 1, "maximum": 10, "default": 3 },
                    "ratio": { "type": "number" },
                    "notify": { "type": "boolean", "default": true },
                    "region": { "type": "string", "enum": ["eu", "us"], "enumNames": ["Europe", "America"] },
                    "tier": { "type": "string", "oneOf": [{ "const": "gold", "title": "Gold" }] },
                    "checks": { "type": "array", "items": { "type": "string", "enum": ["lint", "unit"] }, "minItems": 1 },
                    "owners": { "type": "array", "items": { "anyOf": [{ "const": "a", "title": "Ann" }] } }
                },
                "required": ["version", "replicas"]
            }}"#,
        )
        .expect("valid");
        let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "version", "contact", "replicas", "ratio", "notify", "region", "tier", "checks",
                "owners"
            ]
        );
        let kinds: Vec<&str> = form.fields.iter().map(|f| f.kind.name()).collect();
        assert_eq!(
            kinds,
            [
                "text", "text", "integer", "number", "boolean", "choice", "choice", "choice",
                "choice"
            ]
        );
        assert!(form.fields[0].required && form.fields[2].required && !form.fields[1].required);
        assert_eq!(form.fields[0].header, "Version");
        let FieldKind::Choice(region) = &form.fields[5].kind else {
            panic!("choice")
        };
        assert_eq!(region.choices[1].label, "America");
        let FieldKind::Choice(checks) = &form.fields[7].kind else {
            panic!("choice")
        };
        assert!(checks.multiple && checks.min_selected == Some(1) && !checks.allow_other);
    }

    #[test]
    fn schemas_outside_the_subset_name_the_property() {
        for (schema, path, words) in [
            (
                json!({"type":"object","properties":{"a":{"type":"object","properties":{}}}}),
                "requestedSchema.properties.a",
                "nested",
            ),
            (
                json!({"type":"object","properties":{"b":{"$ref":"#/x"}}}),
                "requestedSchema.properties.b",
                "type is missing",
            ),
            (
                json!({"type":"object","properties":{"c":{"type":"null"}}}),
                "requestedSchema.properties.c",
                "\"null\"",
            ),
            (
                json!({"type":"object","properties":{"d":{"type":"string","items":{}}}}),
                "requestedSchema.properties.d",
                "items",
            ),
            (
                json!({"type":"object","properties":{"e":{"type":"string","format":"ipv4"}}}),
                "requestedSchema.properties.e",
                "ipv4",
            ),
            (
                json!({"type":"object","properties":{},"$defs":{}}),
                "requestedSchema.$defs",
                "not part",
            ),
            (
                json!({"type":"object","properties":{"f":{"type":"string"}},"required":["g"]}),
                "requestedSchema.required",
                "\"g\"",
            ),
        ] {
            let errors = form(schema).expect_err(path);
            assert_eq!(errors[0].field, path);
            assert!(
                errors[0].description.contains(words),
                "{}",
                errors[0].description
            );
        }
    }
}
