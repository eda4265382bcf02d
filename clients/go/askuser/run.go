package askuser

import (
	"context"
	"io"
	"slices"
	"sync"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// Run is a RunAgent stream on one run: Recv reads the run's events; the Answer methods, and
// SendToolOutput, Approve, Reject and Edit, settle its pending calls. Recv must not be called from
// two goroutines at once, nor the methods that settle calls; one goroutine may Recv while another
// answers.
//
// Under the client's ReconnectPolicy (on by default), a stream that fails with codes.Unavailable
// (a server restart, a reset connection) is reattached by Recv after the last sequence it returned,
// so no stored event is lost or returned twice, and the answers the server has not acknowledged
// yet (with answer_accepted or answer_rejected) are sent again on the new stream, including those
// sent while the stream was down. Give answers an id (WithAnswerID) to make that resend
// idempotent: without one, an answer that reached the server before the drop comes back
// rejected, the call being no longer pending.
type Run struct {
	id     string
	agents pb.AgentServiceClient
	// ctx carries every stream of the run; cancel ends them for good.
	ctx    context.Context
	cancel context.CancelFunc
	// started is the run_started frame StartRun read to learn the run id; the first Recv returns it.
	started *pb.RunAgentResponse
	// lastSequence is the sequence of the last stored event Recv returned: where a reattachment
	// picks up.
	lastSequence uint64
	retrier      *retrier
	// reconnecting is whether answers are kept until acknowledged, for a reattachment to resend.
	reconnecting bool

	mu      sync.Mutex // guards the fields below, shared by Recv and the answering methods
	stream  runStream
	unacked []*pb.RunAgentRequest
	ended   bool // Recv returned io.EOF or an error: answers have nowhere to go
}

// runStream is the part of a RunAgent stream a Run uses.
type runStream interface {
	Send(*pb.RunAgentRequest) error
	Recv() (*pb.RunAgentResponse, error)
	CloseSend() error
}

// failedStream stands for a stream that could not be opened: Recv returns why.
type failedStream struct{ err error }

func (f failedStream) Send(*pb.RunAgentRequest) error      { return io.EOF }
func (f failedStream) Recv() (*pb.RunAgentResponse, error) { return nil, f.err }
func (f failedStream) CloseSend() error                    { return nil }

func (c *Client) newRun(ctx context.Context, runID string, afterSequence uint64) *Run {
	ctx, cancel := context.WithCancel(ctx)
	return &Run{
		id: runID, agents: c.agents, ctx: ctx, cancel: cancel, lastSequence: afterSequence,
		retrier: newRetrier(c.reconnect), reconnecting: c.reconnect != nil,
	}
}

// open opens a RunAgent stream and sends first, then the unacknowledged answers. When that fails
// the Run keeps the error for Recv, which may reattach.
func (r *Run) open(first *pb.RunAgentRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stream, err := r.agents.RunAgent(r.ctx)
	if err != nil {
		err = wrapError(err)
		r.stream = failedStream{err}
		return err
	}
	r.stream = stream
	// io.EOF means the server already ended the stream; Recv returns its status.
	for _, request := range append([]*pb.RunAgentRequest{first}, r.unacked...) {
		if err := stream.Send(request); err != nil {
			if err != io.EOF {
				r.stream = failedStream{wrapError(err)}
				return wrapError(err)
			}
			break
		}
	}
	return nil
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// Recv returns the run's next event, skipping heartbeats. It returns io.EOF once the run has
// completed, failed or been cancelled and the stream has ended, and an *Error when the stream fails
// (after giving up reattaching, for codes.Unavailable). A rejected answer does not end the stream:
// it is an answer_rejected event.
func (r *Run) Recv() (*pb.RunAgentResponse, error) {
	if started := r.started; started != nil {
		r.started = nil
		return started, nil
	}
	for {
		r.mu.Lock()
		stream := r.stream
		r.mu.Unlock()
		event, err := stream.Recv()
		if err != nil {
			err = wrapError(err)
			// A run without an id yet (StartRun before run_started) has nothing to attach to.
			if r.id != "" && err != io.EOF {
				err = r.retrier.retry(r.ctx, err)
			}
			if err != nil {
				r.mu.Lock()
				r.ended = true
				r.mu.Unlock()
				return nil, err
			}
			_ = r.open(attachRequest(r.id, r.lastSequence)) // its failure is the next Recv's
			continue
		}
		r.retrier.reset()
		sequence := event.GetSequence()
		if event.GetHeartbeat() != nil || (sequence > 0 && sequence <= r.lastSequence) {
			continue // a heartbeat, or an event returned before a reattachment
		}
		r.lastSequence = max(r.lastSequence, sequence)
		r.acknowledge(event)
		return event, nil
	}
}

// acknowledge forgets the answer an answer_accepted or answer_rejected event settles.
func (r *Run) acknowledge(event *pb.RunAgentResponse) {
	var toolCallID string
	switch e := event.GetEvent().(type) {
	case *pb.RunAgentResponse_AnswerAccepted:
		toolCallID = e.AnswerAccepted.GetToolCallId()
	case *pb.RunAgentResponse_AnswerRejected:
		toolCallID = e.AnswerRejected.GetToolCallId()
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.unacked, func(request *pb.RunAgentRequest) bool {
		return request.GetAnswer().GetToolCallId() == toolCallID
	}); i >= 0 {
		r.unacked = slices.Delete(r.unacked, i, i+1)
	}
}

// AnswerText answers a pending question with free text or, for single select, with the label of
// the chosen option. The outcome arrives on Recv: answer_accepted, or answer_rejected.
func (r *Run) AnswerText(toolCallID, text string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Text(text), opts...)
}

// AnswerSelections answers a pending single or multi select question with option labels.
func (r *Run) AnswerSelections(toolCallID string, labels []string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Selections(labels...), opts...)
}

