//! A form's answer decoded from its askuser.v1 `FormAnswer`.

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
