package askuser_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// Client tools, approvals, per-run tools, the pending-calls feed and claims, against the agents
// status_check, deployer and per_run of tests/conformance/agents.toml.

// suspendedAs reads up to the next suspension and checks what it waits for and its arguments.
func suspendedAs(t *testing.T, events eventReader, kind pb.SuspendKind, wantArgs string) *pb.ToolCallSuspended {
	t.Helper()
	suspended := skipTo(t, events, (*pb.RunAgentResponse).GetToolCallSuspended)
	if suspended.GetKind() != kind {
		t.Fatalf("suspension %v, want kind %s", suspended, kind)
	}
	if wantArgs != "" && !sameJSON(t, suspended.GetArgumentsJson(), wantArgs) {
		t.Errorf("arguments %s, want %s", suspended.GetArgumentsJson(), wantArgs)
	}
	return suspended
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func resultOf(t *testing.T, events eventReader, toolCallID string, kind pb.ToolResultKind, content string) *pb.ToolResult {
	t.Helper()
	result := skipTo(t, events, (*pb.RunAgentResponse).GetToolResult)
	if result.GetToolCallId() != toolCallID || result.GetKind() != kind || result.GetContent() != content {
		t.Errorf("tool_result %v, want %s %q of %s", result, kind, content, toolCallID)
	}
	return result
}

func TestSendToolOutputSettlesAClientToolCall(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "status_check", "check", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	call := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL, `{"service": "api"}`)
	if call.GetToolName() != "service_status" {
		t.Errorf("tool %q", call.GetToolName())
	}

	// A question's answer does not settle a client tool call: it is rejected and the call stays.
	if err := run.AnswerText(call.GetToolCallId(), "healthy"); err != nil {
		t.Fatal(err)
	}
	rejected := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerRejected)
	if rejected.GetReason() != "INVALID_ANSWER" {
		t.Errorf("answer_rejected %v", rejected)
	}

	if err := run.SendToolOutput(call.GetToolCallId(), "healthy", false, askuser.WithAnswerID("out-1")); err != nil {
		t.Fatal(err)
	}
	if accepted := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerAccepted); accepted.GetAnswerId() != "out-1" {
		t.Errorf("answer_accepted %v", accepted)
	}
	result := resultOf(t, run, call.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_OUTPUT, "healthy")
	if result.GetIsError() {
		t.Errorf("tool_result %v is an error", result)
	}
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "api is healthy" {
		t.Errorf("output %q", got)
	}
	expectEnd(t, run)
}

func TestResumeRunWithAnErrorOutput(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "status_check", "check", nil)
	if err != nil {
		t.Fatal(err)
	}
	call := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL, "")
	run.Close()

	events, err := client.ResumeRun(ctx, run.ID(), call.GetToolCallId(), askuser.ToolOutput("connection refused", true))
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	result := resultOf(t, events, call.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_OUTPUT, "connection refused")
	if !result.GetIsError() {
		t.Errorf("tool_result %v is not an error", result)
	}
	if got := skipTo(t, events, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "api is connection refused" {
		t.Errorf("output %q", got)
	}
	expectEnd(t, events)
}

// toDeployApproval drives a deployer run to its deploy call: the environment question, then the
// service_status client tool. It returns the deploy call's suspension.
func toDeployApproval(t *testing.T, ctx context.Context, client *askuser.Client, environment string, kind pb.SuspendKind) (*askuser.Run, *pb.ToolCallSuspended) {
	t.Helper()
	run, err := client.StartRun(ctx, "deployer", "ship api", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	question := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_QUESTION, "")
	if err := run.AnswerSelections(question.GetToolCallId(), []string{environment}); err != nil {
		t.Fatal(err)
	}
	status := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL, `{"service": "api"}`)
	if err := run.SendToolOutput(status.GetToolCallId(), "healthy", false); err != nil {
		t.Fatal(err)
	}
	deploy := suspendedAs(t, run, kind, `{"service": "api", "environment": "`+environment+`"}`)
	if deploy.GetToolName() != "deploy" {
		t.Fatalf("suspension %v, want the deploy call", deploy)
	}
	return run, deploy
}

