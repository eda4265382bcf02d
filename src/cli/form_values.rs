//! A form's values from `--field NAME=VALUE` flags, typed by the form's fields: a number field
//! takes a number, a boolean yes/no (or true/false), a choice field one of its values per flag
//! (repeat the flag for several) or, where the field allows it, text of the person's own.

use std::collections::HashMap;

use super::CliError;
use crate::proto::v1 as pb;
use crate::proto::v1::field_value::Value;
use crate::proto::v1::form_field::Kind;

/// The answer `fields` (each `NAME=VALUE`) give to `form`.
pub fn from_flags(form: &pb::Form, fields: &[String]) -> Result<pb::FormAnswer, CliError> {
    let mut values: HashMap<String, pb::FieldValue> = HashMap::new();
    for flag in fields {
        let Some((name, text)) = flag.split_once('=') else {
            return Err(CliError::Usage(format!(
                "--field {flag}: write it as NAME=VALUE"
            )));
        };
        let field = form
            .fields
            .iter()
            .find(|field| field.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
                CliError::Usage(format!(
                    "--field {name}: the form has no such field; its fields are {}",
                    names.join(", ")
                ))
            })?;
        let value = match field.kind.as_ref() {
            Some(Kind::Number(_)) => Value::Number(text.trim().parse().map_err(|_| {
                CliError::Usage(format!("--field {name}: \"{text}\" is not a number"))
            })?),
            Some(Kind::Boolean(_)) => Value::Boolean(yes_or_no(text).ok_or_else(|| {
                CliError::Usage(format!("--field {name}: \"{text}\" is not yes or no"))
            })?),
            Some(Kind::Choice(choice)) => {
                let mut chosen = match values.remove(name).and_then(|value| value.value) {
                    Some(Value::Choice(chosen)) => chosen,
                    _ => pb::ChoiceValue::default(),
                };
                if choice.choices.iter().any(|offered| offered.value == text) {
                    chosen.values.push(text.to_owned());
                } else {
                    // Not offered: the person's own answer (the server refuses it where the
                    // field allows none, naming the choices).
                    chosen.other = text.to_owned();
                }
                Value::Choice(chosen)
            }
            Some(Kind::Text(_)) | None => Value::Text(text.to_owned()),
        };
        values.insert(name.to_owned(), pb::FieldValue { value: Some(value) });
    }
    Ok(pb::FormAnswer { values })
}

/// yes / no, y / n, true / false, in any case.
pub fn yes_or_no(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" => Some(true),
        "no" | "n" | "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> pb::Form {
        let field = |name: &str, kind: Kind| pb::FormField {
            name: name.into(),
            question: name.into(),
            kind: Some(kind),
            ..pb::FormField::default()
        };
        pb::Form {
            url: String::new(),
            fields: vec![
                field("replicas", Kind::Number(pb::NumberField::default())),
                field("announce", Kind::Boolean(pb::BooleanField::default())),
                field(
                    "checks",
                    Kind::Choice(pb::ChoiceField {
                        choices: ["unit", "load"]
                            .map(|value| pb::Choice {
                                value: value.into(),
                                ..pb::Choice::default()
                            })
                            .to_vec(),
                        multiple: true,
                        allow_other: true,
                        ..pb::ChoiceField::default()
                    }),
                ),
                field("version", Kind::Text(pb::TextField::default())),
            ],
            ..pb::Form::default()
        }
    }

    #[test]
    fn flags_are_typed_by_their_fields() {
        let flags = [
            "replicas=3",
            "announce=Yes",
            "checks=unit",
            "checks=load",
            "checks=smoke",
            "version=1.2",
        ]
        .map(String::from);
        let answer = from_flags(&form(), &flags).expect("typed");
        let value = |name: &str| answer.values[name].value.clone();
        assert_eq!(value("replicas"), Some(Value::Number(3.0)));
        assert_eq!(value("announce"), Some(Value::Boolean(true)));
        assert_eq!(
            value("checks"),
            Some(Value::Choice(pb::ChoiceValue {
                values: vec!["unit".into(), "load".into()],
                other: "smoke".into(),
            }))
        );
        assert_eq!(value("version"), Some(Value::Text("1.2".into())));
        for bad in ["replicas=three", "announce=maybe", "nothing=1", "noequals"] {
            assert!(from_flags(&form(), &[bad.to_owned()]).is_err(), "{bad}");
        }
    }
}