// Decline tells the run that the person declines to answer a pending question; reason may be empty.
func (r *Run) Decline(toolCallID, reason string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Declined(reason), opts...)
}

// AnswerForm answers a pending form (kind SUSPEND_KIND_FORM) with its values by field name, each
// made with TextValue, NumberValue, BoolValue, ChoiceValue or OtherValue; optional fields may be left
// out. The outcome arrives on Recv: answer_accepted, or answer_rejected whose field violations name
// each wrong value (answer.form.values["replicas"]), the form staying pending.
func (r *Run) AnswerForm(toolCallID string, values map[string]FieldValue, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Form(values), opts...)
}

// Reply answers a pending question or form in prose instead: the call settles with a tool_result of
// kind TOOL_RESULT_KIND_REPLIED, and the model reads what the person wrote.
func (r *Run) Reply(toolCallID, text string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Replied(text), opts...)
}

// SendToolOutput settles a pending client tool call (kind SUSPEND_KIND_CLIENT_TOOL) with the output
// of the tool the caller ran; isError tells the model the tool failed. The outcome arrives on Recv:
// answer_accepted then a tool_result of kind TOOL_RESULT_KIND_OUTPUT, or answer_rejected.
func (r *Run) SendToolOutput(toolCallID, content string, isError bool, opts ...AnswerOption) error {
	return r.Answer(toolCallID, ToolOutput(content, isError), opts...)
}

// Approve lets a call that waits for approval (kind SUSPEND_KIND_APPROVAL) run with the arguments
// the model gave. An approved client tool call is then suspended again, with the same id, as
// SUSPEND_KIND_CLIENT_TOOL.
func (r *Run) Approve(toolCallID string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Approved(), opts...)
}

// Reject refuses a call that waits for approval: the tool never runs and the model is told, with
// reason when it is not empty (a tool_result of kind TOOL_RESULT_KIND_REJECTED).
func (r *Run) Reject(toolCallID, reason string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Rejected(reason), opts...)
}

// Edit approves a call that waits for approval with other arguments, a JSON object as text that
// the server checks against the tool's schema (answer_rejected when it does not fit).
func (r *Run) Edit(toolCallID, argumentsJSON string, opts ...AnswerOption) error {
	return r.Answer(toolCallID, Edited(argumentsJSON), opts...)
}

