//! Forms: several typed questions asked at once and answered together (`SUSPEND_KIND_FORM`), as
//! the `ask_user_questions` tool (Claude Code's `AskUserQuestion` shape) and the `ask_user_form`
//! tool (an MCP form-mode elicitation) ask them, and the values that answer them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A number of a form: a finite `f64` (answers with NaN or infinities are refused before they are
/// stored), so equality is total.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Number(pub f64);

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits() || self.0 == other.0
    }
}

impl Eq for Number {}

/// How the model is told a form's outcome: the tool that asked it decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormStyle {
    /// As an MCP elicitation result: `{"action": "accept", "content": {…}}`, `decline`, `cancel`.
    #[default]
    Elicitation,
    /// As Claude Code's `AskUserQuestion` result: `{"answers": {"<question>": …}}`.
    Questions,
}

/// A form, validated: what a form call waits on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Form {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    pub fields: Vec<FormField>,
    #[serde(default)]
    pub style: FormStyle,
    /// A page for the person to open instead of fields (an MCP server's URL-mode elicitation):
    /// accepting says they agree to go there. askuser never fetches it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// One field of a form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormField {
    /// The key of its value in the answer.
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub header: String,
    pub question: String,
    #[serde(default)]
    pub required: bool,
    pub kind: FieldKind,
}

/// What a field takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    Text(TextField),
    Number(NumberField),
    Boolean(BooleanField),
    Choice(ChoiceField),
}

impl FieldKind {
    /// Its name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            FieldKind::Text(_) => "text",
            FieldKind::Number(number) if number.integer => "integer",
            FieldKind::Number(_) => "number",
            FieldKind::Boolean(_) => "boolean",
            FieldKind::Choice(_) => "choice",
        }
    }
}

/// A shape a text value must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    /// The JSON Schema `format` name.
    pub fn as_str(self) -> &'static str {
        match self {
            TextFormat::Email => "email",
            TextFormat::Uri => "uri",
            TextFormat::Date => "date",
            TextFormat::DateTime => "date-time",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [
            TextFormat::Email,
            TextFormat::Uri,
            TextFormat::Date,
            TextFormat::DateTime,
        ]
        .into_iter()
        .find(|format| format.as_str() == name)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextField {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pattern: String,
    #[serde(default)]
    pub multiline: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberField {
    #[serde(default)]
    pub integer: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<Number>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BooleanField {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoiceField {
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub multiple: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_selected: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_selected: Option<u32>,
    #[serde(default)]
    pub allow_other: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_values: Vec<String>,
}

impl ChoiceField {
    /// The choice whose value is `value`.
    pub fn choice(&self, value: &str) -> Option<&Choice> {
        self.choices.iter().find(|choice| choice.value == value)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preview: String,
    #[serde(default)]
    pub recommended: bool,
}

/// An accepted form's values, by field name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormAnswer {
    pub values: BTreeMap<String, FieldValue>,
}

/// One field's value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldValue {
    Text(String),
    Number(Number),
    Boolean(bool),
    Choice(ChoiceValue),
}

impl FieldValue {
    /// Its kind's name in messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            FieldValue::Text(_) => "text",
            FieldValue::Number(_) => "number",
            FieldValue::Boolean(_) => "boolean",
            FieldValue::Choice(_) => "choice",
        }
    }
}

/// A choice field's value: the selected choices' values and, where allowed, the person's own text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoiceValue {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub other: String,
}
