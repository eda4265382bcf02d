package askuser_test

import (
	"testing"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// Each Reason constant is the generated enum's name minus the prefix, and every value of the enum
// has its constant.
func TestReasonConstantsMatchTheGeneratedEnum(t *testing.T) {
	constants := map[pb.ErrorReason]string{
		pb.ErrorReason_ERROR_REASON_INVALID_ANSWER:             askuser.ReasonInvalidAnswer,
		pb.ErrorReason_ERROR_REASON_TOOL_CALL_NOT_PENDING:      askuser.ReasonToolCallNotPending,
		pb.ErrorReason_ERROR_REASON_ALREADY_ANSWERED:           askuser.ReasonAlreadyAnswered,
		pb.ErrorReason_ERROR_REASON_QUESTION_EXPIRED:           askuser.ReasonQuestionExpired,
		pb.ErrorReason_ERROR_REASON_RUN_MISMATCH:               askuser.ReasonRunMismatch,
		pb.ErrorReason_ERROR_REASON_RUN_NOT_SUSPENDED:          askuser.ReasonRunNotSuspended,
		pb.ErrorReason_ERROR_REASON_ALREADY_CLAIMED:            askuser.ReasonAlreadyClaimed,
		pb.ErrorReason_ERROR_REASON_ANSWER_ID_REUSED:           askuser.ReasonAnswerIDReused,
		pb.ErrorReason_ERROR_REASON_NOT_ASSIGNEE:               askuser.ReasonNotAssignee,
		pb.ErrorReason_ERROR_REASON_MISSING_SCOPE:              askuser.ReasonMissingScope,
		pb.ErrorReason_ERROR_REASON_AGENT_NOT_FOUND:            askuser.ReasonAgentNotFound,
		pb.ErrorReason_ERROR_REASON_RUN_NOT_FOUND:              askuser.ReasonRunNotFound,
		pb.ErrorReason_ERROR_REASON_RUN_FINISHED:               askuser.ReasonRunFinished,
		pb.ErrorReason_ERROR_REASON_WEBHOOK_SECRET_REQUIRED:    askuser.ReasonWebhookSecretRequired,
		pb.ErrorReason_ERROR_REASON_SHUTTING_DOWN:              askuser.ReasonShuttingDown,
		pb.ErrorReason_ERROR_REASON_TOO_MANY_STREAMS:           askuser.ReasonTooManyStreams,
		pb.ErrorReason_ERROR_REASON_TOO_MANY_TENANT_STREAMS:    askuser.ReasonTooManyTenantStreams,
		pb.ErrorReason_ERROR_REASON_TOO_MANY_PRINCIPAL_STREAMS: askuser.ReasonTooManyPrincipalStreams,
		pb.ErrorReason_ERROR_REASON_NO_FIRST_FRAME:             askuser.ReasonNoFirstFrame,
		pb.ErrorReason_ERROR_REASON_MISSING_CREDENTIALS:        askuser.ReasonMissingCredentials,
		pb.ErrorReason_ERROR_REASON_INVALID_CREDENTIALS:        askuser.ReasonInvalidCredentials,
		pb.ErrorReason_ERROR_REASON_HOST_NOT_ALLOWED:           askuser.ReasonHostNotAllowed,
		pb.ErrorReason_ERROR_REASON_ORIGIN_NOT_ALLOWED:         askuser.ReasonOriginNotAllowed,
		pb.ErrorReason_ERROR_REASON_NOT_GRPC:                   askuser.ReasonNotGRPC,
		pb.ErrorReason_ERROR_REASON_KEY_NOT_FOUND:              askuser.ReasonKeyNotFound,
		pb.ErrorReason_ERROR_REASON_DELIVERY_NOT_FOUND:         askuser.ReasonDeliveryNotFound,
		pb.ErrorReason_ERROR_REASON_NOT_REDELIVERABLE:          askuser.ReasonNotRedeliverable,
		pb.ErrorReason_ERROR_REASON_NO_WEBHOOK_SECRETS_KEY:     askuser.ReasonNoWebhookSecretsKey,
		pb.ErrorReason_ERROR_REASON_ANSWER_LINK_INVALID:        askuser.ReasonAnswerLinkInvalid,
		pb.ErrorReason_ERROR_REASON_ANSWER_LINK_EXPIRED:        askuser.ReasonAnswerLinkExpired,
		pb.ErrorReason_ERROR_REASON_ANSWER_LINK_USED:           askuser.ReasonAnswerLinkUsed,
		pb.ErrorReason_ERROR_REASON_ANSWER_LINK_OTHER_CALL:     askuser.ReasonAnswerLinkOtherCall,
	}
	for number, name := range pb.ErrorReason_name {
		reason := pb.ErrorReason(number)
		if reason == pb.ErrorReason_ERROR_REASON_UNSPECIFIED {
			continue
		}
		constant, ok := constants[reason]
		if !ok {
			t.Errorf("%s has no Reason constant", name)
			continue
		}
		if want := name[len("ERROR_REASON_"):]; constant != want || askuser.ReasonName(reason) != want {
			t.Errorf("%s: constant %q, ReasonName %q, want %q", name, constant, askuser.ReasonName(reason), want)
		}
	}
	if len(constants) != len(pb.ErrorReason_name)-1 {
		t.Errorf("%d constants for %d reasons", len(constants), len(pb.ErrorReason_name)-1)
	}
}