func TestApproveThenSendTheOutput(t *testing.T) {
	ctx, client := connect(t)
	run, deploy := toDeployApproval(t, ctx, client, "production", pb.SuspendKind_SUSPEND_KIND_APPROVAL)
	if deploy.GetApprovalReason() != `args.environment == "production"` {
		t.Errorf("approval_reason %q", deploy.GetApprovalReason())
	}
	if err := run.Approve(deploy.GetToolCallId()); err != nil {
		t.Fatal(err)
	}
	// Approved, the client tool call waits again, with the same id, for its output.
	again := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL, `{"service": "api", "environment": "production"}`)
	if again.GetToolCallId() != deploy.GetToolCallId() {
		t.Errorf("suspended again as %s, want %s", again.GetToolCallId(), deploy.GetToolCallId())
	}
	if err := run.SendToolOutput(again.GetToolCallId(), "deployed v42", false); err != nil {
		t.Fatal(err)
	}
	resultOf(t, run, deploy.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_OUTPUT, "deployed v42")
	want := "Deploy of api to production (status healthy): deployed v42"
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestRejectNeverRunsTheTool(t *testing.T) {
	ctx, client := connect(t)
	run, deploy := toDeployApproval(t, ctx, client, "production", pb.SuspendKind_SUSPEND_KIND_APPROVAL)
	if err := run.Reject(deploy.GetToolCallId(), "not on a Friday"); err != nil {
		t.Fatal(err)
	}
	resultOf(t, run, deploy.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_REJECTED, "User rejected the call: not on a Friday")
	skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted)
	expectEnd(t, run)

	// Settled once, the call takes no other decision.
	events, err := client.ResumeRun(ctx, run.ID(), deploy.GetToolCallId(), askuser.Approved())
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	_, err = events.Recv()
	if e := asError(t, err, codes.FailedPrecondition); e.Reason != "ALREADY_ANSWERED" {
		t.Errorf("reason %q", e.Reason)
	}
}

func TestEditChecksTheSchemaThenRunsWithTheEditedArguments(t *testing.T) {
	ctx, client := connect(t)
	run, deploy := toDeployApproval(t, ctx, client, "production", pb.SuspendKind_SUSPEND_KIND_APPROVAL)
	if err := run.Edit(deploy.GetToolCallId(), `{"service": "api", "environment": "moon"}`); err != nil {
		t.Fatal(err)
	}
	rejected := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerRejected)
	if fields := fieldsOf(rejected); !slices.Equal(fields, []string{"answer.approval.edit.arguments_json"}) {
		t.Errorf("answer_rejected fields %q", fields)
	}
	if err := run.Edit(deploy.GetToolCallId(), `{"service": "api", "environment": "staging"}`); err != nil {
		t.Fatal(err)
	}
	again := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL, `{"service": "api", "environment": "staging"}`)
	if err := run.SendToolOutput(again.GetToolCallId(), "deployed v42", false); err != nil {
		t.Fatal(err)
	}
	resultOf(t, run, deploy.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_OUTPUT,
		`User edited the arguments to {"environment":"staging","service":"api"}. Result: deployed v42`)
}

