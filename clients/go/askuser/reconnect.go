package askuser

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ReconnectPolicy is how a client rides out a dropped connection (a server restart, a reset): a
// Run whose stream fails with codes.Unavailable reattaches after the last sequence it returned and
// sends again the answers the server has not acknowledged, a WatchRun stream reopens after its last
// sequence, and the calls that are safe to repeat (GetRun, ListRuns, ListAgents, CancelRun) are
// retried. Each waits InitialBackoff, doubling up to MaxBackoff, for up to Total in all before the
// Unavailable error is returned; a call's context (its deadline, its cancellation) still ends it
// for good. A zero field takes its default (DefaultReconnectPolicy).
type ReconnectPolicy struct {
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Total          time.Duration
}

// DefaultReconnectPolicy is the policy of a client made without WithReconnect: 100 ms doubling to
// 2 s, for up to 30 s.
func DefaultReconnectPolicy() ReconnectPolicy {
	return ReconnectPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, Total: 30 * time.Second}
}

// reconnectOption carries a policy through Dial's grpc.DialOption list; gRPC ignores it.
type reconnectOption struct {
	grpc.EmptyDialOption
	policy *ReconnectPolicy
}

// WithReconnect is a Dial option that sets the client's ReconnectPolicy.
func WithReconnect(policy ReconnectPolicy) grpc.DialOption {
	defaults := DefaultReconnectPolicy()
	if policy.InitialBackoff <= 0 {
		policy.InitialBackoff = defaults.InitialBackoff
	}
	if policy.MaxBackoff <= 0 {
		policy.MaxBackoff = defaults.MaxBackoff
	}
	if policy.Total <= 0 {
		policy.Total = defaults.Total
	}
	return reconnectOption{policy: &policy}
}

// WithoutReconnect is a Dial option that turns reconnection off: a dropped connection fails the
// calls and streams it carried with codes.Unavailable.
func WithoutReconnect() grpc.DialOption { return reconnectOption{} }

// connectParams keep gRPC's own attempts to reconnect frequent while a server restarts (its
// default backoff grows to 120 s), so that a retry soon finds the server back.
func connectParams(policy *ReconnectPolicy) grpc.DialOption {
	return grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: policy.InitialBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: policy.MaxBackoff},
		MinConnectTimeout: 20 * time.Second,
	})
}

// retrier counts the waits of one outage under a policy; a nil *retrier never retries.
type retrier struct {
	policy *ReconnectPolicy
	since  time.Time
	wait   time.Duration
}

func newRetrier(policy *ReconnectPolicy) *retrier {
	if policy == nil {
		return nil
	}
	return &retrier{policy: policy, wait: policy.InitialBackoff}
}

// reset starts a new outage, after a success.
func (r *retrier) reset() {
	if r != nil {
		r.since, r.wait = time.Time{}, r.policy.InitialBackoff
	}
}

// retry waits before the next attempt after err and reports whether to make it: only after
// codes.Unavailable, within the policy's total and within ctx. It returns err, or the error of
// ctx when ctx ends while waiting, when there is no next attempt.
func (r *retrier) retry(ctx context.Context, err error) error {
	if r == nil || status.Code(err) != codes.Unavailable {
		return err
	}
	now := time.Now()
	if r.since.IsZero() {
		r.since = now
	}
	wait := r.wait
	if now.Sub(r.since)+wait > r.policy.Total {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && now.Add(wait).After(deadline) {
		return err
	}
	r.wait = min(2*wait, r.policy.MaxBackoff)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return wrapError(status.FromContextError(ctx.Err()).Err())
	}
}

// retried calls call until it succeeds or policy gives up; for calls that are safe to repeat.
func retried[T any](ctx context.Context, policy *ReconnectPolicy, call func() (T, error)) (T, error) {
	retrier := newRetrier(policy)
	for {
		result, err := call()
		if err == nil {
			return result, nil
		}
		if err = retrier.retry(ctx, wrapError(err)); err != nil {
			return result, err
		}
	}
}
