package askuser_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// unique is name with a random suffix: request ids and tool names that no other test run meets on
// the shared server.
func unique(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%x", name, b)
}

// settle answers a request's call through ResumeRun, as another client would, and reads the stream
// to its end.
func settle(t *testing.T, ctx context.Context, client *askuser.Client, request *askuser.HumanRequest, reply askuser.Reply) {
	t.Helper()
	events, err := client.ResumeRun(ctx, request.RunID(), request.ToolCallID(), reply)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	for {
		_, err := events.Recv()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("settling %s: %v", request.ToolCallID(), err)
		}
	}
}

// askAndSettle asks with asker, settles the call with reply from a second client, and returns what
// Wait returned.
func askAndSettle(t *testing.T, req askuser.AskRequest, reply askuser.Reply) (*askuser.HumanRequest, *askuser.HumanOutcome) {
	t.Helper()
	ctx, asker := connect(t)
	_, approver := connect(t)
	request, err := asker.Ask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, approver, request, reply)
	outcome, err := request.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return request, outcome
}

func TestAskAQuestionAnsweredWithText(t *testing.T) {
	request, outcome := askAndSettle(t, askuser.AskRequest{
		Question: &pb.AskUserInput{Question: "Release name?"},
		Context:  "The nightly build is **green**.",
		Metadata: map[string]string{"team": "core"},
	}, askuser.Text("Apollo"))
	if outcome.Kind != askuser.OutcomeText || outcome.Text != "Apollo" {
		t.Errorf("outcome %+v, want text Apollo", outcome)
	}
	if outcome.SettledBy == "" || outcome.Content != "User answered: Apollo" {
		t.Errorf("settled by %q, content %q", outcome.SettledBy, outcome.Content)
	}
	// A request id was generated: a UUID.
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(request.RequestID()) {
		t.Errorf("generated request id %q", request.RequestID())
	}
	if call := request.Call(); call.GetToolName() != "ask_user" || call.GetSuspendPayload().GetQuestion() != "Release name?" {
		t.Errorf("call %v", call)
	}
	// The request is a run of no agent, with its context as the prompt.
	ctx, client := connect(t)
	run, err := client.GetRun(ctx, request.RunID())
	if err != nil {
		t.Fatal(err)
	}
	if run.GetAgentId() != "" || run.GetPrompt() != "The nightly build is **green**." || run.GetMetadata()["team"] != "core" ||
		run.GetStatus() != pb.RunStatus_RUN_STATUS_COMPLETED {
		t.Errorf("the request's run: %v", run)
	}
}

func TestAskAMultiSelectQuestion(t *testing.T) {
	_, outcome := askAndSettle(t, askuser.AskRequest{Question: &pb.AskUserInput{
		Question:      "Which checks?",
		Options:       []*pb.AskUserOption{{Label: "unit"}, {Label: "load, soak"}, {Label: "e2e"}},
		SelectionMode: pb.SelectionMode_SELECTION_MODE_MULTI_SELECT.Enum(),
	}}, askuser.Selections("unit", "load, soak"))
	if outcome.Kind != askuser.OutcomeSelections || !slices.Equal(outcome.Selections, []string{"unit", "load, soak"}) {
		t.Errorf("outcome %+v, want selections unit, load, soak", outcome)
	}
}

func TestAskAForm(t *testing.T) {
	form := &pb.Form{Title: "Release", Fields: []*pb.FormField{
		{Name: "name", Question: "Release name?", Required: true, Kind: &pb.FormField_Text{Text: &pb.TextField{}}},
		{Name: "replicas", Question: "How many replicas?", Kind: &pb.FormField_Number{Number: &pb.NumberField{Integer: true}}},
		{Name: "canary", Question: "Canary first?", Kind: &pb.FormField_Boolean{Boolean: &pb.BooleanField{}}},
	}}
	request, outcome := askAndSettle(t, askuser.AskRequest{Form: form}, askuser.Form(map[string]askuser.FieldValue{
		"name": askuser.TextValue("Apollo"), "replicas": askuser.NumberValue(3), "canary": askuser.BoolValue(true),
	}))
	if request.Call().GetKind() != pb.SuspendKind_SUSPEND_KIND_FORM {
		t.Errorf("the call waits as %s", request.Call().GetKind())
	}
	want := map[string]any{"name": "Apollo", "replicas": 3.0, "canary": true}
	if outcome.Kind != askuser.OutcomeForm || len(outcome.Values) != len(want) {
		t.Fatalf("outcome %+v, want the form's values %v", outcome, want)
	}
	for name, value := range want {
		if outcome.Values[name] != value {
			t.Errorf("values[%q] = %#v, want %#v", name, outcome.Values[name], value)
		}
	}
}

