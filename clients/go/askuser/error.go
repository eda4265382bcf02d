package askuser

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every askuser error.
const ErrorDomain = "askuser.dev"

// Error is a failed call: its gRPC status with the askuser details decoded. Get it with errors.As.
type Error struct {
	// Code is the gRPC status code, e.g. codes.FailedPrecondition.
	Code codes.Code
	// Message is the status message.
	Message string
	// Reason is the google.rpc.ErrorInfo reason, e.g. "ALREADY_ANSWERED" (codes.FailedPrecondition),
	// "MISSING_CREDENTIALS" or "INVALID_CREDENTIALS" (codes.Unauthenticated), "MISSING_SCOPE"
	// (codes.PermissionDenied); empty without ErrorInfo. The Reason constants (reason.go) name
	// every reason the server sends.
	Reason string
	// Metadata is the google.rpc.ErrorInfo metadata, e.g. Metadata["scope"], the scope a
	// MISSING_SCOPE call needs; nil without ErrorInfo.
	Metadata map[string]string
	// FieldViolations are the google.rpc.BadRequest violations, in the server's order.
	FieldViolations []FieldViolation

	status *status.Status
}

// FieldViolation is one bad field of a request, from google.rpc.BadRequest.
type FieldViolation struct {
	// Field is the path of the offending field, e.g. "input.question".
	Field string
	// Description says what is wrong with it.
	Description string
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("askuser: %s (%s): %s", e.Code, e.Reason, e.Message)
	}
	return fmt.Sprintf("askuser: %s: %s", e.Code, e.Message)
}

// GRPCStatus returns the original status, so status.FromError and status.Code keep working.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// Fields returns the Field of each violation, in order.
func (e *Error) Fields() []string {
	fields := make([]string, len(e.FieldViolations))
	for i, v := range e.FieldViolations {
		fields[i] = v.Field
	}
	return fields
}

// wrapError turns a gRPC status error into *Error. Errors that carry no status (io.EOF ending a
// stream, a context error raised before any call) are returned as they are.
func wrapError(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return errorFromStatus(st)
}

func errorFromStatus(st *status.Status) *Error {
	e := &Error{Code: st.Code(), Message: st.Message(), status: st}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			e.Reason, e.Metadata = d.GetReason(), d.GetMetadata()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.FieldViolations = append(e.FieldViolations, FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		}
	}
	return e
}
