package askuser_test

import (
	"testing"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// Forms and replies against the agents form, questions and free_text of
// tests/conformance/agents.toml.

func TestAnswerFormIsCheckedFieldByFieldThenAccepted(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "form", "release", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	form := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_FORM, "")
	var names []string
	for _, field := range form.GetForm().GetFields() {
		names = append(names, field.GetName())
	}
	if len(names) != 3 || names[0] != "version" || names[1] != "replicas" || names[2] != "announce" {
		t.Fatalf("form fields %v", names)
	}

	// A text value for the yes/no field is refused in-band; the form stays answerable.
	err = run.AnswerForm(form.GetToolCallId(), map[string]askuser.FieldValue{
		"version": askuser.TextValue("1.2.3"), "replicas": askuser.NumberValue(3), "announce": askuser.TextValue("yes"),
	})
	if err != nil {
		t.Fatal(err)
	}
	rejected := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerRejected)
	if v := rejected.GetFieldViolations(); len(v) != 1 || v[0].GetField() != `answer.form.values["announce"]` {
		t.Errorf("answer_rejected %v", rejected)
	}

	err = run.AnswerForm(form.GetToolCallId(), map[string]askuser.FieldValue{
		"version": askuser.TextValue("1.2.3"), "replicas": askuser.NumberValue(3), "announce": askuser.BoolValue(true),
	}, askuser.WithAnswerID("go-form"))
	if err != nil {
		t.Fatal(err)
	}
	if accepted := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerAccepted); accepted.GetAnswerId() != "go-form" {
		t.Errorf("answer_accepted %v", accepted)
	}
	result := skipTo(t, run, (*pb.RunAgentResponse).GetToolResult)
	if result.GetKind() != pb.ToolResultKind_TOOL_RESULT_KIND_ANSWERED ||
		!sameJSON(t, result.GetContent(), `{"action": "accept", "content": {"version": "1.2.3", "replicas": 3, "announce": true}}`) {
		t.Errorf("tool_result %v", result)
	}
	skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted)
	expectEnd(t, run)
}

func TestResumeRunAnswersQuestionsWithOtherText(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "questions", "release", nil)
	if err != nil {
		t.Fatal(err)
	}
	form := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_FORM, "")
	run.Close()
	if !form.GetForm().GetFields()[0].GetChoice().GetAllowOther() {
		t.Errorf("q1 does not allow other text: %v", form.GetForm())
	}

	events, err := client.ResumeRun(ctx, run.ID(), form.GetToolCallId(), askuser.Form(map[string]askuser.FieldValue{
		"q1": askuser.OtherValue("one zone at a time"), "q2": askuser.ChoiceValue("unit", "load"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	resultOf(t, events, form.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_ANSWERED,
		`{"answers":{"Which checks?":["unit","load"],"Which rollout?":"one zone at a time"}}`)
	if got := skipTo(t, events, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "one zone at a time / unit, load" {
		t.Errorf("output %q", got)
	}
	expectEnd(t, events)
}

func TestReplyInsteadOfAnswering(t *testing.T) {
	ctx, client := connect(t)
	run, err := client.StartRun(ctx, "free_text", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	question := suspendedAs(t, run, pb.SuspendKind_SUSPEND_KIND_QUESTION, "")
	if err := run.Reply(question.GetToolCallId(), "why?"); err != nil {
		t.Fatal(err)
	}
	resultOf(t, run, question.GetToolCallId(), pb.ToolResultKind_TOOL_RESULT_KIND_REPLIED, "User replied instead of answering: why?")
	if got := skipTo(t, run, (*pb.RunAgentResponse).GetRunCompleted).GetOutputText(); got != "Hello, User replied instead of answering: why?!" {
		t.Errorf("output %q", got)
	}
	expectEnd(t, run)
}
