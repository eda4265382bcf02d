package askuser_test

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// restartable is an `askuser serve` of the test's own, anonymous, serving
// tests/conformance/agents.toml on a fixed port and data dir, that it kills (SIGKILL) and starts
// again: ASKUSER_BIN, by default target/debug/askuser under the repository root.
type restartable struct {
	t       *testing.T
	binary  string
	config  string
	dir     string
	addr    string
	process *exec.Cmd
}

func newRestartable(t *testing.T) *restartable {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	binary := os.Getenv("ASKUSER_BIN")
	if binary == "" {
		binary = filepath.Join(root, "target/debug/askuser")
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("no askuser binary (set ASKUSER_BIN): %v", err)
	}
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()
	s := &restartable{t: t, binary: binary, config: filepath.Join(root, "tests/conformance/agents.toml"), dir: t.TempDir(), addr: addr}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *restartable) start() {
	s.t.Helper()
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	s.process = exec.Command(s.binary, "serve", "--listen", s.addr, "--data-dir", filepath.Join(s.dir, "data"), "--config", s.config)
	s.process.Stdout, s.process.Stderr = log, log
	if err := s.process.Start(); err != nil {
		s.t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if conn, err := net.Dial("tcp", s.addr); err == nil {
			conn.Close()
			return
		}
	}
	s.t.Fatalf("the server did not listen; see %s", log.Name())
}

func (s *restartable) kill() {
	if s.process != nil {
		s.process.Process.Kill()
		s.process.Wait()
		s.process = nil
	}
}

// restart kills the server and starts it again after down.
func (s *restartable) restart(down time.Duration) {
	s.t.Helper()
	s.kill()
	time.Sleep(down)
	s.start()
}

func TestARunReattachesAfterAServerRestart(t *testing.T) {
	s := newRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := askuser.Dial(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	run, err := client.StartRun(ctx, "free_text", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	question := skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended)

	s.restart(500 * time.Millisecond)
	// GetRun retries until the server is back.
	got, err := client.GetRun(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got.GetStatus() != pb.RunStatus_RUN_STATUS_SUSPENDED || got.GetLastSequence() != 3 {
		t.Fatalf("after the restart the run is %v at %d, want suspended at 3", got.GetStatus(), got.GetLastSequence())
	}
	// Sent on the dropped stream, the answer is sent again once Recv has reattached.
	if err := run.AnswerText(question.GetToolCallId(), "Ada", askuser.WithAnswerID("restart-1")); err != nil {
		t.Fatal(err)
	}
	accepted := skipTo(t, run, (*pb.RunAgentResponse).GetAnswerAccepted)
	if accepted.GetToolCallId() != question.GetToolCallId() {
		t.Fatalf("accepted %q, want %q", accepted.GetToolCallId(), question.GetToolCallId())
	}
	var sequences []uint64
	for {
		event, err := run.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after sequences %v: %v", sequences, err)
		}
		sequences = append(sequences, event.GetSequence())
	}
	// tool_result, text_delta, run_completed: no stored event lost or returned twice.
	if want := []uint64{4, 5, 6}; !slices.Equal(sequences, want) {
		t.Fatalf("after the answer: sequences %v, want %v", sequences, want)
	}
}

func TestWithoutReconnectARestartFailsTheRun(t *testing.T) {
	// Both ways to turn reconnection off: a Dial option, and a policy on a client made by New.
	offs := map[string]func(t *testing.T, addr string) *askuser.Client{
		"Dial(WithoutReconnect())": func(t *testing.T, addr string) *askuser.Client {
			client, err := askuser.Dial(addr, askuser.WithoutReconnect())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { client.Close() })
			return client
		},
		"New(conn).WithReconnectPolicy(nil)": func(t *testing.T, addr string) *askuser.Client {
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			return askuser.New(conn).WithReconnectPolicy(nil)
		},
	}
	for name, off := range offs {
		t.Run(name, func(t *testing.T) {
			s := newRestartable(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			client := off(t, s.addr)
			run, err := client.StartRun(ctx, "free_text", "hi", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			skipTo(t, run, (*pb.RunAgentResponse).GetToolCallSuspended)
			s.restart(0)
			_, err = run.Recv()
			asError(t, err, codes.Unavailable)
		})
	}
}

func TestThePendingCallsFeedReopensAfterAServerRestart(t *testing.T) {
	s := newRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := askuser.Dial(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	feed, err := client.WatchPendingCalls(ctx, askuser.PendingCallsFilter{AgentIDs: []string{"feed"}})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	// Both snapshots are empty: no run of the agent "feed" on this server.
	expectSnapshotDone := func() {
		t.Helper()
		event, err := feed.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if event.GetSnapshotDone() == nil {
			t.Fatalf("want snapshot_done, got %v", event)
		}
	}
	expectSnapshotDone()
	s.restart(200 * time.Millisecond)
	expectSnapshotDone()
}
