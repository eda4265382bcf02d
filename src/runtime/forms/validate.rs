//! The checks every form passes before it is asked, whichever tool (or caller) made it: sizes and
//! counts within the limits, unique names and choice values, constraints that can be met, defaults
//! that fit their field, patterns that compile.

use std::collections::HashMap;

use super::patterns;
use super::{AskUserLimits, Violation};
use crate::domain::{FieldKind, Form, FormField, Number};
use crate::runtime::ask_user::MAX_VIOLATIONS;

/// Checks `form`; the violations' fields are paths like `fields[1].choice.choices[0].value`, and
/// their descriptions name the field.
pub fn validate(form: &Form, limits: &AskUserLimits) -> Result<(), Vec<Violation>> {
    let mut check = Checker {
        limits,
        violations: Vec::new(),
    };
    check.size("title", "the title", &form.title, limits.max_question_bytes);
    check.size(
        "message",
        "the message",
        &form.message,
        limits.max_question_bytes,
    );
    if !form.url.is_empty() {
        check_url(&mut check, form);
        return if check.violations.is_empty() {
            Ok(())
        } else {
            Err(check.violations)
        };
    }
    if form.fields.is_empty() {
        check.push("fields", "a form needs at least one field".to_owned());
    } else if form.fields.len() > limits.max_form_fields {
        check.push(
            "fields",
            format!(
                "{} fields given; the limit is {}",
                form.fields.len(),
                limits.max_form_fields
            ),
        );
        return Err(check.violations);
    }
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (index, field) in form.fields.iter().enumerate() {
        if check.violations.len() >= MAX_VIOLATIONS {
            break;
        }
        let path = format!("fields[{index}]");
        if field.name.trim().is_empty() {
            check.push(
                format!("{path}.name"),
                format!("field {index}'s name must not be empty"),
            );
        } else if let Some(first) = names.insert(&field.name, index) {
            names.insert(&field.name, first);
            check.push(
                format!("{path}.name"),
                format!(
                    "field name \"{}\" is used by fields[{first}] too",
                    field.name
                ),
            );
        }
        check.field(&path, field);
    }
    check.violations.truncate(MAX_VIOLATIONS);
    if check.violations.is_empty() {
        Ok(())
    } else {
        Err(check.violations)
    }
}

struct Checker<'a> {
    limits: &'a AskUserLimits,
    violations: Vec<Violation>,
}