func TestAskDeclinedAndReplied(t *testing.T) {
	_, outcome := askAndSettle(t, askuser.AskRequest{Question: &pb.AskUserInput{Question: "Your phone number?"}},
		askuser.Declined("prefer not"))
	if outcome.Kind != askuser.OutcomeDeclined || outcome.Reason != "prefer not" {
		t.Errorf("outcome %+v, want declined: prefer not", outcome)
	}
	_, outcome = askAndSettle(t, askuser.AskRequest{Question: &pb.AskUserInput{Question: "Which region?"}},
		askuser.Replied("ask Dana"))
	if outcome.Kind != askuser.OutcomeReplied || outcome.Text != "ask Dana" {
		t.Errorf("outcome %+v, want replied: ask Dana", outcome)
	}
}

// approveFromFeed settles the first call of toolName on the pending-calls feed with reply, as an
// approver's worker would, and reports the call's arguments.
func approveFromFeed(t *testing.T, toolName string, reply askuser.Reply) <-chan string {
	t.Helper()
	ctx, approver := connect(t)
	feed, err := approver.WatchPendingCalls(ctx, askuser.PendingCallsFilter{ToolNames: []string{toolName}})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	go func() {
		defer feed.Close()
		defer close(seen)
		for {
			event, err := feed.Recv()
			if err != nil {
				if ctx.Err() == nil { // not the end of a test that failed already
					t.Errorf("the feed failed: %v", err)
				}
				return
			}
			if pending := event.GetCallPending(); pending != nil {
				seen <- pending.GetCall().GetArgumentsJson()
				events, err := approver.ResumeRun(ctx, pending.GetRunId(), pending.GetCall().GetToolCallId(), reply)
				if err == nil {
					for err == nil {
						_, err = events.Recv()
					}
				}
				if err != io.EOF {
					t.Errorf("settling from the feed: %v", err)
				}
				return
			}
		}
	}()
	return seen
}

type deploy struct {
	Service     string `json:"service"`
	Environment string `json:"environment"`
}

func TestRequestApprovalApprovedEditedRejected(t *testing.T) {
	cases := []struct {
		name  string
		reply askuser.Reply
		kind  askuser.OutcomeKind
		args  *deploy
		why   string
	}{
		{"approved", askuser.Approved(), askuser.OutcomeApproved, &deploy{"api", "production"}, ""},
		{"edited", askuser.Edited(`{"service":"api","environment":"staging"}`), askuser.OutcomeEdited, &deploy{"api", "staging"}, ""},
		{"rejected", askuser.Rejected("not on a Friday"), askuser.OutcomeRejected, nil, "not on a Friday"},
		{"declined", askuser.Declined("not mine to decide"), askuser.OutcomeRejected, nil, "not mine to decide"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, client := connect(t)
			tool := unique("deploy")
			seen := approveFromFeed(t, tool, c.reply)
			outcome, err := client.RequestApproval(ctx, tool, deploy{"api", "production"}, "production deploys need a second pair of eyes",
				askuser.WithAskContext("The nightly build is green."), askuser.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if args := <-seen; args == "" {
				t.Error("the approver saw no arguments")
			}
			for range seen { // until the approver is done
			}
			if outcome.Kind != c.kind || outcome.Reason != c.why || outcome.Approved() != (c.args != nil) {
				t.Fatalf("outcome %+v, want %s (%q)", outcome, c.kind, c.why)
			}
			if outcome.SettledBy == "" {
				t.Error("no settled_by")
			}
			if c.args != nil {
				var got deploy
				if err := outcome.DecodeArguments(&got); err != nil || got != *c.args {
					t.Errorf("arguments %s (%v), want %+v", outcome.Arguments, err, *c.args)
				}
			} else if err := outcome.DecodeArguments(&deploy{}); err == nil {
				t.Errorf("a %s outcome decoded arguments %s", outcome.Kind, outcome.Arguments)
			}
		})
	}
}

func TestAskAgainWithTheSameRequestIDFollowsTheSameRequest(t *testing.T) {
	ctx, client := connect(t)
	_, approver := connect(t)
	req := askuser.AskRequest{Question: &pb.AskUserInput{Question: "Release name?"}, RequestID: unique("retry")}
	first, err := client.Ask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := client.Ask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.RunID() != first.RunID() || again.ToolCallID() != first.ToolCallID() || again.RequestID() != req.RequestID {
		t.Fatalf("again: %s/%s (%s), first: %s/%s", again.RunID(), again.ToolCallID(), again.RequestID(), first.RunID(), first.ToolCallID())
	}
	settle(t, ctx, approver, first, askuser.Text("Apollo"))
	// Even after it was settled, the same id finds it, and both handles see the same answer.
	late, err := client.Ask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, request := range []*askuser.HumanRequest{first, again, late} {
		outcome, err := request.Wait(ctx)
		if err != nil || outcome.Kind != askuser.OutcomeText || outcome.Text != "Apollo" || request.RunID() != first.RunID() {
			t.Errorf("outcome %+v, %v of run %s", outcome, err, request.RunID())
		}
	}
}

