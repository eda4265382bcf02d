package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// The pending-calls feed (WatchPendingCalls) and claims.

type watchPendingArgs struct {
	Feed      string   `json:"feed"`
	AgentIDs  []ref    `json:"agent_ids"`
	ToolNames []ref    `json:"tool_names"`
	Kinds     []string `json:"kinds"`
	As        string   `json:"as"`
}

func (st *state) watchPending(a watchPendingArgs) error {
	name := streamName(a.Feed)
	if _, open := st.feeds[name]; open {
		return fmt.Errorf("feed %q is already open", name)
	}
	agentIDs, err := st.resolveAll(a.AgentIDs)
	if err != nil {
		return err
	}
	toolNames, err := st.resolveAll(a.ToolNames)
	if err != nil {
		return err
	}
	filter := askuser.PendingCallsFilter{AgentIDs: agentIDs, ToolNames: toolNames}
	for _, kind := range a.Kinds {
		value, ok := pb.SuspendKind_value[kind]
		if !ok {
			return fmt.Errorf("unknown kind %q", kind)
		}
		filter.Kinds = append(filter.Kinds, pb.SuspendKind(value))
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	feed, err := client.WatchPendingCalls(st.ctx, filter)
	if err != nil {
		return err
	}
	st.feeds[name] = feed
	return nil
}

func (st *state) feed(name string) (*askuser.PendingCalls, error) {
	feed, ok := st.feeds[streamName(name)]
	if !ok {
		return nil, fmt.Errorf("no open feed %q", streamName(name))
	}
	return feed, nil
}

type feedArgs struct {
	Feed string `json:"feed"`
}

func (st *state) closePending(a feedArgs) error {
	feed, err := st.feed(a.Feed)
	if err != nil {
		return err
	}
	delete(st.feeds, streamName(a.Feed))
	feed.Close()
	return nil
}

// pendingKinds are the kinds of event an expect_pending check may name.
var pendingKinds = []string{"call_pending", "call_settled", "snapshot_done"}

// expectPending reads the feed up to the first event of the check's kind (and run, when the check
// names one), skipping the events of other runs, and checks it. An event of the check's run that
// is of another kind fails the check: it came first.
func (st *state) expectPending(check frameCheck) error {
	m := &matcher{st: st, unchecked: maps.Clone(check)}
	var name string
	m.take("feed", &name)
	var kind string
	if !m.take("kind", &kind) {
		return fmt.Errorf("the check has no kind%s", m.problemText())
	}
	if !slices.Contains(pendingKinds, kind) {
		return fmt.Errorf("unknown kind %q: want one of %s", kind, strings.Join(pendingKinds, ", "))
	}
	var runRef ref
	var runID string
	hasRun := m.take("run_id", &runRef)
	if hasRun {
		var err error
		if runID, err = st.resolve(runRef); err != nil {
			return err
		}
	}
	// Calls the snapshot must not hold; checked on every event read up to its end.
	var absentRefs []ref
	if m.take("absent", &absentRefs) && kind != "snapshot_done" {
		m.fail("absent goes with a snapshot_done check")
	}
	absent, err := st.resolveAll(absentRefs)
	if err != nil {
		return err
	}
	if len(m.problems) > 0 {
		return fmt.Errorf("bad check%s", m.problemText())
	}
	feed, err := st.feed(name)
	if err != nil {
		return err
	}
	for {
		event, err := feed.Recv()
		if err == io.EOF {
			return fmt.Errorf("the feed ended, want a %s event", kind)
		}
		if err != nil {
			return fmt.Errorf("the feed failed, want a %s event: %w", kind, err)
		}
		gotKind, gotRun := pendingEventKind(event), pendingEventRun(event)
		if gotKind == "call_pending" && slices.Contains(absent, event.GetCallPending().GetCall().GetToolCallId()) {
			return fmt.Errorf("the snapshot holds an absent call: %s", describePending(event))
		}
		if hasRun && gotRun == runID && gotKind != kind {
			return fmt.Errorf("got %s, want a %s event of run %s first", describePending(event), kind, runID)
		}
		if gotKind != kind || (hasRun && gotRun != runID) {
			continue
		}
		m.checkPending(event)
		if problems := m.problemText(); problems != "" {
			return fmt.Errorf("%s%s", describePending(event), problems)
		}
		return nil
	}
}

func (m *matcher) checkPending(event *pb.WatchPendingCallsResponse) {
	switch e := event.GetEvent().(type) {
	case *pb.WatchPendingCallsResponse_CallPending:
		call := e.CallPending.GetCall()
		m.text("agent_id", e.CallPending.GetAgentId())
		m.text("tool_call_id", call.GetToolCallId())
		m.save("save", call.GetToolCallId())
		m.text("tool_name", call.GetToolName())
		m.text("suspend_kind", call.GetKind().String())
		m.jsonValue("arguments", call.GetArgumentsJson())
	case *pb.WatchPendingCallsResponse_CallSettled:
		m.text("tool_call_id", e.CallSettled.GetToolCallId())
		m.save("save", e.CallSettled.GetToolCallId())
		m.text("result_kind", e.CallSettled.GetKind().String())
	}
}

// pendingEventOneof is the oneof of WatchPendingCallsResponse that holds the event.
var pendingEventOneof = (&pb.WatchPendingCallsResponse{}).ProtoReflect().Descriptor().Oneofs().ByName("event")

// pendingEventKind is the name of the event's field, e.g. "call_pending".
func pendingEventKind(event *pb.WatchPendingCallsResponse) string {
	field := event.ProtoReflect().WhichOneof(pendingEventOneof)
	if field == nil {
		return "empty"
	}
	return string(field.Name())
}

// pendingEventRun is the run an event is about; empty for snapshot_done.
func pendingEventRun(event *pb.WatchPendingCallsResponse) string {
	switch e := event.GetEvent().(type) {
	case *pb.WatchPendingCallsResponse_CallPending:
		return e.CallPending.GetRunId()
	case *pb.WatchPendingCallsResponse_CallSettled:
		return e.CallSettled.GetRunId()
	}
	return ""
}

func describePending(event *pb.WatchPendingCallsResponse) string {
	return fmt.Sprintf("%s event {%s}", pendingEventKind(event), strings.TrimSpace(prototext.MarshalOptions{}.Format(event)))
}

type claimArgs struct {
	RunID       ref         `json:"run_id"`
	ToolCallID  ref         `json:"tool_call_id"`
	Claimant    ref         `json:"claimant"`
	TTLMillis   *count      `json:"ttl_ms"`
	ExpectError *errorCheck `json:"expect_error"`
	As          string      `json:"as"`
}

func (st *state) claim(a claimArgs) error {
	runID, err := st.resolve(a.RunID)
	if err != nil {
		return err
	}
	toolCallID, err := st.resolve(a.ToolCallID)
	if err != nil {
		return err
	}
	claimant, err := st.resolve(a.Claimant)
	if err != nil {
		return err
	}
	var ttl time.Duration
	if a.TTLMillis != nil {
		millis, err := st.number(*a.TTLMillis)
		if err != nil {
			return err
		}
		ttl = time.Duration(millis) * time.Millisecond
	}
	client, err := st.caller(a.As)
	if err != nil {
		return err
	}
	expires, err := client.ClaimCall(st.ctx, runID, toolCallID, claimant, ttl)
	if a.ExpectError != nil {
		if err == nil {
			return fmt.Errorf("want the claim to fail, it succeeded until %s", expires.Format(time.RFC3339Nano))
		}
		return a.ExpectError.match(err)
	}
	if err != nil {
		return err
	}
	if expires.IsZero() {
		return fmt.Errorf("the claim succeeded without an expire_time")
	}
	return nil
}
