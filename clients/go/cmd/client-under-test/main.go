// Command client-under-test is the Go client's side of the conformance protocol of
// tests/conformance/README.md: it reads one JSON request a line from standard input, turns it into
// calls on the public API of package askuser, and writes one JSON response a line: what came back,
// messages in the proto3 JSON mapping. It asserts nothing; the conformance runner judges.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// request holds the fields of every op; each op reads its own.
type request struct {
	Op            string            `json:"op"`
	Address       string            `json:"address"`
	Keys          map[string]string `json:"keys"`
	Stream        string            `json:"stream"`
	Feed          string            `json:"feed"`
	As            string            `json:"as"`
	AgentID       string            `json:"agent_id"`
	Prompt        string            `json:"prompt"`
	Metadata      map[string]string `json:"metadata"`
	Tools         []tool            `json:"tools"`
	TimeoutMS     int64             `json:"timeout_ms"`
	RunID         string            `json:"run_id"`
	AfterSequence json.Number       `json:"after_sequence"`
	Answer        answer            `json:"answer"`
	Reason        string            `json:"reason"`
	Input         json.RawMessage   `json:"input"`
	AgentIDs      []string          `json:"agent_ids"`
	ToolNames     []string          `json:"tool_names"`
	Kinds         []string          `json:"kinds"`
	ToolCallID    string            `json:"tool_call_id"`
	Claimant      string            `json:"claimant"`
	TTLMS         int64             `json:"ttl_ms"`
	Ask           string            `json:"ask"`
	RequestID     string            `json:"request_id"`
	Context       string            `json:"context"`
	Question      json.RawMessage   `json:"question"`
	Form          json.RawMessage   `json:"form"`
	Approval      *struct {
		ToolName  string          `json:"tool_name"`
		Arguments json.RawMessage `json:"arguments"`
		Reason    string          `json:"reason"`
	} `json:"approval"`
}

type tool struct {
	Name                 string `json:"name"`
	Description          string `json:"description"`
	ParametersJSONSchema string `json:"parameters_json_schema"`
	Approval             string `json:"approval"`
}

// answer has exactly one of its pointer fields set: the kind of reply.
type answer struct {
	RunID      string    `json:"run_id"`
	ToolCallID string    `json:"tool_call_id"`
	AnswerID   string    `json:"answer_id"`
	Text       *string   `json:"text"`
	Selections *[]string `json:"selections"`
	Decline    *string   `json:"decline"`
	ToolOutput *struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	} `json:"tool_output"`
	Approve *bool                  `json:"approve"`
	Reject  *string                `json:"reject"`
	Edit    *string                `json:"edit"`
	Form    *map[string]fieldValue `json:"form"`
	Reply   *string                `json:"reply"`
}

// fieldValue is one value of a form answer: exactly one of its fields is set.
type fieldValue struct {
	Text    *string  `json:"text"`
	Number  *float64 `json:"number"`
	Boolean *bool    `json:"boolean"`
	Choice  *struct {
		Values []string `json:"values"`
		Other  string   `json:"other"`
	} `json:"choice"`
}

// formValues is the form's values made with the client's own constructor for each kind.
func (a answer) formValues() (map[string]askuser.FieldValue, error) {
	values := make(map[string]askuser.FieldValue, len(*a.Form))
	for name, v := range *a.Form {
		switch {
		case v.Text != nil:
			values[name] = askuser.TextValue(*v.Text)
		case v.Number != nil:
			values[name] = askuser.NumberValue(*v.Number)
		case v.Boolean != nil:
			values[name] = askuser.BoolValue(*v.Boolean)
		case v.Choice != nil && v.Choice.Other != "":
			values[name] = askuser.OtherValue(v.Choice.Other, v.Choice.Values...)
		case v.Choice != nil:
			values[name] = askuser.ChoiceValue(v.Choice.Values...)
		default:
			return nil, fmt.Errorf("form value %q has no kind", name)
		}
	}
	return values, nil
}

// reply is the answer's content made with the client's own constructor for its kind.
func (a answer) reply() (askuser.Reply, error) {
	switch {
	case a.Text != nil:
		return askuser.Text(*a.Text), nil
	case a.Selections != nil:
		return askuser.Selections(*a.Selections...), nil
	case a.Decline != nil:
		return askuser.Declined(*a.Decline), nil
	case a.ToolOutput != nil:
		return askuser.ToolOutput(a.ToolOutput.Content, a.ToolOutput.IsError), nil
	case a.Approve != nil:
		return askuser.Approved(), nil
	case a.Reject != nil:
		return askuser.Rejected(*a.Reject), nil
	case a.Edit != nil:
		return askuser.Edited(*a.Edit), nil
	case a.Form != nil:
		values, err := a.formValues()
		return askuser.Form(values), err
	case a.Reply != nil:
		return askuser.Replied(*a.Reply), nil
	}
	return askuser.Reply{}, errors.New("the answer has no content")
}

func (a answer) options() []askuser.AnswerOption {
	var opts []askuser.AnswerOption
	if a.AnswerID != "" {
		opts = append(opts, askuser.WithAnswerID(a.AnswerID))
	}
	if a.RunID != "" {
		opts = append(opts, askuser.WithRunID(a.RunID))
	}
	return opts
}

