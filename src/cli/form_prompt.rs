//! The prompts of a form: one per field, by its kind (text, number, yes/no, select, multi-select,
//! each choice field with an "Other…" entry where it allows one). Esc offers to decline or to
//! reply in prose instead.

use std::collections::HashMap;
use std::fmt;

use inquire::validator::Validation;
use inquire::{Confirm, CustomUserError, InquireError, MultiSelect, Select};

use super::form_values::yes_or_no;
use super::line_prompt::LineText;
use super::prompt::erased;
use crate::proto::v1 as pb;
use crate::proto::v1::answer::Answer;
use crate::proto::v1::field_value::Value;
use crate::proto::v1::form_field::Kind;

const FIELD_HELP: &str = "enter to go on, esc to decline or reply instead";

/// Asks every field of `form`; the answer is the form's values, a decline or a reply.
pub fn ask_form(form: &pb::Form) -> Result<Answer, InquireError> {
    for line in [&form.title, &form.message] {
        if !line.is_empty() {
            eprintln!("{line}");
        }
    }
    let mut values = HashMap::new();
    for field in &form.fields {
        match ask_field(field) {
            Ok(Some(value)) => {
                values.insert(field.name.clone(), pb::FieldValue { value: Some(value) });
            }
            Ok(None) => {}
            Err(InquireError::OperationCanceled) => return instead(),
            Err(error) => return Err(error),
        }
    }
    Ok(Answer::Form(pb::FormAnswer { values }))
}

/// What Esc leads to: a decline or a reply in prose.
fn instead() -> Result<Answer, InquireError> {
    let choice = Select::new("Instead of answering:", vec!["decline", "reply in prose"])
        .with_help_message("enter to choose, esc to go back to the form")
        .prompt()
        .inspect_err(erased)?;
    if choice == "decline" {
        let reason = LineText::new("Decline; why (optional)?")
            .prompt()
            .inspect_err(erased)?;
        return Ok(Answer::Decline(pb::Decline { reason }));
    }
    let reply = LineText::new("Your reply:")
        .with_validator(|text: &str| -> Result<Validation, CustomUserError> {
            Ok(if text.trim().is_empty() {
                Validation::Invalid("a reply must not be blank".into())
            } else {
                Validation::Valid
            })
        })
        .prompt()
        .inspect_err(erased)?;
    Ok(Answer::Reply(reply))
}

/// The title a field's prompt shows: its header chip, its question, and "(optional)".
fn title(field: &pb::FormField) -> String {
    let mut title = String::new();
    if !field.header.is_empty() && field.header != field.question {
        title.push_str(&format!("[{}] ", field.header));
    }
    title.push_str(&field.question);
    if !field.required {
        title.push_str(" (optional)");
    }
    title
}

/// The value a person gives a field; `None`: an optional field left empty.
fn ask_field(field: &pb::FormField) -> Result<Option<Value>, InquireError> {
    let title = title(field);
    let required = field.required;
    match field.kind.as_ref() {
        Some(Kind::Number(number)) => {
            let integer = number.integer;
            let default = number.default_value.map(|value| value.to_string());
            let mut prompt = LineText::new(&title)
                .with_help_message(FIELD_HELP)
                .with_validator(move |text: &str| -> Result<Validation, CustomUserError> {
                    Ok(match text.trim() {
                        "" if !required => Validation::Valid,
                        text => match text.parse::<f64>() {
                            Ok(value) if integer && value.fract() != 0.0 => {
                                Validation::Invalid("a whole number, please".into())
                            }
                            Ok(_) => Validation::Valid,
                            Err(_) => Validation::Invalid("a number, please".into()),
                        },
                    })
                });
            if let Some(default) = &default {
                prompt = prompt.with_default(default);
            }
            let text = prompt.prompt().inspect_err(erased)?;
            Ok(text.trim().parse().ok().map(Value::Number))
        }
        Some(Kind::Boolean(boolean)) => {
            let answer = Confirm::new(&title)
                .with_default(boolean.default_value.unwrap_or(false))
                .with_help_message("y or n, esc to decline or reply instead")
                .with_parser(&|text| yes_or_no(text).ok_or(()))
                .prompt()
                .inspect_err(erased)?;
            Ok(Some(Value::Boolean(answer)))
        }
        Some(Kind::Choice(choice)) => ask_choice(&title, choice, required),
        Some(Kind::Text(text)) => {
            let mut prompt = LineText::new(&title)
                .with_help_message(FIELD_HELP)
                .with_validator(move |text: &str| -> Result<Validation, CustomUserError> {
                    Ok(if required && text.trim().is_empty() {
                        Validation::Invalid("this field is required".into())
                    } else {
                        Validation::Valid
                    })
                });
            if let Some(default) = &text.default_value {
                prompt = prompt.with_default(default);
            }
            let value = prompt.prompt().inspect_err(erased)?;
            Ok((!value.is_empty() || required).then_some(Value::Text(value)))
        }
        None => Ok(None),
    }
}

/// One entry of a choice field's list.
enum Entry<'a> {
    Offered(&'a pb::Choice),
    Other,
}

impl fmt::Display for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Offered(choice) => {
                let label = if choice.label.is_empty() {
                    &choice.value
                } else {
                    &choice.label
                };
                f.write_str(label)?;
                if choice.recommended && !label.to_lowercase().contains("recommended") {
                    f.write_str(" (recommended)")?;
                }
                if !choice.description.is_empty() {
                    write!(f, " — {}", choice.description)?;
                }
                Ok(())
            }
            Entry::Other => f.write_str("Other…"),
        }
    }
}

fn ask_choice(
    title: &str,
    choice: &pb::ChoiceField,
    required: bool,
) -> Result<Option<Value>, InquireError> {
    // Previews (mock-ups, code) are shown before the list: a terminal list cannot show one per
    // focused entry.
    for offered in choice.choices.iter().filter(|c| !c.preview.is_empty()) {
        eprintln!("── {} ──", offered.value);
        for line in offered.preview.lines() {
            eprintln!("  {line}");
        }
    }
    let mut entries: Vec<Entry> = choice.choices.iter().map(Entry::Offered).collect();
    if choice.allow_other {
        entries.push(Entry::Other);
    }
    let chosen: Vec<Entry> = if choice.multiple {
        MultiSelect::new(title, entries)
            .with_help_message(
                "↑↓ to move, space to toggle, enter to send, esc to decline or reply",
            )
            .prompt()
            .inspect_err(erased)?
    } else {
        vec![
            Select::new(title, entries)
                .with_help_message("↑↓ to move, enter to choose, esc to decline or reply")
                .prompt()
                .inspect_err(erased)?,
        ]
    };
    let mut value = pb::ChoiceValue::default();
    for entry in chosen {
        match entry {
            Entry::Offered(offered) => value.values.push(offered.value.clone()),
            Entry::Other => {
                value.other = LineText::new("Your own answer:")
                    .prompt()
                    .inspect_err(erased)?
            }
        }
    }
    if value.values.is_empty() && value.other.is_empty() && !required {
        return Ok(None);
    }
    Ok(Some(Value::Choice(value)))
}
