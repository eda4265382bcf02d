package askuser

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// AskRequest is what Ask asks a person from code outside any askuser run (HumanService.Ask):
// exactly one of Question, Form and Approval, and how to ask it.
type AskRequest struct {
	// Question is a question as the ask_user tool takes it: free text, or options to pick from
	// (SelectionMode single or multi select).
	Question *pb.AskUserInput
	// Form is a form of typed fields, answered all together.
	Form *pb.Form
	// Approval is a tool call the asker wants approved, edited or rejected before it runs it.
	Approval *ApprovalRequest
	// Context is shown with the call (markdown): what is going on, and why it is asked.
	Context string
	// Assignees may settle it (subjects, and groups as "group:NAME"); empty: anyone with the scope.
	Assignees []string
	// TTL is how long it may wait before it expires; 0: until settled (capped by the server).
	TTL time.Duration
	// Metadata are free-form labels kept with the request.
	Metadata map[string]string
	// Webhooks are called for this request, as a run's.
	Webhooks []*pb.WebhookSubscription
	// RequestID makes Ask safe to retry (at most 256 bytes): an Ask with the RequestID of an
	// earlier one creates nothing and follows that request. Empty: Ask generates one (a UUID),
	// which HumanRequest.RequestID returns.
	RequestID string
}

// ApprovalRequest is a tool call to approve before the asker runs it.
type ApprovalRequest struct {
	// ToolName is the tool's name: letters, digits, "_" and "-", at most 64 characters.
	ToolName string
	// Arguments are the call's arguments, a JSON object: a map or a struct, encoded with
	// encoding/json, or json.RawMessage for JSON text. nil is {}.
	Arguments any
	// Reason says why approval is asked, shown to the approver.
	Reason string
}

// AskOption sets an optional field of the AskRequest that RequestApproval makes.
type AskOption func(*AskRequest)

// WithAskContext sets the markdown shown with the call: what is going on, and why it is asked.
func WithAskContext(markdown string) AskOption {
	return func(r *AskRequest) { r.Context = markdown }
}

// WithAssignees limits who may settle the call (subjects, and groups as "group:NAME").
func WithAssignees(assignees ...string) AskOption {
	return func(r *AskRequest) { r.Assignees = append(r.Assignees, assignees...) }
}

// WithTTL sets how long the call may wait before it expires.
func WithTTL(ttl time.Duration) AskOption {
	return func(r *AskRequest) { r.TTL = ttl }
}

// WithMetadata sets the request's free-form labels.
func WithMetadata(metadata map[string]string) AskOption {
	return func(r *AskRequest) { r.Metadata = metadata }
}

// WithRequestID sets the request's idempotency key: asking again with the same id (after a crash,
// or a retried job) follows the same request instead of asking twice.
func WithRequestID(requestID string) AskOption {
	return func(r *AskRequest) { r.RequestID = requestID }
}

// message is the AskRequest as sent.
func (r AskRequest) message() (*pb.AskRequest, error) {
	msg := &pb.AskRequest{
		Context: r.Context, Assignees: r.Assignees, Metadata: r.Metadata, Webhooks: r.Webhooks, RequestId: r.RequestID,
	}
	if r.TTL > 0 {
		msg.Ttl = durationpb.New(r.TTL)
	}
	calls := 0
	if r.Question != nil {
		msg.Call, calls = &pb.AskRequest_Question{Question: r.Question}, calls+1
	}
	if r.Form != nil {
		msg.Call, calls = &pb.AskRequest_Form{Form: r.Form}, calls+1
	}
	if r.Approval != nil {
		arguments := []byte("{}")
		if r.Approval.Arguments != nil {
			var err error
			if arguments, err = json.Marshal(r.Approval.Arguments); err != nil {
				return nil, fmt.Errorf("askuser: the approval's arguments: %w", err)
			}
		}
		msg.Call, calls = &pb.AskRequest_Approval{Approval: &pb.ApprovalRequest{
			ToolName: r.Approval.ToolName, ArgumentsJson: string(arguments), Reason: r.Approval.Reason,
		}}, calls+1
	}
	// None at all is the server's to refuse (INVALID_ARGUMENT, field "call"), as any bad input.
	if calls > 1 {
		return nil, errors.New("askuser: an AskRequest holds one of Question, Form and Approval, not several")
	}
	if msg.RequestId == "" {
		msg.RequestId = newRequestID()
	}
	return msg, nil
}

