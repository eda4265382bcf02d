//! Answers to a form, checked as strictly as answers to a question: every required field given,
//! no unknown names, each value of its field's kind and within its constraints. And what the
//! model is told: the shape of the tool that asked.

use serde_json::{Map, Value, json};

use super::{AskUserLimits, Violation, patterns, text_formats};
use crate::domain::{
    AnswerInput, ChoiceField, ChoiceValue, FieldKind, FieldValue, Form, FormAnswer, FormStyle,
    Number, NumberField, TextField,
};
use crate::runtime::ask_user::{self, MAX_VIOLATIONS};

/// Checks `answer` against `form`; a refused one names each wrong value by its path
/// (`answer.form.values["replicas"]`).
pub fn check_answer(
    form: &Form,
    answer: &AnswerInput,
    limits: &AskUserLimits,
) -> Result<(), Vec<Violation>> {
    let wrong_kind = |field: &str| {
        Err(vec![Violation::new(
            field,
            "this call is a form: answer it with form values, a reply or decline",
        )])
    };
    match answer {
        AnswerInput::Form(values) => check_values(form, values, limits),
        AnswerInput::Decline(_) => Ok(()),
        AnswerInput::Reply(reply) => ask_user::check_reply(reply, limits),
        AnswerInput::Text(_) => wrong_kind("answer.text"),
        AnswerInput::Selections(_) => wrong_kind("answer.selections"),
        AnswerInput::ToolOutput { .. } => wrong_kind("answer.tool_output"),
        AnswerInput::Approval(_) => wrong_kind("answer.approval"),
    }
}

