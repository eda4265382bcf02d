package main

import (
	"context"
	"fmt"

	"github.com/askuser-dev/askuser/clients/go/askuser"
)

// Refund is what the workflow wants paid back.
type Refund struct {
	ID          string `json:"refund_id"`
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amount_cents"`
	Reason      string `json:"reason"`
}

// RefundDecision is what the activity returns to the workflow.
type RefundDecision struct {
	// Approved: pay AmountCents (the approver may have lowered it).
	Approved    bool
	AmountCents int64
	// Reason is why it was not approved: the approver's reason, "expired" or "cancelled".
	Reason string
	// DecidedBy is who decided (empty for an expiry or a cancellation).
	DecidedBy string
}

// Activities are the workflow's activities; they share one askuser client (safe for concurrent
// use). In a Temporal worker (go.temporal.io/sdk), registered once:
//
//	w := worker.New(temporalClient, "refunds", worker.Options{})
//	w.RegisterActivity(&Activities{Askuser: askuserClient})
//
// and called from the workflow, with a StartToCloseTimeout as long as a person may take to decide:
//
//	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 72 * time.Hour})
//	var decision RefundDecision
//	err := workflow.ExecuteActivity(ctx, a.ApproveRefund, refund).Get(ctx, &decision)
type Activities struct {
	Askuser *askuser.Client
}

// ApproveRefund asks a person, through askuser, to approve a refund, and waits for the decision
// (minutes or days: the request is kept by askuser, and the wait rides out askuser restarts). The
// approver sees the refund's fields as the call's arguments, and may edit them (e.g. lower the
// amount) or reject it with a reason. askuser.WithAssignees("group:billing") would limit who may.
//
// Temporal retries a failed activity, and may run it again after a worker crash: the request id,
// derived from the refund, makes the retry find the same request (and its answer, if it came in the
// meantime) instead of asking twice. Inside Temporal, activity.GetInfo(ctx).WorkflowExecution.ID
// is a good key too. ctx is the activity's context: when Temporal cancels the activity, or its
// timeout passes, the wait ends (the request stays open in askuser until it expires).
func (a *Activities) ApproveRefund(ctx context.Context, refund Refund) (RefundDecision, error) {
	outcome, err := a.Askuser.RequestApproval(ctx, "refund", refund,
		fmt.Sprintf("%s asks for %s back: %s", refund.Customer, dollars(refund.AmountCents), refund.Reason),
		askuser.WithRequestID("refund-"+refund.ID),
		askuser.WithAskContext("Refunds above $100 need a person's approval."),
		askuser.WithMetadata(map[string]string{"refund_id": refund.ID}),
	)
	if err != nil {
		// Bad input (an *askuser.Error with codes.InvalidArgument) will fail the same way every time:
		// in Temporal, wrap it in temporal.NewNonRetryableApplicationError. Other errors are retried.
		return RefundDecision{}, err
	}
	decision := RefundDecision{DecidedBy: outcome.SettledBy}
	switch outcome.Kind {
	case askuser.OutcomeApproved, askuser.OutcomeEdited:
		var approved Refund
		if err := outcome.DecodeArguments(&approved); err != nil {
			return RefundDecision{}, fmt.Errorf("the approved refund: %w", err)
		}
		decision.Approved, decision.AmountCents = true, approved.AmountCents
	case askuser.OutcomeRejected:
		decision.Reason = outcome.Reason
	default: // expired, cancelled
		decision.Reason = string(outcome.Kind)
	}
	return decision, nil
}

func dollars(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }
