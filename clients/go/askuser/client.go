// Package askuser is a Go client of the askuser.v1 gRPC API: it runs agents whose tool calls
// suspend a run until someone settles them: a person answers an ask_user question or decides on an
// approval, the caller sends the output of a client tool. It wraps the generated stubs of package
// askuserv1, whose messages it passes through unchanged, and turns failed calls into *Error. Code
// outside any run asks a person too: Ask, AskHuman and RequestApproval (HumanService.Ask).
package askuser

import (
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// Client calls one askuser server. It is safe for concurrent use.
type Client struct {
	agents pb.AgentServiceClient
	tools  pb.ToolServiceClient
	humans pb.HumanServiceClient
	// reconnect is the policy of its streams and retried calls; nil: off.
	reconnect *ReconnectPolicy
	// conn is the connection Dial opened, closed by Close; nil for a client made by New.
	conn io.Closer
}

// Dial connects to the server at addr ("host:port"). The connection is plaintext unless opts
// give other transport credentials (later options win). It reconnects under
// DefaultReconnectPolicy unless opts hold WithReconnect or WithoutReconnect. Close the client
// when done.
func Dial(addr string, opts ...grpc.DialOption) (*Client, error) {
	policy := DefaultReconnectPolicy()
	reconnect := &policy
	for _, opt := range opts {
		if o, ok := opt.(reconnectOption); ok {
			reconnect = o.policy
		}
	}
	defaults := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("askuser-go/" + Version),
	}
	if reconnect != nil {
		defaults = append(defaults, connectParams(reconnect))
	}
	conn, err := grpc.NewClient(addr, append(defaults, opts...)...)
	if err != nil {
		return nil, err
	}
	client := New(conn)
	client.conn = conn
	client.reconnect = reconnect
	return client, nil
}

// New makes a client over a connection the caller owns (and closes). It reconnects under
// DefaultReconnectPolicy; the connection's own reconnection backoff is the caller's to set.
func New(conn grpc.ClientConnInterface) *Client {
	policy := DefaultReconnectPolicy()
	return &Client{
		agents: pb.NewAgentServiceClient(conn), tools: pb.NewToolServiceClient(conn), humans: pb.NewHumanServiceClient(conn),
		reconnect: &policy,
	}
}

// WithReconnectPolicy returns a client on c's connection whose streams and retried calls follow
// policy (nil: reconnection off): how a client made by New gets a policy of its own. The copy does
// not own the connection: Close c, not the copy.
func (c *Client) WithReconnectPolicy(policy *ReconnectPolicy) *Client {
	derived := *c
	derived.reconnect = policy
	derived.conn = nil
	return &derived
}

// Close closes the connection Dial opened; it does nothing for a client made by New.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// StartOption changes how StartRun starts a run.
type StartOption func(*pb.StartRun)

// WithQuestionTTL sets how long each question of the run may wait for an answer, overriding the
// agent's default (the server caps it at its maximum).
func WithQuestionTTL(ttl time.Duration) StartOption {
	return func(start *pb.StartRun) { start.QuestionTtl = durationpb.New(ttl) }
}

// WithTools offers client tools to this run only, beside the agent's own tools: the caller runs
// them and settles each call with Run.SendToolOutput (or ToolOutput). Each definition gives a name
// and, optionally, a description, a JSON Schema of the arguments as JSON text (empty: any JSON
// object) and an approval policy (APPROVAL_POLICY_ALWAYS: every call first waits for approval).
// A bad definition fails StartRun with codes.InvalidArgument, its field violation naming e.g.
// "start.tools[0].parameters_json_schema". Several WithTools add up.
func WithTools(tools ...*pb.ToolDefinition) StartOption {
	return func(start *pb.StartRun) { start.Tools = append(start.Tools, tools...) }
}

// StartRun starts a run of an agent on a new RunAgent stream. It returns once the server has
// sent the run_started frame, so Run.ID is known; that frame is still the first Recv returns.
// An unknown agent is an *Error with codes.NotFound.
func (c *Client) StartRun(ctx context.Context, agentID, prompt string, metadata map[string]string, opts ...StartOption) (*Run, error) {
	start := &pb.StartRun{AgentId: agentID, Prompt: prompt, Metadata: metadata}
	for _, opt := range opts {
		opt(start)
	}
	run := c.newRun(ctx, "", 0)
	if err := run.open(&pb.RunAgentRequest{Frame: &pb.RunAgentRequest_Start{Start: start}}); err != nil {
		run.cancel()
		return nil, err
	}
	first, err := run.Recv()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		run.cancel()
		return nil, err
	}
	started := first.GetRunStarted()
	if started == nil {
		run.cancel()
		return nil, fmt.Errorf("askuser: the first frame of run %q is not run_started", first.GetRunId())
	}
	run.id = first.GetRunId()
	run.started = first
	return run, nil
}

// Attach opens a RunAgent stream on an existing run, e.g. after a dropped connection: Recv replays
// the stored events with a sequence above afterSequence (0: all of them), then follows the run live.
// Attach does not wait for the server, so an unknown run is the error of the first Recv.
func (c *Client) Attach(ctx context.Context, runID string, afterSequence uint64) (*Run, error) {
	run := c.newRun(ctx, runID, afterSequence)
	err := run.open(attachRequest(runID, afterSequence))
	// A server that is down is the first Recv's to wait for, as after any drop.
	if err != nil && (c.reconnect == nil || status.Code(err) != codes.Unavailable) {
		run.cancel()
		return nil, err
	}
	return run, nil
}

