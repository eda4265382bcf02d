//! The registry of error reasons: the proto's `ErrorReason` enum, named on the wire by its bare
//! string (`ALREADY_ANSWERED`), as `ErrorInfo.reason` and `AnswerRejected.reason` carry it.

use crate::proto::v1::ErrorReason;
use crate::runtime::RejectReason;

/// What the wire string of a value lacks of its proto name.
const PREFIX: &str = "ERROR_REASON_";

impl ErrorReason {
    /// The reason as the server sends it: the value's proto name without `ERROR_REASON_`.
    pub fn wire_name(self) -> &'static str {
        let name = self.as_str_name();
        name.strip_prefix(PREFIX).unwrap_or(name)
    }
}

impl From<RejectReason> for ErrorReason {
    fn from(reason: RejectReason) -> Self {
        match reason {
            RejectReason::InvalidAnswer => ErrorReason::InvalidAnswer,
            RejectReason::ToolCallNotPending => ErrorReason::ToolCallNotPending,
            RejectReason::AlreadyAnswered => ErrorReason::AlreadyAnswered,
            RejectReason::QuestionExpired => ErrorReason::QuestionExpired,
            RejectReason::RunMismatch => ErrorReason::RunMismatch,
            RejectReason::RunNotSuspended => ErrorReason::RunNotSuspended,
            RejectReason::AlreadyClaimed => ErrorReason::AlreadyClaimed,
            RejectReason::AnswerIdReused => ErrorReason::AnswerIdReused,
            RejectReason::NotAssignee => ErrorReason::NotAssignee,
            RejectReason::MissingScope(_) => ErrorReason::MissingScope,
            RejectReason::AnswerLinkUsed => ErrorReason::AnswerLinkUsed,
            RejectReason::AnswerLinkOtherCall => ErrorReason::AnswerLinkOtherCall,
        }
    }
}

/// The wire string of a refused answer's reason (`ErrorInfo` or `AnswerRejected`).
pub fn reject_code(reason: RejectReason) -> &'static str {
    ErrorReason::from(reason).wire_name()
}

#[cfg(test)]
mod internal_tests {
    use std::collections::HashSet;

    use prost_reflect::DescriptorPool;

    use super::*;
    use crate::domain::Scope;

    /// Every value the proto declares, read from the compiled descriptor (not from a list here
    /// that could miss one).
    fn declared() -> Vec<(String, ErrorReason)> {
        let pool = DescriptorPool::decode(crate::proto::FILE_DESCRIPTOR_SET).expect("descriptors");
        let reasons = pool
            .get_enum_by_name("askuser.v1.ErrorReason")
            .expect("askuser.v1.ErrorReason");
        reasons
            .values()
            .map(|value| {
                let reason = ErrorReason::try_from(value.number()).expect("a generated variant");
                (value.name().to_owned(), reason)
            })
            .collect()
    }

    #[test]
    fn every_reason_is_sent_as_its_name_without_the_prefix_and_no_two_alike() {
        let declared = declared();
        assert!(declared.len() > 1, "{declared:?}");
        let mut seen = HashSet::new();
        for (name, reason) in declared {
            if reason == ErrorReason::Unspecified {
                continue;
            }
            let bare = name
                .strip_prefix(PREFIX)
                .expect("every value has the prefix");
            assert_eq!(reason.wire_name(), bare, "{name}");
            assert!(!bare.is_empty() && bare.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
            assert!(seen.insert(bare.to_owned()), "{bare} twice");
        }
    }

    /// The strings clients match on, as they were before the enum existed.
    #[test]
    fn refused_answers_keep_their_reason_strings() {
        let expected = [
            (RejectReason::InvalidAnswer, "INVALID_ANSWER"),
            (RejectReason::ToolCallNotPending, "TOOL_CALL_NOT_PENDING"),
            (RejectReason::AlreadyAnswered, "ALREADY_ANSWERED"),
            (RejectReason::QuestionExpired, "QUESTION_EXPIRED"),
            (RejectReason::RunMismatch, "RUN_MISMATCH"),
            (RejectReason::RunNotSuspended, "RUN_NOT_SUSPENDED"),
            (RejectReason::AlreadyClaimed, "ALREADY_CLAIMED"),
            (RejectReason::AnswerIdReused, "ANSWER_ID_REUSED"),
            (RejectReason::NotAssignee, "NOT_ASSIGNEE"),
            (
                RejectReason::MissingScope(Scope::RunsAnswer),
                "MISSING_SCOPE",
            ),
            (RejectReason::AnswerLinkUsed, "ANSWER_LINK_USED"),
            (RejectReason::AnswerLinkOtherCall, "ANSWER_LINK_OTHER_CALL"),
        ];
        for (reason, code) in expected {
            assert_eq!(reject_code(reason), code, "{reason:?}");
        }
    }
}
