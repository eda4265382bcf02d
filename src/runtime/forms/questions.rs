//! `ask_user_questions` (also offered as `AskUserQuestion`): Claude Code's `AskUserQuestion` input,
//! 1–4 questions of 2–4 options each, asked as one form of choice fields that always allow "Other".

use serde_json::{Map, Value, json};

use super::{Violation, arguments_object};
use crate::domain::{Choice, ChoiceField, FieldKind, Form, FormField, FormStyle};

/// What the model is told the tool does (the rules Claude Code's prompt gives, in short).
pub const DESCRIPTION: &str = "Ask the user 1-4 multiple-choice questions at once and wait for \
the answers. Each question has a very short header (max 12 chars, shown as a chip), 2-4 options \
with a label (1-5 words) and a description, and an optional preview (a mock-up or code snippet \
shown when the option is focused); set multiSelect when several options may be chosen. The user \
can always write their own answer instead (\"Other\"): do not add an Other option. If you \
recommend an option, make it the first and add \"(Recommended)\" to its label. The result is \
JSON: {\"answers\": {\"<question>\": \"<label>\" | [\"<label>\", ...] | \"<their own text>\"}}, \
or the user's reply in prose.";

/// The most questions one call asks, and the options of each, as Claude Code's schema says.
const MAX_QUESTIONS: usize = 4;
const MIN_OPTIONS: usize = 2;
const MAX_OPTIONS: usize = 4;
/// The longest header, in characters.
pub const MAX_HEADER_CHARS: usize = 12;
/// What marks a recommended option in its label.
const RECOMMENDED: &str = "(recommended)";

/// The arguments' JSON Schema: Claude Code's `AskUserQuestion` input, in OpenAI strict-mode form
/// (every property required, the optional `preview` nullable).
pub fn arguments_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "description": "Questions to ask the user (1-4 questions)",
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {
                            "type": "string",
                            "description": "The complete question to ask the user. Should be clear, specific, and end with a question mark."
                        },
                        "header": {
                            "type": "string",
                            "description": "Very short label displayed as a chip/tag (max 12 chars)."
                        },
                        "options": {
                            "type": "array",
                            "description": "The available choices for this question. Must have 2-4 options. There should be no 'Other' option, that will be provided automatically.",
                            "minItems": MIN_OPTIONS,
                            "maxItems": MAX_OPTIONS,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {
                                        "type": "string",
                                        "description": "The display text for this option (1-5 words)."
                                    },
                                    "description": {
                                        "type": "string",
                                        "description": "Explanation of what this option means."
                                    },
                                    "preview": {
                                        "type": ["string", "null"],
                                        "description": "Optional preview content rendered when this option is focused: mock-ups, code snippets or visual comparisons."
                                    }
                                },
                                "required": ["label", "description", "preview"],
                                "additionalProperties": false
                            }
                        },
                        "multiSelect": {
                            "type": "boolean",
                            "description": "Set to true to allow the user to select multiple options instead of just one."
                        }
                    },
                    "required": ["question", "header", "options", "multiSelect"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

/// The form a model's `AskUserQuestion` arguments ask: field `qN` for question N, a choice field
/// whose values are the options' labels, "Other" allowed.
pub fn parse(arguments_json: &str) -> Result<Form, Vec<Violation>> {
    let args = arguments_object(arguments_json)?;
    let mut violations = Vec::new();
    let questions = match args.get("questions") {
        Some(Value::Array(questions)) => questions,
        _ => {
            return Err(vec![Violation::new(
                "questions",
                "questions must be an array of 1 to 4 questions",
            )]);
        }
    };
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return Err(vec![Violation::new(
            "questions",
            format!(
                "{} questions given; ask 1 to {MAX_QUESTIONS}",
                questions.len()
            ),
        )]);
    }
    let mut fields = Vec::new();
    for (index, question) in questions.iter().enumerate() {
        let path = format!("questions[{index}]");
        let Value::Object(question) = question else {
            violations.push(Violation::new(&path, format!("{path} must be an object")));
            continue;
        };
        match field(&path, index, question) {
            Ok(field) => {
                if let Some(first) = fields
                    .iter()
                    .position(|f: &FormField| f.question == field.question)
                {
                    violations.push(Violation::new(
                        format!("{path}.question"),
                        format!("{path} asks the same question as questions[{first}]; answers are keyed by question"),
                    ));
                }
                fields.push(field);
            }
            Err(mut errors) => violations.append(&mut errors),
        }
    }
    if !violations.is_empty() {
        return Err(violations);
    }
    Ok(Form {
        title: String::new(),
        message: String::new(),
        fields,
        style: FormStyle::Questions,
        url: String::new(),
    })
}