func TestNoApprovalWhenTheConditionIsFalse(t *testing.T) {
	ctx, client := connect(t)
	run, deploy := toDeployApproval(t, ctx, client, "staging", pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL)
	if deploy.GetApprovalReason() != "" {
		t.Errorf("approval_reason %q", deploy.GetApprovalReason())
	}
	if err := run.SendToolOutput(deploy.GetToolCallId(), "deployed v41", false); err != nil {
		t.Fatal(err)
	}
	want := "Deploy of api to staging (status healthy): deployed v41"
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func fieldsOf(rejected *pb.AnswerRejected) []string {
	var fields []string
	for _, v := range rejected.GetFieldViolations() {
		fields = append(fields, v.GetField())
	}
	return fields
}

func TestWithToolsOffersAPerRunToolWithItsApprovalPolicy(t *testing.T) {
	ctx, client := connect(t)
	_, err := client.StartRun(ctx, "per_run", "look up a", nil,
		askuser.WithTools(&pb.ToolDefinition{Name: "lookup", ParametersJsonSchema: `{"type": 12}`}))
	e := asError(t, err, codes.InvalidArgument)
	if !slices.Contains(e.Fields(), "start.tools[0].parameters_json_schema") {
		t.Errorf("field violations %q", e.Fields())
	}

	run, err := client.StartRun(ctx, "per_run", "look up a", nil, askuser.WithTools(&pb.ToolDefinition{
		Name:                 "lookup",
		Description:          "Looks a key up",
		ParametersJsonSchema: `{"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}`,
		Approval:             pb.ApprovalPolicy_APPROVAL_POLICY_ALWAYS,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	approval := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_APPROVAL, `{"key": "a"}`)
	if approval.GetToolName() != "lookup" || approval.GetApprovalReason() != "always" {
		t.Errorf("suspension %v", approval)
	}
	if err := run.Approve(approval.GetToolCallId()); err != nil {
		t.Fatal(err)
	}
	call := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL, `{"key": "a"}`)
	if err := run.SendToolOutput(call.GetToolCallId(), "42", false); err != nil {
		t.Fatal(err)
	}
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "lookup: 42" {
		t.Errorf("output %q", got)
	}
	expectEnd(t, run)
}

// nextForRun reads the feed up to its next call_pending or call_settled event of runID.
func nextForRun(t *testing.T, feed *askuser.PendingCalls, runID string) *pb.WatchPendingCallsResponse {
	t.Helper()
	for {
		event, err := feed.Recv()
		if err != nil {
			t.Fatalf("the feed ended before an event of run %s: %v", runID, err)
		}
		if event.GetCallPending().GetRunId() == runID || event.GetCallSettled().GetRunId() == runID {
			return event
		}
	}
}

func TestWatchPendingCallsAndClaimCall(t *testing.T) {
	ctx, client := connect(t)
	feed, err := client.WatchPendingCalls(ctx, askuser.PendingCallsFilter{
		AgentIDs: []string{"status_check"},
		Kinds:    []pb.SuspendKind{pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	for {
		event, err := feed.Recv()
		if err != nil {
			t.Fatalf("the feed ended before snapshot_done: %v", err)
		}
		if event.GetSnapshotDone() != nil {
			break
		}
	}

	run, err := client.StartRun(ctx, "status_check", "check", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	pending := nextForRun(t, feed, run.ID()).GetCallPending()
	call := pending.GetCall()
	if pending.GetAgentId() != "status_check" || call.GetToolName() != "service_status" ||
		call.GetKind() != pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL || !sameJSON(t, call.GetArgumentsJson(), `{"service": "api"}`) {
		t.Fatalf("call_pending %v", pending)
	}

	before := time.Now()
	expires, err := client.ClaimCall(ctx, run.ID(), call.GetToolCallId(), "worker-1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if expires.Before(before.Add(20*time.Second)) || expires.After(before.Add(40*time.Second)) {
		t.Errorf("a 30 s claim lapses at %v (now %v)", expires, before)
	}
	_, err = client.ClaimCall(ctx, run.ID(), call.GetToolCallId(), "worker-2", 30*time.Second)
	if e := asError(t, err, codes.FailedPrecondition); e.Reason != "ALREADY_CLAIMED" {
		t.Errorf("reason %q", e.Reason)
	}
	if _, err := client.ClaimCall(ctx, run.ID(), call.GetToolCallId(), "worker-1", 0); err != nil {
		t.Errorf("renewing the claim: %v", err)
	}
	got, err := client.GetRun(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if calls := got.GetPendingToolCalls(); len(calls) != 1 || calls[0].GetClaimant() != "worker-1" {
		t.Errorf("pending calls %v, want one claimed by worker-1", calls)
	}

	if err := run.SendToolOutput(call.GetToolCallId(), "up", false); err != nil {
		t.Fatal(err)
	}
	settled := nextForRun(t, feed, run.ID()).GetCallSettled()
	if settled.GetToolCallId() != call.GetToolCallId() || settled.GetKind() != pb.ToolResultKind_TOOL_RESULT_KIND_OUTPUT {
		t.Errorf("want call_settled of %s, got %v", call.GetToolCallId(), settled)
	}
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "api is up" {
		t.Errorf("output %q", got)
	}
	_, err = client.ClaimCall(ctx, run.ID(), call.GetToolCallId(), "worker-2", 0)
	if e := asError(t, err, codes.FailedPrecondition); e.Reason != "TOOL_CALL_NOT_PENDING" {
		t.Errorf("reason %q", e.Reason)
	}
}
