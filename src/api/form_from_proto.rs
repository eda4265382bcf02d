//! A `Form` a caller sends (`HumanService.Ask`) as the domain's form; its constraints are checked
//! after, by the runtime, as any form's.

use super::error::ApiError;
use crate::domain::{
    BooleanField, Choice, ChoiceField, FieldKind, Form, FormField, FormStyle, Number, NumberField,
    TextField, TextFormat,
};
use crate::proto::v1 as pb;

/// Decodes `form` (at `path` in the request); a field without a kind or with an unknown text
/// format is a violation.
pub fn form_from_proto(form: pb::Form, path: &str) -> Result<Form, ApiError> {
    let fields = form
        .fields
        .into_iter()
        .enumerate()
        .map(|(index, field)| field_from_proto(field, &format!("{path}.fields[{index}]")))
        .collect::<Result<_, _>>()?;
    Ok(Form {
        title: form.title,
        message: form.message,
        fields,
        // A request's form is answered as MCP elicitation content is: `accept` with values.
        style: FormStyle::Elicitation,
        url: form.url,
    })
}

fn field_from_proto(field: pb::FormField, path: &str) -> Result<FormField, ApiError> {
    use pb::form_field::Kind;
    let kind = match field.kind {
        None => {
            return Err(ApiError::field(
                format!("{path}.kind"),
                "a field needs a kind: text, number, boolean or choice",
            ));
        }
        Some(Kind::Text(text)) => FieldKind::Text(TextField {
            min_length: text.min_length,
            max_length: text.max_length,
            format: match pb::TextFormat::try_from(text.format) {
                Ok(pb::TextFormat::Unspecified) => None,
                Ok(pb::TextFormat::Email) => Some(TextFormat::Email),
                Ok(pb::TextFormat::Uri) => Some(TextFormat::Uri),
                Ok(pb::TextFormat::Date) => Some(TextFormat::Date),
                Ok(pb::TextFormat::DateTime) => Some(TextFormat::DateTime),
                Err(_) => {
                    return Err(ApiError::field(
                        format!("{path}.text.format"),
                        "format is not a known TextFormat",
                    ));
                }
            },
            pattern: text.pattern,
            multiline: text.multiline,
            default_value: text.default_value,
        }),
        Some(Kind::Number(number)) => FieldKind::Number(NumberField {
            integer: number.integer,
            minimum: number.minimum.map(Number),
            maximum: number.maximum.map(Number),
            default_value: number.default_value.map(Number),
        }),
        Some(Kind::Boolean(boolean)) => FieldKind::Boolean(BooleanField {
            default_value: boolean.default_value,
        }),
        Some(Kind::Choice(choice)) => FieldKind::Choice(ChoiceField {
            choices: choice
                .choices
                .into_iter()
                .map(|c| Choice {
                    value: c.value,
                    label: c.label,
                    description: c.description,
                    preview: c.preview,
                    recommended: c.recommended,
                })
                .collect(),
            multiple: choice.multiple,
            min_selected: choice.min_selected,
            max_selected: choice.max_selected,
            allow_other: choice.allow_other,
            default_values: choice.default_values,
        }),
    };
    Ok(FormField {
        name: field.name,
        header: field.header,
        question: field.question,
        required: field.required,
        kind,
    })
}
