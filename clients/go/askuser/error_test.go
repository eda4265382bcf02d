package askuser

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The server's statuses are decoded in client_test.go; this pins the decoding of both detail
// kinds in one status, which no single server error carries.
func TestWrapErrorDecodesErrorInfoAndBadRequest(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "bad answer").WithDetails(
		&errdetails.ErrorInfo{Reason: "INVALID_ANSWER", Domain: ErrorDomain},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "answer.selections.labels[0]", Description: "not an offered label"},
			{Field: "answer.selections.labels[1]", Description: "selected twice"},
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := fmt.Errorf("resuming: %w", wrapError(st.Err()))

	var e *Error
	if !errors.As(wrapped, &e) {
		t.Fatalf("errors.As found no *Error in %v", wrapped)
	}
	if e.Code != codes.InvalidArgument || e.Message != "bad answer" || e.Reason != "INVALID_ANSWER" {
		t.Errorf("got code %s, message %q, reason %q", e.Code, e.Message, e.Reason)
	}
	want := []string{"answer.selections.labels[0]", "answer.selections.labels[1]"}
	if !slices.Equal(e.Fields(), want) {
		t.Errorf("fields %q, want %q", e.Fields(), want)
	}
	if e.FieldViolations[1].Description != "selected twice" {
		t.Errorf("description %q", e.FieldViolations[1].Description)
	}
	if got := status.Code(e); got != codes.InvalidArgument {
		t.Errorf("status.Code of *Error is %s, want the original code", got)
	}
}

func TestWrapErrorKeepsErrorsWithoutStatus(t *testing.T) {
	plain := errors.New("no status here")
	if got := wrapError(plain); got != plain {
		t.Errorf("wrapError(%v) = %v, want it unchanged", plain, got)
	}
	if got := wrapError(nil); got != nil {
		t.Errorf("wrapError(nil) = %v", got)
	}
}

// No conformance key lacks a scope the client's calls need, so a refusal for a missing scope is
// decoded here, as the server sends it.
func TestWrapErrorDecodesAMissingScope(t *testing.T) {
	st, err := status.New(codes.PermissionDenied, "this call needs the scope runs:cancel").WithDetails(
		&errdetails.ErrorInfo{Reason: "MISSING_SCOPE", Domain: ErrorDomain, Metadata: map[string]string{"scope": "runs:cancel"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if !errors.As(wrapError(st.Err()), &e) {
		t.Fatalf("no *Error in %v", st.Err())
	}
	if e.Code != codes.PermissionDenied || e.Reason != "MISSING_SCOPE" || e.Metadata["scope"] != "runs:cancel" {
		t.Errorf("got code %s, reason %q, metadata %v", e.Code, e.Reason, e.Metadata)
	}
}
