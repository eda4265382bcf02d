package askuser_test

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// These tests run against a server with the agents of tests/conformance/agents.toml, whose address
// clients/go/test.sh puts in ASKUSER_ADDR; calls carry ASKUSER_API_KEY when it is set.
func connect(t *testing.T) (context.Context, *askuser.Client) {
	t.Helper()
	addr := os.Getenv("ASKUSER_ADDR")
	if addr == "" {
		t.Fatal("ASKUSER_ADDR is not set: run clients/go/test.sh HOST:PORT")
	}
	client, err := askuser.Dial(addr, credentials()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx, client
}

// credentials sends ASKUSER_API_KEY with every call when it is set.
func credentials() []grpc.DialOption {
	if key := os.Getenv("ASKUSER_API_KEY"); key != "" {
		return []grpc.DialOption{askuser.WithAPIKey(key)}
	}
	return nil
}

type eventReader interface {
	Recv() (*pb.RunAgentResponse, error)
}

// skipTo reads events up to the first one that is picks's kind and returns it.
func skipTo[E any](t *testing.T, events eventReader, pick func(*pb.RunAgentResponse) *E) *E {
	t.Helper()
	for {
		event, err := events.Recv()
		if err != nil {
			t.Fatalf("stream ended before the expected event: %v", err)
		}
		if picked := pick(event); picked != nil {
			return picked
		}
	}
}

func expectEnd(t *testing.T, events eventReader) {
	t.Helper()
	event, err := events.Recv()
	if err != io.EOF {
		t.Fatalf("want io.EOF at the end of the stream, got %v, %v", event, err)
	}
}

func asError(t *testing.T, err error, code codes.Code) *askuser.Error {
	t.Helper()
	var e *askuser.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *askuser.Error, got %v", err)
	}
	if e.Code != code {
		t.Fatalf("code %s, want %s (%v)", e.Code, code, e)
	}
	return e
}

func TestStartRunAnswerTextCompletes(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "free_text", "greet me", map[string]string{"team": "core"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if run.ID() == "" {
		t.Fatal("StartRun returned no run id")
	}
	first, err := run.Recv()
	if err != nil || first.GetRunStarted().GetAgentId() != "free_text" || first.GetRunId() != run.ID() {
		t.Fatalf("first event %v, %v; want run_started of run %s", first, err, run.ID())
	}

	question := skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended)
	if got := question.GetSuspendPayload().GetQuestion(); got != "What is your name?" {
		t.Errorf("question %q", got)
	}
	if err := run.AnswerText(question.GetToolCallId(), "Ada"); err != nil {
		t.Fatal(err)
	}
	accepted := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerAccepted)
	if accepted.GetToolCallId() != question.GetToolCallId() || accepted.GetDuplicate() {
		t.Errorf("answer_accepted %v", accepted)
	}
	completed := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted)
	if completed.GetOutputText() != "Hello, Ada!" {
		t.Errorf("output %q", completed.GetOutputText())
	}
	expectEnd(t, run)

	got, err := client.GetRun(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got.GetStatus() != pb.RunStatus_RUN_STATUS_COMPLETED || got.GetMetadata()["team"] != "core" {
		t.Errorf("run %v", got)
	}
}

func TestAnswerSelectionsAndDeclineInOneRun(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "parallel", "release", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var questions []*pb.ToolCallSuspended
	for len(questions) < 3 {
		questions = append(questions, skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended))
	}
	if err := run.AnswerSelections(questions[0].GetToolCallId(), []string{"staging"}); err != nil {
		t.Fatal(err)
	}
	if err := run.AnswerSelections(questions[1].GetToolCallId(), []string{"unit", "lint"}, askuser.WithAnswerID("checks-1")); err != nil {
		t.Fatal(err)
	}
	if err := run.Decline(questions[2].GetToolCallId(), "nothing to add"); err != nil {
		t.Fatal(err)
	}

	kinds := map[string]pb.ToolResultKind{}
	for len(kinds) < 3 {
		result := skipTo(t, run, (*pb.RunAgentResponse).GetToolResult)
		kinds[result.GetToolCallId()] = result.GetKind()
	}
	if kinds[questions[1].GetToolCallId()] != pb.ToolResultKind_TOOL_RESULT_KIND_ANSWERED ||
		kinds[questions[2].GetToolCallId()] != pb.ToolResultKind_TOOL_RESULT_KIND_DECLINED {
		t.Errorf("result kinds %v", kinds)
	}
	completed := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted)
	if completed.GetOutputText() != "staging / unit, lint / User declined to answer: nothing to add" {
		t.Errorf("output %q", completed.GetOutputText())
	}
	expectEnd(t, run)
}

func TestRejectedAnswerIsAnEventAndTheQuestionStaysOpen(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "pick", "deploy", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	question := skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended)
	if err := run.AnswerSelections(question.GetToolCallId(), []string{"moon"}); err != nil {
		t.Fatal(err)
	}
	rejected := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerRejected)
	if rejected.GetReason() != "INVALID_ANSWER" || len(rejected.GetFieldViolations()) == 0 {
		t.Errorf("answer_rejected %v", rejected)
	}
	if err := run.AnswerText(question.GetToolCallId(), "staging"); err != nil {
		t.Fatal(err)
	}
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "Deploying to staging" {
		t.Errorf("output %q", got)
	}
}

