package dev.askuser.examples;

import dev.askuser.client.AskUserClient;
import dev.askuser.client.Run;
import dev.askuser.v1.Agent;
import dev.askuser.v1.AskUserOption;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.SelectionMode;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.SuspendPayload;
import dev.askuser.v1.ToolCallSuspended;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Two runs: the demo agent {@code deploy}, whose questions are asked on the terminal and answered
 * from standard input; then the agent {@code status_check}, which calls the client tool {@code
 * service_status} that this program runs and answers with its output. Each prints its result.
 *
 * <p>Usage: {@code Quickstart [HOST:PORT]} (default {@code 127.0.0.1:50051}, where {@code askuser
 * serve} listens). A part whose agent the server does not run is skipped with a note: {@code
 * deploy} is a built-in demo agent (served without {@code --config}), {@code status_check} is in
 * {@code tests/conformance/agents.toml}. Against a server that checks API keys, put the key in
 * {@code ASKUSER_API_KEY}.
 */
public final class Quickstart {
  private static final String SKIP = "/skip";

  private Quickstart() {}

  public static void main(String[] args) {
    String target = args.length > 0 ? args[0] : "127.0.0.1:50051";
    AskUserClient.Builder builder = AskUserClient.builder(target);
    String apiKey = System.getenv("ASKUSER_API_KEY");
    if (apiKey != null && !apiKey.isEmpty()) {
      builder.apiKey(apiKey);
    }
    try (AskUserClient client = builder.build()) {
      Set<String> served = client.listAgents().stream().map(Agent::getAgentId).collect(Collectors.toSet());
      if (served.contains("deploy")) {
        deploy(client);
      } else {
        System.out.println("(skipped the questions: the server does not run the demo agent 'deploy')");
      }
      if (served.contains("status_check")) {
        statusCheck(client);
      } else {
        System.out.println("(skipped the client tool: the server does not run 'status_check'; "
            + "serve --config tests/conformance/agents.toml)");
      }
    }
  }

  /** Questions: asks them on the terminal and answers with what is typed. */
  private static void deploy(AskUserClient client) {
    BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    // Kept so a rejected answer can ask the same question again.
    Map<String, ToolCallSuspended> questions = new HashMap<>();
    try (Run run = client.startRun("deploy", "Ship the new release", Map.of("source", "java-quickstart"))) {
      for (RunAgentResponse frame : run) {
        switch (frame.getEventCase()) {
          case RUN_STARTED -> System.out.println("run " + frame.getRunId() + " started");
          case TOOL_CALL_SUSPENDED -> {
            ToolCallSuspended question = frame.getToolCallSuspended();
            questions.put(question.getToolCallId(), question);
            ask(run, question, input);
          }
          case ANSWER_REJECTED -> {
            System.out.println("not accepted: " + frame.getAnswerRejected().getMessage());
            ask(run, questions.get(frame.getAnswerRejected().getToolCallId()), input);
          }
          case TEXT_DELTA -> System.out.print(frame.getTextDelta().getText());
          case STEP_RESTARTED -> System.out.println("\n(the model starts its reply over)");
          case RUN_COMPLETED -> System.out.println("\nresult: " + frame.getRunCompleted().getOutputText());
          case RUN_FAILED -> System.out.println("\nthe run failed: " + frame.getRunFailed().getMessage());
          case RUN_CANCELLED -> System.out.println("\nthe run was cancelled: " + frame.getRunCancelled().getReason());
          default -> {
            // tool calls, results and acknowledgements: the questions and the reply say it all
          }
        }
      }
    }
  }

  /** A client tool: the agent calls {@code service_status}; this program runs it and sends the output. */
  private static void statusCheck(AskUserClient client) {
    try (Run run = client.startRun("status_check", "Is the api up?", Map.of("source", "java-quickstart"))) {
      for (RunAgentResponse frame : run) {
        switch (frame.getEventCase()) {
          case RUN_STARTED -> System.out.println("run " + frame.getRunId() + " started");
          case TOOL_CALL_SUSPENDED -> {
            ToolCallSuspended call = frame.getToolCallSuspended();
            if (call.getKind() == SuspendKind.SUSPEND_KIND_CLIENT_TOOL) {
              System.out.println("the agent calls " + call.getToolName() + " " + call.getArgumentsJson());
              // Run the tool here and send what it returned; pass isError=true if it failed.
              run.sendToolOutput(call.getToolCallId(), "healthy", false);
            } else {
              throw new IllegalStateException("status_check only calls client tools, not " + call.getKind());
            }
          }
          case RUN_COMPLETED -> System.out.println("result: " + frame.getRunCompleted().getOutputText());
          case RUN_FAILED -> System.out.println("the run failed: " + frame.getRunFailed().getMessage());
          case RUN_CANCELLED -> System.out.println("the run was cancelled: " + frame.getRunCancelled().getReason());
          default -> {
            // the tool call, its result and the text deltas: the result says it all
          }
        }
      }
    }
  }

  private static void ask(Run run, ToolCallSuspended question, BufferedReader input) {
    SuspendPayload payload = question.getSuspendPayload();
    System.out.println();
    System.out.println(payload.getQuestion());
    for (AskUserOption option : payload.getOptionsList()) {
      String description = option.getDescription().isEmpty() ? "" : " (" + option.getDescription() + ")";
      System.out.println("  - " + option.getLabel() + description);
    }
    boolean multiSelect = payload.getSelectionMode() == SelectionMode.SELECTION_MODE_MULTI_SELECT;
    String hint = multiSelect ? "labels, comma-separated" : payload.getOptionsCount() > 0 ? "one label" : "your answer";
    System.out.print("> " + hint + ", or " + SKIP + " to decline: ");
    System.out.flush();

    String line = readLine(input).strip();
    String toolCallId = question.getToolCallId();
    if (line.equals(SKIP)) {
      run.decline(toolCallId, "");
    } else if (multiSelect) {
      List<String> labels = Arrays.stream(line.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
      run.answerSelections(toolCallId, labels);
    } else {
      run.answerText(toolCallId, line);
    }
  }

  private static String readLine(BufferedReader input) {
    try {
      String line = input.readLine();
      if (line == null) {
        throw new IllegalStateException("standard input ended before every question was answered");
      }
      return line;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