impl Checker<'_> {
    fn push(&mut self, field: impl Into<String>, description: String) {
        self.violations.push(Violation::new(field, description));
    }

    fn size(&mut self, field: &str, what: &str, text: &str, limit: usize) {
        if text.len() > limit {
            self.push(
                field,
                format!("{what} is {} bytes; the limit is {limit}", text.len()),
            );
        }
    }

    fn field(&mut self, path: &str, field: &FormField) {
        let name = &field.name;
        let limits = self.limits;
        self.size(
            &format!("{path}.name"),
            &format!("field \"{name}\"'s name"),
            name,
            limits.max_label_bytes,
        );
        self.size(
            &format!("{path}.header"),
            &format!("field \"{name}\"'s header"),
            &field.header,
            limits.max_label_bytes,
        );
        if field.question.trim().is_empty() {
            self.push(
                format!("{path}.question"),
                format!("field \"{name}\" needs a question"),
            );
        }
        self.size(
            &format!("{path}.question"),
            &format!("field \"{name}\"'s question"),
            &field.question,
            limits.max_question_bytes,
        );
        match &field.kind {
            FieldKind::Text(text) => {
                let path = format!("{path}.text");
                if let (Some(min), Some(max)) = (text.min_length, text.max_length)
                    && min > max
                {
                    self.push(
                        format!("{path}.min_length"),
                        format!("field \"{name}\": min_length {min} exceeds max_length {max}"),
                    );
                }
                if !text.pattern.is_empty() {
                    if text.pattern.len() > limits.max_pattern_bytes {
                        self.push(
                            format!("{path}.pattern"),
                            format!(
                                "field \"{name}\"'s pattern is {} bytes; the limit is {}",
                                text.pattern.len(),
                                limits.max_pattern_bytes
                            ),
                        );
                    } else if let Err(error) = patterns::compile(&text.pattern) {
                        self.push(
                            format!("{path}.pattern"),
                            format!("field \"{name}\"'s pattern does not compile: {error}"),
                        );
                    }
                }
                if let Some(default) = &text.default_value {
                    self.size(
                        &format!("{path}.default_value"),
                        &format!("field \"{name}\"'s default"),
                        default,
                        limits.max_answer_bytes,
                    );
                }
            }
            FieldKind::Number(number) => {
                let path = format!("{path}.number");
                for (key, value) in [
                    ("minimum", number.minimum),
                    ("maximum", number.maximum),
                    ("default_value", number.default_value),
                ] {
                    if let Some(Number(value)) = value
                        && !value.is_finite()
                    {
                        self.push(
                            format!("{path}.{key}"),
                            format!("field \"{name}\"'s {key} must be a finite number"),
                        );
                    }
                }
                if let (Some(Number(min)), Some(Number(max))) = (number.minimum, number.maximum)
                    && min > max
                {
                    self.push(
                        format!("{path}.minimum"),
                        format!("field \"{name}\": minimum {min} exceeds maximum {max}"),
                    );
                }
                if let Some(Number(default)) = number.default_value {
                    let below = number.minimum.is_some_and(|Number(min)| default < min);
                    let above = number.maximum.is_some_and(|Number(max)| default > max);
                    let fraction = number.integer && default.fract() != 0.0;
                    if below || above || fraction {
                        self.push(
                            format!("{path}.default_value"),
                            format!("field \"{name}\"'s default {default} is not a value it takes"),
                        );
                    }
                }
            }
            FieldKind::Boolean(_) => {}
            FieldKind::Choice(choice) => {
                let path = format!("{path}.choice");
                if choice.choices.is_empty() {
                    self.push(
                        format!("{path}.choices"),
                        format!("field \"{name}\" offers no choices"),
                    );
                } else if choice.choices.len() > limits.max_options {
                    self.push(
                        format!("{path}.choices"),
                        format!(
                            "field \"{name}\" offers {} choices; the limit is {}",
                            choice.choices.len(),
                            limits.max_options
                        ),
                    );
                    return;
                }
                let mut values: HashMap<&str, usize> = HashMap::new();
                for (index, offered) in choice.choices.iter().enumerate() {
                    let at = format!("{path}.choices[{index}]");
                    if offered.value.trim().is_empty() {
                        self.push(
                            format!("{at}.value"),
                            format!("field \"{name}\"'s choice {index} has an empty value"),
                        );
                    } else if let Some(first) = values.insert(&offered.value, index) {
                        values.insert(&offered.value, first);
                        self.push(
                            format!("{at}.value"),
                            format!(
                                "field \"{name}\" offers \"{}\" twice (choices {first} and {index})",
                                offered.value
                            ),
                        );
                    }
                    self.size(
                        &format!("{at}.value"),
                        &format!("field \"{name}\"'s choice {index}"),
                        &offered.value,
                        limits.max_label_bytes,
                    );
                    self.size(
                        &format!("{at}.label"),
                        &format!("field \"{name}\"'s choice {index}'s label"),
                        &offered.label,
                        limits.max_label_bytes,
                    );
                    self.size(
                        &format!("{at}.description"),
                        &format!("field \"{name}\"'s choice {index}'s description"),
                        &offered.description,
                        limits.max_description_bytes,
                    );
                    self.size(
                        &format!("{at}.preview"),
                        &format!("field \"{name}\"'s choice {index}'s preview"),
                        &offered.preview,
                        limits.max_preview_bytes,
                    );
                }
                let offered = u32::try_from(choice.choices.len()).unwrap_or(u32::MAX)
                    + u32::from(choice.allow_other);
                if !choice.multiple
                    && (choice.min_selected.is_some() || choice.max_selected.is_some())
                {
                    self.push(
                        format!("{path}.multiple"),
                        format!("field \"{name}\": min_selected and max_selected need multiple"),
                    );
                }
                if let Some(min) = choice.min_selected
                    && min > offered
                {
                    self.push(
                        format!("{path}.min_selected"),
                        format!(
                            "field \"{name}\": min_selected {min} exceeds the {offered} choices"
                        ),
                    );
                }
                if let (Some(min), Some(max)) = (choice.min_selected, choice.max_selected)
                    && min > max
                {
                    self.push(
                        format!("{path}.min_selected"),
                        format!("field \"{name}\": min_selected {min} exceeds max_selected {max}"),
                    );
                }
                if !choice.multiple && choice.default_values.len() > 1 {
                    self.push(
                        format!("{path}.default_values"),
                        format!("field \"{name}\" takes one choice, but has several defaults"),
                    );
                }
                for (index, default) in choice.default_values.iter().enumerate() {
                    if choice.choice(default).is_none() {
                        self.push(
                            format!("{path}.default_values[{index}]"),
                            format!(
                                "field \"{name}\"'s default \"{default}\" is not one of its choices"
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// The longest URL a form may ask the person to open.
const MAX_URL_BYTES: usize = 2048;

/// A URL form: an http(s) URL of sensible length, and no fields.
fn check_url(check: &mut Checker<'_>, form: &Form) {
    if !form.fields.is_empty() {
        check.push("fields", "a form with a url has no fields".to_owned());
    }
    if form.url.len() > MAX_URL_BYTES {
        check.push(
            "url",
            format!(
                "the url is {} bytes; the limit is {MAX_URL_BYTES}",
                form.url.len()
            ),
        );
        return;
    }
    match url::Url::parse(&form.url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => {}
        Ok(url) => check.push(
            "url",
            format!("the url must be http or https, not {}", url.scheme()),
        ),
        Err(error) => check.push("url", format!("not a URL: {error}")),
    }
}