// newRequestID is a random (version 4) UUID.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// HumanRequest is a request Ask made (or found again by its request id), whose call waits for a
// person; Wait returns its outcome once someone settled it. Its methods must not be called from
// two goroutines at once.
type HumanRequest struct {
	client    *Client
	requestID string
	runID     string
	call      *pb.ToolCallSuspended
	// lastSequence is the last event of the request's run read: where Wait picks up.
	lastSequence uint64
}

// RunID is the id of the request's run (a run of no agent): GetRun, WatchRun and CancelRun take it.
func (h *HumanRequest) RunID() string { return h.runID }

// ToolCallID is the id of the request's one call, to settle it with (ResumeRun, the inbox,
// `askuser answer RUN CALL`).
func (h *HumanRequest) ToolCallID() string { return h.call.GetToolCallId() }

// RequestID is the request's idempotency key, the given one or the one Ask generated.
func (h *HumanRequest) RequestID() string { return h.requestID }

// Call is the call as it waits: its tool name ("ask_user", "ask_user_form" or the approval's tool),
// question or form, arguments, assignees and expiry.
func (h *HumanRequest) Call() *pb.ToolCallSuspended { return h.call }

// Ask creates a standalone request (HumanService.Ask) holding one call, a question, a form or an
// approval, and returns once the call waits for a person. Wait then returns how it was settled.
// The request is kept by the server: it reaches people through every surface a run's calls do
// (the inbox, `askuser pending` / `askuser answer`, the pending-calls feed, webhooks), whatever
// becomes of this process; asking again with the same RequestID finds it again.
//
// ctx bounds Ask alone (Wait takes its own). Under the client's ReconnectPolicy a dropped
// connection is ridden out: before the request's run id is known Ask is sent again with the same
// RequestID, after it the run is watched from the last event read. Bad input is an *Error with
// codes.InvalidArgument whose field violations name the fields (e.g. "question.question"); a key
// without the asks:create scope, codes.PermissionDenied.
func (c *Client) Ask(ctx context.Context, req AskRequest) (*HumanRequest, error) {
	msg, err := req.message()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the handle follows the request with streams of its own
	var runID string
	open := func(afterSequence uint64) (eventStream, error) {
		if runID == "" {
			stream, err := c.humans.Ask(ctx, msg)
			return stream, wrapError(err)
		}
		stream, err := c.agents.WatchRun(ctx, &pb.WatchRunRequest{RunId: runID, AfterSequence: afterSequence})
		return stream, wrapError(err)
	}
	events := &Events{ctx: ctx, cancel: cancel}
	if c.reconnect != nil {
		events.reopen, events.retrier = open, newRetrier(c.reconnect)
	}
	if events.stream, err = open(0); err != nil {
		if events.reopen == nil || status.Code(err) != codes.Unavailable {
			return nil, err
		}
		events.stream = failedStream{err} // the first Recv waits and sends it again
	}
	for {
		event, err := events.Recv()
		if err == io.EOF {
			return nil, fmt.Errorf("askuser: request %q ended before its call waited: %w", msg.GetRequestId(), io.ErrUnexpectedEOF)
		}
		if err != nil {
			return nil, err
		}
		if runID == "" {
			runID = event.GetRunId()
		}
		if call := event.GetToolCallSuspended(); call != nil {
			return &HumanRequest{
				client: c, requestID: msg.GetRequestId(), runID: runID, call: call, lastSequence: event.GetSequence(),
			}, nil
		}
	}
}

// Wait waits until the request's call is settled (answered, decided, declined, expired or
// cancelled) and returns its outcome, however long that takes. Under the client's ReconnectPolicy it
// rides out dropped connections and server restarts, watching the run again from the last event it
// read. ctx's deadline or cancellation ends the wait (codes.DeadlineExceeded, codes.Canceled) for
// good, but not the request: Wait may be called again, and so may Ask with the same RequestID.
func (h *HumanRequest) Wait(ctx context.Context) (*HumanOutcome, error) {
	c := h.client
	retrier := newRetrier(c.reconnect)
	var events *Events
	for {
		var err error
		if events, err = c.WatchRun(ctx, h.runID, h.lastSequence); err == nil {
			break
		}
		if err = retrier.retry(ctx, err); err != nil {
			return nil, err
		}
	}
	defer events.Close()
	for {
		event, err := events.Recv() // reopens after a drop, under the client's policy
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		h.lastSequence = max(h.lastSequence, event.GetSequence())
	}
	run, err := c.GetRun(ctx, h.runID)
	if err != nil {
		return nil, err
	}
	return h.outcome(run)
}

