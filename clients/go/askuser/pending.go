package askuser

import (
	"context"
	"io"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// PendingCallsFilter selects the calls WatchPendingCalls streams. Its fields combine with AND; an
// empty field matches everything, so the zero value watches every pending call.
type PendingCallsFilter struct {
	// AgentIDs keeps only calls of runs of these agents.
	AgentIDs []string
	// ToolNames keeps only calls of these tools.
	ToolNames []string
	// Kinds keeps only calls waiting for these kinds of settlement, e.g.
	// SUSPEND_KIND_CLIENT_TOOL for a worker that runs client tools.
	Kinds []pb.SuspendKind
	// AssignedToMe keeps only calls whose assignees name the caller (its subject,
	// or one of its groups).
	AssignedToMe bool
}

// WatchPendingCalls streams the calls that wait to be settled, across runs: first every call
// pending now (call_pending events), then a snapshot_done event, then each new pending call and
// each settlement (call_settled) live. Reconnecting replays the snapshot, so a worker that
// reconnects misses nothing. Workers sharing a feed use ClaimCall so that only one runs a call.
//
// Under the client's ReconnectPolicy a feed that fails with codes.Unavailable (a server restart)
// reopens and starts over with a new snapshot: the calls pending then (call_pending, possibly seen
// before), then snapshot_done.
func (c *Client) WatchPendingCalls(ctx context.Context, filter PendingCallsFilter) (*PendingCalls, error) {
	ctx, cancel := context.WithCancel(ctx)
	open := func() (pb.AgentService_WatchPendingCallsClient, error) {
		stream, err := c.agents.WatchPendingCalls(ctx, &pb.WatchPendingCallsRequest{
			AgentIds:     filter.AgentIDs,
			ToolNames:    filter.ToolNames,
			Kinds:        filter.Kinds,
			AssignedToMe: filter.AssignedToMe,
		})
		return stream, wrapError(err)
	}
	stream, err := open()
	if err != nil {
		cancel()
		return nil, err
	}
	feed := &PendingCalls{stream: stream, ctx: ctx, cancel: cancel}
	if c.reconnect != nil {
		feed.reopen, feed.retrier = open, newRetrier(c.reconnect)
	}
	return feed, nil
}

// PendingCalls is a WatchPendingCalls feed. Recv must not be called from two goroutines at once.
type PendingCalls struct {
	stream pendingStream
	ctx    context.Context
	cancel context.CancelFunc
	// reopen opens the feed again; nil without a ReconnectPolicy.
	reopen  func() (pb.AgentService_WatchPendingCallsClient, error)
	retrier *retrier
}

// pendingStream is the part of a WatchPendingCalls stream a feed reads.
type pendingStream interface {
	Recv() (*pb.WatchPendingCallsResponse, error)
}

// failedFeed stands for a feed that could not be reopened: Recv returns why.
type failedFeed struct{ err error }

func (f failedFeed) Recv() (*pb.WatchPendingCallsResponse, error) { return nil, f.err }

// Recv returns the feed's next event (call_pending, call_settled or snapshot_done), skipping
// heartbeats. It returns io.EOF if the server ends the feed and an *Error when the feed fails; the
// feed otherwise runs until Close or the end of its context.
func (p *PendingCalls) Recv() (*pb.WatchPendingCallsResponse, error) {
	for {
		event, err := p.stream.Recv()
		if err != nil {
			err = wrapError(err)
			if p.reopen == nil || err == io.EOF {
				return nil, err
			}
			if err = p.retrier.retry(p.ctx, err); err != nil {
				return nil, err
			}
			if p.stream, err = p.reopen(); err != nil {
				p.stream = failedFeed{err}
			}
			continue
		}
		p.retrier.reset()
		if event.GetHeartbeat() == nil {
			return event, nil
		}
	}
}

// Close stops the feed and releases it.
func (p *PendingCalls) Close() { p.cancel() }

// ClaimCall claims a pending call for claimant (e.g. a worker's name) for ttl, 1 s to 1 h; 0 means
// the server's default (60 s). Claiming again as the same claimant renews the claim. While another
// claimant holds it, the call fails with an *Error of codes.FailedPrecondition and Reason
// "ALREADY_CLAIMED"; a call that no longer waits is Reason "TOOL_CALL_NOT_PENDING". A claim never
// blocks settling: anyone may still settle the call, and the first settlement wins. ClaimCall
// returns when the claim lapses unless renewed.
func (c *Client) ClaimCall(ctx context.Context, runID, toolCallID, claimant string, ttl time.Duration) (time.Time, error) {
	req := &pb.ClaimCallRequest{RunId: runID, ToolCallId: toolCallID, Claimant: claimant}
	if ttl != 0 {
		req.Ttl = durationpb.New(ttl)
	}
	resp, err := c.agents.ClaimCall(ctx, req)
	if err != nil {
		return time.Time{}, wrapError(err)
	}
	if resp.GetExpireTime() == nil {
		return time.Time{}, nil
	}
	return resp.GetExpireTime().AsTime(), nil
}
