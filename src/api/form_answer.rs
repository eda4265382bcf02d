//! A form's answer decoded from its askuser.v1 `FormAnswer`, and back.

use super::error::ApiError;
use crate::domain::{ChoiceValue, FieldValue, FormAnswer, Number};
use crate::proto::v1 as pb;
use crate::runtime::Violation;

/// The values of `answer`; a value with none of its kinds set is refused, by its path.
pub fn form_answer_from_proto(answer: pb::FormAnswer) -> Result<FormAnswer, ApiError> {
    use pb::field_value::Value;
    let mut violations = Vec::new();
    let mut values = std::collections::BTreeMap::new();
    for (name, value) in answer.values {
        let value = match value.value {
            Some(Value::Text(text)) => FieldValue::Text(text),
            Some(Value::Number(number)) => FieldValue::Number(Number(number)),
            Some(Value::Boolean(boolean)) => FieldValue::Boolean(boolean),
            Some(Value::Choice(choice)) => FieldValue::Choice(ChoiceValue {
                values: choice.values,
                other: choice.other,
            }),
            None => {
                violations.push(Violation {
                    field: format!("answer.form.values[\"{name}\"]"),
                    description: format!(
                        "\"{name}\" needs a value: text, number, boolean or choice"
                    ),
                });
                continue;
            }
        };
        values.insert(name, value);
    }
    if violations.is_empty() {
        Ok(FormAnswer { values })
    } else {
        Err(ApiError::InvalidAnswer(violations))
    }
}

/// A form's values back in the API's words (a settled call's answer).
pub fn form_answer_to_proto(answer: FormAnswer) -> pb::FormAnswer {
    use pb::field_value::Value;
    pb::FormAnswer {
        values: answer
            .values
            .into_iter()
            .map(|(name, value)| {
                let value = match value {
                    FieldValue::Text(text) => Value::Text(text),
                    FieldValue::Number(Number(number)) => Value::Number(number),
                    FieldValue::Boolean(boolean) => Value::Boolean(boolean),
                    FieldValue::Choice(choice) => Value::Choice(pb::ChoiceValue {
                        values: choice.values,
                        other: choice.other,
                    }),
                };
                (name, pb::FieldValue { value: Some(value) })
            })
            .collect(),
    }
}
