package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// stepKinds runs each kind of step, by the key that names it.
var stepKinds = map[string]func(*state, json.RawMessage) error{
	"start":               step((*state).start),
	"attach":              step((*state).attach),
	"answer":              step((*state).answer),
	"expect":              step((*state).expect),
	"expect_end":          step((*state).expectEnd),
	"expect_stream_error": step((*state).expectStreamError),
	"close":               step((*state).close),
	"resume":              step((*state).resume),
	"watch":               step((*state).watch),
	"get_run":             step((*state).getRun),
	"ask_user":            step((*state).askUser),
	"watch_pending":       step((*state).watchPending),
	"expect_pending":      step((*state).expectPending),
	"close_pending":       step((*state).closePending),
	"claim":               step((*state).claim),
	"cancel":              step((*state).cancel),
}

// step decodes a step's arguments, strictly, before running it.
func step[Args any](run func(*state, Args) error) func(*state, json.RawMessage) error {
	return func(st *state, data json.RawMessage) error {
		var args Args
		if err := decodeStrict(data, &args); err != nil {
			return fmt.Errorf("bad arguments: %w", err)
		}
		return run(st, args)
	}
}

type startArgs struct {
	Stream   string            `json:"stream"`
	AgentID  string            `json:"agent_id"`
	Prompt   string            `json:"prompt"`
	Metadata map[string]string `json:"metadata"`
	Tools    []toolArgs        `json:"tools"`
	As       string            `json:"as"`
}

// toolArgs is a client tool declared for one run (StartRun.tools).
type toolArgs struct {
	Name                 string  `json:"name"`
	Description          string  `json:"description"`
	ParametersJSONSchema string  `json:"parameters_json_schema"`
	Approval             *string `json:"approval"`
}