// Answer sends an answer to a pending question of the run. It returns io.EOF when the stream has
// already ended; Recv then tells why.
//
// Under a ReconnectPolicy the answer is kept until the server acknowledges it, and an answer sent
// while the stream is down is not an error: Recv sends it once it has reattached.
func (r *Run) Answer(toolCallID string, reply Reply, opts ...AnswerOption) error {
	request := &pb.RunAgentRequest{Frame: &pb.RunAgentRequest_Answer{Answer: newAnswer(r.id, toolCallID, reply, opts)}}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return io.EOF
	}
	err := r.stream.Send(request)
	if r.reconnecting {
		r.unacked = append(r.unacked, request)
		if err == io.EOF {
			return nil
		}
	}
	return wrapError(err)
}

// Close drops the stream, like a lost connection: the run goes on without it and can be attached
// to again.
func (r *Run) Close() error {
	r.mu.Lock()
	r.ended = true
	err := r.stream.CloseSend()
	r.mu.Unlock()
	r.cancel()
	return err
}

// Events is a ResumeRun or WatchRun stream of a run's events. Under the client's ReconnectPolicy
// a WatchRun stream that fails with codes.Unavailable reopens after the last sequence it returned.
type Events struct {
	stream eventStream
	ctx    context.Context
	cancel context.CancelFunc
	// reopen opens the stream again after a sequence; nil for a stream that cannot be reopened.
	reopen       func(afterSequence uint64) (eventStream, error)
	lastSequence uint64
	retrier      *retrier
}

// Recv returns the next event, skipping heartbeats. It returns io.EOF when the stream has ended
// and an *Error when it failed.
func (e *Events) Recv() (*pb.RunAgentResponse, error) {
	for {
		event, err := e.stream.Recv()
		if err != nil {
			err = wrapError(err)
			if e.reopen == nil || err == io.EOF {
				return nil, err
			}
			if err = e.retrier.retry(e.ctx, err); err != nil {
				return nil, err
			}
			if e.stream, err = e.reopen(e.lastSequence); err != nil {
				e.stream = failedStream{err}
			}
			continue
		}
		e.retrier.reset()
		sequence := event.GetSequence()
		if event.GetHeartbeat() != nil || (sequence > 0 && sequence <= e.lastSequence) {
			continue
		}
		e.lastSequence = max(e.lastSequence, sequence)
		return event, nil
	}
}

// Close stops reading before the stream's end and releases it.
func (e *Events) Close() { e.cancel() }

// eventStream is what the RunAgent, ResumeRun and WatchRun streams have in common.
type eventStream interface {
	Recv() (*pb.RunAgentResponse, error)
}

// Reply is the content of an answer: make one with Text, Selections or Declined for a question,
// Form or Declined for a form, Replied for either, ToolOutput for a client tool call, Approved,
// Rejected or Edited for a call that waits for approval.
type Reply struct {
	fill func(*pb.Answer)
}

// Text is a free-text reply or, for a single select question, the label of the chosen option.
func Text(text string) Reply {
	return Reply{fill: func(a *pb.Answer) { a.Answer = &pb.Answer_Text{Text: text} }}
}

// Selections is a reply selecting option labels (single select: exactly one).
func Selections(labels ...string) Reply {
	return Reply{fill: func(a *pb.Answer) { a.Answer = &pb.Answer_Selections{Selections: &pb.Selections{Labels: labels}} }}
}

// Declined is a reply declining to answer; reason may be empty.
func Declined(reason string) Reply {
	return Reply{fill: func(a *pb.Answer) { a.Answer = &pb.Answer_Decline{Decline: &pb.Decline{Reason: reason}} }}
}

// Form is a form's answer: its values by field name (see FieldValue). Optional fields may be left
// out; an empty or nil map is still a form answer.
func Form(values map[string]FieldValue) Reply {
	answer := &pb.FormAnswer{Values: make(map[string]*pb.FieldValue, len(values))}
	for name, value := range values {
		answer.Values[name] = value.message()
	}
	return Reply{fill: func(a *pb.Answer) { a.Answer = &pb.Answer_Form{Form: answer} }}
}

// Replied is a reply in prose instead of an answer, to a question or a form: the model is told the
// person replied, and what they wrote.
func Replied(text string) Reply {
	return Reply{fill: func(a *pb.Answer) { a.Answer = &pb.Answer_Reply{Reply: text} }}
}