func attachRequest(runID string, afterSequence uint64) *pb.RunAgentRequest {
	return &pb.RunAgentRequest{Frame: &pb.RunAgentRequest_Attach{
		Attach: &pb.AttachRun{RunId: runID, AfterSequence: afterSequence},
	}}
}

// ResumeRun applies one answer to a suspended run without a RunAgent stream, then streams what
// follows until the run waits again or ends: the first event is answer_accepted. A rejected answer
// is an *Error (e.g. codes.FailedPrecondition with Reason "ALREADY_ANSWERED"), returned by the
// first Recv.
func (c *Client) ResumeRun(ctx context.Context, runID, toolCallID string, reply Reply, opts ...AnswerOption) (*Events, error) {
	answer := newAnswer(runID, toolCallID, reply, opts)
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.agents.ResumeRun(ctx, &pb.ResumeRunRequest{Answer: answer})
	if err != nil {
		cancel()
		return nil, wrapError(err)
	}
	return &Events{stream: stream, ctx: ctx, cancel: cancel}, nil
}

// WatchRun replays a run's stored events with a sequence above afterSequence, then follows the
// run live without answering; the stream ends when the run ends. Under the client's
// ReconnectPolicy it reopens after a dropped connection, from the last sequence it returned.
func (c *Client) WatchRun(ctx context.Context, runID string, afterSequence uint64) (*Events, error) {
	ctx, cancel := context.WithCancel(ctx)
	reopen := func(after uint64) (eventStream, error) {
		stream, err := c.agents.WatchRun(ctx, &pb.WatchRunRequest{RunId: runID, AfterSequence: after})
		return stream, wrapError(err)
	}
	stream, err := reopen(afterSequence)
	if err != nil {
		cancel()
		return nil, err
	}
	events := &Events{stream: stream, ctx: ctx, cancel: cancel, lastSequence: afterSequence}
	if c.reconnect != nil {
		events.reopen, events.retrier = reopen, newRetrier(c.reconnect)
	}
	return events, nil
}

// GetRun returns one run with its pending tool calls.
func (c *Client) GetRun(ctx context.Context, runID string) (*pb.Run, error) {
	resp, err := retried(ctx, c.reconnect, func() (*pb.GetRunResponse, error) {
		return c.agents.GetRun(ctx, &pb.GetRunRequest{RunId: runID})
	})
	if err != nil {
		return nil, err
	}
	return resp.GetRun(), nil
}

// ListRunsOptions filters and pages ListRuns; the zero value lists the first 50 runs of any
// status and agent.
type ListRunsOptions struct {
	// Status keeps only runs in this status; RUN_STATUS_UNSPECIFIED keeps all.
	Status pb.RunStatus
	// AgentID keeps only runs of this agent; empty keeps all.
	AgentID string
	// PageSize is the most runs returned, 1 to 1000; 0 means 50.
	PageSize int32
	// PageToken is the token ListRuns returned for the previous page; empty for the first page.
	PageToken string
}

// ListRuns lists runs, newest first. nextPageToken is empty on the last page.
func (c *Client) ListRuns(ctx context.Context, opts ListRunsOptions) (runs []*pb.Run, nextPageToken string, err error) {
	req := &pb.ListRunsRequest{Status: opts.Status, AgentId: opts.AgentID, PageSize: opts.PageSize, PageToken: opts.PageToken}
	resp, err := retried(ctx, c.reconnect, func() (*pb.ListRunsResponse, error) { return c.agents.ListRuns(ctx, req) })
	if err != nil {
		return nil, "", err
	}
	return resp.GetRuns(), resp.GetNextPageToken(), nil
}

// CancelRun cancels a suspended or working run and returns it. Cancelling a cancelled run again
// succeeds; a completed or failed run is codes.FailedPrecondition with Reason "RUN_FINISHED".
func (c *Client) CancelRun(ctx context.Context, runID, reason string) (*pb.Run, error) {
	resp, err := retried(ctx, c.reconnect, func() (*pb.CancelRunResponse, error) {
		return c.agents.CancelRun(ctx, &pb.CancelRunRequest{RunId: runID, Reason: reason})
	})
	if err != nil {
		return nil, err
	}
	return resp.GetRun(), nil
}

// ListAgents lists the agents the server runs, ordered by id.
func (c *Client) ListAgents(ctx context.Context) ([]*pb.Agent, error) {
	resp, err := retried(ctx, c.reconnect, func() (*pb.ListAgentsResponse, error) {
		return c.agents.ListAgents(ctx, &pb.ListAgentsRequest{})
	})
	if err != nil {
		return nil, err
	}
	return resp.GetAgents(), nil
}

// AskUser validates an ask_user input exactly as a run would and returns the readable fallback
// text. Invalid input is codes.InvalidArgument with FieldViolations.
func (c *Client) AskUser(ctx context.Context, input *pb.AskUserInput) (string, error) {
	resp, err := c.tools.AskUser(ctx, &pb.AskUserRequest{Input: input})
	if err != nil {
		return "", wrapError(err)
	}
	return resp.GetContent(), nil
}
