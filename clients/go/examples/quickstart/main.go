// Command quickstart starts a run of an askuser agent, answers its questions from standard input
// and prints the result. Then it runs an agent that calls a client tool, service_status, which this
// program runs itself and whose output it sends back. With a server running the built-in demo
// agents (`askuser serve`):
//
//	go run ./examples/quickstart -addr 127.0.0.1:50051
//
// A server with --auth keys wants an API key: -api-key, or ASKUSER_API_KEY.
//
// Options can be picked by number or by label; a multi-select answer lists them separated by commas.
// A call that waits for approval is approved with "y"; any other line rejects it, with that line as
// the reason. The client tool agent, status_check, is one of tests/conformance/agents.toml; a server
// without it skips that part.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"google.golang.org/grpc"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "address of the askuser server")
	agent := flag.String("agent", "deploy", "the agent to run")
	prompt := flag.String("prompt", "Deploy the new release", "what to ask the agent")
	toolAgent := flag.String("tool-agent", "status_check", "an agent that calls the client tool service_status")
	apiKey := flag.String("api-key", os.Getenv("ASKUSER_API_KEY"), "API key for a server with --auth keys")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var opts []grpc.DialOption
	if *apiKey != "" {
		opts = append(opts, askuser.WithAPIKey(*apiKey))
	}
	client, err := askuser.Dial(*addr, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	defer client.Close()
	// One scanner for both runs: a second one would lose what the first read ahead.
	answers := bufio.NewScanner(os.Stdin)
	output, err := runAgent(ctx, client, *agent, *prompt, answers, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Println("Result:", output)

	// The agent calls service_status; runAgent runs it here and sends its output back.
	fmt.Println()
	output, err = runAgent(ctx, client, *toolAgent, "Check the api", answers, os.Stdout)
	var e *askuser.Error
	if errors.As(err, &e) && e.Reason == askuser.ReasonAgentNotFound {
		fmt.Printf("This server has no agent %q: serve tests/conformance/agents.toml to see a client tool.\n", *toolAgent)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Println("Result:", output)
}

// clientTools are the tools this program runs when an agent calls them: each gets the call's
// arguments as JSON text and returns the output the model gets, or an error it is told about.
var clientTools = map[string]func(argumentsJSON string) (string, error){
	"service_status": serviceStatus,
}

// serviceStatus pretends to look a service up; a real one would ask the service.
func serviceStatus(argumentsJSON string) (string, error) {
	var args struct {
		Service string `json:"service"`
	}
	if err := json.Unmarshal([]byte(argumentsJSON), &args); err != nil {
		return "", err
	}
	if args.Service == "" {
		return "", errors.New("no service given")
	}
	return "healthy", nil
}

// runAgent runs the agent to its end and returns the run's output text. It asks each question
// (and each approval) on out and reads the answer from in; it runs each client tool call with
// clientTools and sends the output.
func runAgent(ctx context.Context, client *askuser.Client, agentID, prompt string, answers *bufio.Scanner, out io.Writer) (string, error) {
	run, err := client.StartRun(ctx, agentID, prompt, nil)
	if err != nil {
		return "", err
	}
	defer run.Close()
	fmt.Fprintf(out, "Run %s started.\n", run.ID())

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
			call := e.ToolCallSuspended
			id := call.GetToolCallId()
			switch call.GetKind() {
			case pb.SuspendKind_SUSPEND_KIND_CLIENT_TOOL:
				err = runTool(run, call, out)
			case pb.SuspendKind_SUSPEND_KIND_APPROVAL:
				err = approve(run, call, answers, out)
			default:
				questions[id] = call.GetSuspendPayload()
				err = ask(run, id, questions[id], answers, out)
			}
			if err != nil {
				return "", err
			}
		case *pb.RunAgentResponse_AnswerRejected:
			// The question stays open: say why and ask it again.
			id := e.AnswerRejected.GetToolCallId()
			fmt.Fprintf(out, "Not accepted: %s\n", e.AnswerRejected.GetMessage())
			if questions[id] == nil {
				return "", fmt.Errorf("the server rejected the settlement of call %s", id)
			}
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

// runTool runs a client tool call here and sends its output; a failure is an error output, which
// the model is told about.
func runTool(run *askuser.Run, call *pb.ToolCallSuspended, out io.Writer) error {
	output, isError := "", false
	tool, ok := clientTools[call.GetToolName()]
	if !ok {
		output, isError = "this client does not run "+call.GetToolName(), true
	} else if result, err := tool(call.GetArgumentsJson()); err != nil {
		output, isError = err.Error(), true
	} else {
		output = result
	}
	fmt.Fprintf(out, "\nRan %s %s: %s\n", call.GetToolName(), call.GetArgumentsJson(), output)
	return run.SendToolOutput(call.GetToolCallId(), output, isError)
}

// approve asks whether a tool call may run: "y" approves it, any other line rejects it with that
// line as the reason ("n" or an empty line: no reason).
func approve(run *askuser.Run, call *pb.ToolCallSuspended, answers *bufio.Scanner, out io.Writer) error {
	fmt.Fprintf(out, "\nAllow %s %s (%s)? y/n or a reason to refuse: ", call.GetToolName(), call.GetArgumentsJson(), call.GetApprovalReason())
	if !answers.Scan() {
		if err := answers.Err(); err != nil {
			return err
		}
		return errors.New("standard input ended before every question was answered")
	}
	switch line := strings.TrimSpace(answers.Text()); strings.ToLower(line) {
	case "y", "yes":
		return run.Approve(call.GetToolCallId())
	case "n", "no":
		return run.Reject(call.GetToolCallId(), "")
	default:
		return run.Reject(call.GetToolCallId(), line)
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
