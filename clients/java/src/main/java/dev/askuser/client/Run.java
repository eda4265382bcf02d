package dev.askuser.client;

import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.Answer;
import dev.askuser.v1.RunAgentRequest;
import io.grpc.stub.StreamObserver;
import java.util.List;

/**
 * An open {@code RunAgent} stream: iterate it for the run's frames, answer its questions with
 * {@link #answerText}, {@link #answerSelections} or {@link #decline}, settle client tool calls with
 * {@link #sendToolOutput} and approvals with {@link #approve}, {@link #reject} or {@link
 * #editArguments}.
 *
 * <p>The answer methods leave the answer's run id empty, which the server reads as this stream's
 * run. A bad answer does not fail the stream; it comes back as an {@code answer_rejected} frame and
 * the question stays answerable. Reading and answering may happen on different threads.
 * {@link #close()} disconnects; the run goes on without this stream and can be attached again.
 */
public final class Run extends FrameStream {
  private final Object sendLock = new Object();
  private final StreamObserver<RunAgentRequest> requests;
  private boolean closed;

  /** Opens the stream and sends its first frame ({@code start} or {@code attach}). */
  Run(AgentServiceGrpc.AgentServiceStub stub, RunAgentRequest firstFrame, int bufferSize) {
    super(bufferSize);
    requests = stub.runAgent(receiver());
    requests.onNext(firstFrame);
  }

  /** Sends an answer frame as given: any run id, answer and {@code answer_id}. */
  public void answer(Answer answer) {
    synchronized (sendLock) {
      if (closed) {
        throw new IllegalStateException("the stream is closed");
      }
      requests.onNext(RunAgentRequest.newBuilder().setAnswer(answer).build());
    }
  }

  /** Answers a free-text question, or a single-select one with the exact label chosen. */
  public void answerText(String toolCallId, String text) {
    answer(Answers.text("", toolCallId, text));
  }

  /** Answers a select question with the chosen labels, in the order they were chosen. */
  public void answerSelections(String toolCallId, List<String> labels) {
    answer(Answers.selections("", toolCallId, labels));
  }

  /**
   * Declines to answer a question (or rejects a call that waits for approval); {@code reason}
   * (possibly empty) is passed on to the model.
   */
  public void decline(String toolCallId, String reason) {
    answer(Answers.decline("", toolCallId, reason));
  }

  /**
   * Settles a client tool call ({@code SUSPEND_KIND_CLIENT_TOOL}) with the output of the tool the
   * caller ran; {@code isError} tells the model the tool failed.
   */
  public void sendToolOutput(String toolCallId, String content, boolean isError) {
    answer(Answers.toolOutput("", toolCallId, content, isError));
  }

  /** Settles a client tool call with a successful output. */
  public void sendToolOutput(String toolCallId, String content) {
    sendToolOutput(toolCallId, content, false);
  }

  /**
   * Approves a call that waits for approval ({@code SUSPEND_KIND_APPROVAL}). A client tool is then
   * suspended again, with the same id, as {@code SUSPEND_KIND_CLIENT_TOOL}, for its output.
   */
  public void approve(String toolCallId) {
    answer(Answers.approve("", toolCallId));
  }

  /** Rejects a call that waits for approval: the tool never runs; {@code reason} may be empty. */
  public void reject(String toolCallId, String reason) {
    answer(Answers.reject("", toolCallId, reason));
  }

  /**
   * Approves a call that waits for approval with edited arguments (a JSON object, checked against
   * the tool's schema; a bad one comes back as {@code answer_rejected}).
   */
  public void editArguments(String toolCallId, String argumentsJson) {
    answer(Answers.editArguments("", toolCallId, argumentsJson));
  }

  /** Half-closes the stream and cancels it: a disconnect. The run goes on on the server. */
  @Override
  public void close() {
    synchronized (sendLock) {
      if (!closed) {
        closed = true;
        requests.onCompleted();
      }
    }
    super.close();
  }
}
