//! Properties of the `ask_user` rules (src/runtime/ask_user.rs), checked on generated questions and
//! answers against a plain statement of the rules: a question is valid, and an answer accepted,
//! exactly when the rules say so; refusals are bounded; nothing panics.
//!
//! Labels and texts come from tiny alphabets and limits are tiny, so that collisions (a repeated
//! label, an answer that names an offered label) and limits being hit are common, not rare.

use askuser::domain::{AnswerInput, AskUserInput, AskUserOption, SelectionMode, SuspendPayload};
use askuser::runtime::ask_user::{
    AskUserLimits, MAX_VIOLATIONS, check_answer, parse_arguments, validate,
};
use proptest::prelude::*;
use serde_json::json;

/// Short texts, often blank, often equal to each other, sometimes any Unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![4 => "[ab ]{0,3}", 1 => "\\PC{0,6}", 1 => "[\\t\\n a]{0,3}"]
}

fn limits() -> impl Strategy<Value = AskUserLimits> {
    (0usize..5, 1usize..4, 1usize..6, 0usize..4, 1usize..6).prop_map(
        |(
            max_options,
            max_label_bytes,
            max_question_bytes,
            max_description_bytes,
            max_answer_bytes,
        )| {
            AskUserLimits {
                max_options,
                max_label_bytes,
                max_question_bytes,
                max_description_bytes,
                max_answer_bytes,
                ..AskUserLimits::default()
            }
        },
    )
}

fn mode() -> impl Strategy<Value = Option<SelectionMode>> {
    prop_oneof![
        Just(None),
        Just(Some(SelectionMode::SingleSelect)),
        Just(Some(SelectionMode::MultiSelect)),
    ]
}

fn option() -> impl Strategy<Value = AskUserOption> {
    (text(), text()).prop_map(|(label, description)| AskUserOption { label, description })
}

fn input() -> impl Strategy<Value = AskUserInput> {
    (text(), prop::collection::vec(option(), 0..7), mode()).prop_map(
        |(question, options, selection_mode)| AskUserInput {
            question,
            options,
            selection_mode,
        },
    )
}

/// A question as validation would leave it (labels unique and non-blank, mode resolved).
fn payload() -> impl Strategy<Value = SuspendPayload> {
    (prop::collection::btree_set("[abc]{1,2}", 0..5), mode()).prop_map(|(labels, mode)| {
        let options: Vec<AskUserOption> = labels
            .into_iter()
            .map(|label| AskUserOption {
                label,
                description: String::new(),
            })
            .collect();
        let selection_mode = if options.is_empty() {
            None
        } else {
            Some(mode.unwrap_or(SelectionMode::SingleSelect))
        };
        SuspendPayload {
            question: "Q?".into(),
            options,
            selection_mode,
        }
    })
}

fn answer() -> impl Strategy<Value = AnswerInput> {
    let label = || prop_oneof![4 => "[abc]{1,2}", 1 => text()];
    prop_oneof![
        3 => label().prop_map(AnswerInput::Text),
        3 => prop::collection::vec(label(), 0..7).prop_map(AnswerInput::Selections),
        1 => text().prop_map(AnswerInput::Decline),
        1 => (text(), any::<bool>())
            .prop_map(|(content, is_error)| AnswerInput::ToolOutput { content, is_error }),
        1 => Just(AnswerInput::Approval(askuser::domain::ApprovalDecision::Approve)),
    ]
}

/// The rules of a question, stated plainly.
fn question_is_valid(input: &AskUserInput, limits: &AskUserLimits) -> bool {
    let mut labels = std::collections::HashSet::new();
    !input.question.trim().is_empty()
        && input.question.len() <= limits.max_question_bytes
        && input.options.len() <= limits.max_options
        && input.options.iter().all(|option| {
            !option.label.trim().is_empty()
                && option.label.len() <= limits.max_label_bytes
                && option.description.len() <= limits.max_description_bytes
                && labels.insert(option.label.as_str())
        })
        && (input.selection_mode.is_none() || !input.options.is_empty())
}

/// The rules of an answer, stated plainly.
fn answer_is_valid(payload: &SuspendPayload, answer: &AnswerInput, limits: &AskUserLimits) -> bool {
    let offered = |label: &String| payload.options.iter().any(|o| &o.label == label);
    match (payload.selection_mode, answer) {
        (_, AnswerInput::Decline(_)) => true,
        (_, AnswerInput::Reply(reply)) => {
            !reply.trim().is_empty() && reply.len() <= limits.max_answer_bytes
        }
        (_, AnswerInput::ToolOutput { .. } | AnswerInput::Approval(_) | AnswerInput::Form(_)) => {
            false
        }
        (_, AnswerInput::Text(text)) if text.len() > limits.max_answer_bytes => false,
        (None, AnswerInput::Text(text)) => !text.trim().is_empty(),
        (None, AnswerInput::Selections(_)) => false,
        (Some(SelectionMode::SingleSelect), AnswerInput::Text(text)) => offered(text),
        (Some(SelectionMode::SingleSelect), AnswerInput::Selections(labels)) => {
            labels.len() == 1 && offered(&labels[0])
        }
        (Some(SelectionMode::MultiSelect), AnswerInput::Text(_)) => false,
        (Some(SelectionMode::MultiSelect), AnswerInput::Selections(labels)) => {
            let distinct: std::collections::HashSet<&String> = labels.iter().collect();
            labels.len() <= limits.max_options
                && labels.iter().all(offered)
                && distinct.len() == labels.len()
        }
    }
}