fn field(
    path: &str,
    index: usize,
    question: &Map<String, Value>,
) -> Result<FormField, Vec<Violation>> {
    let mut violations = Vec::new();
    let text = |key: &str, violations: &mut Vec<Violation>| match question.get(key) {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => {
            violations.push(Violation::new(
                format!("{path}.{key}"),
                format!("{path}.{key} must be a string"),
            ));
            String::new()
        }
    };
    let asked = text("question", &mut violations);
    let header = text("header", &mut violations);
    if header.chars().count() > MAX_HEADER_CHARS {
        violations.push(Violation::new(
            format!("{path}.header"),
            format!(
                "{path}.header \"{header}\" is {} characters; the limit is {MAX_HEADER_CHARS}",
                header.chars().count()
            ),
        ));
    }
    let multiple = match question.get("multiSelect") {
        Some(Value::Bool(multiple)) => *multiple,
        None | Some(Value::Null) => false,
        Some(_) => {
            violations.push(Violation::new(
                format!("{path}.multiSelect"),
                format!("{path}.multiSelect must be true or false"),
            ));
            false
        }
    };
    let mut choices = Vec::new();
    match question.get("options") {
        Some(Value::Array(options)) if (MIN_OPTIONS..=MAX_OPTIONS).contains(&options.len()) => {
            for (at, option) in options.iter().enumerate() {
                match choice(option) {
                    Some(choice) => choices.push(choice),
                    None => violations.push(Violation::new(
                        format!("{path}.options[{at}]"),
                        format!("{path}.options[{at}] must be an object with a string label, a string description and an optional string preview"),
                    )),
                }
            }
        }
        Some(Value::Array(options)) => violations.push(Violation::new(
            format!("{path}.options"),
            format!(
                "{path} offers {} options; offer {MIN_OPTIONS} to {MAX_OPTIONS} (\"Other\" is added for you)",
                options.len()
            ),
        )),
        _ => violations.push(Violation::new(
            format!("{path}.options"),
            format!("{path}.options must be an array of {MIN_OPTIONS} to {MAX_OPTIONS} options"),
        )),
    }
    if !violations.is_empty() {
        return Err(violations);
    }
    Ok(FormField {
        name: format!("q{}", index + 1),
        header,
        question: asked,
        required: true,
        kind: FieldKind::Choice(ChoiceField {
            choices,
            multiple,
            allow_other: true,
            ..ChoiceField::default()
        }),
    })
}

fn choice(option: &Value) -> Option<Choice> {
    let string = |key: &str| match option.get(key) {
        Some(Value::String(text)) => Some(text.clone()),
        None | Some(Value::Null) => Some(String::new()),
        Some(_) => None,
    };
    let label = match option.get("label") {
        Some(Value::String(label)) => label.clone(),
        _ => return None,
    };
    Some(Choice {
        recommended: label.to_lowercase().contains(RECOMMENDED),
        value: label,
        label: String::new(),
        description: string("description")?,
        preview: string("preview")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_input_becomes_a_form_of_choice_fields_with_other() {
        let form = parse(
            r#"{"questions":[{"question":"Which database?","header":"Database","multiSelect":false,
                "options":[{"label":"PostgreSQL (Recommended)","description":"durable","preview":"CREATE TABLE t();"},
                           {"label":"SQLite","description":"one file"}]},
               {"question":"Which checks?","header":"Checks","multiSelect":true,
                "options":[{"label":"lint","description":""},{"label":"unit","description":"fast","preview":null}]}]}"#,
        )
        .expect("valid");
        assert_eq!(form.style, FormStyle::Questions);
        assert_eq!(form.fields.len(), 2);
        assert_eq!(form.fields[0].name, "q1");
        assert_eq!(form.fields[0].header, "Database");
        let FieldKind::Choice(first) = &form.fields[0].kind else {
            panic!("a choice field")
        };
        assert!(first.allow_other && !first.multiple);
        assert!(first.choices[0].recommended && !first.choices[1].recommended);
        assert_eq!(first.choices[0].preview, "CREATE TABLE t();");
        let FieldKind::Choice(second) = &form.fields[1].kind else {
            panic!("a choice field")
        };
        assert!(second.multiple);
    }

    #[test]
    fn out_of_shape_input_names_each_problem() {
        let errors = parse(
            r#"{"questions":[{"question":"A?","header":"Much too long a header","options":[{"label":"only"}],"multiSelect":"yes"}]}"#,
        )
        .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "questions[0].header",
                "questions[0].multiSelect",
                "questions[0].options"
            ]
        );
        assert!(parse(r#"{"questions":[]}"#).is_err());
        let five = r#"{"question":"Q?","header":"h","options":[{"label":"a","description":""},{"label":"b","description":""}],"multiSelect":false}"#;
        let errors = parse(&format!(
            "{{\"questions\":[{five},{five},{five},{five},{five}]}}"
        ))
        .expect_err("five questions");
        assert_eq!(errors[0].field, "questions");
        let errors = parse(&format!("{{\"questions\":[{five},{five}]}}")).expect_err("repeated");
        assert_eq!(errors[0].field, "questions[1].question");
    }
}
