//! Properties of the wire ↔ domain conversions, and the fuzzing of `RunAgent` frames: arbitrary
//! bytes, and arbitrary structured frames, decoded and taken through the same conversion and
//! validation a `RunAgent` stream applies (start, attach, answer), never panic, and what they accept
//! is what was sent.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use prost::Message;

use super::convert::{
    answer_from_proto, duration_from_proto, duration_to_proto, input_from_proto, pending_filter,
    start_from_proto, status_filter, status_to_proto,
};
use super::error::ApiError;
use super::limits::{self, Field, RequestLimits};
use crate::domain::{
    AnswerInput, ApprovalDecision, AuthMethod, Event, EventKind, Principal, RunStatus,
    SelectionMode, SettledBy, SuspendKind, SuspendPayload, ToolResultKind, Usage,
};
use crate::proto::v1 as pb;
use crate::proto::v1::run_agent_request::Frame;
use crate::runtime::ask_user::{self, AskUserLimits, MAX_VIOLATIONS};
use crate::runtime::tools::Tool;
use crate::wire::{event_to_proto, payload_to_proto, timestamp};

/// Cases of the fuzzing properties; the others take proptest's default.
const FUZZ_CASES: u32 = 4096;

/// Short texts: often empty, sometimes holding a NUL, sometimes any Unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![4 => "[ab]{0,3}", 1 => "[a\\x00]{0,3}", 1 => "\\PC{0,12}"]
}

/// Enum numbers: mostly known ones, sometimes anything.
fn enum_number() -> impl Strategy<Value = i32> {
    prop_oneof![4 => -1i32..5, 1 => any::<i32>()]
}

fn proto_duration() -> impl Strategy<Value = prost_types::Duration> {
    prop_oneof![
        (0i64..100, 0i32..1_000_000_000),
        (any::<i64>(), any::<i32>()),
    ]
    .prop_map(|(seconds, nanos)| prost_types::Duration { seconds, nanos })
}

