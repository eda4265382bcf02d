// Command quickstart starts a run of an askuser agent, answers its questions from standard input
// and prints the result. With a server running the built-in demo agents (`askuser serve`):
//
//	go run ./examples/quickstart -addr 127.0.0.1:50051
//
// Options can be picked by number or by label; a multi-select answer lists them separated by commas.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "address of the askuser server")
	agent := flag.String("agent", "deploy", "the agent to run")
	prompt := flag.String("prompt", "Deploy the new release", "what to ask the agent")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client, err := askuser.Dial(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	defer client.Close()
	output, err := runAgent(ctx, client, *agent, *prompt, os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Println("Result:", output)
}

// runAgent runs the agent to its end, asking each question on out and reading its answer from in,
// and returns the run's output text.
func runAgent(ctx context.Context, client *askuser.Client, agentID, prompt string, in io.Reader, out io.Writer) (string, error) {
	run, err := client.StartRun(ctx, agentID, prompt, nil)
	if err != nil {
		return "", err
	}
	defer run.Close()
	fmt.Fprintf(out, "Run %s started.\n", run.ID())

	answers := bufio.NewScanner(in)
	// Questions by tool call id, to ask again when an answer is rejected.
	questions := map[string]*pb.SuspendPayload{}
	for {
		event, err := run.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("the stream ended before the run did")
			}
			return "", err
		}
		switch e := event.GetEvent().(type) {
		case *pb.RunAgentResponse_ToolCallSuspended:
			id := e.ToolCallSuspended.GetToolCallId()
			questions[id] = e.ToolCallSuspended.GetSuspendPayload()
			if err := ask(run, id, questions[id], answers, out); err != nil {
				return "", err
			}
		case *pb.RunAgentResponse_AnswerRejected:
			// The question stays open: say why and ask it again.
			id := e.AnswerRejected.GetToolCallId()
			fmt.Fprintf(out, "Not accepted: %s\n", e.AnswerRejected.GetMessage())
			if err := ask(run, id, questions[id], answers, out); err != nil {
				return "", err
			}
		case *pb.RunAgentResponse_RunCompleted:
			return e.RunCompleted.GetOutputText(), nil
		case *pb.RunAgentResponse_RunFailed:
			return "", fmt.Errorf("the run failed: %s", e.RunFailed.GetMessage())
		case *pb.RunAgentResponse_RunCancelled:
			return "", fmt.Errorf("the run was cancelled: %s", e.RunCancelled.GetReason())
		}
	}
}

// ask shows one question, reads one line and sends it as the answer.
func ask(run *askuser.Run, toolCallID string, question *pb.SuspendPayload, answers *bufio.Scanner, out io.Writer) error {
	fmt.Fprintf(out, "\n%s\n", question.GetQuestion())
	options := question.GetOptions()
	for i, option := range options {
		fmt.Fprintf(out, "  %d. %s", i+1, option.GetLabel())
		if option.GetDescription() != "" {
			fmt.Fprintf(out, " (%s)", option.GetDescription())
		}
		fmt.Fprintln(out)
	}
	multiSelect := question.GetSelectionMode() == pb.SelectionMode_SELECTION_MODE_MULTI_SELECT
	switch {
	case multiSelect:
		fmt.Fprint(out, "Pick any, separated by commas (none: empty line): ")
	case len(options) > 0:
		fmt.Fprint(out, "Pick one: ")
	default:
		fmt.Fprint(out, "Answer: ")
	}
	if !answers.Scan() {
		if err := answers.Err(); err != nil {
			return err
		}
		return errors.New("standard input ended before every question was answered")
	}
	line := strings.TrimSpace(answers.Text())

	if !multiSelect {
		return run.AnswerText(toolCallID, optionLabel(options, line))
	}
	labels := []string{}
	for _, choice := range strings.Split(line, ",") {
		if choice = strings.TrimSpace(choice); choice != "" {
			labels = append(labels, optionLabel(options, choice))
		}
	}
	return run.AnswerSelections(toolCallID, labels)
}

// optionLabel reads a choice typed as an option's number; anything else is taken as typed, for the
// server to accept as a label or free text, or to reject.
func optionLabel(options []*pb.AskUserOption, choice string) string {
	if n, err := strconv.Atoi(choice); err == nil && n >= 1 && n <= len(options) {
		return options[n-1].GetLabel()
	}
	return choice
}