func TestStartRunOfUnknownAgentIsNotFound(t *testing.T) {
	ctx, client := connect(t)
	_, err := client.StartRun(ctx, "no_such_agent", "hi", nil)
	e := asError(t, err, codes.NotFound)
	if status.Code(err) != codes.NotFound {
		t.Errorf("status.Code(%v) is not NotFound", err)
	}
	if e.Reason != "AGENT_NOT_FOUND" {
		t.Errorf("reason %q", e.Reason)
	}
}

func TestAttachResumeWatchListAndCancel(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "two_step", "release", map[string]string{"case": "attach"})
	if err != nil {
		t.Fatal(err)
	}
	first := skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended)
	run.Close()

	// Attaching after the tool_call (sequence 2) replays the suspension (sequence 3) first.
	attached, err := client.Attach(ctx, run.ID(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer attached.Close()
	replayed, err := attached.Recv()
	if err != nil || replayed.GetSequence() != 3 || replayed.GetToolCallSuspended().GetToolCallId() != first.GetToolCallId() {
		t.Fatalf("first attached event %v, %v; want the suspension at sequence 3", replayed, err)
	}

	events, err := client.ResumeRun(ctx, run.ID(), first.GetToolCallId(), askuser.Text("Apollo"), askuser.WithAnswerID("r-1"))
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := events.Recv()
	if err != nil || accepted.GetAnswerAccepted().GetAnswerId() != "r-1" {
		t.Fatalf("first resumed event %v, %v; want answer_accepted of r-1", accepted, err)
	}
	second := skipTo(t, events, (*pb.RunAgentResponse).GetToolCallSuspended)
	if got := second.GetSuspendPayload().GetQuestion(); got != "Ship Apollo?" {
		t.Errorf("second question %q", got)
	}
	expectEnd(t, events)

	again, err := client.ResumeRun(ctx, run.ID(), first.GetToolCallId(), askuser.Text("Hermes"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = again.Recv()
	if e := asError(t, err, codes.FailedPrecondition); e.Reason != "ALREADY_ANSWERED" {
		t.Errorf("reason %q", e.Reason)
	}

	runs, _, err := client.ListRuns(ctx, askuser.ListRunsOptions{Status: pb.RunStatus_RUN_STATUS_SUSPENDED, AgentID: "two_step"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(runs, func(r *pb.Run) bool { return r.GetRunId() == run.ID() }) {
		t.Errorf("ListRuns of suspended two_step runs misses %s", run.ID())
	}

	cancelled, err := client.CancelRun(ctx, run.ID(), "changed my mind")
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.GetStatus() != pb.RunStatus_RUN_STATUS_CANCELLED || len(cancelled.GetPendingToolCalls()) != 0 {
		t.Errorf("cancelled run %v", cancelled)
	}
	if got := skipTo(t, attached, (*pb.RunAgentResponse).GetRunCancelled).GetReason(); got != "changed my mind" {
		t.Errorf("attached stream saw cancel reason %q", got)
	}
	expectEnd(t, attached)

	watched, err := client.WatchRun(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for {
		event, err := watched.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if event.GetSequence() != last+1 {
			t.Fatalf("watch replayed sequence %d after %d", event.GetSequence(), last)
		}
		last = event.GetSequence()
	}
	if got, err := client.GetRun(ctx, run.ID()); err != nil || got.GetLastSequence() != last {
		t.Errorf("watch replayed up to %d; GetRun says %v, %v", last, got.GetLastSequence(), err)
	}
}

func TestCancelOfCompletedRunIsRunFinished(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "pick", "deploy", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	question := skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended)
	if err := run.AnswerText(question.GetToolCallId(), "production"); err != nil {
		t.Fatal(err)
	}
	skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted)
	_, err = client.CancelRun(ctx, run.ID(), "too late")
	if e := asError(t, err, codes.FailedPrecondition); e.Reason != "RUN_FINISHED" {
		t.Errorf("reason %q", e.Reason)
	}
}

func TestGetRunOfUnknownRunIsNotFound(t *testing.T) {
	ctx, client := connect(t)
	_, err := client.GetRun(ctx, "no-such-run")
	asError(t, err, codes.NotFound)
}

func TestListAgentsIsOrderedById(t *testing.T) {
	ctx, client := connect(t)
	agents, err := client.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, agent := range agents {
		ids = append(ids, agent.GetAgentId())
	}
	if !slices.IsSorted(ids) || !slices.Contains(ids, "free_text") || !slices.Contains(ids, "two_step") {
		t.Errorf("agent ids %q", ids)
	}
}

func TestAskUserRendersAndValidates(t *testing.T) {
	ctx, client := connect(t)
	content, err := client.AskUser(ctx, &pb.AskUserInput{
		Question:      "Which checks?",
		Options:       []*pb.AskUserOption{{Label: "lint"}, {Label: "unit"}},
		SelectionMode: pb.SelectionMode_SELECTION_MODE_MULTI_SELECT.Enum(),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[Question for user]: Which checks?\nOptions: lint, unit\nSelection mode: multi_select"
	if content != want {
		t.Errorf("content %q, want %q", content, want)
	}

	_, err = client.AskUser(ctx, &pb.AskUserInput{Question: "  "})
	e := asError(t, err, codes.InvalidArgument)
	if !slices.Equal(e.Fields(), []string{"input.question"}) {
		t.Errorf("field violations %q", e.Fields())
	}
}