// Cancel cancels the request: its call is settled as cancelled, and Wait returns OutcomeCancelled.
func (h *HumanRequest) Cancel(ctx context.Context, reason string) error {
	_, err := h.client.CancelRun(ctx, h.runID, reason)
	return err
}

// AskHuman asks a person (Ask) and waits for the outcome (Wait), both within ctx: e.g.
// OutcomeText with the answer to a free-text question, OutcomeSelections, OutcomeForm,
// OutcomeDeclined, OutcomeExpired.
func (c *Client) AskHuman(ctx context.Context, req AskRequest) (*HumanOutcome, error) {
	request, err := c.Ask(ctx, req)
	if err != nil {
		return nil, err
	}
	return request.Wait(ctx)
}

// RequestApproval asks a person to approve a call of toolName with arguments (a JSON object: a map,
// a struct or json.RawMessage) before the caller runs it, and waits for the decision within ctx:
// OutcomeApproved (run it with outcome.Arguments, the given ones), OutcomeEdited (run it with
// outcome.Arguments, the approver's), OutcomeRejected (with outcome.Reason), OutcomeExpired or
// OutcomeCancelled. outcome.Approved tells whether to run it. reason is shown to the approver.
func (c *Client) RequestApproval(ctx context.Context, toolName string, arguments any, reason string, opts ...AskOption) (*HumanOutcome, error) {
	req := AskRequest{Approval: &ApprovalRequest{ToolName: toolName, Arguments: arguments, Reason: reason}}
	for _, opt := range opts {
		opt(&req)
	}
	return c.AskHuman(ctx, req)
}

// OutcomeKind is how a request's call was settled.
type OutcomeKind string

// The kinds of outcome: the first five settle a question or a form, the next three an approval;
// any call may expire or be cancelled.
const (
	OutcomeText       OutcomeKind = "text"       // answered in free text, or with a single select's label: Text
	OutcomeSelections OutcomeKind = "selections" // answered with options' labels: Selections
	OutcomeForm       OutcomeKind = "form"       // a form answered: Values
	OutcomeDeclined   OutcomeKind = "declined"   // the person declined to answer: Reason
	OutcomeReplied    OutcomeKind = "replied"    // answered in prose instead: Text
	OutcomeApproved   OutcomeKind = "approved"   // run it with Arguments (the asked ones)
	OutcomeEdited     OutcomeKind = "edited"     // run it with Arguments (the approver's)
	OutcomeRejected   OutcomeKind = "rejected"   // do not run it: Reason
	OutcomeExpired    OutcomeKind = "expired"    // nobody settled it within its TTL
	OutcomeCancelled  OutcomeKind = "cancelled"  // the request was cancelled
)

// HumanOutcome is how a request's call was settled, typed: Kind says which of the other fields
// are set.
type HumanOutcome struct {
	Kind OutcomeKind
	// Text is the answer (OutcomeText) or the prose reply (OutcomeReplied).
	Text string
	// Selections are the selected options' labels, in order (OutcomeSelections).
	Selections []string
	// Values are a form's values by field name (OutcomeForm): a string, a float64, a bool or a
	// Choice, per the field's kind; fields left out are absent.
	Values map[string]any
	// Reason is why the person declined (OutcomeDeclined) or rejected the call (OutcomeRejected).
	Reason string
	// Arguments are the arguments to run the tool with, a JSON object (OutcomeApproved,
	// OutcomeEdited).
	Arguments json.RawMessage
	// SettledBy is the subject of who settled it ("askuser" for the server, on expiry); empty
	// when nobody did.
	SettledBy string
	// Content is the call's result text, as a run's model would read it.
	Content string
}

// Choice is a choice field's value in a form's outcome.
type Choice struct {
	// Values are the selected choices' values.
	Values []string `json:"values"`
	// Other is the person's own text ("Other…"), empty when none.
	Other string `json:"other,omitempty"`
}

// Approved reports whether an approval lets the tool run: OutcomeApproved or OutcomeEdited.
func (o *HumanOutcome) Approved() bool {
	return o.Kind == OutcomeApproved || o.Kind == OutcomeEdited
}

// DecodeArguments decodes Arguments (of an approved or edited call) into v, with encoding/json.
func (o *HumanOutcome) DecodeArguments(v any) error {
	if len(o.Arguments) == 0 {
		return fmt.Errorf("askuser: a %s outcome has no arguments", o.Kind)
	}
	return json.Unmarshal(o.Arguments, v)
}

