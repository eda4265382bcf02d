package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// frameCheck is a scenario's check of a frame: "kind" and the fields to compare, by name.
type frameCheck map[string]json.RawMessage

// checkNext reads the frames one check covers (one, or a run of text deltas) and checks them.
// Every frame must belong to runID.
func (st *state) checkNext(recv func() (*pb.RunAgentResponse, error), runID string, check frameCheck) error {
	m := &matcher{st: st, unchecked: maps.Clone(check)}
	var kind string
	if !m.take("kind", &kind) {
		return fmt.Errorf("the check has no kind%s", m.problemText())
	}
	if kind == "text_deltas" {
		return m.checkTextDeltas(recv, runID)
	}
	frame, err := readFrame(recv, runID, kind)
	if err != nil {
		return err
	}
	m.checkFrame(frame)
	if problems := m.problemText(); problems != "" {
		return fmt.Errorf("%s%s", describe(frame), problems)
	}
	return nil
}

// readFrame reads the next frame and checks its kind and run.
func readFrame(recv func() (*pb.RunAgentResponse, error), runID, kind string) (*pb.RunAgentResponse, error) {
	frame, err := recv()
	if err == io.EOF {
		return nil, fmt.Errorf("the stream ended, want a %s frame", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("the stream failed, want a %s frame: %w", kind, err)
	}
	if eventKind(frame) != kind {
		return nil, fmt.Errorf("got %s, want a %s frame", describe(frame), kind)
	}
	if frame.GetRunId() != runID {
		return nil, fmt.Errorf("%s: run_id is not the stream's run %q", describe(frame), runID)
	}
	return frame, nil
}

// matcher compares one frame with the fields of a check, taking each field it compares, so that
// a field left over is one that does not apply to the frame's kind.
type matcher struct {
	st        *state
	unchecked frameCheck
	problems  []string
}

func (m *matcher) fail(format string, args ...any) {
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

// problemText lists the mismatches and the fields left unchecked, or is empty when there are none.
func (m *matcher) problemText() string {
	problems := m.problems
	leftover := slices.Sorted(maps.Keys(m.unchecked))
	for _, name := range leftover {
		problems = append(problems, fmt.Sprintf("%s: not a field of this kind of frame", name))
	}
	if problems == nil {
		return ""
	}
	return ": " + strings.Join(problems, "; ")
}

// take removes a field from the check and decodes it into target; false when the check lacks it.
func (m *matcher) take(name string, target any) bool {
	raw, ok := m.unchecked[name]
	if !ok {
		return false
	}
	delete(m.unchecked, name)
	if err := decodeStrict(raw, target); err != nil {
		m.fail("%s: %v", name, err)
		return false
	}
	return true
}

func (m *matcher) text(name, got string) {
	var want ref
	if !m.take(name, &want) {
		return
	}
	value, err := m.st.resolve(want)
	if err != nil {
		m.fail("%s: %v", name, err)
	} else if got != value {
		m.fail("%s is %q, want %q", name, got, value)
	}
}

func (m *matcher) texts(name string, got []string) {
	var want []ref
	if !m.take(name, &want) {
		return
	}
	values, err := m.st.resolveAll(want)
	if err != nil {
		m.fail("%s: %v", name, err)
	} else if !slices.Equal(got, values) {
		m.fail("%s are %q, want %q", name, got, values)
	}
}

// optionalText compares a field that may be absent; the check writes absent as null.
func (m *matcher) optionalText(name string, got *string) {
	var want *string
	if !m.take(name, &want) {
		return
	}
	switch {
	case want == nil && got != nil:
		m.fail("%s is %s, want it absent", name, *got)
	case want != nil && got == nil:
		m.fail("%s is absent, want %s", name, *want)
	case want != nil && *want != *got:
		m.fail("%s is %s, want %s", name, *got, *want)
	}
}

// jsonValue compares JSON text with the check's JSON value: objects compare by keys, whatever
// their order, and "$name" strings in the value stand for saved values.
func (m *matcher) jsonValue(name, gotJSON string) {
	var want any
	if !m.take(name, &want) {
		return
	}
	want, err := m.st.resolveJSON(want)
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	var got any
	if err := json.Unmarshal([]byte(gotJSON), &got); err != nil {
		m.fail("%s is %q, not JSON: %v", name, gotJSON, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		wantJSON, _ := json.Marshal(want)
		m.fail("%s is %s, want %s", name, gotJSON, wantJSON)
	}
}

func (m *matcher) bool(name string, got bool) {
	var want bool
	if m.take(name, &want) && got != want {
		m.fail("%s is %t, want %t", name, got, want)
	}
}

func (m *matcher) number(name string, got uint64) {
	var want count
	if !m.take(name, &want) {
		return
	}
	value, err := m.st.number(want)
	if err != nil {
		m.fail("%s: %v", name, err)
	} else if got != value {
		m.fail("%s is %d, want %d", name, got, value)
	}
}

// save stores value under the name the check gives in field.
func (m *matcher) save(field, value string) {
	var name string
	if m.take(field, &name) {
		m.st.saved[name] = value
	}
}

func (m *matcher) checkFrame(frame *pb.RunAgentResponse) {
	m.number("sequence", frame.GetSequence())
	m.save("save_sequence", strconv.FormatUint(frame.GetSequence(), 10))
	if id, ok := eventField(frame, "tool_call_id"); ok {
		m.text("tool_call_id", id)
		m.save("save", id)
	}
	if name, ok := eventField(frame, "tool_name"); ok {
		m.text("tool_name", name)
	}
	switch event := frame.GetEvent().(type) {
	case *pb.RunAgentResponse_RunStarted:
		m.text("agent_id", event.RunStarted.GetAgentId())
		m.text("prompt", event.RunStarted.GetPrompt())
	case *pb.RunAgentResponse_TextDelta:
		m.text("text", event.TextDelta.GetText())
	case *pb.RunAgentResponse_ToolCall:
		m.jsonValue("arguments", event.ToolCall.GetArgumentsJson())
	case *pb.RunAgentResponse_ToolCallSuspended:
		m.text("suspend_kind", event.ToolCallSuspended.GetKind().String())
		m.jsonValue("arguments", event.ToolCallSuspended.GetArgumentsJson())
		m.text("approval_reason", event.ToolCallSuspended.GetApprovalReason())
		payload := event.ToolCallSuspended.GetSuspendPayload()
		m.text("question", payload.GetQuestion())
		labels := []string{}
		for _, option := range payload.GetOptions() {
			labels = append(labels, option.GetLabel())
		}
		m.texts("options", labels)
		var mode *string
		if payload != nil && payload.SelectionMode != nil {
			name := payload.GetSelectionMode().String()
			mode = &name
		}
		m.optionalText("selection_mode", mode)
	case *pb.RunAgentResponse_ToolResult:
		m.text("content", event.ToolResult.GetContent())
		m.bool("is_error", event.ToolResult.GetIsError())
		m.text("result_kind", event.ToolResult.GetKind().String())
	case *pb.RunAgentResponse_AnswerRejected:
		m.text("reason", event.AnswerRejected.GetReason())
		fields := []string{}
		for _, violation := range event.AnswerRejected.GetFieldViolations() {
			fields = append(fields, violation.GetField())
		}
		m.texts("fields", fields)
	case *pb.RunAgentResponse_AnswerAccepted:
		m.bool("duplicate", event.AnswerAccepted.GetDuplicate())
	case *pb.RunAgentResponse_RunCompleted:
		m.text("output_text", event.RunCompleted.GetOutputText())
	case *pb.RunAgentResponse_RunFailed:
		m.text("message", event.RunFailed.GetMessage())
	}
}

// checkTextDeltas reads text_delta frames until their text adds up to the check's text.
func (m *matcher) checkTextDeltas(recv func() (*pb.RunAgentResponse, error), runID string) error {
	var want ref
	if !m.take("text", &want) {
		return fmt.Errorf("text_deltas needs text%s", m.problemText())
	}
	if problems := m.problemText(); problems != "" {
		return fmt.Errorf("text_deltas%s", problems)
	}
	text, err := m.st.resolve(want)
	if err != nil {
		return err
	}
	var got strings.Builder
	for got.Len() < len(text) {
		frame, err := readFrame(recv, runID, "text_delta")
		if err != nil {
			return fmt.Errorf("after text %q: %w", got.String(), err)
		}
		got.WriteString(frame.GetTextDelta().GetText())
		if !strings.HasPrefix(text, got.String()) {
			return fmt.Errorf("text deltas add up to %q, want %q", got.String(), text)
		}
	}
	return nil
}

// eventOneof is the oneof of RunAgentResponse that holds the event.
var eventOneof = (&pb.RunAgentResponse{}).ProtoReflect().Descriptor().Oneofs().ByName("event")

// eventKind is the name of the frame's event field, e.g. "tool_call_suspended".
func eventKind(frame *pb.RunAgentResponse) string {
	field := frame.ProtoReflect().WhichOneof(eventOneof)
	if field == nil {
		return "empty"
	}
	return string(field.Name())
}

// eventField reads a string field of the frame's event, when the event has a field of that name.
func eventField(frame *pb.RunAgentResponse, name protoreflect.Name) (string, bool) {
	msg := frame.ProtoReflect()
	which := msg.WhichOneof(eventOneof)
	if which == nil {
		return "", false
	}
	event := msg.Get(which).Message()
	field := event.Descriptor().Fields().ByName(name)
	if field == nil {
		return "", false
	}
	return event.Get(field).String(), true
}

// describe shows a frame in failure messages.
func describe(frame *pb.RunAgentResponse) string {
	return fmt.Sprintf("%s frame {%s}", eventKind(frame), strings.TrimSpace(prototext.MarshalOptions{}.Format(frame)))
}
