package askuser

import (
	"strings"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// The reasons the server sends, as Error.Reason (google.rpc.ErrorInfo) and AnswerRejected.Reason
// carry them: the names of askuserv1.ErrorReason without the ERROR_REASON_ prefix, whose comments
// say when each is sent and with which code. A server may add reasons: treat one you do not know
// by its code.
const (
	// ReasonInvalidAnswer is askuserv1.ErrorReason_ERROR_REASON_INVALID_ANSWER.
	ReasonInvalidAnswer = "INVALID_ANSWER"
	// ReasonToolCallNotPending is askuserv1.ErrorReason_ERROR_REASON_TOOL_CALL_NOT_PENDING.
	ReasonToolCallNotPending = "TOOL_CALL_NOT_PENDING"
	// ReasonAlreadyAnswered is askuserv1.ErrorReason_ERROR_REASON_ALREADY_ANSWERED.
	ReasonAlreadyAnswered = "ALREADY_ANSWERED"
	// ReasonQuestionExpired is askuserv1.ErrorReason_ERROR_REASON_QUESTION_EXPIRED.
	ReasonQuestionExpired = "QUESTION_EXPIRED"
	// ReasonRunMismatch is askuserv1.ErrorReason_ERROR_REASON_RUN_MISMATCH.
	ReasonRunMismatch = "RUN_MISMATCH"
	// ReasonRunNotSuspended is askuserv1.ErrorReason_ERROR_REASON_RUN_NOT_SUSPENDED.
	ReasonRunNotSuspended = "RUN_NOT_SUSPENDED"
	// ReasonAlreadyClaimed is askuserv1.ErrorReason_ERROR_REASON_ALREADY_CLAIMED.
	ReasonAlreadyClaimed = "ALREADY_CLAIMED"
	// ReasonAnswerIDReused is askuserv1.ErrorReason_ERROR_REASON_ANSWER_ID_REUSED.
	ReasonAnswerIDReused = "ANSWER_ID_REUSED"
	// ReasonNotAssignee is askuserv1.ErrorReason_ERROR_REASON_NOT_ASSIGNEE.
	ReasonNotAssignee = "NOT_ASSIGNEE"
	// ReasonMissingScope is askuserv1.ErrorReason_ERROR_REASON_MISSING_SCOPE.
	ReasonMissingScope = "MISSING_SCOPE"
	// ReasonAgentNotFound is askuserv1.ErrorReason_ERROR_REASON_AGENT_NOT_FOUND.
	ReasonAgentNotFound = "AGENT_NOT_FOUND"
	// ReasonRunNotFound is askuserv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND.
	ReasonRunNotFound = "RUN_NOT_FOUND"
	// ReasonRunFinished is askuserv1.ErrorReason_ERROR_REASON_RUN_FINISHED.
	ReasonRunFinished = "RUN_FINISHED"
	// ReasonWebhookSecretRequired is askuserv1.ErrorReason_ERROR_REASON_WEBHOOK_SECRET_REQUIRED.
	ReasonWebhookSecretRequired = "WEBHOOK_SECRET_REQUIRED"
	// ReasonShuttingDown is askuserv1.ErrorReason_ERROR_REASON_SHUTTING_DOWN.
	ReasonShuttingDown = "SHUTTING_DOWN"
	// ReasonTooManyStreams is askuserv1.ErrorReason_ERROR_REASON_TOO_MANY_STREAMS.
	ReasonTooManyStreams = "TOO_MANY_STREAMS"
	// ReasonTooManyTenantStreams is askuserv1.ErrorReason_ERROR_REASON_TOO_MANY_TENANT_STREAMS.
	ReasonTooManyTenantStreams = "TOO_MANY_TENANT_STREAMS"
	// ReasonTooManyPrincipalStreams is askuserv1.ErrorReason_ERROR_REASON_TOO_MANY_PRINCIPAL_STREAMS.
	ReasonTooManyPrincipalStreams = "TOO_MANY_PRINCIPAL_STREAMS"
	// ReasonNoFirstFrame is askuserv1.ErrorReason_ERROR_REASON_NO_FIRST_FRAME.
	ReasonNoFirstFrame = "NO_FIRST_FRAME"
	// ReasonMissingCredentials is askuserv1.ErrorReason_ERROR_REASON_MISSING_CREDENTIALS.
	ReasonMissingCredentials = "MISSING_CREDENTIALS"
	// ReasonInvalidCredentials is askuserv1.ErrorReason_ERROR_REASON_INVALID_CREDENTIALS.
	ReasonInvalidCredentials = "INVALID_CREDENTIALS"
	// ReasonHostNotAllowed is askuserv1.ErrorReason_ERROR_REASON_HOST_NOT_ALLOWED.
	ReasonHostNotAllowed = "HOST_NOT_ALLOWED"
	// ReasonOriginNotAllowed is askuserv1.ErrorReason_ERROR_REASON_ORIGIN_NOT_ALLOWED.
	ReasonOriginNotAllowed = "ORIGIN_NOT_ALLOWED"
	// ReasonNotGRPC is askuserv1.ErrorReason_ERROR_REASON_NOT_GRPC.
	ReasonNotGRPC = "NOT_GRPC"
	// ReasonKeyNotFound is askuserv1.ErrorReason_ERROR_REASON_KEY_NOT_FOUND.
	ReasonKeyNotFound = "KEY_NOT_FOUND"
	// ReasonDeliveryNotFound is askuserv1.ErrorReason_ERROR_REASON_DELIVERY_NOT_FOUND.
	ReasonDeliveryNotFound = "DELIVERY_NOT_FOUND"
	// ReasonNotRedeliverable is askuserv1.ErrorReason_ERROR_REASON_NOT_REDELIVERABLE.
	ReasonNotRedeliverable = "NOT_REDELIVERABLE"
	// ReasonNoWebhookSecretsKey is askuserv1.ErrorReason_ERROR_REASON_NO_WEBHOOK_SECRETS_KEY.
	ReasonNoWebhookSecretsKey = "NO_WEBHOOK_SECRETS_KEY"
	// ReasonAnswerLinkInvalid is askuserv1.ErrorReason_ERROR_REASON_ANSWER_LINK_INVALID.
	ReasonAnswerLinkInvalid = "ANSWER_LINK_INVALID"
	// ReasonAnswerLinkExpired is askuserv1.ErrorReason_ERROR_REASON_ANSWER_LINK_EXPIRED.
	ReasonAnswerLinkExpired = "ANSWER_LINK_EXPIRED"
	// ReasonAnswerLinkUsed is askuserv1.ErrorReason_ERROR_REASON_ANSWER_LINK_USED.
	ReasonAnswerLinkUsed = "ANSWER_LINK_USED"
	// ReasonAnswerLinkOtherCall is askuserv1.ErrorReason_ERROR_REASON_ANSWER_LINK_OTHER_CALL.
	ReasonAnswerLinkOtherCall = "ANSWER_LINK_OTHER_CALL"
)

// ReasonName is the string the server sends for r, e.g. "ALREADY_ANSWERED" for
// askuserv1.ErrorReason_ERROR_REASON_ALREADY_ANSWERED, to compare with Error.Reason.
func ReasonName(r pb.ErrorReason) string {
	return strings.TrimPrefix(r.String(), "ERROR_REASON_")
}