func TestAskWithBadInputNamesTheField(t *testing.T) {
	ctx, client := connect(t)
	_, err := client.Ask(ctx, askuser.AskRequest{Question: &pb.AskUserInput{Question: ""}})
	if e := asError(t, err, codes.InvalidArgument); !slices.Contains(e.Fields(), "question.question") {
		t.Errorf("fields %v, want question.question", e.Fields())
	}
	_, err = client.RequestApproval(ctx, "not a tool name!", map[string]int{"n": 1}, "")
	if e := asError(t, err, codes.InvalidArgument); !slices.Contains(e.Fields(), "approval.tool_name") {
		t.Errorf("fields %v, want approval.tool_name", e.Fields())
	}
	_, err = client.Ask(ctx, askuser.AskRequest{})
	if e := asError(t, err, codes.InvalidArgument); !slices.Contains(e.Fields(), "call") {
		t.Errorf("fields %v, want call", e.Fields())
	}
	// Arguments that are not JSON are the caller's mistake, found before any call.
	if _, err := client.RequestApproval(ctx, "deploy", func() {}, ""); err == nil {
		t.Error("arguments that encoding/json cannot encode were sent")
	}
	if _, err := client.Ask(ctx, askuser.AskRequest{Question: &pb.AskUserInput{Question: "a"}, Form: &pb.Form{}}); err == nil {
		t.Error("a request with two calls was sent")
	}
}

func TestAWaitsDeadlineEndsTheWaitNotTheRequest(t *testing.T) {
	ctx, client := connect(t)
	_, approver := connect(t)
	request, err := client.Ask(ctx, askuser.AskRequest{Question: &pb.AskUserInput{Question: "Still there?"}})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = request.Wait(short)
	asError(t, err, codes.DeadlineExceeded)
	cancelled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	_, err = request.Wait(cancelled)
	asError(t, err, codes.Canceled)

	settle(t, ctx, approver, request, askuser.Text("yes"))
	outcome, err := request.Wait(ctx)
	if err != nil || outcome.Kind != askuser.OutcomeText || outcome.Text != "yes" {
		t.Fatalf("after the deadline, outcome %+v, %v", outcome, err)
	}
}

func TestAskExpiresAndCancels(t *testing.T) {
	ctx, client := connect(t)
	outcome, err := client.AskHuman(ctx, askuser.AskRequest{Question: &pb.AskUserInput{Question: "Anyone?"}, TTL: time.Second})
	if err != nil || outcome.Kind != askuser.OutcomeExpired {
		t.Errorf("outcome %+v, %v; want expired", outcome, err)
	}
	request, err := client.Ask(ctx, askuser.AskRequest{
		Approval: &askuser.ApprovalRequest{ToolName: "drop_table", Arguments: json.RawMessage(`{"table":"users"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if args := request.Call().GetArgumentsJson(); args != `{"table":"users"}` {
		t.Errorf("arguments %s", args)
	}
	if err := request.Cancel(ctx, "not needed"); err != nil {
		t.Fatal(err)
	}
	outcome, err = request.Wait(ctx)
	if err != nil || outcome.Kind != askuser.OutcomeCancelled || outcome.Approved() {
		t.Errorf("outcome %+v, %v; want cancelled", outcome, err)
	}
}

func TestWaitRidesOutAServerRestart(t *testing.T) {
	s := newRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := askuser.Dial(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	request, err := client.Ask(ctx, askuser.AskRequest{
		Approval:  &askuser.ApprovalRequest{ToolName: "deploy", Arguments: deploy{"api", "production"}},
		RequestID: "restart-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		outcome *askuser.HumanOutcome
		err     error
	}
	done := make(chan result, 1)
	go func() {
		outcome, err := request.Wait(ctx)
		done <- result{outcome, err}
	}()
	time.Sleep(200 * time.Millisecond) // Wait is watching
	s.restart(500 * time.Millisecond)
	// The same request id finds the request on the restarted server.
	again, err := client.Ask(ctx, askuser.AskRequest{
		Approval:  &askuser.ApprovalRequest{ToolName: "deploy", Arguments: deploy{"api", "production"}},
		RequestID: "restart-1",
	})
	if err != nil || again.RunID() != request.RunID() {
		t.Fatalf("asked again after the restart: %v, %v", again, err)
	}
	settle(t, ctx, client, request, askuser.Edited(`{"service":"api","environment":"staging"}`))
	got := <-done
	if got.err != nil || got.outcome.Kind != askuser.OutcomeEdited {
		t.Fatalf("outcome %+v, %v; want edited", got.outcome, got.err)
	}
	var args deploy
	if err := got.outcome.DecodeArguments(&args); err != nil || args != (deploy{"api", "staging"}) {
		t.Errorf("arguments %s", got.outcome.Arguments)
	}

	// An Ask made while the server is down is sent again until it is back.
	s.kill()
	asked := make(chan error, 1)
	go func() {
		_, err := client.Ask(ctx, askuser.AskRequest{Question: &pb.AskUserInput{Question: "Back?"}})
		asked <- err
	}()
	time.Sleep(500 * time.Millisecond)
	s.start()
	if err := <-asked; err != nil {
		t.Fatalf("an Ask made while the server was down: %v", err)
	}
}