// outcome derives the outcome from the run's settled call.
func (h *HumanRequest) outcome(run *pb.Run) (*HumanOutcome, error) {
	var settled *pb.SettledToolCall
	for _, call := range run.GetSettledToolCalls() {
		if call.GetToolCallId() == h.ToolCallID() {
			settled = call
		}
	}
	if settled == nil {
		if run.GetStatus() == pb.RunStatus_RUN_STATUS_CANCELLED {
			return &HumanOutcome{Kind: OutcomeCancelled}, nil
		}
		return nil, fmt.Errorf("askuser: request %q ended (%s) without settling its call: %s",
			h.requestID, run.GetStatus(), run.GetErrorMessage())
	}
	outcome := &HumanOutcome{SettledBy: settled.GetSettledBy().GetSubject(), Content: settled.GetContent()}
	switch settled.GetKind() {
	case pb.ToolResultKind_TOOL_RESULT_KIND_EXPIRED:
		outcome.Kind = OutcomeExpired
		return outcome, nil
	case pb.ToolResultKind_TOOL_RESULT_KIND_CANCELLED:
		outcome.Kind = OutcomeCancelled
		return outcome, nil
	}
	approval := h.call.GetKind() == pb.SuspendKind_SUSPEND_KIND_APPROVAL
	switch a := settled.GetAnswer().GetAnswer().(type) {
	case *pb.Answer_Text:
		outcome.Kind, outcome.Text = OutcomeText, a.Text
	case *pb.Answer_Selections:
		outcome.Kind, outcome.Selections = OutcomeSelections, a.Selections.GetLabels()
	case *pb.Answer_Reply:
		outcome.Kind, outcome.Text = OutcomeReplied, a.Reply
	case *pb.Answer_Form:
		outcome.Kind, outcome.Values = OutcomeForm, formValues(a.Form)
	case *pb.Answer_Decline:
		outcome.Kind, outcome.Reason = OutcomeDeclined, a.Decline.GetReason()
		if approval {
			outcome.Kind = OutcomeRejected
		}
	case *pb.Answer_Approval:
		switch d := a.Approval.GetDecision().(type) {
		case *pb.ApprovalDecision_Approve_:
			outcome.Kind, outcome.Arguments = OutcomeApproved, h.approvedArguments(settled.GetContent())
		case *pb.ApprovalDecision_Edit_:
			outcome.Kind, outcome.Arguments = OutcomeEdited, json.RawMessage(d.Edit.GetArgumentsJson())
		case *pb.ApprovalDecision_Reject_:
			outcome.Kind, outcome.Reason = OutcomeRejected, d.Reject.GetReason()
		default:
			return nil, fmt.Errorf("askuser: request %q: an approval without a decision", h.requestID)
		}
	default:
		// No answer recorded: read the kind of the result.
		switch settled.GetKind() {
		case pb.ToolResultKind_TOOL_RESULT_KIND_REJECTED:
			outcome.Kind = OutcomeRejected
			outcome.Reason = strings.TrimPrefix(settled.GetContent(), "User rejected the call: ")
		default:
			return nil, fmt.Errorf("askuser: request %q: its call was settled as %s without an answer",
				h.requestID, settled.GetKind())
		}
	}
	return outcome, nil
}

// approvedArguments are the arguments an approval lets the tool run with: those of the result
// ({"decision": "approved", "arguments": {...}}), else those asked.
func (h *HumanRequest) approvedArguments(content string) json.RawMessage {
	var result struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal([]byte(content), &result) == nil && len(result.Arguments) > 0 {
		return result.Arguments
	}
	return json.RawMessage(h.call.GetArgumentsJson())
}

// formValues are a form answer's values as plain Go values.
func formValues(form *pb.FormAnswer) map[string]any {
	values := make(map[string]any, len(form.GetValues()))
	for name, value := range form.GetValues() {
		switch v := value.GetValue().(type) {
		case *pb.FieldValue_Text:
			values[name] = v.Text
		case *pb.FieldValue_Number:
			values[name] = v.Number
		case *pb.FieldValue_Boolean:
			values[name] = v.Boolean
		case *pb.FieldValue_Choice:
			selected := v.Choice.GetValues()
			if selected == nil {
				selected = []string{}
			}
			values[name] = Choice{Values: selected, Other: v.Choice.GetOther()}
		}
	}
	return values
}