// cut is the state of one scenario: the two clients and the open streams and feeds by name.
type cut struct {
	clients map[string]*askuser.Client
	streams map[string]*askuser.Run
	feeds   map[string]*askuser.PendingCalls
	// asks are the requests Ask made, by name.
	asks map[string]*askuser.HumanRequest
	// cancels release the deadlines of calls; the process ends with the scenario.
	cancels []context.CancelFunc
}

func main() {
	c := &cut{streams: map[string]*askuser.Run{}, feeds: map[string]*askuser.PendingCalls{}, asks: map[string]*askuser.HumanRequest{}}
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(nil, 1<<24)
	out := json.NewEncoder(os.Stdout)
	for lines.Scan() {
		var req request
		var resp map[string]any
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			resp = map[string]any{"failure": "bad request: " + err.Error()}
		} else if ok, err := c.do(req); err != nil {
			resp = failure(err)
		} else {
			resp = map[string]any{"ok": ok}
		}
		if err := out.Encode(resp); err != nil {
			fmt.Fprintln(os.Stderr, "client-under-test:", err)
			os.Exit(1)
		}
	}
}

// context is a call's context: with the request's deadline when it has one.
func (c *cut) context(req request) context.Context {
	if req.TimeoutMS == 0 {
		return context.Background()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond)
	c.cancels = append(c.cancels, cancel)
	return ctx
}

func (c *cut) client(req request) *askuser.Client {
	if req.As == "other" {
		return c.clients["other"]
	}
	return c.clients["own"]
}

