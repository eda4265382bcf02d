package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/askuser-dev/askuser/clients/go/askuser"
)

// dial connects to the server clients/go/test.sh gives in ASKUSER_ADDR, with ASKUSER_API_KEY when
// it is set.
func dial(t *testing.T) *askuser.Client {
	t.Helper()
	addr := os.Getenv("ASKUSER_ADDR")
	if addr == "" {
		t.Fatal("ASKUSER_ADDR is not set: run clients/go/test.sh HOST:PORT")
	}
	var opts []grpc.DialOption
	if key := os.Getenv("ASKUSER_API_KEY"); key != "" {
		opts = append(opts, askuser.WithAPIKey(key))
	}
	client, err := askuser.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// decide plays the approver on another client: it waits on the pending-calls feed for the refund's
// call and settles it with reply. What it returns is closed once it is done.
func decide(t *testing.T, ctx context.Context, refundID string, reply askuser.Reply) <-chan struct{} {
	t.Helper()
	approver := dial(t)
	feed, err := approver.WatchPendingCalls(ctx, askuser.PendingCallsFilter{ToolNames: []string{"refund"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer feed.Close()
		for {
			event, err := feed.Recv()
			if err != nil {
				t.Errorf("the approver's feed: %v", err)
				return
			}
			call := event.GetCallPending().GetCall()
			var refund Refund
			if call == nil || json.Unmarshal([]byte(call.GetArgumentsJson()), &refund) != nil || refund.ID != refundID {
				continue // another refund, or not a call
			}
			events, err := approver.ResumeRun(ctx, event.GetCallPending().GetRunId(), call.GetToolCallId(), reply)
			for err == nil {
				_, err = events.Recv()
			}
			if err != io.EOF {
				t.Errorf("the approver's decision: %v", err)
			}
			return
		}
	}()
	return done
}

func TestApproveRefund(t *testing.T) {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	cases := []struct {
		name  string
		reply func(Refund) askuser.Reply
		want  RefundDecision
	}{
		{"approved", func(Refund) askuser.Reply { return askuser.Approved() }, RefundDecision{Approved: true, AmountCents: 12900}},
		{"lowered", func(r Refund) askuser.Reply {
			r.AmountCents = 5000
			edited, _ := json.Marshal(r)
			return askuser.Edited(string(edited))
		}, RefundDecision{Approved: true, AmountCents: 5000}},
		{"rejected", func(Refund) askuser.Reply { return askuser.Rejected("already refunded in store") },
			RefundDecision{Reason: "already refunded in store"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			refund := Refund{ID: fmt.Sprintf("%s-%x", c.name, suffix), Customer: "ACME Corp", AmountCents: 12900, Reason: "damaged"}
			decided := decide(t, ctx, refund.ID, c.reply(refund))
			defer func() { <-decided }()
			// As a Temporal worker calls it.
			activities := &Activities{Askuser: dial(t)}
			decision, err := activities.ApproveRefund(ctx, refund)
			if err != nil {
				t.Fatal(err)
			}
			if decision.DecidedBy == "" {
				t.Error("no DecidedBy")
			}
			decision.DecidedBy = ""
			if decision != c.want {
				t.Errorf("decision %+v, want %+v", decision, c.want)
			}
			// Temporal retries the activity (a worker crashed after the decision): the same
			// request, already decided, returns the same decision without asking again.
			again, err := activities.ApproveRefund(ctx, refund)
			if err != nil {
				t.Fatal(err)
			}
			again.DecidedBy = ""
			if again != c.want {
				t.Errorf("retried: decision %+v, want %+v", again, c.want)
			}
		})
	}
}
