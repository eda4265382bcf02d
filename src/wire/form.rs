//! A form as its askuser.v1 `Form` message.

use crate::domain::{FieldKind, Form, FormField, Number, TextFormat};
use crate::proto::v1 as pb;

pub fn form_to_proto(form: &Form) -> pb::Form {
    pb::Form {
        title: form.title.clone(),
        message: form.message.clone(),
        fields: form.fields.iter().map(field_to_proto).collect(),
        url: form.url.clone(),
    }
}

fn field_to_proto(field: &FormField) -> pb::FormField {
    use pb::form_field::Kind;
    let number = |value: Option<Number>| value.map(|Number(value)| value);
    let kind = match &field.kind {
        FieldKind::Text(text) => Kind::Text(pb::TextField {
            min_length: text.min_length,
            max_length: text.max_length,
            format: text
                .format
                .map_or(pb::TextFormat::Unspecified, format_to_proto) as i32,
            pattern: text.pattern.clone(),
            multiline: text.multiline,
            default_value: text.default_value.clone(),
        }),
        FieldKind::Number(field) => Kind::Number(pb::NumberField {
            integer: field.integer,
            minimum: number(field.minimum),
            maximum: number(field.maximum),
            default_value: number(field.default_value),
        }),
        FieldKind::Boolean(field) => Kind::Boolean(pb::BooleanField {
            default_value: field.default_value,
        }),
        FieldKind::Choice(field) => Kind::Choice(pb::ChoiceField {
            choices: field
                .choices
                .iter()
                .map(|choice| pb::Choice {
                    value: choice.value.clone(),
                    label: choice.label.clone(),
                    description: choice.description.clone(),
                    preview: choice.preview.clone(),
                    recommended: choice.recommended,
                })
                .collect(),
            multiple: field.multiple,
            min_selected: field.min_selected,
            max_selected: field.max_selected,
            allow_other: field.allow_other,
            default_values: field.default_values.clone(),
        }),
    };
    pb::FormField {
        name: field.name.clone(),
        header: field.header.clone(),
        question: field.question.clone(),
        required: field.required,
        kind: Some(kind),
    }
}

fn format_to_proto(format: TextFormat) -> pb::TextFormat {
    match format {
        TextFormat::Email => pb::TextFormat::Email,
        TextFormat::Uri => pb::TextFormat::Uri,
        TextFormat::Date => pb::TextFormat::Date,
        TextFormat::DateTime => pb::TextFormat::DateTime,
    }
}