/// A client tool's schema text: usable schemas, broken JSON, schemas that are no schema, and
/// patterns a careless or hostile client might send.
fn schema_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#"{"type":"object"}"#.to_owned()),
        Just(
            r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#
                .to_owned()
        ),
        Just(
            r#"{"type":"object","properties":{"s":{"type":"string","pattern":"^(a+)+$"}}}"#
                .to_owned()
        ),
        Just(r#"{"type":"object","properties":{"s":{"pattern":"(?<=a)(\\1)"}}}"#.to_owned()),
        Just(r##"{"$ref":"#"}"##.to_owned()),
        Just(r#"{"$ref":"http://example.invalid/schema.json"}"#.to_owned()),
        Just(r#"{"type":"nonsense"}"#.to_owned()),
        Just("[]".to_owned()),
        Just(String::new()),
        "\\PC{0,24}",
        "[{}\\[\\]\":,a-z0-9]{0,24}",
    ]
}

fn tool() -> impl Strategy<Value = pb::ToolDefinition> {
    (
        prop_oneof![3 => "[a-z_]{1,8}", 1 => text()],
        text(),
        schema_text(),
        enum_number(),
    )
        .prop_map(
            |(name, description, parameters_json_schema, approval)| pb::ToolDefinition {
                name,
                description,
                parameters_json_schema,
                approval,
            },
        )
}

fn start() -> impl Strategy<Value = pb::StartRun> {
    (
        text(),
        text(),
        prop::collection::hash_map(text(), text(), 0..3),
        prop::option::of(proto_duration()),
        prop::collection::vec(tool(), 0..3),
        text(),
    )
        .prop_map(
            |(agent_id, prompt, metadata, question_ttl, tools, request_id)| pb::StartRun {
                agent_id,
                prompt,
                metadata,
                question_ttl,
                tools,
                request_id,
                webhooks: Vec::new(),
            },
        )
}

fn decision() -> impl Strategy<Value = Option<pb::approval_decision::Decision>> {
    use pb::approval_decision::Decision;
    prop_oneof![
        Just(None),
        Just(Some(Decision::Approve(pb::approval_decision::Approve {}))),
        text().prop_map(|reason| Some(Decision::Reject(pb::approval_decision::Reject { reason }))),
        text().prop_map(
            |arguments_json| Some(Decision::Edit(pb::approval_decision::Edit {
                arguments_json
            }))
        ),
    ]
}

fn answer_kind() -> impl Strategy<Value = Option<pb::answer::Answer>> {
    use pb::answer::Answer as Kind;
    prop_oneof![
        Just(None),
        text().prop_map(|text| Some(Kind::Text(text))),
        prop::collection::vec(text(), 0..4)
            .prop_map(|labels| Some(Kind::Selections(pb::Selections { labels }))),
        text().prop_map(|reason| Some(Kind::Decline(pb::Decline { reason }))),
        (text(), any::<bool>()).prop_map(|(content, is_error)| Some(Kind::ToolOutput(
            pb::ToolOutput { content, is_error }
        ))),
        decision().prop_map(|decision| Some(Kind::Approval(pb::ApprovalDecision { decision }))),
        text().prop_map(|reply| Some(Kind::Reply(reply))),
        prop::collection::hash_map(text(), field_value(), 0..3)
            .prop_map(|values| Some(Kind::Form(pb::FormAnswer { values }))),
    ]
}

fn field_value() -> impl Strategy<Value = pb::FieldValue> {
    use pb::field_value::Value;
    prop_oneof![
        Just(None),
        text().prop_map(|text| Some(Value::Text(text))),
        (-1e9f64..1e9).prop_map(|number| Some(Value::Number(number))),
        any::<bool>().prop_map(|boolean| Some(Value::Boolean(boolean))),
        (prop::collection::vec(text(), 0..3), text())
            .prop_map(|(values, other)| Some(Value::Choice(pb::ChoiceValue { values, other }))),
    ]
    .prop_map(|value| pb::FieldValue { value })
}

/// The form answer `answer` decodes to; `None` when a value has no kind (refused).
fn decoded_form(answer: &pb::FormAnswer) -> Option<crate::domain::FormAnswer> {
    use crate::domain::{ChoiceValue, FieldValue, Number};
    use pb::field_value::Value;
    let values = answer
        .values
        .iter()
        .map(|(name, value)| {
            let value = match value.value.clone()? {
                Value::Text(text) => FieldValue::Text(text),
                Value::Number(number) => FieldValue::Number(Number(number)),
                Value::Boolean(boolean) => FieldValue::Boolean(boolean),
                Value::Choice(choice) => FieldValue::Choice(ChoiceValue {
                    values: choice.values,
                    other: choice.other,
                }),
            };
            Some((name.clone(), value))
        })
        .collect::<Option<_>>()?;
    Some(crate::domain::FormAnswer { values })
}

fn answer() -> impl Strategy<Value = pb::Answer> {
    (text(), text(), answer_kind(), text()).prop_map(|(run_id, tool_call_id, answer, answer_id)| {
        pb::Answer {
            run_id,
            tool_call_id,
            answer,
            answer_id,
        }
    })
}

fn frame() -> impl Strategy<Value = pb::RunAgentRequest> {
    prop_oneof![
        1 => Just(None),
        3 => start().prop_map(|start| Some(Frame::Start(start))),
        2 => (text(), any::<u64>()).prop_map(|(run_id, after_sequence)| Some(Frame::Attach(
            pb::AttachRun { run_id, after_sequence }
        ))),
        4 => answer().prop_map(|answer| Some(Frame::Answer(answer))),
    ]
    .prop_map(|frame| pb::RunAgentRequest { frame })
}

/// The question every fuzzed answer answers.
fn question() -> SuspendPayload {
    SuspendPayload {
        question: "Which?".into(),
        options: ["a", "b"]
            .into_iter()
            .map(|label| crate::domain::AskUserOption {
                label: label.into(),
                description: String::new(),
            })
            .collect(),
        selection_mode: Some(SelectionMode::MultiSelect),
    }
}

/// Takes one frame through what `RunAgent` does with it before the runtime acts on it: a start's
/// decoding and its client tools' compilation, an attach's text check, an answer's decoding and
/// its check against a question. Refusals must be bounded field violations.
fn take_frame(frame: pb::RunAgentRequest) -> Result<(), TestCaseError> {
    let refused = |error: ApiError| -> Result<(), TestCaseError> {
        match error {
            ApiError::InvalidRequest(violations) | ApiError::InvalidAnswer(violations) => {
                prop_assert!(!violations.is_empty() && violations.len() <= MAX_VIOLATIONS);
                Ok(())
            }
            other => Err(TestCaseError::fail(format!("not a field error: {other:?}"))),
        }
    };
    match frame.frame {
        Some(Frame::Start(start)) => {
            match start_from_proto(start, &RequestLimits::default(), Principal::anonymous()) {
                Ok(start) => {
                    for tool in &start.tools {
                        // The runtime's check of a client tool: compiles the client's schema.
                        let _ = Tool::for_run(tool);
                    }
                    Ok(())
                }
                Err(error) => refused(error),
            }
        }
        Some(Frame::Attach(attach)) => limits::check(
            [("attach.run_id", Field::Id(&attach.run_id))],
            &RequestLimits::default(),
        )
        .or_else(refused),
        Some(Frame::Answer(answer)) => {
            match answer_from_proto(
                answer,
                Some("run"),
                &RequestLimits::default(),
                Principal::anonymous(),
            ) {
                Ok(request) => {
                    let limits = AskUserLimits::default();
                    if let Err(violations) =
                        ask_user::check_answer(&question(), &request.answer, &limits)
                    {
                        prop_assert!(!violations.is_empty() && violations.len() <= MAX_VIOLATIONS);
                    }
                    Ok(())
                }
                Err(error) => refused(error),
            }
        }
        None => Ok(()),
    }
}

fn holds_nul(texts: &[&str]) -> bool {
    texts.iter().any(|text| text.contains('\0'))
}

/// Every text an answer carries.
fn answer_texts(answer: &pb::Answer) -> Vec<&str> {
    use pb::answer::Answer as Kind;
    use pb::approval_decision::Decision;
    let mut texts = vec![
        answer.run_id.as_str(),
        answer.tool_call_id.as_str(),
        answer.answer_id.as_str(),
    ];
    match &answer.answer {
        Some(Kind::Text(text)) => texts.push(text),
        Some(Kind::Selections(selections)) => {
            texts.extend(selections.labels.iter().map(String::as_str))
        }
        Some(Kind::Decline(decline)) => texts.push(&decline.reason),
        Some(Kind::ToolOutput(output)) => texts.push(&output.content),
        Some(Kind::Approval(pb::ApprovalDecision {
            decision: Some(Decision::Reject(reject)),
        })) => texts.push(&reject.reason),
        Some(Kind::Approval(pb::ApprovalDecision {
            decision: Some(Decision::Edit(edit)),
        })) => texts.push(&edit.arguments_json),
        Some(Kind::Form(form)) => {
            for (name, value) in &form.values {
                texts.push(name);
                match &value.value {
                    Some(pb::field_value::Value::Text(text)) => texts.push(text),
                    Some(pb::field_value::Value::Choice(choice)) => {
                        texts.push(&choice.other);
                        texts.extend(choice.values.iter().map(String::as_str));
                    }
                    _ => {}
                }
            }
        }
        Some(Kind::Reply(reply)) => texts.push(reply),
        Some(Kind::Approval(_)) | None => {}
    }
    texts
}

fn domain_status() -> impl Strategy<Value = RunStatus> {
    prop_oneof![
        Just(RunStatus::Running),
        Just(RunStatus::Suspended),
        Just(RunStatus::Completed),
        Just(RunStatus::Failed),
        Just(RunStatus::Cancelled),
    ]
}

fn event_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        (text(), text()).prop_map(|(agent_id, prompt)| EventKind::RunStarted {
            agent_id,
            prompt,
            metadata: Default::default(),
        }),
        text().prop_map(|text| EventKind::TextDelta { text }),
        (text(), text(), prop::option::of(any::<i64>())).prop_map(
            |(tool_call_id, question, expire_ms)| EventKind::ToolCallSuspended {
                tool_call_id,
                tool_name: "ask_user".into(),
                payload: Some(SuspendPayload {
                    question,
                    options: Vec::new(),
                    selection_mode: None,
                }),
                form: None,
                expire_ms,
                kind: SuspendKind::Question,
                arguments_json: String::new(),
                approval_reason: String::new(),
                assignees: Vec::new(),
            }
        ),
        (text(), text(), any::<bool>(), text()).prop_map(
            |(tool_call_id, content, is_error, subject)| EventKind::ToolResult {
                tool_call_id,
                content,
                is_error,
                kind: ToolResultKind::Answered,
                settled_by: Some(SettledBy {
                    tenant: "acme".into(),
                    subject,
                    method: AuthMethod::ApiKey,
                }),
            }
        ),
        (text(), any::<u64>(), any::<u64>()).prop_map(|(output_text, input, output)| {
            EventKind::RunCompleted {
                output_text,
                usage: Some(Usage {
                    input_tokens: input,
                    output_tokens: output,
                }),
            }
        }),
        (text(), any::<u32>())
            .prop_map(|(reason, attempt)| EventKind::StepRestarted { reason, attempt }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(FUZZ_CASES))]

    #[test]
    fn any_bytes_decode_to_a_frame_that_is_taken_or_refused(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        if let Ok(frame) = pb::RunAgentRequest::decode(bytes.as_slice()) {
            take_frame(frame)?;
        }
    }

    /// Structured frames, encoded, cut or flipped at one place, and decoded again.
    #[test]
    fn any_frame_is_taken_or_refused(
        frame in frame(),
        damage in prop::option::of((any::<prop::sample::Index>(), any::<u8>(), any::<bool>())),
    ) {
        let mut bytes = frame.encode_to_vec();
        prop_assert_eq!(&pb::RunAgentRequest::decode(bytes.as_slice()).expect("round trip"), &frame);
        take_frame(frame)?;
        if let Some((at, byte, cut)) = damage.filter(|_| !bytes.is_empty()) {
            let at = at.index(bytes.len());
            if cut { bytes.truncate(at) } else { bytes[at] ^= byte }
            if let Ok(damaged) = pb::RunAgentRequest::decode(bytes.as_slice()) {
                take_frame(damaged)?;
            }
        }
    }
}

