//! The readable text a form tool returns where there is no run to suspend (`ToolService`), as
//! `ask_user` returns its `[Question for user]` text.

use crate::domain::{FieldKind, Form, FormStyle, Number};

/// `[Questions for user]` (or `[Form for user]: <message>`), then one line per field: its name,
/// kind, whether required, its question, and its constraints or choices.
pub fn fallback_text(form: &Form) -> String {
    let mut lines = vec![match form.style {
        FormStyle::Questions => "[Questions for user]".to_owned(),
        FormStyle::Elicitation if form.message.is_empty() => "[Form for user]".to_owned(),
        FormStyle::Elicitation => format!("[Form for user]: {}", form.message),
    }];
    for field in &form.fields {
        let mut line = format!("- {} ({}", field.name, field.kind.name());
        if field.required {
            line.push_str(", required");
        }
        line.push_str("): ");
        if !field.header.is_empty() && field.header != field.question {
            line.push_str(&format!("[{}] ", field.header));
        }
        line.push_str(&field.question);
        let mut notes = Vec::new();
        match &field.kind {
            FieldKind::Text(text) => {
                if let Some(format) = text.format {
                    notes.push(format!("format {}", format.as_str()));
                }
                if let Some(min) = text.min_length {
                    notes.push(format!("at least {min} characters"));
                }
                if let Some(max) = text.max_length {
                    notes.push(format!("at most {max} characters"));
                }
                if !text.pattern.is_empty() {
                    notes.push(format!("pattern {}", text.pattern));
                }
            }
            FieldKind::Number(number) => {
                if let Some(Number(min)) = number.minimum {
                    notes.push(format!("minimum {min}"));
                }
                if let Some(Number(max)) = number.maximum {
                    notes.push(format!("maximum {max}"));
                }
            }
            FieldKind::Boolean(_) => notes.push("yes or no".into()),
            FieldKind::Choice(choice) => {
                let offered: Vec<&str> = choice.choices.iter().map(|c| c.value.as_str()).collect();
                notes.push(format!("options {}", offered.join(", ")));
                if choice.multiple {
                    notes.push("several may be selected".into());
                }
                if choice.allow_other {
                    notes.push("or the user's own answer".into());
                }
            }
        }
        line.push_str(&format!(" ({})", notes.join("; ")));
        lines.push(line);
    }
    lines.join("\n")
}