func (st *state) start(a startArgs) error {
	name, err := st.newStreamName(a.Stream)
	if err != nil {
		return err
	}
	var opts []askuser.StartOption
	if a.Tools != nil {
		tools := make([]*pb.ToolDefinition, len(a.Tools))
		for i, tool := range a.Tools {
			tools[i] = &pb.ToolDefinition{Name: tool.Name, Description: tool.Description, ParametersJsonSchema: tool.ParametersJSONSchema}
			if tool.Approval != nil {
				policy, ok := pb.ApprovalPolicy_value[*tool.Approval]
				if !ok {
					return fmt.Errorf("tools[%d]: unknown approval %q", i, *tool.Approval)
				}
				tools[i].Approval = pb.ApprovalPolicy(policy)
			}
		}
		opts = append(opts, askuser.WithTools(tools...))
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	run, err := client.StartRun(st.ctx, a.AgentID, a.Prompt, a.Metadata, opts...)
	if err != nil {
		st.streams[name] = &stream{openErr: err}
		return nil
	}
	st.saved["run_id"] = run.ID()
	st.streams[name] = &stream{run: run}
	return nil
}

type attachArgs struct {
	Stream        string `json:"stream"`
	RunID         ref    `json:"run_id"`
	AfterSequence count  `json:"after_sequence"`
	As            string `json:"as"`
}

func (st *state) attach(a attachArgs) error {
	name, err := st.newStreamName(a.Stream)
	if err != nil {
		return err
	}
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	after, err := st.number(a.AfterSequence)
	if err != nil {
		return err
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	run, err := client.Attach(st.ctx, runID, after)
	st.streams[name] = &stream{run: run, openErr: err}
	return nil
}

func (st *state) newStreamName(name string) (string, error) {
	name = streamName(name)
	if _, open := st.streams[name]; open {
		return "", fmt.Errorf("stream %q is already open", name)
	}
	return name, nil
}

// replyArgs is the content of an answer: exactly one of its fields.
type replyArgs struct {
	Text       *ref            `json:"text"`
	Selections *[]ref          `json:"selections"`
	Decline    *ref            `json:"decline"`
	ToolOutput *toolOutputArgs `json:"tool_output"`
	Approve    *bool           `json:"approve"`
	Reject     *ref            `json:"reject"`
	Edit       *ref            `json:"edit"`
}

type toolOutputArgs struct {
	Content ref  `json:"content"`
	IsError bool `json:"is_error"`
}

func (st *state) reply(a replyArgs) (askuser.Reply, error) {
	given := 0
	for _, isSet := range []bool{a.Text != nil, a.Selections != nil, a.Decline != nil,
		a.ToolOutput != nil, a.Approve != nil, a.Reject != nil, a.Edit != nil} {
		if isSet {
			given++
		}
	}
	if given != 1 {
		return askuser.Reply{}, fmt.Errorf("an answer has exactly one of text, selections, decline, tool_output, approve, reject and edit, got %d", given)
	}
	switch {
	case a.ToolOutput != nil:
		content, err := st.resolve(a.ToolOutput.Content)
		return askuser.ToolOutput(content, a.ToolOutput.IsError), err
	case a.Approve != nil:
		if !*a.Approve {
			return askuser.Reply{}, errors.New(`"approve" can only be true`)
		}
		return askuser.Approved(), nil
	case a.Reject != nil:
		reason, err := st.resolve(*a.Reject)
		return askuser.Rejected(reason), err
	case a.Edit != nil:
		arguments, err := st.resolve(*a.Edit)
		return askuser.Edited(arguments), err
	case a.Text != nil:
		text, err := st.resolve(*a.Text)
		return askuser.Text(text), err
	case a.Selections != nil:
		labels, err := st.resolveAll(*a.Selections)
		return askuser.Selections(labels...), err
	default:
		reason, err := st.resolve(*a.Decline)
		return askuser.Declined(reason), err
	}
}

type answerArgs struct {
	Stream     string `json:"stream"`
	RunID      ref    `json:"run_id"`
	ToolCallID ref    `json:"tool_call_id"`
	AnswerID   ref    `json:"answer_id"`
	replyArgs
}

func (st *state) answer(a answerArgs) error {
	s, err := st.stream(a.Stream)
	if err != nil {
		return err
	}
	if s.openErr != nil {
		return fmt.Errorf("cannot answer: the stream failed to open: %w", s.openErr)
	}
	// Sent as the scenario gives it: an omitted run_id goes out empty, which means the stream's run.
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	toolCallID, err := st.resolve(a.ToolCallID)
	if err != nil {
		return err
	}
	answerID, err := st.resolve(a.AnswerID)
	if err != nil {
		return err
	}
	reply, err := st.reply(a.replyArgs)
	if err != nil {
		return err
	}
	err = s.run.Answer(toolCallID, reply, askuser.WithRunID(runID), askuser.WithAnswerID(answerID))
	if err != nil && err != io.EOF {
		return err
	}
	// io.EOF: the server has ended the stream; the next read of the scenario shows how.
	return nil
}

func (st *state) expect(check frameCheck) error {
	var name string
	if raw, ok := check["stream"]; ok {
		if err := json.Unmarshal(raw, &name); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		delete(check, "stream")
	}
	s, err := st.stream(name)
	if err != nil {
		return err
	}
	return st.checkNext(s.recv, s.runID(), check)
}

type streamArgs struct {
	Stream string `json:"stream"`
}

func (st *state) expectEnd(a streamArgs) error {
	s, err := st.stream(a.Stream)
	if err != nil {
		return err
	}
	return expectEnd(s.recv)
}

// expectEnd checks that a stream ends with status OK and no further frame.
func expectEnd(recv func() (*pb.RunAgentResponse, error)) error {
	frame, err := recv()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return fmt.Errorf("want the stream to end OK, it failed: %w", err)
	default:
		return fmt.Errorf("want the stream to end, got %s", describe(frame))
	}
}

type streamErrorArgs struct {
	Stream string `json:"stream"`
	errorCheck
}

func (st *state) expectStreamError(a streamErrorArgs) error {
	s, err := st.stream(a.Stream)
	if err != nil {
		return err
	}
	frame, err := s.recv()
	if err == nil {
		return fmt.Errorf("want the stream to fail, got %s", describe(frame))
	}
	return a.match(err)
}

func (st *state) close(a streamArgs) error {
	s, err := st.stream(a.Stream)
	if err != nil {
		return err
	}
	delete(st.streams, streamName(a.Stream))
	if s.run != nil {
		s.run.Close()
	}
	return nil
}

// outcome is what a server-streaming call must give: the frames it streams, or an error.
type outcome struct {
	Expect      *[]frameCheck `json:"expect"`
	ExpectError *errorCheck   `json:"expect_error"`
}

// checkEvents reads a ResumeRun or WatchRun stream to its end and checks it against the outcome.
func (st *state) checkEvents(events *askuser.Events, runID string, o outcome) error {
	defer events.Close()
	if (o.Expect == nil) == (o.ExpectError == nil) {
		return errors.New("give exactly one of expect and expect_error")
	}
	if o.ExpectError != nil {
		frame, err := events.Recv()
		if err == nil {
			return fmt.Errorf("want the call to fail, got %s", describe(frame))
		}
		return o.ExpectError.match(err)
	}
	for i, check := range *o.Expect {
		if err := st.checkNext(events.Recv, runID, check); err != nil {
			return fmt.Errorf("frame %d: %w", i+1, err)
		}
	}
	return expectEnd(events.Recv)
}

type resumeArgs struct {
	RunID      ref    `json:"run_id"`
	ToolCallID ref    `json:"tool_call_id"`
	AnswerID   ref    `json:"answer_id"`
	As         string `json:"as"`
	replyArgs
	outcome
}

func (st *state) resume(a resumeArgs) error {
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	toolCallID, err := st.resolve(a.ToolCallID)
	if err != nil {
		return err
	}
	answerID, err := st.resolve(a.AnswerID)
	if err != nil {
		return err
	}
	reply, err := st.reply(a.replyArgs)
	if err != nil {
		return err
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	events, err := client.ResumeRun(st.ctx, runID, toolCallID, reply, askuser.WithAnswerID(answerID))
	if err != nil {
		return err
	}
	return st.checkEvents(events, runID, a.outcome)
}

type watchArgs struct {
	RunID         ref    `json:"run_id"`
	AfterSequence count  `json:"after_sequence"`
	As            string `json:"as"`
	outcome
}

func (st *state) watch(a watchArgs) error {
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	after, err := st.number(a.AfterSequence)
	if err != nil {
		return err
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	events, err := client.WatchRun(st.ctx, runID, after)
	if err != nil {
		return err
	}
	return st.checkEvents(events, runID, a.outcome)
}

type getRunArgs struct {
	RunID        ref         `json:"run_id"`
	Status       *string     `json:"status"`
	Pending      *[]ref      `json:"pending"`
	OutputText   *ref        `json:"output_text"`
	LastSequence *count      `json:"last_sequence"`
	ExpectError  *errorCheck `json:"expect_error"`
	As           string      `json:"as"`
}

func (st *state) getRun(a getRunArgs) error {
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	run, err := client.GetRun(st.ctx, runID)
	if a.ExpectError != nil {
		if a.Status != nil || a.Pending != nil || a.OutputText != nil || a.LastSequence != nil {
			return errors.New("expect_error leaves no run to check fields of")
		}
		if err == nil {
			return fmt.Errorf("want the call to fail, got run %s", run.GetRunId())
		}
		return a.ExpectError.match(err)
	}
	if err != nil {
		return err
	}
	var problems []string
	if a.Status != nil && run.GetStatus().String() != *a.Status {
		problems = append(problems, fmt.Sprintf("status %s, want %s", run.GetStatus(), *a.Status))
	}
	if a.Pending != nil {
		want, err := st.resolveAll(*a.Pending)
		if err != nil {
			return err
		}
		var got []string
		for _, pending := range run.GetPendingToolCalls() {
			got = append(got, pending.GetToolCallId())
		}
		if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("pending %q, want %q", got, want))
		}
	}
	if a.OutputText != nil {
		want, err := st.resolve(*a.OutputText)
		if err != nil {
			return err
		}
		if run.GetOutputText() != want {
			problems = append(problems, fmt.Sprintf("output_text %q, want %q", run.GetOutputText(), want))
		}
	}
	if a.LastSequence != nil {
		want, err := st.number(*a.LastSequence)
		if err != nil {
			return err
		}
		if run.GetLastSequence() != want {
			problems = append(problems, fmt.Sprintf("last_sequence %d, want %d", run.GetLastSequence(), want))
		}
	}
	if problems != nil {
		return fmt.Errorf("run %s: %s", runID, strings.Join(problems, "; "))
	}
	return nil
}

type askUserArgs struct {
	Input struct {
		Question string `json:"question"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
		SelectionMode *string `json:"selection_mode"`
	} `json:"input"`
	Content     *ref        `json:"content"`
	ExpectError *errorCheck `json:"expect_error"`
}

func (st *state) askUser(a askUserArgs) error {
	if (a.Content == nil) == (a.ExpectError == nil) {
		return errors.New("give exactly one of content and expect_error")
	}
	input := &pb.AskUserInput{Question: a.Input.Question}
	for _, option := range a.Input.Options {
		input.Options = append(input.Options, &pb.AskUserOption{Label: option.Label, Description: option.Description})
	}
	if a.Input.SelectionMode != nil {
		mode, ok := pb.SelectionMode_value[*a.Input.SelectionMode]
		if !ok {
			return fmt.Errorf("unknown selection_mode %q", *a.Input.SelectionMode)
		}
		input.SelectionMode = pb.SelectionMode(mode).Enum()
	}
	content, err := st.clients.own.AskUser(st.ctx, input)
	if a.ExpectError != nil {
		if err == nil {
			return fmt.Errorf("want the call to fail, got content %q", content)
		}
		return a.ExpectError.match(err)
	}
	if err != nil {
		return err
	}
	want, err := st.resolve(*a.Content)
	if err != nil {
		return err
	}
	if content != want {
		return fmt.Errorf("content %q, want %q", content, want)
	}
	return nil
}

type cancelArgs struct {
	RunID       ref         `json:"run_id"`
	Reason      ref         `json:"reason"`
	ExpectError *errorCheck `json:"expect_error"`
	As          string      `json:"as"`
}

// cancel cancels a run: the run comes back cancelled, or the call fails as expected.
func (st *state) cancel(a cancelArgs) error {
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	reason, err := st.resolve(a.Reason)
	if err != nil {
		return err
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	run, err := client.CancelRun(st.ctx, runID, reason)
	if a.ExpectError != nil {
		if err == nil {
			return fmt.Errorf("want the call to fail, got run %s in %s", run.GetRunId(), run.GetStatus())
		}
		return a.ExpectError.match(err)
	}
	if err != nil {
		return err
	}
	if run.GetStatus() != pb.RunStatus_RUN_STATUS_CANCELLED {
		return fmt.Errorf("run %s is %s, want RUN_STATUS_CANCELLED", runID, run.GetStatus())
	}
	return nil
}

// errorCheck is an expected failure: its gRPC code and, when given, its ErrorInfo reason and
// BadRequest field violations.
type errorCheck struct {
	Code *codes.Code `json:"code"`
	// Reason is the google.rpc.ErrorInfo reason.
	Reason *string `json:"reason"`
	// Field must be one of the violations' fields.
	Field *string `json:"field"`
	// Fields must be the violations' fields exactly, in order.
	Fields *[]string `json:"fields"`
}

func (c errorCheck) match(err error) error {
	if c.Code == nil {
		return errors.New("the expected error has no code")
	}
	var got *askuser.Error
	if !errors.As(err, &got) {
		return fmt.Errorf("want a %s status, got %w", *c.Code, err)
	}
	var problems []string
	if got.Code != *c.Code {
		problems = append(problems, fmt.Sprintf("code %s, want %s", got.Code, *c.Code))
	}
	if c.Reason != nil && got.Reason != *c.Reason {
		problems = append(problems, fmt.Sprintf("reason %q, want %q", got.Reason, *c.Reason))
	}
	if c.Field != nil && !slices.Contains(got.Fields(), *c.Field) {
		problems = append(problems, fmt.Sprintf("field violations %q, want one on %q", got.Fields(), *c.Field))
	}
	if c.Fields != nil && !slices.Equal(got.Fields(), *c.Fields) {
		problems = append(problems, fmt.Sprintf("field violations %q, want %q", got.Fields(), *c.Fields))
	}
	if problems != nil {
		return fmt.Errorf("%s (the error: %v)", strings.Join(problems, "; "), got)
	}
	return nil
}