proptest! {
    #[test]
    fn a_start_is_accepted_exactly_when_valid_and_as_sent(start in start()) {
        let mut texts = vec![start.agent_id.as_str(), start.prompt.as_str(), start.request_id.as_str()];
        texts.extend(start.metadata.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]));
        texts.extend(start.tools.iter().flat_map(|t| {
            [t.name.as_str(), t.description.as_str(), t.parameters_json_schema.as_str()]
        }));
        let valid = !holds_nul(&texts)
            && start.question_ttl.as_ref().is_none_or(|d| d.seconds >= 0 && (0..1_000_000_000).contains(&d.nanos))
            && start.tools.iter().all(|t| (0..=2).contains(&t.approval));
        match start_from_proto(start.clone(), &RequestLimits::default(), Principal::anonymous()) {
            Ok(decoded) => {
                prop_assert!(valid);
                prop_assert_eq!(decoded.agent_id, start.agent_id);
                prop_assert_eq!(decoded.prompt, start.prompt);
                prop_assert_eq!(decoded.request_id, start.request_id);
                prop_assert_eq!(decoded.metadata.into_iter().collect::<HashMap<_, _>>(), start.metadata);
                prop_assert_eq!(decoded.question_ttl.map(duration_to_proto), start.question_ttl);
                prop_assert_eq!(decoded.tools.len(), start.tools.len());
                for (decoded, sent) in decoded.tools.iter().zip(&start.tools) {
                    prop_assert_eq!(&decoded.name, &sent.name);
                    prop_assert_eq!(&decoded.parameters_json_schema, &sent.parameters_json_schema);
                    prop_assert_eq!(decoded.approval_always, sent.approval == pb::ApprovalPolicy::Always as i32);
                }
            }
            Err(_) => prop_assert!(!valid),
        }
    }

    #[test]
    fn an_answer_is_decoded_exactly_when_complete_and_as_sent(answer in answer(), default_run in prop::option::of("[r]{1,2}")) {
        use pb::answer::Answer as Kind;
        use pb::approval_decision::Decision;
        let expected = match answer.answer.clone() {
            Some(Kind::Text(text)) => Some(AnswerInput::Text(text)),
            Some(Kind::Selections(s)) => Some(AnswerInput::Selections(s.labels)),
            Some(Kind::Decline(d)) => Some(AnswerInput::Decline(d.reason)),
            Some(Kind::ToolOutput(o)) => Some(AnswerInput::ToolOutput { content: o.content, is_error: o.is_error }),
            Some(Kind::Approval(pb::ApprovalDecision { decision: Some(Decision::Approve(_)) })) => Some(AnswerInput::Approval(ApprovalDecision::Approve)),
            Some(Kind::Approval(pb::ApprovalDecision { decision: Some(Decision::Reject(r)) })) => Some(AnswerInput::Approval(ApprovalDecision::Reject { reason: r.reason })),
            Some(Kind::Approval(pb::ApprovalDecision { decision: Some(Decision::Edit(e)) })) => Some(AnswerInput::Approval(ApprovalDecision::Edit { arguments_json: e.arguments_json })),
            Some(Kind::Reply(reply)) => Some(AnswerInput::Reply(reply)),
            Some(Kind::Form(form)) => decoded_form(&form).map(AnswerInput::Form),
            Some(Kind::Approval(pb::ApprovalDecision { decision: None })) | None => None,
        };
        let nul = holds_nul(&answer_texts(&answer));
        let run_id = if answer.run_id.is_empty() { default_run.clone() } else { Some(answer.run_id.clone()) };
        match answer_from_proto(
            answer.clone(),
            default_run.as_deref(),
            &RequestLimits::default(),
            Principal::anonymous(),
        ) {
            Ok(request) => {
                prop_assert!(!nul);
                prop_assert_eq!(Some(request.answer), expected);
                prop_assert_eq!(Some(request.run_id), run_id);
                prop_assert_eq!(request.tool_call_id, answer.tool_call_id);
                prop_assert_eq!(request.answer_id, answer.answer_id);
            }
            Err(error) => {
                prop_assert!(nul || expected.is_none() || run_id.is_none(), "{:?}", error);
                prop_assert!(matches!(error, ApiError::InvalidAnswer(_)));
            }
        }
    }

    /// `ToolService.AskUser`: a valid input comes back from the domain as it was sent, its mode
    /// resolved; an unknown mode number is a field violation.
    #[test]
    fn a_question_round_trips(
        question in text(),
        labels in prop::collection::btree_set("[abc]{1,3}", 0..4),
        mode in enum_number(),
    ) {
        let input = pb::AskUserInput {
            question,
            options: labels.into_iter().map(|label| pb::AskUserOption { label, description: String::new() }).collect(),
            selection_mode: Some(mode),
        };
        let Ok(domain) = input_from_proto(input.clone(), "input") else {
            prop_assert!(!(0..=2).contains(&mode));
            return Ok(());
        };
        if let Ok(payload) = ask_user::validate(&domain, &AskUserLimits::default()) {
            let back = payload_to_proto(&payload);
            prop_assert_eq!(&back.question, &input.question);
            prop_assert_eq!(&back.options, &input.options);
            let expected = match (input.options.is_empty(), mode) {
                (true, _) => None,
                (false, 2) => Some(pb::SelectionMode::MultiSelect as i32),
                (false, _) => Some(pb::SelectionMode::SingleSelect as i32),
            };
            prop_assert_eq!(back.selection_mode, expected);
        }
    }

    #[test]
    fn timestamps_round_trip(ms in any::<i64>()) {
        let time = timestamp(ms);
        prop_assert!((0..1_000_000_000).contains(&time.nanos));
        prop_assert_eq!(i128::from(time.seconds) * 1000 + i128::from(time.nanos / 1_000_000), i128::from(ms));
    }

    #[test]
    fn durations_round_trip(seconds in any::<u64>(), nanos in 0u32..1_000_000_000) {
        let duration = Duration::new(seconds, nanos);
        let wire = duration_to_proto(duration);
        if seconds <= i64::MAX as u64 {
            prop_assert_eq!(duration_from_proto(&wire, "d").ok(), Some(duration));
        }
    }

    #[test]
    fn a_wire_duration_is_taken_exactly_when_non_negative(wire in proto_duration()) {
        let valid = wire.seconds >= 0 && (0..1_000_000_000).contains(&wire.nanos);
        prop_assert_eq!(duration_from_proto(&wire, "d").is_ok(), valid);
    }

    #[test]
    fn statuses_round_trip(status in domain_status(), number in any::<i32>()) {
        prop_assert_eq!(status_filter(status_to_proto(status) as i32).ok(), Some(Some(status)));
        prop_assert_eq!(status_filter(number).is_ok(), (0..=5).contains(&number));
    }

    #[test]
    fn a_pending_filter_takes_known_kinds_only(kinds in prop::collection::vec(enum_number(), 0..5)) {
        let request = pb::WatchPendingCallsRequest { kinds: kinds.clone(), ..Default::default() };
        let taken = pending_filter(request);
        prop_assert_eq!(taken.is_ok(), kinds.iter().all(|k| (1..=4).contains(k)));
        if let Ok(filter) = taken {
            prop_assert_eq!(filter.kinds.len(), kinds.len());
        }
    }

    #[test]
    fn events_keep_their_run_sequence_and_time(
        run_id in text(),
        sequence in any::<u64>(),
        time_ms in any::<i64>(),
        kind in event_kind(),
    ) {
        let frame = event_to_proto(Event { run_id: run_id.clone(), sequence, time_ms, kind });
        prop_assert_eq!(frame.run_id, run_id);
        prop_assert_eq!(frame.sequence, sequence);
        prop_assert_eq!(frame.time, Some(timestamp(time_ms)));
        prop_assert!(frame.event.is_some());
    }
}