// do runs one op and returns what its "ok" response holds.
func (c *cut) do(req request) (any, error) {
	if req.Op != "connect" && c.clients == nil {
		return nil, errors.New("not connected")
	}
	ctx := c.context(req)
	switch req.Op {
	case "connect":
		c.clients = map[string]*askuser.Client{}
		for as, key := range req.Keys {
			client, err := askuser.Dial(req.Address, askuser.WithAPIKey(key))
			if err != nil {
				return nil, err
			}
			c.clients[as] = client
		}
		return map[string]string{"client": "askuser-go " + askuser.Version}, nil
	case "start":
		tools := make([]*pb.ToolDefinition, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = &pb.ToolDefinition{Name: t.Name, Description: t.Description, ParametersJsonSchema: t.ParametersJSONSchema,
				Approval: pb.ApprovalPolicy(pb.ApprovalPolicy_value[t.Approval])}
		}
		run, err := c.client(req).StartRun(ctx, req.AgentID, req.Prompt, req.Metadata, askuser.WithTools(tools...))
		if err != nil {
			return nil, err
		}
		c.streams[req.Stream] = run
		return map[string]string{"run_id": run.ID()}, nil
	case "attach":
		after, err := req.AfterSequence.Int64()
		if err != nil && req.AfterSequence != "" {
			return nil, err
		}
		run, err := c.client(req).Attach(ctx, req.RunID, uint64(after))
		if err != nil {
			return nil, err
		}
		c.streams[req.Stream] = run
		return struct{}{}, nil
	case "send", "next", "close":
		run, ok := c.streams[req.Stream]
		if !ok {
			return nil, fmt.Errorf("no stream %q", req.Stream)
		}
		return c.onStream(run, req)
	case "resume":
		reply, err := req.Answer.reply()
		if err != nil {
			return nil, err
		}
		events, err := c.client(req).ResumeRun(ctx, req.Answer.RunID, req.Answer.ToolCallID, reply, req.Answer.options()...)
		return drain(events, err)
	case "watch":
		after, err := req.AfterSequence.Int64()
		if err != nil && req.AfterSequence != "" {
			return nil, err
		}
		return drain(c.client(req).WatchRun(ctx, req.RunID, uint64(after)))
	case "get_run":
		run, err := c.client(req).GetRun(ctx, req.RunID)
		return message("run", run, err)
	case "cancel":
		run, err := c.client(req).CancelRun(ctx, req.RunID, req.Reason)
		return message("run", run, err)
	case "ask_user":
		input := &pb.AskUserInput{}
		if err := protojson.Unmarshal(req.Input, input); err != nil {
			return nil, err
		}
		content, err := c.client(req).AskUser(ctx, input)
		return map[string]string{"content": content}, err
	case "watch_pending":
		filter := askuser.PendingCallsFilter{AgentIDs: req.AgentIDs, ToolNames: req.ToolNames}
		for _, kind := range req.Kinds {
			filter.Kinds = append(filter.Kinds, pb.SuspendKind(pb.SuspendKind_value[kind]))
		}
		feed, err := c.client(req).WatchPendingCalls(ctx, filter)
		if err != nil {
			return nil, err
		}
		c.feeds[req.Feed] = feed
		return struct{}{}, nil
	case "next_pending", "close_pending":
		feed, ok := c.feeds[req.Feed]
		if !ok {
			return nil, fmt.Errorf("no feed %q", req.Feed)
		}
		if req.Op == "close_pending" {
			feed.Close()
			return struct{}{}, nil
		}
		event, err := feed.Recv()
		if err == io.EOF {
			return map[string]bool{"end": true}, nil
		}
		return message("event", event, err)
	case "claim":
		_, err := c.client(req).ClaimCall(ctx, req.RunID, req.ToolCallID, req.Claimant, time.Duration(req.TTLMS)*time.Millisecond)
		return struct{}{}, err
	case "ask":
		ask, err := askRequest(req)
		if err != nil {
			return nil, err
		}
		handle, err := c.client(req).Ask(ctx, ask)
		if err != nil {
			return nil, err
		}
		c.asks[req.Ask] = handle
		return map[string]string{"run_id": handle.RunID(), "tool_call_id": handle.ToolCallID()}, nil
	case "ask_result":
		handle, ok := c.asks[req.Ask]
		if !ok {
			return nil, fmt.Errorf("no ask %q", req.Ask)
		}
		outcome, err := handle.Wait(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"outcome": outcomeJSON(outcome)}, nil
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

// askRequest is the ask op's request for Ask: its call as the client's user gives it.
func askRequest(req request) (askuser.AskRequest, error) {
	ask := askuser.AskRequest{Context: req.Context, RequestID: req.RequestID, TTL: time.Duration(req.TTLMS) * time.Millisecond}
	if req.Question != nil {
		ask.Question = &pb.AskUserInput{}
		if err := protojson.Unmarshal(req.Question, ask.Question); err != nil {
			return ask, err
		}
	}
	if req.Form != nil {
		ask.Form = &pb.Form{}
		if err := protojson.Unmarshal(req.Form, ask.Form); err != nil {
			return ask, err
		}
	}
	if a := req.Approval; a != nil {
		ask.Approval = &askuser.ApprovalRequest{ToolName: a.ToolName, Reason: a.Reason}
		if a.Arguments != nil {
			ask.Approval.Arguments = a.Arguments
		}
	}
	return ask, nil
}

// outcomeJSON is the outcome as the protocol writes it: its kind, the kind's fields, and settled_by
// when someone settled it.
func outcomeJSON(o *askuser.HumanOutcome) map[string]any {
	out := map[string]any{"kind": string(o.Kind)}
	switch o.Kind {
	case askuser.OutcomeText, askuser.OutcomeReplied:
		out["text"] = o.Text
	case askuser.OutcomeSelections:
		out["selections"] = append([]string{}, o.Selections...)
	case askuser.OutcomeForm:
		out["values"] = o.Values
	case askuser.OutcomeDeclined, askuser.OutcomeRejected:
		out["reason"] = o.Reason
	case askuser.OutcomeApproved, askuser.OutcomeEdited:
		out["arguments"] = o.Arguments
	}
	if o.SettledBy != "" {
		out["settled_by"] = o.SettledBy
	}
	return out
}

func (c *cut) onStream(run *askuser.Run, req request) (any, error) {
	switch req.Op {
	case "send":
		// Forms and replies go through their own verbs; every other kind through Answer.
		a := req.Answer
		switch {
		case a.Form != nil:
			values, err := a.formValues()
			if err != nil {
				return nil, err
			}
			return struct{}{}, run.AnswerForm(a.ToolCallID, values, a.options()...)
		case a.Reply != nil:
			return struct{}{}, run.Reply(a.ToolCallID, *a.Reply, a.options()...)
		}
		reply, err := a.reply()
		if err != nil {
			return nil, err
		}
		return struct{}{}, run.Answer(a.ToolCallID, reply, a.options()...)
	case "next":
		frame, err := run.Recv()
		if err == io.EOF {
			return map[string]bool{"end": true}, nil
		}
		return message("frame", frame, err)
	}
	return struct{}{}, run.Close()
}

// drain reads a ResumeRun or WatchRun stream to its end: every frame, then how it ended.
func drain(events *askuser.Events, err error) (any, error) {
	frames := []json.RawMessage{}
	for err == nil {
		var frame *pb.RunAgentResponse
		if frame, err = events.Recv(); err == nil {
			raw, _ := protojson.Marshal(frame)
			frames = append(frames, raw)
		}
	}
	result := map[string]any{"frames": frames, "error": nil}
	if err != io.EOF {
		var e *askuser.Error
		if !errors.As(err, &e) {
			return nil, err
		}
		result["error"] = statusJSON(e)
	}
	return result, nil
}

// message is {key: m} with m in the proto3 JSON mapping, or err.
func message(key string, m proto.Message, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	raw, err := protojson.Marshal(m)
	return map[string]json.RawMessage{key: raw}, err
}

// failure is the response to a failed op: the status when the client's error type decoded one.
func failure(err error) map[string]any {
	var e *askuser.Error
	if errors.As(err, &e) {
		return map[string]any{"error": statusJSON(e)}
	}
	return map[string]any{"failure": err.Error()}
}

func statusJSON(e *askuser.Error) map[string]any {
	return map[string]any{"code": code.Code(e.Code).String(), "message": e.Message, "reason": e.Reason, "fields": e.Fields()}
}
