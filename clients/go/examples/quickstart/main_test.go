package main

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/askuser-dev/askuser/clients/go/askuser"
)

// runWithInput runs the quickstart's loop with input as standard input, against the agents of
// tests/conformance/agents.toml served at ASKUSER_ADDR (clients/go/test.sh) ("parallel"
// asks the same kinds of question as the demo agent "deploy"). It returns the output text, what
// the loop showed, and the loop's error. Calls carry ASKUSER_API_KEY when it is set.
func runWithInput(t *testing.T, agentID, input string) (string, string, error) {
	t.Helper()
	addr := os.Getenv("ASKUSER_ADDR")
	if addr == "" {
		t.Fatal("ASKUSER_ADDR is not set: run clients/go/test.sh HOST:PORT")
	}
	var opts []grpc.DialOption
	if key := os.Getenv("ASKUSER_API_KEY"); key != "" {
		opts = append(opts, askuser.WithAPIKey(key))
	}
	client, err := askuser.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var shown strings.Builder
	output, err := runAgent(ctx, client, agentID, "release", bufio.NewScanner(strings.NewReader(input)), &shown)
	return output, shown.String(), err
}

func TestQuickstartAnswersByNumberLabelAndText(t *testing.T) {
	output, shown, err := runWithInput(t, "parallel", "1\n2, lint\nall green\n")
	if err != nil {
		t.Fatalf("%v; shown:\n%s", err, shown)
	}
	if want := "staging / unit, lint / all green"; output != want {
		t.Errorf("output %q, want %q", output, want)
	}
	for _, want := range []string{"Which environment?\n  1. staging\n  2. production\nPick one: ", "Pick any, separated by commas"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the quickstart did not show %q; it showed:\n%s", want, shown)
		}
	}
}

func TestQuickstartAsksAgainAfterARejectedAnswer(t *testing.T) {
	output, shown, err := runWithInput(t, "pick", "7\n2\n")
	if err != nil {
		t.Fatalf("%v; shown:\n%s", err, shown)
	}
	if want := "Deploying to production"; output != want {
		t.Errorf("output %q, want %q", output, want)
	}
	if strings.Count(shown, "Which environment?") != 2 || !strings.Contains(shown, "Not accepted: ") {
		t.Errorf("want the question asked again after a rejection; the quickstart showed:\n%s", shown)
	}
}

func TestQuickstartStopsWhenInputEnds(t *testing.T) {
	_, shown, err := runWithInput(t, "free_text", "")
	if err == nil || !strings.Contains(err.Error(), "standard input ended") {
		t.Errorf("want the loop to stop at the end of input, got %v; shown:\n%s", err, shown)
	}
}

func TestQuickstartRunsTheClientTool(t *testing.T) {
	output, shown, err := runWithInput(t, "status_check", "")
	if err != nil {
		t.Fatalf("%v; shown:\n%s", err, shown)
	}
	if want := "api is healthy"; output != want {
		t.Errorf("output %q, want %q", output, want)
	}
	if !strings.Contains(shown, "Ran service_status ") {
		t.Errorf("want the tool run shown; the quickstart showed:\n%s", shown)
	}
}

func TestQuickstartAsksForApprovalAndRejectsWithTheReason(t *testing.T) {
	output, shown, err := runWithInput(t, "deployer", "2\nnot today\n")
	if err != nil {
		t.Fatalf("%v; shown:\n%s", err, shown)
	}
	if want := "Deploy of api to production (status healthy): User rejected the call: not today"; output != want {
		t.Errorf("output %q, want %q", output, want)
	}
	if !strings.Contains(shown, "Allow deploy ") {
		t.Errorf("want the approval asked; the quickstart showed:\n%s", shown)
	}
}