/// The longest text an answer carries: a violation may quote one, never more.
fn longest_text(answer: &AnswerInput) -> usize {
    match answer {
        AnswerInput::Text(text) | AnswerInput::Decline(text) | AnswerInput::Reply(text) => {
            text.len()
        }
        AnswerInput::Form(form) => form
            .values
            .values()
            .map(|value| match value {
                askuser::domain::FieldValue::Text(text) => text.len(),
                askuser::domain::FieldValue::Choice(choice) => choice
                    .values
                    .iter()
                    .map(String::len)
                    .chain([choice.other.len()])
                    .max()
                    .unwrap_or(0),
                _ => 0,
            })
            .max()
            .unwrap_or(0),
        AnswerInput::Selections(labels) => labels.iter().map(String::len).max().unwrap_or(0),
        AnswerInput::ToolOutput { content, .. } => content.len(),
        AnswerInput::Approval(_) => 0,
    }
}

/// Room for a violation's own words around what it quotes.
const DESCRIPTION_WORDS: usize = 120;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_question_is_valid_exactly_when_the_rules_say(input in input(), limits in limits()) {
        match validate(&input, &limits) {
            Ok(payload) => {
                prop_assert!(question_is_valid(&input, &limits));
                prop_assert_eq!(&payload.question, &input.question);
                prop_assert_eq!(&payload.options, &input.options);
                // The mode is resolved: present exactly when there are options.
                let expected = (!input.options.is_empty())
                    .then(|| input.selection_mode.unwrap_or(SelectionMode::SingleSelect));
                prop_assert_eq!(payload.selection_mode, expected);
            }
            Err(violations) => {
                prop_assert!(!question_is_valid(&input, &limits));
                prop_assert!(!violations.is_empty());
                prop_assert!(violations.len() <= MAX_VIOLATIONS);
                let mut fields: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
                fields.sort_unstable();
                let count = fields.len();
                fields.dedup();
                prop_assert_eq!(fields.len(), count, "a field is named twice: {:?}", violations);
            }
        }
    }

    #[test]
    fn an_answer_is_accepted_exactly_when_the_rules_say(
        payload in payload(),
        answer in answer(),
        limits in limits(),
    ) {
        // The question was valid under these limits when it was asked (limits may have been
        // lowered since: the answer is still checked against the question as asked).
        let limits = AskUserLimits { max_options: limits.max_options.max(payload.options.len()), ..limits };
        let verdict = check_answer(&payload, &answer, &limits);
        prop_assert_eq!(verdict.is_ok(), answer_is_valid(&payload, &answer, &limits), "{:?}", verdict);
        match verdict {
            Ok(()) => {
                if let AnswerInput::Selections(labels) = &answer {
                    for label in labels {
                        prop_assert!(payload.options.iter().any(|o| &o.label == label));
                    }
                }
            }
            Err(violations) => {
                prop_assert!(!violations.is_empty() && violations.len() <= MAX_VIOLATIONS);
                for violation in &violations {
                    prop_assert!(violation.field.starts_with("answer."), "{:?}", violation);
                    // No violation repeats the list of offered labels, or anything else long.
                    prop_assert!(
                        violation.description.len() <= DESCRIPTION_WORDS + longest_text(&answer),
                        "{:?}", violation
                    );
                }
            }
        }
    }

    #[test]
    fn every_offered_label_answers_its_question(payload in payload()) {
        let limits = AskUserLimits::default();
        for option in &payload.options {
            let single = AnswerInput::Selections(vec![option.label.clone()]);
            prop_assert!(check_answer(&payload, &single, &limits).is_ok());
        }
        if payload.selection_mode == Some(SelectionMode::MultiSelect) {
            let all = AnswerInput::Selections(payload.options.iter().map(|o| o.label.clone()).collect());
            prop_assert!(check_answer(&payload, &all, &limits).is_ok());
        }
    }

    #[test]
    fn model_arguments_round_trip(input in input()) {
        let arguments = json!({
            "question": input.question,
            "options": input.options.iter()
                .map(|o| json!({ "label": o.label, "description": o.description }))
                .collect::<Vec<_>>(),
            "selectionMode": input.selection_mode.map(SelectionMode::as_str),
        });
        prop_assert_eq!(parse_arguments(&arguments.to_string()), Ok(input));
    }

    #[test]
    fn any_model_arguments_parse_or_are_refused(text in "\\PC{0,64}") {
        if let Err(violations) = parse_arguments(&text) {
            prop_assert!(!violations.is_empty());
        }
    }
}

/// Too many labels to look at: refused by their count, with one violation, however many there are.
#[test]
fn a_huge_selection_costs_one_violation() {
    let payload = SuspendPayload {
        question: "Q?".into(),
        options: vec![AskUserOption {
            label: "a".into(),
            description: String::new(),
        }],
        selection_mode: Some(SelectionMode::MultiSelect),
    };
    let huge = AnswerInput::Selections(vec![String::new(); 2_000_000]);
    let violations = check_answer(&payload, &huge, &AskUserLimits::default()).expect_err("refused");
    assert_eq!(violations.len(), 1);
}
