package askuser

import (
	"context"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// Run is a RunAgent stream on one run: Recv reads the run's events; the Answer methods, and
// SendToolOutput, Approve, Reject and Edit, settle its pending calls. Recv must not be called from
// two goroutines at once, nor the methods that settle calls; one goroutine may Recv while another
// answers.
type Run struct {
	id     string
	stream pb.AgentService_RunAgentClient
	cancel context.CancelFunc
	// started is the run_started frame StartRun read to learn the run id; the first Recv returns it.
	started *pb.RunAgentResponse
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// Recv returns the run's next event, skipping heartbeats. It returns io.EOF once the run has
// completed, failed or been cancelled and the stream has ended, and an *Error when the stream fails.
// A rejected answer does not end the stream: it is an answer_rejected event.
func (r *Run) Recv() (*pb.RunAgentResponse, error) {
	if started := r.started; started != nil {
		r.started = nil
		return started, nil
	}
	return nextEvent(r.stream)
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
func (r *Run) Answer(toolCallID string, reply Reply, opts ...AnswerOption) error {
	answer := newAnswer(r.id, toolCallID, reply, opts)
	return wrapError(r.stream.Send(&pb.RunAgentRequest{Frame: &pb.RunAgentRequest_Answer{Answer: answer}}))
}

// Close drops the stream, like a lost connection: the run goes on without it and can be attached
// to again.
func (r *Run) Close() error {
	err := r.stream.CloseSend()
	r.cancel()
	return err
}

// Events is a ResumeRun or WatchRun stream of a run's events.
type Events struct {
	stream eventStream
	cancel context.CancelFunc
}

// Recv returns the next event, skipping heartbeats. It returns io.EOF when the stream has ended
// and an *Error when it failed.
func (e *Events) Recv() (*pb.RunAgentResponse, error) { return nextEvent(e.stream) }

// Close stops reading before the stream's end and releases it.
func (e *Events) Close() { e.cancel() }

// eventStream is what the RunAgent, ResumeRun and WatchRun streams have in common.
type eventStream interface {
	Recv() (*pb.RunAgentResponse, error)
}

// nextEvent skips heartbeats: they only keep idle streams alive through proxies.
func nextEvent(stream eventStream) (*pb.RunAgentResponse, error) {
	for {
		event, err := stream.Recv()
		if err != nil {
			return nil, wrapError(err)
		}
		if event.GetHeartbeat() == nil {
			return event, nil
		}
	}
}

// Reply is the content of an answer: make one with Text, Selections or Declined for a question,
// ToolOutput for a client tool call, Approved, Rejected or Edited for a call that waits for approval.
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