fn check_values(
    form: &Form,
    answer: &FormAnswer,
    limits: &AskUserLimits,
) -> Result<(), Vec<Violation>> {
    let path = |name: &str| format!("answer.form.values[\"{name}\"]");
    let mut violations = Vec::new();
    let bytes: usize = answer.values.values().map(value_bytes).sum();
    if bytes > limits.max_answer_bytes {
        return Err(vec![Violation::new(
            "answer.form.values",
            format!(
                "the values are {bytes} bytes; the limit is {}",
                limits.max_answer_bytes
            ),
        )]);
    }
    for name in answer.values.keys() {
        if !form.fields.iter().any(|field| &field.name == name) {
            violations.push(Violation::new(
                path(name),
                format!("the form has no field \"{name}\""),
            ));
        }
    }
    for field in &form.fields {
        if violations.len() >= MAX_VIOLATIONS {
            break;
        }
        let at = path(&field.name);
        let name = &field.name;
        let Some(value) = answer.values.get(name) else {
            if field.required {
                violations.push(Violation::new(at, format!("\"{name}\" is required")));
            }
            continue;
        };
        let problem = match (&field.kind, value) {
            (FieldKind::Text(text), FieldValue::Text(value)) => {
                check_text(text, value, field.required)
            }
            (FieldKind::Number(number), FieldValue::Number(value)) => check_number(number, *value),
            (FieldKind::Boolean(_), FieldValue::Boolean(_)) => None,
            (FieldKind::Choice(choice), FieldValue::Choice(value)) => {
                check_choice(choice, value, field.required)
            }
            (kind, value) => Some(format!(
                "takes a {} value, not a {} one",
                kind.name(),
                value.kind_name()
            )),
        };
        if let Some(problem) = problem {
            violations.push(Violation::new(at, format!("\"{name}\" {problem}")));
        }
    }
    violations.truncate(MAX_VIOLATIONS);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

fn value_bytes(value: &FieldValue) -> usize {
    match value {
        FieldValue::Text(text) => text.len(),
        FieldValue::Number(_) | FieldValue::Boolean(_) => 8,
        FieldValue::Choice(choice) => {
            choice.other.len() + choice.values.iter().map(String::len).sum::<usize>()
        }
    }
}

fn check_text(field: &TextField, value: &str, required: bool) -> Option<String> {
    let chars = u32::try_from(value.chars().count()).unwrap_or(u32::MAX);
    if required && value.trim().is_empty() {
        return Some("is required: it must not be blank".into());
    }
    if let Some(min) = field.min_length
        && chars < min
    {
        return Some(format!("is {chars} characters; it needs at least {min}"));
    }
    if let Some(max) = field.max_length
        && chars > max
    {
        return Some(format!("is {chars} characters; it takes at most {max}"));
    }
    if let Some(format) = field.format
        && !text_formats::fits(format, value)
    {
        return Some(format!("must be {}", text_formats::example(format)));
    }
    if !field.pattern.is_empty() {
        match patterns::compile(&field.pattern) {
            Ok(pattern) if pattern.is_match(value) => {}
            Ok(_) => return Some(format!("must match the pattern {}", field.pattern)),
            // Checked when the form was asked; a pattern that stopped compiling takes nothing.
            Err(error) => return Some(format!("cannot be checked: {error}")),
        }
    }
    None
}

fn check_number(field: &NumberField, Number(value): Number) -> Option<String> {
    if !value.is_finite() {
        return Some("must be a finite number".into());
    }
    if field.integer && value.fract() != 0.0 {
        return Some(format!("must be a whole number, not {value}"));
    }
    if let Some(Number(min)) = field.minimum
        && value < min
    {
        return Some(format!("is {value}; the minimum is {min}"));
    }
    if let Some(Number(max)) = field.maximum
        && value > max
    {
        return Some(format!("is {value}; the maximum is {max}"));
    }
    None
}

fn check_choice(field: &ChoiceField, value: &ChoiceValue, required: bool) -> Option<String> {
    let other = !value.other.trim().is_empty();
    if !value.other.is_empty() && !field.allow_other {
        return Some("takes only the offered choices, not text of its own".into());
    }
    for (index, chosen) in value.values.iter().enumerate() {
        if field.choice(chosen).is_none() {
            let offered: Vec<&str> = field.choices.iter().map(|c| c.value.as_str()).collect();
            return Some(format!(
                "offers no \"{chosen}\"; the choices are {}",
                offered.join(", ")
            ));
        }
        if value.values[..index].contains(chosen) {
            return Some(format!("has \"{chosen}\" selected twice"));
        }
    }
    let selected = value.values.len() + usize::from(other);
    if !field.multiple {
        return match selected {
            0 if required => Some("is required: select one choice".into()),
            0 | 1 => None,
            _ => Some("takes one choice (or text of its own), not several".into()),
        };
    }
    let selected = u32::try_from(selected).unwrap_or(u32::MAX);
    if required && selected == 0 {
        return Some("is required: select at least one choice".into());
    }
    if let Some(min) = field.min_selected
        && selected < min
    {
        return Some(format!("has {selected} selected; it needs at least {min}"));
    }
    if let Some(max) = field.max_selected
        && selected > max
    {
        return Some(format!("has {selected} selected; it takes at most {max}"));
    }
    None
}

/// The result the model gets for an accepted answer (or a decline) to `form`, in the shape of the
/// tool that asked it. A reply is the same for every question (see [`ask_user::answer_result`]).
pub fn answer_result(form: &Form, answer: &AnswerInput) -> String {
    match (form.style, answer) {
        (_, AnswerInput::Reply(_)) => ask_user::answer_result(answer),
        (FormStyle::Elicitation, AnswerInput::Form(values)) => {
            let content: Map<String, Value> = values
                .values
                .iter()
                .map(|(name, value)| (name.clone(), elicited(form, name, value)))
                .collect();
            json!({ "action": "accept", "content": content }).to_string()
        }
        (FormStyle::Elicitation, _) => json!({ "action": "decline" }).to_string(),
        (FormStyle::Questions, AnswerInput::Form(values)) => {
            let answers: Map<String, Value> = form
                .fields
                .iter()
                .filter_map(|field| {
                    let FieldValue::Choice(choice) = values.values.get(&field.name)? else {
                        return None;
                    };
                    let multiple = matches!(&field.kind, FieldKind::Choice(c) if c.multiple);
                    let mut picked: Vec<Value> =
                        choice.values.iter().cloned().map(Value::String).collect();
                    if !choice.other.trim().is_empty() {
                        picked.push(Value::String(choice.other.clone()));
                    }
                    let value = match (multiple, picked.len()) {
                        (false, 1) => picked.remove(0),
                        _ => Value::Array(picked),
                    };
                    Some((field.question.clone(), value))
                })
                .collect();
            json!({ "answers": answers }).to_string()
        }
        (FormStyle::Questions, _) => ask_user::answer_result(answer),
    }
}

/// A value as MCP elicitation content holds it: text, a number (an integer field's as an
/// integer), a boolean, a choice's value or a multi-select's array of values.
fn elicited(form: &Form, name: &str, value: &FieldValue) -> Value {
    let multiple = form
        .fields
        .iter()
        .find(|field| field.name == name)
        .is_some_and(|field| matches!(&field.kind, FieldKind::Choice(c) if c.multiple));
    let integer = form
        .fields
        .iter()
        .find(|field| field.name == name)
        .is_some_and(|field| matches!(&field.kind, FieldKind::Number(n) if n.integer));
    match value {
        FieldValue::Text(text) => json!(text),
        // Checked whole and finite before it was accepted.
        FieldValue::Number(Number(number)) if integer => json!(*number as i64),
        FieldValue::Number(Number(number)) => json!(number),
        FieldValue::Boolean(boolean) => json!(boolean),
        FieldValue::Choice(choice) if multiple => json!(choice.values),
        FieldValue::Choice(choice) => match choice.values.first() {
            Some(value) => json!(value),
            None => json!(choice.other),
        },
    }
}

/// The result of a form that expired unanswered.
pub fn expired_result(form: &Form) -> String {
    match form.style {
        FormStyle::Elicitation => json!({ "action": "cancel" }).to_string(),
        FormStyle::Questions => ask_user::EXPIRED_RESULT.to_owned(),
    }
}