// FieldValue is one field's value in a form answer: make it with TextValue, NumberValue, BoolValue,
// ChoiceValue or OtherValue, matching the field's kind. The zero FieldValue has no kind, which the
// server refuses.
type FieldValue struct {
	value *pb.FieldValue
}

// message is the value as sent; a zero FieldValue is an empty one.
func (v FieldValue) message() *pb.FieldValue {
	if v.value == nil {
		return &pb.FieldValue{}
	}
	return v.value
}

// TextValue is a text field's value.
func TextValue(text string) FieldValue {
	return FieldValue{&pb.FieldValue{Value: &pb.FieldValue_Text{Text: text}}}
}

// NumberValue is a number field's value (a whole number for an integer field).
func NumberValue(number float64) FieldValue {
	return FieldValue{&pb.FieldValue{Value: &pb.FieldValue_Number{Number: number}}}
}

// BoolValue is a yes-or-no field's value.
func BoolValue(b bool) FieldValue {
	return FieldValue{&pb.FieldValue{Value: &pb.FieldValue_Boolean{Boolean: b}}}
}

// ChoiceValue is a choice field's value: the selected choices' values (a single-choice field takes
// one; none at all is a valid selection where the field allows it).
func ChoiceValue(values ...string) FieldValue {
	return OtherValue("", values...)
}

// OtherValue is a choice field's value written by the person ("Other…"), where the field allows
// it, with any choices also selected (a multiple-choice field only: a single-choice field takes
// one value or the text, not both).
func OtherValue(text string, values ...string) FieldValue {
	return FieldValue{&pb.FieldValue{Value: &pb.FieldValue_Choice{Choice: &pb.ChoiceValue{Values: values, Other: text}}}}
}

// ToolOutput is the output of a client tool the caller ran; isError tells the model it failed.
func ToolOutput(content string, isError bool) Reply {
	return Reply{fill: func(a *pb.Answer) {
		a.Answer = &pb.Answer_ToolOutput{ToolOutput: &pb.ToolOutput{Content: content, IsError: isError}}
	}}
}

// Approved is an approval: the tool runs with the arguments the model gave.
func Approved() Reply {
	return approval(&pb.ApprovalDecision{Decision: &pb.ApprovalDecision_Approve_{Approve: &pb.ApprovalDecision_Approve{}}})
}

// Rejected refuses an approval: the tool never runs; reason, which may be empty, goes to the model.
func Rejected(reason string) Reply {
	return approval(&pb.ApprovalDecision{Decision: &pb.ApprovalDecision_Reject_{Reject: &pb.ApprovalDecision_Reject{Reason: reason}}})
}

// Edited approves with other arguments: a JSON object, as text, checked against the tool's schema.
func Edited(argumentsJSON string) Reply {
	return approval(&pb.ApprovalDecision{Decision: &pb.ApprovalDecision_Edit_{Edit: &pb.ApprovalDecision_Edit{ArgumentsJson: argumentsJSON}}})
}

func approval(decision *pb.ApprovalDecision) Reply {
	return Reply{fill: func(a *pb.Answer) { a.Answer = &pb.Answer_Approval{Approval: decision} }}
}

// AnswerOption sets an optional field of an answer.
type AnswerOption func(*pb.Answer)

// WithAnswerID sets the answer's idempotency key: a retry with the same key is accepted as the same
// answer (answer_accepted with duplicate set) instead of being rejected as ALREADY_ANSWERED.
func WithAnswerID(answerID string) AnswerOption {
	return func(a *pb.Answer) { a.AnswerId = answerID }
}

// WithRunID makes an answer sent on a Run name runID instead of the Run's own id. The server
// reads an empty run_id as the stream's run, and rejects another run's id as RUN_MISMATCH;
// ordinary callers never need this.
func WithRunID(runID string) AnswerOption {
	return func(a *pb.Answer) { a.RunId = runID }
}

func newAnswer(runID, toolCallID string, reply Reply, opts []AnswerOption) *pb.Answer {
	answer := &pb.Answer{RunId: runID, ToolCallId: toolCallID}
	// A zero Reply sends an answer without content, which the server rejects as invalid.
	if reply.fill != nil {
		reply.fill(answer)
	}
	for _, opt := range opts {
		opt(answer)
	}
	return answer
}
